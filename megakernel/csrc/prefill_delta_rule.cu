// The prefill's own chunked gated delta rule (reference/delta_rule.py gated_delta_rule_chunked; the
// interface and layouts: prefill.cuh gated_delta_rule_chunked). Two kernels a DeltaNet layer, on the
// tensor cores (mma.sync m16n8k16, bf16 in, fp32 sums), the rounding points of fla's chunked kernels:
//
//   chunk_intra   every chunk at once. Block (chunk c of 64 rows, value head h), 4 warps; warp w owns
//                 the chunk's rows 16 w .. 16 w + 15 in every product. K Kᵀ and Q Kᵀ (the lower
//                 triangle) → M = strict_lower(diag(β) K Kᵀ ⊙ Γ) (fp32, shared memory) and P = Q Kᵀ ⊙ Γ
//                 with j <= i (bf16, to global memory); A = (I + M)⁻¹ by blocks of 16 (threads 0-63: the
//                 four diagonal blocks, a column each; then the three block rows below, all threads);
//                 W = A diag(β e^γ) K and U = A diag(β) V (bf16, to global memory).
//   chunk_state   the chunks one after another. Block (value head h, 64 of its 128 state rows v), 4
//                 warps; warp w owns state rows v0 + 16 w .. + 15, its S [16 v][128 k] in fp32 registers
//                 (the mma accumulator layout), which are also, rounded to bf16, the A operand of the
//                 products with S (the C → A layout identity): per chunk
//                    V'ᵀ = Uᵀ − S Wᵀ                                   [16 v][64 t]
//                    Oᵀ  = scale (S Qᵀ ⊙ e^γ + V'ᵀ Pᵀ)                  [16 v][64 t]
//                    S   = e^{γ_C} S + (V'ᵀ ⊙ e^{γ_C − γ}) K             [16 v][128 k]
//                 while the next chunk's W, Q, K, P and U land in the other of two shared-memory stages
//                 (cp.async, all 128 threads). Oᵀ goes out through shared memory as 16-byte rows.
//
// Rows past the prompt's T are zero (cp.async's zero fill) with the last row's γ: they change nothing.
// Padding rows of a continued prompt come in with β = g = 0 (dn_prep): the state passes them unchanged.
#include <cuda_bf16.h>

#include "prefill.cuh"
#include "shapes.cuh"

namespace mkp {
namespace {

constexpr int C = GDR_CHUNK;      // rows a chunk
constexpr int HD = mk::DN_DK;     // a head's q, k, v width (= DN_DV: the state is HD x HD)
constexpr int HK = mk::DN_HK, HV = mk::DN_HV, GROUP = mk::DN_GROUP;
constexpr int LD = HD + 8;        // a [C][HD] bf16 tile's row in shared memory (272 B: ldmatrix's 8 rows hit 8 bank groups)
constexpr int LDC = C + 8;        // a [C][C] bf16 tile's (144 B)
constexpr int VB = GDR_STATE_ROWS;  // state rows (v) a chunk_state block owns
constexpr int THREADS = 128;
static_assert(mk::DN_DK == 128 && mk::DN_DV == 128 && C == 64 && VB == 64,
              "the warps' tiles: 4 warps x 16 rows of a 64-row chunk, 128-wide heads, 64 state rows a block");

// ---- PTX: ldmatrix, mma.sync, cp.async ------------------------------------------------------------------
__device__ __forceinline__ uint32_t saddr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
// four 8x8 bf16 matrices; lane l gives the address of row (l & 7) of matrix l >> 3
__device__ __forceinline__ void ldsm4(const void* p, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(saddr(p)));
}
__device__ __forceinline__ void ldsm4t(const void* p, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(saddr(p)));
}
// c += a (16 x 16) b (16 x 8). Lane l = 4 g + t: a0 (g, 2t..), a1 (g + 8, 2t..), a2 (g, 2t + 8..),
// a3 (g + 8, 2t + 8..); b0 (k 2t.., n g), b1 (k 2t + 8.., n g); c0, c1 (g, 2t, 2t + 1), c2, c3 (g + 8, ..)
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// 16 bytes global → shared, asynchronously; zeros where !valid (src is then not read)
__device__ __forceinline__ void cp16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(saddr(dst)), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}
__device__ __forceinline__ float bf(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }
__device__ __forceinline__ uint16_t bits(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }

// The operand tiles of a warp's products, from row-major bf16 tiles in shared memory (row stride LDT):
// A (16 x 16) at (row r0, column k0)
template <int LDT>
__device__ __forceinline__ void load_a(const uint16_t (*t)[LDT], int r0, int k0, uint32_t (&a)[4]) {
  const int lane = threadIdx.x & 31;
  ldsm4(&t[r0 + (lane & 15)][k0 + 8 * (lane >> 4)], a);
}
// B of two 8-column tiles n0 .. n0 + 15 at k0 .. k0 + 15, the tile stored [n][k] (b[0], b[1]: n0's; b[2], b[3]: n0 + 8's)
template <int LDT>
__device__ __forceinline__ void load_b_nk(const uint16_t (*t)[LDT], int n0, int k0, uint32_t (&b)[4]) {
  const int lane = threadIdx.x & 31, m = lane >> 3;
  ldsm4(&t[n0 + 8 * (m >> 1) + (lane & 7)][k0 + 8 * (m & 1)], b);
}
// the same, the tile stored [k][n]
template <int LDT>
__device__ __forceinline__ void load_b_kn(const uint16_t (*t)[LDT], int n0, int k0, uint32_t (&b)[4]) {
  const int lane = threadIdx.x & 31, m = lane >> 3;
  ldsm4t(&t[k0 + 8 * (m & 1) + (lane & 7)][n0 + 8 * (m >> 1)], b);
}
// accumulator tiles 2s, 2s + 1 (columns 16 s .. 16 s + 15 of a 16-row product) as the A operand of k-step s
__device__ __forceinline__ void c_to_a(const float (&lo)[4], const float (&hi)[4], uint32_t (&a)[4]) {
  a[0] = pack(lo[0], lo[1]);
  a[1] = pack(lo[2], lo[3]);
  a[2] = pack(hi[0], hi[1]);
  a[3] = pack(hi[2], hi[3]);
}

// ---- chunk_intra ------------------------------------------------------------------------------------------
struct IntraSmem {
  uint16_t k[C][LD], q[C][LD], v[C][LD];  // the chunk's rows; k and v then scaled: β e^γ k, β v
  uint16_t a[C][LDC];                     // A⁻¹ in bf16 (the W and U products' A operand)
  float m[C][C + 1];                      // M; its blocks below the diagonal then become A⁻¹'s
  float x[4][16][17];                     // the diagonal blocks' inverses
  float r[3][16][17];                     // a block row's sums (step 4b)
  float g[C], beta[C];
};

__global__ void __launch_bounds__(THREADS) gdr_chunk_intra_kernel(const uint16_t* __restrict__ q, const uint16_t* __restrict__ k,
                                                                  const uint16_t* __restrict__ v, const float* __restrict__ g,
                                                                  const float* __restrict__ beta, uint16_t* __restrict__ w_out,
                                                                  uint16_t* __restrict__ u_out, uint16_t* __restrict__ p_out, int T) {
  extern __shared__ __align__(16) uint8_t raw[];
  IntraSmem& s = *reinterpret_cast<IntraSmem*>(raw);
  const int c0 = blockIdx.x * C, h = blockIdx.y, kh = h / GROUP, tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int n = min(C, T - c0), g8 = lane >> 2, t4 = lane & 3;
  // 1. the chunk's k, q, v rows (16 pieces of 16 B a row); g (the last valid row's past n), beta (0 past n)
  for (int i = tid; i < 3 * C * 16; i += THREADS) {
    const int tile = i / (C * 16), r = (i >> 4) % C, piece = i & 15, row = c0 + min(r, n - 1);
    const uint16_t* src = tile == 2 ? v + (static_cast<size_t>(row) * HV + h) * HD
                                    : (tile == 0 ? k : q) + (static_cast<size_t>(row) * HK + kh) * HD;
    uint16_t* dst = tile == 0 ? s.k[r] : tile == 1 ? s.q[r] : s.v[r];
    cp16(dst + 8 * piece, src + 8 * piece, r < n);
  }
  cp_commit();
  if (tid < C) {
    const int row = c0 + min(tid, n - 1);
    s.g[tid] = g[row * HV + h];
    s.beta[tid] = tid < n ? beta[row * HV + h] : 0.f;
  }
  cp_wait<0>();
  __syncthreads();

  // 2. K Kᵀ and Q Kᵀ, warp w's rows 16 w .. 16 w + 15 against columns 0 .. 16 w + 15 (the lower triangle)
  {
    float kk[8][4], qk[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) kk[nt][e] = qk[nt][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < HD / 16; ++ks) {
      uint32_t ak[4], aq[4];
      load_a(s.k, 16 * warp, 16 * ks, ak);
      load_a(s.q, 16 * warp, 16 * ks, aq);
#pragma unroll
      for (int nt = 0; nt < 8; nt += 2) {
        if (nt > 2 * warp) continue;
        uint32_t b[4];
        load_b_nk(s.k, 8 * nt, 16 * ks, b);
        mma(kk[nt], ak, b[0], b[1]);
        mma(kk[nt + 1], ak, b[2], b[3]);
        mma(qk[nt], aq, b[0], b[1]);
        mma(qk[nt + 1], aq, b[2], b[3]);
      }
    }
    // 3. M (i > j) into shared memory, P (i >= j) to global memory; Γ_ij = e^{γ_i − γ_j}
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int i = 16 * warp + g8 + 8 * half, j = 8 * nt + 2 * t4;
        float mv[2], pv[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float gamma = j + e <= i ? __expf(s.g[i] - s.g[j + e]) : 0.f;
          mv[e] = j + e < i ? s.beta[i] * kk[nt][2 * half + e] * gamma : 0.f;
          pv[e] = qk[nt][2 * half + e] * gamma;
        }
        s.m[i][j] = mv[0];
        s.m[i][j + 1] = mv[1];
        if (i < n) *reinterpret_cast<uint32_t*>(p_out + (static_cast<size_t>(c0 + i) * HV + h) * C + j) = pack(pv[0], pv[1]);
      }
  }
  __syncthreads();

  // 5 (ahead of 4: k, q are read). k ← β e^γ k, v ← β v, in bf16 (fla's rounding point before the W, U products)
  for (int i = tid; i < C * HD / 2; i += THREADS) {
    const int r = i / (HD / 2), d = 2 * (i % (HD / 2));
    const float bk = s.beta[r] * __expf(s.g[r]), bv = s.beta[r];
    uint32_t* kp = reinterpret_cast<uint32_t*>(&s.k[r][d]);
    uint32_t* vp = reinterpret_cast<uint32_t*>(&s.v[r][d]);
    const uint32_t kw = *kp, vw = *vp;
    *kp = pack(bf(kw & 0xffffu) * bk, bf(kw >> 16) * bk);
    *vp = pack(bf(vw & 0xffffu) * bv, bf(vw >> 16) * bv);
  }

  // 4a. the diagonal blocks: X_b = (I + M_bb)⁻¹ by forward substitution, thread t < 64 column t & 15 of block t >> 4
  //     (x[r] = δ_rc − Σ_{j<r} M_rj x[j]: the rows above the diagonal come out 0 by themselves)
  if (tid < 64) {
    const int b = tid >> 4, col = tid & 15;
    float x[16];
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      float acc = r == col ? 1.f : 0.f;
#pragma unroll
      for (int j = 0; j < r; ++j) acc -= s.m[16 * b + r][16 * b + j] * x[j];
      x[r] = acc;
    }
#pragma unroll
    for (int r = 0; r < 16; ++r) s.x[b][r][col] = x[r];
  }
  __syncthreads();
  // 4b. block row a = 1..3: A_ab = −X_a Σ_{j=b}^{a−1} M_aj A_jb (A_bb = X_b), b < a
  for (int a = 1; a < 4; ++a) {
    for (int e = tid; e < a * 256; e += THREADS) {
      const int b = e >> 8, r = (e >> 4) & 15, col = e & 15;
      float acc = 0.f;
      for (int j = b; j < a; ++j) {
#pragma unroll
        for (int l = 0; l < 16; ++l)
          acc += s.m[16 * a + r][16 * j + l] * (j == b ? s.x[b][l][col] : s.m[16 * j + l][16 * b + col]);
      }
      s.r[b][r][col] = acc;
    }
    __syncthreads();
    for (int e = tid; e < a * 256; e += THREADS) {
      const int b = e >> 8, r = (e >> 4) & 15, col = e & 15;
      float acc = 0.f;
#pragma unroll
      for (int l = 0; l < 16; ++l) acc -= s.x[a][r][l] * s.r[b][l][col];
      s.m[16 * a + r][16 * b + col] = acc;
    }
    __syncthreads();
  }
  // 4c. A⁻¹ in bf16: the diagonal blocks' X, the blocks below from m, zero above
  for (int e = tid; e < C * C; e += THREADS) {
    const int i = e / C, j = e % C;
    const float x = j > i ? 0.f : (i >> 4) == (j >> 4) ? s.x[i >> 4][i & 15][j & 15] : s.m[i][j];
    s.a[i][j] = bits(x);
  }
  __syncthreads();

  // 6. W = A⁻¹ (β e^γ k), U = A⁻¹ (β v): warp w's rows, k-steps 0 .. w (A⁻¹ is lower triangular)
#pragma unroll 1
  for (int which = 0; which < 2; ++which) {
    const uint16_t(*src)[LD] = which ? s.v : s.k;
    uint16_t* out = which ? u_out : w_out;
    float acc[16][4];
#pragma unroll
    for (int nt = 0; nt < 16; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[nt][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      if (ks > warp) continue;
      uint32_t a[4];
      load_a(s.a, 16 * warp, 16 * ks, a);
#pragma unroll
      for (int nt = 0; nt < 16; nt += 2) {
        uint32_t b[4];
        load_b_kn(src, 8 * nt, 16 * ks, b);
        mma(acc[nt], a, b[0], b[1]);
        mma(acc[nt + 1], a, b[2], b[3]);
      }
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int i = 16 * warp + g8 + 8 * half;
      if (i >= n) continue;
      uint16_t* row = out + (static_cast<size_t>(c0 + i) * HV + h) * HD + 2 * t4;
#pragma unroll
      for (int nt = 0; nt < 16; ++nt)
        *reinterpret_cast<uint32_t*>(row + 8 * nt) = pack(acc[nt][2 * half], acc[nt][2 * half + 1]);
    }
  }
}

// ---- chunk_state ------------------------------------------------------------------------------------------
struct StateStage {
  uint16_t w[C][LD], q[C][LD], k[C][LD];  // the chunk's W, q, k rows
  uint16_t p[C][LDC];                     // its P
  uint16_t u[C][LDC];                     // its U, the block's VB columns
  float g[C];                             // γ (the last valid row's past the prompt)
};
struct StateSmem {
  StateStage st[2];
  uint16_t o[C][LDC];  // the chunk's output, the block's VB columns, on its way out
};

// chunk c's tiles into stage st (one cp.async group)
__device__ __forceinline__ void load_chunk(StateStage& st, int c, int h, int kh, int v0, const uint16_t* __restrict__ q,
                                           const uint16_t* __restrict__ k, const uint16_t* __restrict__ w,
                                           const uint16_t* __restrict__ u, const uint16_t* __restrict__ p,
                                           const float* __restrict__ g, int T) {
  const int tid = threadIdx.x, c0 = c * C, n = min(C, T - c0);
  for (int i = tid; i < 3 * C * 16; i += THREADS) {
    const int tile = i / (C * 16), r = (i >> 4) % C, piece = i & 15, row = c0 + min(r, n - 1);
    const uint16_t* src = tile == 0 ? w + (static_cast<size_t>(row) * HV + h) * HD
                                    : (tile == 1 ? q : k) + (static_cast<size_t>(row) * HK + kh) * HD;
    uint16_t* dst = tile == 0 ? st.w[r] : tile == 1 ? st.q[r] : st.k[r];
    cp16(dst + 8 * piece, src + 8 * piece, r < n);
  }
  for (int i = tid; i < 2 * C * 8; i += THREADS) {
    const int tile = i / (C * 8), r = (i >> 3) % C, piece = i & 7, row = c0 + min(r, n - 1);
    const uint16_t* src = tile == 0 ? p + (static_cast<size_t>(row) * HV + h) * C : u + (static_cast<size_t>(row) * HV + h) * HD + v0;
    cp16((tile == 0 ? st.p[r] : st.u[r]) + 8 * piece, src + 8 * piece, r < n);
  }
  if (tid < C) st.g[tid] = g[(c0 + min(tid, n - 1)) * HV + h];  // (read after the block barrier that follows the wait)
  cp_commit();
}

__global__ void __launch_bounds__(THREADS, 1) gdr_chunk_state_kernel(const uint16_t* __restrict__ q, const uint16_t* __restrict__ k,
                                                                     const uint16_t* __restrict__ w, const uint16_t* __restrict__ u,
                                                                     const uint16_t* __restrict__ p, const float* __restrict__ g,
                                                                     const float* __restrict__ h0, uint16_t* __restrict__ o,
                                                                     float* __restrict__ final_state, float scale, int T) {
  extern __shared__ __align__(16) uint8_t raw[];
  StateSmem& s = *reinterpret_cast<StateSmem*>(raw);
  const int h = blockIdx.x, kh = h / GROUP, v0 = blockIdx.y * VB, tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g8 = lane >> 2, t4 = lane & 3, vw = 16 * warp;  // the warp's rows of the block's VB
  const int chunks = (T + C - 1) / C;
  // S [v][k] of the warp's rows: S[nt][e], v = v0 + vw + g8 + 8 (e >> 1), k = 8 nt + 2 t4 + (e & 1)
  float S[16][4];
  const float* s0 = h0 + (static_cast<size_t>(h) * HD + v0 + vw + g8) * HD + 2 * t4;
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float2 x = *reinterpret_cast<const float2*>(s0 + 8 * half * HD + 8 * nt);
      S[nt][2 * half] = x.x;
      S[nt][2 * half + 1] = x.y;
    }
  load_chunk(s.st[0], 0, h, kh, v0, q, k, w, u, p, g, T);
#pragma unroll 1
  for (int c = 0; c < chunks; ++c) {
    const StateStage& st = s.st[c & 1];
    if (c + 1 < chunks) load_chunk(s.st[(c + 1) & 1], c + 1, h, kh, v0, q, k, w, u, p, g, T);
    else cp_commit();  // (an empty group: the wait below is the same at every chunk)
    cp_wait<1>();
    __syncthreads();
    const int c0 = c * C, n = min(C, T - c0);
    uint32_t sa[8][4];  // S in bf16 as the A operand (k-step ks: k 16 ks .. 16 ks + 15)
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) c_to_a(S[2 * ks], S[2 * ks + 1], sa[ks]);
    // V'ᵀ = Uᵀ − S Wᵀ: vt[nt][e] at (v = vw + g8 + 8 (e >> 1), t = 8 nt + 2 t4 + (e & 1))
    float vt[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) vt[nt][e] = bf(st.u[8 * nt + 2 * t4 + (e & 1)][vw + g8 + 8 * (e >> 1)]);
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      const uint32_t neg[4] = {sa[ks][0] ^ 0x80008000u, sa[ks][1] ^ 0x80008000u, sa[ks][2] ^ 0x80008000u, sa[ks][3] ^ 0x80008000u};
#pragma unroll
      for (int nt = 0; nt < 8; nt += 2) {
        uint32_t b[4];
        load_b_nk(st.w, 8 * nt, 16 * ks, b);
        mma(vt[nt], neg, b[0], b[1]);
        mma(vt[nt + 1], neg, b[2], b[3]);
      }
    }
    // Oᵀ = scale (S Qᵀ ⊙ e^γ + V'ᵀ Pᵀ), V' in bf16 (fla's rounding point)
    {
      float ot[8][4];
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) ot[nt][e] = 0.f;
#pragma unroll
      for (int ks = 0; ks < 8; ++ks)
#pragma unroll
        for (int nt = 0; nt < 8; nt += 2) {
          uint32_t b[4];
          load_b_nk(st.q, 8 * nt, 16 * ks, b);
          mma(ot[nt], sa[ks], b[0], b[1]);
          mma(ot[nt + 1], sa[ks], b[2], b[3]);
        }
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) ot[nt][e] *= __expf(st.g[8 * nt + 2 * t4 + (e & 1)]);
      uint32_t va[4][4];
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) c_to_a(vt[2 * ks], vt[2 * ks + 1], va[ks]);
#pragma unroll
      for (int nt = 0; nt < 8; nt += 2)
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) {
          if (2 * ks > nt) continue;  // (P is lower triangular: t' <= t)
          uint32_t b[4];
          load_b_nk(st.p, 8 * nt, 16 * ks, b);
          mma(ot[nt], va[ks], b[0], b[1]);
          mma(ot[nt + 1], va[ks], b[2], b[3]);
        }
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s.o[8 * nt + 2 * t4 + (e & 1)][vw + g8 + 8 * (e >> 1)] = bits(scale * ot[nt][e]);
    }
    // S = e^{γ_C} S + (V'ᵀ ⊙ e^{γ_C − γ}) K, the scaled V' in bf16 (fla's rounding point)
    {
      const float gl = st.g[n - 1], dl = __expf(gl);
      uint32_t ka[4][4];
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) vt[nt][e] *= __expf(gl - st.g[8 * nt + 2 * t4 + (e & 1)]);
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) c_to_a(vt[2 * ks], vt[2 * ks + 1], ka[ks]);
#pragma unroll
      for (int nt = 0; nt < 16; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) S[nt][e] *= dl;
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
#pragma unroll
        for (int nt = 0; nt < 16; nt += 2) {
          uint32_t b[4];
          load_b_kn(st.k, 8 * nt, 16 * ks, b);
          mma(S[nt], ka[ks], b[0], b[1]);
          mma(S[nt + 1], ka[ks], b[2], b[3]);
        }
    }
    __syncthreads();  // s.o whole; every warp done with this stage (the next chunk's loads may overwrite it)
    for (int i = tid; i < C * (VB / 8); i += THREADS) {
      const int r = i / (VB / 8), piece = i % (VB / 8);
      if (r < n)
        *reinterpret_cast<uint4*>(o + (static_cast<size_t>(c0 + r) * HV + h) * HD + v0 + 8 * piece) =
            *reinterpret_cast<const uint4*>(&s.o[r][8 * piece]);
    }
  }
  cp_wait<0>();
  float* f0 = final_state + (static_cast<size_t>(h) * HD + v0 + vw + g8) * HD + 2 * t4;
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int half = 0; half < 2; ++half)
      *reinterpret_cast<float2*>(f0 + 8 * half * HD + 8 * nt) = make_float2(S[nt][2 * half], S[nt][2 * half + 1]);
}

// the kernels' dynamic shared memory (over the 48 KB default), set once per device
cudaError_t allow_smem(int device) {
  static bool done[64] = {};
  if (device < 0 || device >= 64) return cudaErrorInvalidDevice;
  if (done[device]) return cudaSuccess;
  cudaError_t e = cudaFuncSetAttribute(gdr_chunk_intra_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sizeof(IntraSmem));
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(gdr_chunk_state_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sizeof(StateSmem));
  done[device] = e == cudaSuccess;
  return e;
}

}  // namespace

cudaError_t gated_delta_rule_chunked(const uint16_t* q, const uint16_t* k, const uint16_t* v, const float* g, const float* beta,
                                     const float* h0, uint16_t* w, uint16_t* u, uint16_t* p, uint16_t* o, float* final_state,
                                     float scale, int T, cudaStream_t s) {
  if (T < 1) return cudaErrorInvalidValue;
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = allow_smem(device);
  if (e != cudaSuccess) return e;
  gdr_chunk_intra_kernel<<<dim3((T + C - 1) / C, HV), THREADS, sizeof(IntraSmem), s>>>(q, k, v, g, beta, w, u, p, T);
  gdr_chunk_state_kernel<<<dim3(HV, HD / VB), THREADS, sizeof(StateSmem), s>>>(q, k, w, u, p, g, h0, o, final_state, scale, T);
  return cudaGetLastError();
}

}  // namespace mkp
