// Prefill kernels of the megakernel tier (interface and layouts: prefill.cuh).
//
// Every kernel but the copies and the lm_head is "one block per token": a block owns one row
// of the [T, ...] activations, each thread 8 consecutive bf16 values (one 16-byte load), and
// a head's reduction is a shuffle over the lanes that hold it. Arithmetic and rounding points
// follow reference/ops.py in bf16 (fp32 inside, rounded where torch rounds), but where a plan folds a
// norm into the next GEMM's weights (prefill.py folded_weights): the weights are rounded instead of the
// normed row, the product is rounded before its 1 / rms (attn_prep's gates and v once more after it),
// and the residual add is the GEMM's (one rounding).
#include <climits>
#include <cuda_bf16.h>

#include "mma_sync.cuh"
#include "prefill.cuh"
#include "shapes.cuh"

namespace mkp {
namespace {

// the shapes (shapes.cuh), under this file's names
using mk::D;
using mk::DN_CONV;
using mk::DN_HK;
using mk::DN_HV;
using mk::DN_KEY;
using mk::DN_VAL;
using mk::DN_WIN;
using mk::FA_GROUP;
using mk::FA_HD;
using mk::FA_HKV;
using mk::FA_HQ;
using mk::FA_OIN;
using mk::FA_QKV;
using mk::INTER;
using mk::VOCAB;
constexpr int DN_HD = mk::DN_DK;  // = DN_DV: the gated norm's group and the state's side
static_assert(mk::DN_DK == mk::DN_DV, "a DeltaNet head's q, k and v have one width");
constexpr int DN_Z = mk::DN_WIN_Z, DN_B = mk::DN_WIN_B, DN_A = mk::DN_WIN_A;
constexpr int DN_STATE = mk::DN_STATE_FLOATS;  // floats per layer
constexpr int FA_K = mk::FA_WIN_K, FA_V = mk::FA_WIN_V, FA_ROT_HALF = mk::FA_ROT / 2;

__device__ __forceinline__ float rnd(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
// SiLU and the sigmoid by the fast exp (ex2.approx) and division (rcp.approx): ~4 instructions instead of ~16 for
// expf and an IEEE division; a few fp32 ulps, far below the bf16 rounding that follows every use (NOTES "Prefill" v13)
__device__ __forceinline__ float siluf_(float x) { return __fdividef(x, 1.f + __expf(-x)); }
__device__ __forceinline__ float sigmoidf_(float x) { return __fdividef(1.f, 1.f + __expf(-x)); }
__device__ __forceinline__ float bf(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }

__device__ __forceinline__ void unpack8(const uint4 v, float (&f)[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

__device__ __forceinline__ void load8(const uint16_t* p, float (&f)[8]) { unpack8(*reinterpret_cast<const uint4*>(p), f); }

__device__ __forceinline__ void store8(uint16_t* p, const float (&f)[8]) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t a = __bfloat16_as_ushort(__float2bfloat16_rn(f[2 * i]));
    const uint32_t b = __bfloat16_as_ushort(__float2bfloat16_rn(f[2 * i + 1]));
    w[i] = a | (b << 16);
  }
  *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}

// sum over groups of `width` consecutive lanes (width a power of two <= 32)
template <int WIDTH>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int o = WIDTH / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <class T>
__device__ __forceinline__ T* table_ptr(const int64_t* table, int i) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(table[i]));
}
// the prefill's first position (after the 5 pointers; written by the host before each prefill)
__device__ __forceinline__ int table_start(const int64_t* table) { return static_cast<int>(table[ST_START]); }
// the prompt's valid tokens: rows t >= valid of this prefill are padding
__device__ __forceinline__ int table_valid(const int64_t* table) { return static_cast<int>(table[ST_VALID]); }
// bind found an id outside the vocabulary: the state is not written (prefill.cuh ST_REFUSED)
__device__ __forceinline__ bool table_refused(const int64_t* table) { return table[ST_REFUSED] != 0; }

// 1 / rms of a [D] row from each thread's sum of squares `ss` of its values (the warps' sums in warp
// order); every thread of the block calls it at most once (one block barrier, none after: a second call
// could overwrite `part` before every warp has read it)
__device__ __forceinline__ float block_rms_inv_of(float ss, float eps) {
  __shared__ float part[32];
  ss = group_sum<32>(ss);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = ss;
  __syncthreads();
  float tot = part[0];
  for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w) tot += part[w];
  return rsqrtf(tot / D + eps);
}

// 1 / rms of a [D] bf16 row read by the block, 8 values a thread at a time (a folded norm: the norm's weight
// in the next GEMM's weights, its 1 / rms applied by that GEMM's consumer); once a block, as block_rms_inv_of
__device__ __forceinline__ float block_rms_inv(const uint16_t* __restrict__ row, float eps) {
  float ss = 0.f;
  for (int i = threadIdx.x * 8; i < D; i += blockDim.x * 8) {
    float v[8];
    load8(row + i, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) ss += v[j] * v[j];
  }
  return block_rms_inv_of(ss, eps);
}

__device__ __forceinline__ void scale8(float (&f)[8], float s) {
#pragma unroll
  for (int j = 0; j < 8; ++j) f[j] *= s;
}

// ---- a plan's per-prompt words (prefill.cuh BindWord): thread i < T writes id row i (the prompt's, 0 for
// one outside the vocabulary, 0 past n); block 0's first threads the table and flash's lengths, and all of
// block 0 (256 threads) the ids' min and max where asked (into the words and the host's pinned range, then, after a
// system-scope fence, the launch's seq there: what the host polls), and the table's ST_REFUSED where they fall
// outside ------------------------------------------------------------------------------------------------------
__global__ void __launch_bounds__(BIND_THREADS) bind_kernel(const int64_t* ids, int64_t* words, const BindArgs a) {
  const int n = static_cast<int>(a.table[ST_VALID]), start = static_cast<int>(a.table[ST_START]);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < a.T; i += gridDim.x * blockDim.x) {
    const int64_t id = i < n ? ids[i] : 0;  // (ids may be words itself: each thread reads the row it writes)
    words[i] = id >= 0 && id < VOCAB ? id : 0;
  }
  if (blockIdx.x != 0) return;
  const int t = threadIdx.x;
  if (t < ST_N) words[a.T + t] = a.table[t];
  int* w32 = reinterpret_cast<int*>(words + a.T + ST_N);
  if (t == 0) {
    w32[BIND_USED] = start + n;
    w32[BIND_CU_Q] = 0;
    w32[BIND_CU_Q + 1] = n;
    w32[BIND_CU_NEW] = start;
    w32[BIND_CU_NEW + 1] = start + n;
  }
  for (int p = t; a.pieces > 1 && p < a.pieces; p += BIND_THREADS) {  // piece p: positions [p piece, (p + 1) piece)
    const int end = min(start, min((p + 1) * a.piece, a.max_seq));       // (those before the start)
    w32[BIND_USED_PIECES + p] = max(0, end - p * a.piece);
  }
  if (a.range_at < 0) return;
  long long lo = LLONG_MAX, hi = LLONG_MIN;
  for (int i = t; i < n; i += BIND_THREADS) {
    const long long id = ids[i];
    lo = min(lo, id);
    hi = max(hi, id);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, o));
    hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, o));
  }
  __shared__ long long part[2][BIND_THREADS / 32];
  if ((t & 31) == 0) part[0][t >> 5] = lo, part[1][t >> 5] = hi;
  __syncthreads();
  if (t == 0) {
    for (int w = 1; w < BIND_THREADS / 32; ++w) lo = min(lo, part[0][w]), hi = max(hi, part[1][w]);
    words[a.range_at] = lo;
    words[a.range_at + 1] = hi;
    a.host_range[0] = lo;
    a.host_range[1] = hi;
    __threadfence_system();  // (the range before the word the host polls)
    *reinterpret_cast<volatile int64_t*>(a.host_range + 2) = a.seq;
    if (lo < 0 || hi >= VOCAB) words[a.T + ST_REFUSED] = 1;  // (after the barrier: thread ST_REFUSED wrote the host's 0)
  }
}

// ---- add + RMSNorm: block = one token, D / 8 threads x 8 values ---------------------------
constexpr int NORM_THREADS = D / 8;
static_assert(D % 256 == 0 && NORM_THREADS <= 1024, "add_rms_norm: whole warps of 8 values a thread");
__global__ void __launch_bounds__(NORM_THREADS) add_rms_norm_kernel(const float* __restrict__ x32,
                                                           int splits, int T, const int64_t* __restrict__ ids,
                                                           const uint16_t* __restrict__ embed, uint16_t* residual,
                                                           const uint16_t* __restrict__ w, uint16_t* __restrict__ out,
                                                           float eps) {
  const int t = blockIdx.x, i = threadIdx.x * 8;
  float r[8];
  if (ids != nullptr) {
    load8(embed + ids[t] * D + i, r);
  } else {
    load8(residual + static_cast<size_t>(t) * D + i, r);
    if (x32 != nullptr) {  // a split-K GEMM's fp32 partials [splits][T][D]: their sum, one rounding
      float xs[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
      for (int k = 0; k < splits; ++k) {
        const float4* src = reinterpret_cast<const float4*>(x32 + (static_cast<size_t>(k) * T + t) * D + i);
        const float4 a = src[0], b = src[1];
        xs[0] += a.x; xs[1] += a.y; xs[2] += a.z; xs[3] += a.w; xs[4] += b.x; xs[5] += b.y; xs[6] += b.z; xs[7] += b.w;
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) r[j] = rnd(r[j] + xs[j]);
    }
  }
  if (ids != nullptr || x32 != nullptr) store8(residual + static_cast<size_t>(t) * D + i, r);
  float ss = 0.f;
#pragma unroll
  for (int j = 0; j < 8; ++j) ss += r[j] * r[j];
  const float inv = block_rms_inv_of(ss, eps);
  float wv[8], y[8];
  load8(w + i, wv);
#pragma unroll
  for (int j = 0; j < 8; ++j) y[j] = (r[j] * inv) * (1.f + wv[j]);
  store8(out + static_cast<size_t>(t) * D + i, y);
}

// ---- DeltaNet inputs: 1-D grid over the rule's R rows (the T rows of proj, then padding up to the rule's
// chunk: zeros, beta and g's step 0). With A (FlashQLA's chunk matrices, R a whole number of 64-row chunks) the first
// R / 64 x DN_HK blocks are WY blocks (dn_wy below: a chunk x a key head's k rows and their A). Then ceil(R / 64) gate
// blocks: block x owns rows x*64 .. x*64 + 63 and writes their beta and g (a padding row: 0), g itself (g_chunk = 0)
// or summed over the rows of its 64-row chunk up to each row (g_chunk = 64: what FlashQLA's kernels read):
// warp w owns value heads w, w + 8, ..., a lane rows 2 lane and 2 lane + 1 of each (a warp scan). Each later block is one token x one
// pass of 2048 conv channels (pass p covers channels p*2048 .. p*2048 + 2047 of [q | k | v], DN_CONV / 2048 passes,
// the k passes left to the WY blocks where they run), 256 threads; thread owns channels p*2048 + tid*8 .. +8, a head = 16
// consecutive threads; q and k are l2-normed per head; its loads (its weights and the 4 inputs) are
// independent: one round trip; a token past T stores zeros. Every block also copies its part of the layer's
// delta-rule state into h0 (StateIn; a short prompt's grid widened for it). -----------------------------
static_assert(DN_KEY % 2048 == 0 && DN_VAL % 2048 == 0, "dn_prep: a pass holds one of q, k, v");
// beta of value head h from its row of proj (a padding row's 0): the gate blocks' and the WY blocks' (the same bits)
__device__ __forceinline__ float dn_beta(const uint16_t* row, int h, bool pad) {
  return pad ? 0.f : rnd(sigmoidf_(bf(row[DN_B + h])));
}

// Where the conv reads row tt's 8 channels c .. c + 7 of its input: proj's row tt, or before position 0 the ring's column
__device__ __forceinline__ const uint4* dn_conv_src(const uint16_t* proj, const uint16_t* ring, int c, int tt, int start) {
  return reinterpret_cast<const uint4*>(tt >= 0 ? proj + static_cast<size_t>(tt) * DN_WIN + c
                                                : ring + static_cast<size_t>((start + tt) & 3) * DN_CONV + c);
}

// The conv weights of 8 channels c .. c + 7 from w = conv_w + 4 c (or a copy of them): conv_w [6144][4], so channels
// c..c+7 are 32 consecutive values, cw[m][n] = w[c + 2m + n/4][n%4]
__device__ __forceinline__ void dn_conv_weights(const uint16_t* w, float (&cw)[4][8]) {
#pragma unroll
  for (int m = 0; m < 4; ++m) load8(w + 8 * m, cw[m]);
}

// The causal conv of one row's 8 conv channels, tap by tap: acc += tap j's weights (of cw: dn_conv_weights) times x,
// the row's input at t - 3 + j (8 bf16), taps in order from acc = 0; then dn_conv_silu. A token block's and a WY
// block's (the same bits).
__device__ __forceinline__ void dn_conv_tap(const float (&cw)[4][8], int j, const uint4 x, float (&acc)[8]) {
  float xv[8];
  unpack8(x, xv);
#pragma unroll
  for (int e = 0; e < 8; ++e) acc[e] += cw[e >> 1][(e & 1) * 4 + j] * xv[e];
}
__device__ __forceinline__ void dn_conv_silu(const float (&acc)[8], float (&y)[8]) {
#pragma unroll
  for (int e = 0; e < 8; ++e) y[e] = rnd(siluf_(rnd(acc[e])));
}

// q's or k's l2norm over a head's 128 channels: 8 a thread, the head's 16 consecutive lanes
__device__ __forceinline__ void dn_l2norm8(float (&y)[8]) {
  float ss = 0.f;
#pragma unroll
  for (int e = 0; e < 8; ++e) ss += y[e] * y[e];
  const float inv = rsqrtf(group_sum<16>(ss) + 1e-6f);
#pragma unroll
  for (int e = 0; e < 8; ++e) y[e] *= inv;
}
__device__ __forceinline__ void dn_gates(const uint16_t* __restrict__ proj, const int64_t* __restrict__ table,
                                         const uint16_t* __restrict__ a_log, const uint16_t* __restrict__ dt_bias,
                                         float* __restrict__ g, float* __restrict__ beta, int g_chunk, int first, int T, int R) {
  static_assert(DN_GATE_ROWS == 64, "dn_prep: a gate block's rows are a warp's 32 lanes x 2");
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, valid = table_valid(table);
  for (int h = warp; h < DN_HV; h += 8) {  // (no shared memory: it would shrink the conv blocks' L1)
    const float decay = -expf(bf(a_log[h])), bias = bf(dt_bias[h]);
    float gv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int t = first + 2 * lane + r;
      gv[r] = 0.f;
      if (t < T) {
        const uint16_t* row = proj + static_cast<size_t>(t) * DN_WIN;
        const float x = bf(row[DN_A + h]) + bias;
        const float softplus = x > 20.f ? x : log1pf(expf(x));
        const bool pad = t >= valid;  // (no decay, no update: the state passes the row unchanged)
        gv[r] = pad ? 0.f : decay * softplus;
        beta[t * DN_HV + h] = dn_beta(row, h, pad);
        if (g_chunk == 0) g[t * DN_HV + h] = gv[r];
      } else if (t < R) {  // a row past the in-projection's, up to the rule's chunk: padding as above, no proj to read
        beta[t * DN_HV + h] = 0.f;
        if (g_chunk == 0) g[t * DN_HV + h] = 0.f;
      }
    }
    if (g_chunk == 0) continue;
    const float pair = gv[0] + gv[1];  // inclusive scan of the 64 rows: a lane's pair, then the warp's
    float run = pair;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const float up = __shfl_up_sync(0xffffffffu, run, o);
      if (lane >= o) run += up;
    }
    float sum[2] = {run - pair + gv[0], run};  // rows first + 2 lane and + 1
    if (T < R && first < T && T < first + DN_GATE_ROWS) {  // rows past T in row T - 1's chunk hold its sum, bit for bit
      const int last = T - 1 - first;  // (the scan's order differs from lane to lane: their own sums would not; a later chunk's rows sum to 0)
      const float at_last = __shfl_sync(0xffffffffu, sum[last & 1], last >> 1);
#pragma unroll
      for (int r = 0; r < 2; ++r)
        if (first + 2 * lane + r >= T) sum[r] = at_last;
    }
    const int t = first + 2 * lane;
    if (t < R) g[t * DN_HV + h] = sum[0];
    if (t + 1 < R) g[(t + 1) * DN_HV + h] = sum[1];
  }
}

// The layer's delta-rule state from its slot of the decode state into the rule's initial state h0 (one layer's: the
// layers take turns with it), 16 bytes at element e and e + the grid's threads (dn_prep's grid has at least half as
// many threads as the state has float4s: dn_prep()): loaded at a block's start, stored at its end, so the copy adds no
// round trip of its own.
struct StateIn {
  static constexpr int N4 = DN_STATE / 4;
  float4 x[2];
  int e, n;
  // `first`: the blocks before it (dn_prep's WY blocks) copy nothing, so the registers are theirs
  __device__ __forceinline__ StateIn(const int64_t* table, int slot, int first)
      : e((blockIdx.x - first) * blockDim.x + threadIdx.x), n((gridDim.x - first) * blockDim.x) {
    const float4* src = table_ptr<const float4>(table, ST_DN) + static_cast<size_t>(slot) * N4;
    if (e < N4) x[0] = src[e];
    if (e + n < N4) x[1] = src[e + n];
  }
  __device__ __forceinline__ void store(float4* h0) const {
    if (e < N4) h0[e] = x[0];
    if (e + n < N4) h0[e + n] = x[1];
  }
};

// ---- a WY block of dn_prep (given A, FlashQLA's chunk matrices): block = one 64-row chunk x one key head, 256
// threads. The key head's conv weights and input rows t0 - 3 .. t0 + 63 (those < T) first into shared memory; then
// thread i owns channels 8 (i % 16) .. + 8 of the head's 128 in rows i / 16 + 16 r (r < 4): their conv, SiLU and l2norm
// as a k pass's token block makes them (dn_conv_tap, dn_l2norm8: the same bits), stored as k and into shared
// memory; then S = K Kᵀ (64 x 64, fp32) by mma.sync m16n8k16, warp w rows 16 (w / 2) .. + 16 and columns 32 (w % 2) ..
// + 32 of it; then, for each value head h of the key head, what FlashQLA's kkt_solve writes: the inverse of M = I + L,
// L the strictly lower part of diag(beta_h) S (wy_invert: as kkt_solve, the diagonal blocks in fp32 on the CUDA cores, the
// block products on the tensor cores in tf32), as bf16 A [R][DN_HV][64] (row t, column j of t's chunk: 1 on the
// diagonal, 0 above). A row past T has k = 0 and beta = 0: a row of I. (The decay is not in A: the rule applies it, as
// FlashQLA's does.) The block's instructions count, not only its latency: it runs beside dn_prep's token blocks, which
// are issue-bound (NOTES "Prefill" v26: with the products on the CUDA cores it cost more than kkt_solve's launch; v28:
// with them on the tensor cores dn_prep with A is 13.8 µs at 520 rows, dn_prep + the rule 36.4 -> 32.9 µs a layer). ----
constexpr int WY_ROWS = DN_GATE_ROWS;  // FlashQLA's chunk: the gate blocks' (g summed over it)
constexpr int WY_KLD = DN_HD + 8;    // the K tile's row stride (bf16): the fragments' 32-bit loads free of bank conflicts
constexpr int WY_XLD = WY_ROWS + 4;  // the fp32 matrix's row stride (4 mod 32 banks: the tf32 A fragments conflict-free)
static_assert(WY_ROWS == 64 && DN_HD == 128, "dn_prep's WY blocks: FlashQLA's 64-row chunk, a head of 128");
struct WySmem {
  union {
    uint16_t in[(WY_ROWS + 3) * WY_KLD];  // the conv's input rows t0 - 3 .. t0 + 63 of the key head's channels
    float x[WY_ROWS * WY_XLD];            // L, then M^-1 in place (the input rows read by then)
  };
  uint16_t k[WY_ROWS * WY_KLD];  // the chunk's k rows, the mma's operands
  float diag[4][16][17];  // the inverses of the four 16 x 16 diagonal blocks (wy_invert)
  float beta[mk::DN_GROUP][WY_ROWS];
  uint16_t conv_w[DN_HD * 4];  // the key head's conv weights (read by every row: a copy here spares a row's registers)
};

__device__ __forceinline__ uint32_t tf32(float v) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
  return r;
}
__device__ __forceinline__ void mma_1688_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// acc = the 16 x 8 tile (mt, nt) of P · Q (P: rows of x from p, K columns; Q: K rows of x from q), the operands rounded to
// tf32 as kkt_solve's T.gemm of fp32 operands takes them; a fragment's rows g and g + 8, columns 2 tq and 2 tq + 1 (PTX's
// m16n8k8: A's columns tq and tq + 4, B's rows tq and tq + 4)
template <int K>
__device__ __forceinline__ void wy_tile(const float* p, const float* q, int mt, int nt, float (&acc)[4]) {
  const int lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
  const float* pr = p + (16 * mt + g) * WY_XLD + tq;
  const float* qc = q + tq * WY_XLD + 8 * nt + g;
#pragma unroll
  for (int k = 0; k < K; k += 8) {
    const uint32_t a[4] = {tf32(pr[k]), tf32(pr[8 * WY_XLD + k]), tf32(pr[k + 4]), tf32(pr[8 * WY_XLD + k + 4])};
    mma_1688_tf32(acc, a, tf32(qc[k * WY_XLD]), tf32(qc[(k + 4) * WY_XLD]));
  }
}
__device__ __forceinline__ void wy_tile_store(float* p, int mt, int nt, const float (&acc)[4]) {
  const int lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
  float* r = p + (16 * mt + g) * WY_XLD + 8 * nt + 2 * tq;
  r[0] = acc[0];
  r[1] = acc[1];
  r[8 * WY_XLD] = acc[2];
  r[8 * WY_XLD + 1] = acc[3];
}

// The lower left N x N block C of each diagonal 2N x 2N block [[X0, 0], [C, X1]] of x (X0 and X1 already inverted in
// place) replaced by -X1 C X0: the block's inverse. Two products on the tensor cores (tf32, fp32 sums: kkt_solve's), warp
// w one 16 x 8 tile of each (N = 16: 2 blocks x 2 tiles; N = 32: 8 tiles), between block barriers.
template <int N>
__device__ __forceinline__ void wy_combine(float* x) {
  constexpr int TM = N / 16, TN = N / 8, TILES = WY_ROWS / (2 * N) * TM * TN;
  static_assert(TILES <= 8, "wy_combine: a tile a warp");
  const int warp = threadIdx.x / 32, mt = warp / TN % TM, nt = warp % TN, o = 2 * N * (warp / (TM * TN));
  const bool mine = warp < TILES;
  float* c = x + (o + N) * WY_XLD + o;  // C, then C X0, then -X1 C X0
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  if (mine) wy_tile<N>(c, x + o * WY_XLD + o, mt, nt, acc);  // C X0
  __syncthreads();
  if (mine) wy_tile_store(c, mt, nt, acc);
  __syncthreads();
  float acc2[4] = {0.f, 0.f, 0.f, 0.f};
  if (mine) wy_tile<N>(c + N, c, mt, nt, acc2);  // X1 (C X0): X1's rows are C's, N columns on
  __syncthreads();
  if (mine) {
    const float neg[4] = {0.f - acc2[0], 0.f - acc2[1], 0.f - acc2[2], 0.f - acc2[3]};  // (+0 where the product is 0)
    wy_tile_store(c, mt, nt, neg);
  }
  __syncthreads();
}

// x (WY_ROWS x WY_ROWS, L strictly lower, zeros on and above the diagonal) <- (I + L)^-1 (ones on the diagonal, zeros
// above): the four 16 x 16 diagonal blocks by forward substitution (thread b * 16 + col < 64: column col of block b,
// into d, then back into x), then the 32 x 32 and the 64 x 64 (wy_combine)
// (not inlined: inlined into the loop over a key head's value heads, 4B / 9B, it spilled at 48 registers)
__device__ __noinline__ void wy_invert(float* x, float (*d)[16][17]) {
  const int tid = threadIdx.x, b = tid / 16, col = tid % 16;
  if (tid < 64) {
    const float* l = x + 16 * b * (WY_XLD + 1);
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      float acc = i == col ? 1.f : 0.f;
#pragma unroll
      for (int j = 0; j < i; ++j) acc -= l[i * WY_XLD + j] * d[b][j][col];
      d[b][i][col] = acc;
    }
  }
  __syncthreads();
  for (int e = tid; e < 4 * 16 * 16; e += blockDim.x) {
    const int bb = e / 256, i = e / 16 % 16, j = e % 16;
    x[(16 * bb + i) * WY_XLD + 16 * bb + j] = d[bb][i][j];
  }
  __syncthreads();
  wy_combine<16>(x);
  wy_combine<32>(x);
}

__device__ __forceinline__ void dn_wy(const uint16_t* __restrict__ proj, const uint16_t* __restrict__ ring,
                                      const uint16_t* __restrict__ conv_w, uint16_t* __restrict__ k,
                                      uint16_t* __restrict__ A, int chunk, int hk, int T, int valid, int start, WySmem& sm) {
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, t0 = chunk * WY_ROWS, part = (tid % 16) * 8;
  const int c = DN_KEY + hk * DN_HD;  // (the key head's first conv channel)
  static_assert(DN_HD * 4 == 2 * 256, "dn_wy: the head's conv weights, 4 bytes a thread");
  reinterpret_cast<uint32_t*>(sm.conv_w)[tid] = reinterpret_cast<const uint32_t*>(conv_w + 4 * c)[tid];
  constexpr int PIECES = (WY_ROWS + 3) * 16, FLIGHT = 3;  // the input rows the chunk's rows < T read, 16 bytes a piece
  for (int e0 = tid; e0 < PIECES; e0 += FLIGHT * 256) {  // (FLIGHT loads a thread in flight, then their stores: 5 spill)
    uint4 buf[FLIGHT];
#pragma unroll
    for (int u = 0; u < FLIGHT; ++u) {
      const int e = e0 + 256 * u, tt = t0 - 3 + e / 16;
      if (e < PIECES && tt < T) buf[u] = __ldg(dn_conv_src(proj, ring, c + e % 16 * 8, tt, start));
    }
#pragma unroll
    for (int u = 0; u < FLIGHT; ++u) {
      const int e = e0 + 256 * u, tt = t0 - 3 + e / 16;
      if (e < PIECES && tt < T) *reinterpret_cast<uint4*>(sm.in + e / 16 * WY_KLD + e % 16 * 8) = buf[u];
    }
  }
  __syncthreads();
#pragma unroll 1
  for (int r = 0; r < WY_ROWS / 16; ++r) {  // the chunk's k rows of key head hk (a row past T: 0 x rsqrt(1e-6) = 0)
    const int i = tid / 16 + 16 * r, t = t0 + i;
    float cw[4][8], acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f}, y[8];
    dn_conv_weights(sm.conv_w + 4 * part, cw);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      dn_conv_tap(cw, j, t < T ? *reinterpret_cast<const uint4*>(sm.in + (i + j) * WY_KLD + part) : make_uint4(0, 0, 0, 0), acc);
    dn_conv_silu(acc, y);
    dn_l2norm8(y);
    store8(k + static_cast<size_t>(t) * DN_KEY + hk * DN_HD + part, y);
    store8(sm.k + i * WY_KLD + part, y);
  }
  for (int e = tid; e < mk::DN_GROUP * WY_ROWS; e += blockDim.x) {  // beta of the chunk's rows, each value head of hk
    const int gi = e / WY_ROWS, t = t0 + e % WY_ROWS;
    sm.beta[gi][e % WY_ROWS] = t < T ? dn_beta(proj + static_cast<size_t>(t) * DN_WIN, hk * mk::DN_GROUP + gi, t >= valid) : 0.f;
  }
  __syncthreads();
  // per value head gi of the key head: S = K Kᵀ (made again for each: its fragments are not held across the inverse),
  // a fragment's rows g and g + 8 of the warp's 16, its columns 2 tq and 2 tq + 1 of each 8 (PTX's m16n8k16), then
  // L = strict_lower(diag(beta) S) into x
  const int g = lane / 4, tq = lane % 4, m0 = 16 * (warp / 2), n0 = 32 * (warp % 2);
#pragma unroll 1
  for (int gi = 0; gi < mk::DN_GROUP; ++gi) {
    float s[4][4] = {};
    constexpr int LD = WY_KLD / 2;  // (32-bit words a row)
    const uint32_t* k32 = reinterpret_cast<const uint32_t*>(sm.k);
#pragma unroll
    for (int ks = 0; ks < DN_HD / 16; ++ks) {
      const int kw = 8 * ks + tq;
      const uint32_t a[4] = {k32[(m0 + g) * LD + kw], k32[(m0 + g + 8) * LD + kw], k32[(m0 + g) * LD + kw + 4],
                             k32[(m0 + g + 8) * LD + kw + 4]};
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        const int row = n0 + 8 * n + g;  // (Bᵀ's row = K's row: k contiguous, as .col takes it)
        mk::mma_bf16(s[n], a[0], a[1], a[2], a[3], k32[row * LD + kw], k32[row * LD + kw + 4]);
      }
    }
#pragma unroll
    for (int n = 0; n < 4; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = m0 + g + 8 * (e / 2), j = n0 + 8 * n + 2 * tq + e % 2;
        sm.x[i * WY_XLD + j] = j < i ? s[n][e] * sm.beta[gi][i] : 0.f;
      }
    }
    __syncthreads();
    wy_invert(sm.x, sm.diag);
    const int h = hk * mk::DN_GROUP + gi;
    for (int e = tid; e < WY_ROWS * WY_ROWS / 8; e += blockDim.x) {  // 16 bytes of a row a thread
      const int i = e / 8, j0 = e % 8 * 8;
      float y[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) y[u] = j0 + u <= i ? sm.x[i * WY_XLD + j0 + u] : 0.f;
      store8(A + (static_cast<size_t>(t0 + i) * DN_HV + h) * WY_ROWS + j0, y);
    }
    __syncthreads();  // (x read before the next value head's L)
  }
}

// 5 blocks an SM on Hopper (48 registers: the token blocks' occupancy as before the WY blocks, which fit it there without
// a spill); elsewhere (sm_80 / sm_86: 48 registers would spill) 4
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define MKP_DN_PREP_MIN_BLOCKS 4
#else
#define MKP_DN_PREP_MIN_BLOCKS 5
#endif
__global__ void __launch_bounds__(256, MKP_DN_PREP_MIN_BLOCKS) dn_prep_kernel(const uint16_t* __restrict__ proj, const int64_t* __restrict__ table,
                                                      int slot, const uint16_t* __restrict__ conv_w,
                                                      const uint16_t* __restrict__ a_log, const uint16_t* __restrict__ dt_bias,
                                                      uint16_t* __restrict__ q, uint16_t* __restrict__ k,
                                                      uint16_t* __restrict__ v, float* __restrict__ g,
                                                      float* __restrict__ beta, float4* __restrict__ h0,
                                                      uint16_t* __restrict__ A, int g_chunk, int T, int R) {
  const uint16_t* ring = table_ptr<const uint16_t>(table, ST_CONV) + static_cast<size_t>(slot) * 4 * DN_CONV;
  const int wy_blocks = A != nullptr ? R / WY_ROWS * DN_HK : 0, start = table_start(table);
  int b = blockIdx.x;
  if (b < wy_blocks) {  // (first in the grid: the longest blocks start in the first wave; they copy none of the state)
    extern __shared__ __align__(16) unsigned char dn_smem[];
    dn_wy(proj, ring, conv_w, k, A, b / DN_HK, b % DN_HK, T, table_valid(table), start, *reinterpret_cast<WySmem*>(dn_smem));
    return;
  }
  const StateIn state_in(table, slot, wy_blocks);
  b -= wy_blocks;
  const int gate_blocks = (R + DN_GATE_ROWS - 1) / DN_GATE_ROWS;
  if (b < gate_blocks) {
    dn_gates(proj, table, a_log, dt_bias, g, beta, g_chunk, b * DN_GATE_ROWS, T, R);
    state_in.store(h0);
    return;
  }
  b -= gate_blocks;
  constexpr int QP = DN_KEY / 2048;  // the q passes (as many k passes follow, then v's)
  const int t = b % R, tid = threadIdx.x, p = b / R + (A != nullptr && b / R >= QP ? QP : 0);  // (given A: no k passes)
  if (p >= DN_CONV / 2048) {  // (a block of the widened grid of an op call's short prompt: the state's copy only)
    state_in.store(h0);
    return;
  }
  uint16_t* dst = p < QP       ? q + static_cast<size_t>(t) * DN_KEY + p * 2048 + tid * 8
                  : p < 2 * QP ? k + static_cast<size_t>(t) * DN_KEY + (p - QP) * 2048 + tid * 8
                               : v + static_cast<size_t>(t) * DN_VAL + (p - 2 * QP) * 2048 + tid * 8;
  if (t >= T) {  // a row past the in-projection's, up to the rule's chunk: zeros (finite: the rule multiplies them by beta = 0)
    *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
    state_in.store(h0);
    return;
  }
  float y[8];
  const int c = p * 2048 + tid * 8;
  float cw[4][8], acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  dn_conv_weights(conv_w + 4 * c, cw);
#pragma unroll
  for (int j = 0; j < 4; ++j) dn_conv_tap(cw, j, *dn_conv_src(proj, ring, c, t - 3 + j, start), acc);
  dn_conv_silu(acc, y);
  if (p < 2 * QP) dn_l2norm8(y);  // (q and k)
  store8(dst, y);
  state_in.store(h0);
}

// ---- DeltaNet output norm: block t < T = token t, 256 threads x 8 = 16 heads x 128 a pass (DN_VAL / 2048
// passes); every block (at least DN_COPY_BLOCKS) also copies 16 bytes a thread of the layer's final state -------
__global__ void __launch_bounds__(256) dn_out_norm_kernel(const uint16_t* __restrict__ o, const uint16_t* __restrict__ proj,
                                                          const uint16_t* __restrict__ w, const float4* __restrict__ final_state,
                                                          const int64_t* __restrict__ table, int slot,
                                                          uint16_t* __restrict__ out, float eps, int T) {
  const int t = blockIdx.x, tid = threadIdx.x, i = tid * 8;
  const bool refused = table_refused(table);  // (the state as it was: neither its slot nor the ring written)
  if (!refused) {  // the layer's final delta-rule state into its slot of the decode state, 16 bytes a thread, every block in turn
    float4* dst = table_ptr<float4>(table, ST_DN) + static_cast<size_t>(slot) * DN_STATE / 4;
    for (int e = t * 256 + tid; e < DN_STATE / 4; e += gridDim.x * 256) dst[e] = final_state[e];
  }
  if (t >= T) return;  // (a copying block only: a short prompt's grid is DN_COPY_BLOCKS wide; no block barrier below)
  const uint16_t* row = proj + static_cast<size_t>(t) * DN_WIN;
  float wv[8];
  load8(w + (i & (DN_HD - 1)), wv);
#pragma unroll
  for (int pass = 0; pass < DN_VAL / 2048; ++pass) {
    const int c = pass * 2048 + i;
    float x[8], z[8], y[8];
    load8(o + static_cast<size_t>(t) * DN_VAL + c, x);
    load8(row + DN_Z + c, z);
    float ss = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) ss += x[e] * x[e];
    const float inv = rsqrtf(group_sum<16>(ss) / DN_HD + eps);
#pragma unroll
    for (int e = 0; e < 8; ++e) y[e] = rnd(wv[e] * rnd(x[e] * inv)) * siluf_(z[e]);
    store8(out + static_cast<size_t>(t) * DN_VAL + c, y);
  }
  const int valid = table_valid(table);
  if (t >= valid - 3 && t < valid && !refused) {  // this token's pre-conv inputs are among the last three: keep them for decode
    uint16_t* ring = table_ptr<uint16_t>(table, ST_CONV) + (static_cast<size_t>(slot) * 4 + ((table_start(table) + t) & 3)) * DN_CONV;
    for (int c = i; c < DN_CONV; c += 2048)
      *reinterpret_cast<uint4*>(ring + c) = *reinterpret_cast<const uint4*>(row + c);
  }
}

// ---- SwiGLU: block = one token, SILU_THREADS threads x 8 outputs a pass; with x (the post-attention norm
// folded into the gate/up weights: gu = x . (W (1 + w))^T), both halves of the row times 1 / rms(x) first ----
constexpr int SILU_THREADS = 256;
static_assert(INTER % 8 == 0, "silu_mul: 16-byte vectors");
__global__ void __launch_bounds__(SILU_THREADS) silu_mul_kernel(const uint16_t* __restrict__ gu, const uint16_t* __restrict__ x,
                                                               uint16_t* __restrict__ out, float eps) {
  const int t = blockIdx.x;
  const float inv = x != nullptr ? block_rms_inv(x + static_cast<size_t>(t) * D, eps) : 1.f;
  for (int c = threadIdx.x * 8; c < INTER; c += SILU_THREADS * 8) {
    float gv[8], uv[8], y[8];
    load8(gu + static_cast<size_t>(t) * 2 * INTER + c, gv);
    load8(gu + static_cast<size_t>(t) * 2 * INTER + INTER + c, uv);
#pragma unroll
    for (int e = 0; e < 8; ++e) y[e] = rnd(siluf_(gv[e] * inv)) * (uv[e] * inv);
    store8(out + static_cast<size_t>(t) * INTER + c, y);
  }
}

// ---- attention inputs: block = one token, FA_HQ + 2 FA_HKV warps (12 at the 0.8B); warp h < FA_HQ
// owns q head h, the next FA_HKV the k heads, the last FA_HKV the v heads; lane owns dims lane*8 .. +8
// of its head ------------------------------------------------------------------------------------
constexpr int ATTN_PREP_THREADS = 32 * (FA_HQ + 2 * FA_HKV);
static_assert(ATTN_PREP_THREADS <= 1024 && FA_HD == 256, "attn_prep: a warp a head, 8 dims a lane");
__device__ __forceinline__ void norm_rope_head(float (&x)[8], const uint16_t* w, const uint16_t* cs, int lane, float eps) {
  float ss = 0.f;
#pragma unroll
  for (int e = 0; e < 8; ++e) ss += x[e] * x[e];
  const float inv = rsqrtf(group_sum<32>(ss) / FA_HD + eps);
  float wv[8];
  load8(w + lane * 8, wv);
#pragma unroll
  for (int e = 0; e < 8; ++e) x[e] = rnd((x[e] * inv) * (1.f + wv[e]));
  // NeoX rotation of dims [0, 64): lanes 0-3 hold [0, 32), their partners 4-7 hold [32, 64)
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const float partner = __shfl_xor_sync(0xffffffffu, x[e], 4);
    if (lane < 8) {
      const int d = (lane & 3) * 8 + e;  // index into the 32 cos / sin values
      const float c = bf(cs[d]), s = bf(cs[FA_ROT_HALF + d]);
      x[e] = lane < 4 ? rnd(rnd(x[e] * c) + rnd(-partner * s)) : rnd(rnd(x[e] * c) + rnd(partner * s));
    }
  }
}

// With x (the input norm folded into the in-projection's weights: proj = x . (W (1 + w))^T), a valid row's
// q, k and v are taken times 1 / rms(x), and its gates (what attn_gate reads) rewritten so in proj: once a
// layer (a second call would scale them again).
__global__ void __launch_bounds__(ATTN_PREP_THREADS) attn_prep_kernel(uint16_t* __restrict__ proj, const uint16_t* __restrict__ q_w,
                                                        const uint16_t* __restrict__ k_w, const int64_t* __restrict__ table,
                                                        int slot, int max_seq, uint16_t* __restrict__ qbuf,
                                                        uint16_t* __restrict__ kv, const uint16_t* __restrict__ x_in, float eps) {
  const int t = blockIdx.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31, pos = table_start(table) + t;
  if (t >= table_valid(table)) {  // padding (its position may lie past max_seq): q 0, no rope, no cache
    if (warp < FA_HQ)
      *reinterpret_cast<uint4*>(qbuf + (static_cast<size_t>(t) * FA_HQ + warp) * FA_HD + lane * 8) = make_uint4(0u, 0u, 0u, 0u);
    return;
  }
  const float inv = x_in != nullptr ? block_rms_inv(x_in + static_cast<size_t>(t) * D, eps) : 1.f;  // (every warp: a block barrier)
  uint16_t* row = proj + static_cast<size_t>(t) * FA_QKV;
  const uint16_t* cs = table_ptr<const uint16_t>(table, ST_ROPE) + static_cast<size_t>(pos) * 2 * FA_ROT_HALF;
  float x[8];
  if (warp < FA_HQ) {
    if (x_in != nullptr) {  // the head's gate, as attn_gate reads it
      load8(row + warp * 2 * FA_HD + FA_HD + lane * 8, x);
      scale8(x, inv);
      store8(row + warp * 2 * FA_HD + FA_HD + lane * 8, x);
    }
    load8(row + warp * 2 * FA_HD + lane * 8, x);
    scale8(x, inv);
    norm_rope_head(x, q_w, cs, lane, eps);
    store8(qbuf + (static_cast<size_t>(t) * FA_HQ + warp) * FA_HD + lane * 8, x);
    return;
  }
  const bool is_k = warp < FA_HQ + FA_HKV;
  const int h = (warp - FA_HQ) % FA_HKV;
  load8(row + (is_k ? FA_K : FA_V) + h * FA_HD + lane * 8, x);
  scale8(x, inv);
  if (is_k) norm_rope_head(x, k_w, cs, lane, eps);
  uint16_t* cache = table_ptr<uint16_t>(table, is_k ? ST_K : ST_V);
  if (!table_refused(table)) store8(cache + ((static_cast<size_t>(slot) * FA_HKV + h) * max_seq + pos) * FA_HD + lane * 8, x);
  store8(kv + ((static_cast<size_t>(is_k ? 0 : 1) * max_seq + pos) * FA_HKV + h) * FA_HD + lane * 8, x);
}

// the cache's [slot][h][p][:] → kv [k|v][p][h][:] for p < start: thread i copies 16-byte vector
// i % (FA_HD / 8) of (k|v, h, p) = i / (FA_HD / 8), grid-stride over what start asks for
__global__ void kv_prefix_kernel(const int64_t* __restrict__ table, int slot, int max_seq, uint16_t* __restrict__ kv) {
  constexpr int VEC = FA_HD / 8;  // 16-byte vectors per row
  const unsigned rows = static_cast<unsigned>(table_start(table)) * FA_HKV;  // (p, h) pairs per k|v (< 2^31 / 64)
  const unsigned n = 2 * rows * VEC;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const unsigned r = i / VEC, which = r / rows, ph = r % rows, p = ph / FA_HKV, h = ph % FA_HKV;
    const uint4* src = reinterpret_cast<const uint4*>(table_ptr<const uint16_t>(table, which == 0 ? ST_K : ST_V) +
                                                      ((static_cast<size_t>(slot) * FA_HKV + h) * max_seq + p) * FA_HD);
    uint4* dst = reinterpret_cast<uint4*>(kv + ((static_cast<size_t>(which) * max_seq + p) * FA_HKV + h) * FA_HD);
    dst[i % VEC] = src[i % VEC];
  }
}

// ---- attention output gate: block = one token, FA_HQ warps x 32 lanes x 8 = FA_HQ heads x 256 ---
constexpr int GATE_THREADS = 32 * FA_HQ;
__global__ void __launch_bounds__(GATE_THREADS) attn_gate_kernel(const uint16_t* __restrict__ o, long long sh, long long st,
                                                        const uint16_t* __restrict__ proj, const int64_t* __restrict__ table,
                                                        uint16_t* __restrict__ out) {
  const int t = blockIdx.x, h = threadIdx.x >> 5, d = (threadIdx.x & 31) * 8;
  if (t >= table_valid(table)) {  // padding: flash did not write its o
    *reinterpret_cast<uint4*>(out + static_cast<size_t>(t) * FA_HQ * FA_HD + h * FA_HD + d) = make_uint4(0u, 0u, 0u, 0u);
    return;
  }
  float ov[8], gv[8], y[8];
  load8(o + h * sh + t * st + d, ov);
  load8(proj + static_cast<size_t>(t) * FA_QKV + h * 2 * FA_HD + FA_HD + d, gv);
#pragma unroll
  for (int e = 0; e < 8; ++e) y[e] = ov[e] * rnd(sigmoidf_(gv[e]));
  store8(out + static_cast<size_t>(t) * FA_HQ * FA_HD + h * FA_HD + d, y);
}

// ---- attention in pieces, merged and gated: block = one token, FA_HQ heads x 256 (attn_gate's threads) --
// every thread of head h reads the same S + 1 log-sum-exps (L1 broadcasts); pieces whose weight is 0
// (no key before the start in them) are not read
__global__ void __launch_bounds__(GATE_THREADS) attn_merge_gate_kernel(const uint16_t* __restrict__ o_ctx, const float* __restrict__ lse_ctx,
                                                              long long ls_s, long long ls_h, long long ls_t, int S,
                                                              const uint16_t* __restrict__ o_new, const float* __restrict__ lse_new,
                                                              long long ln_h, long long ln_t, const uint16_t* __restrict__ proj,
                                                              const int64_t* __restrict__ table, uint16_t* __restrict__ out, int T) {
  const int t = blockIdx.x, h = threadIdx.x >> 5, d = (threadIdx.x & 31) * 8;
  if (t >= table_valid(table)) {  // padding: the new keys' flash call did not write its o or lse
    *reinterpret_cast<uint4*>(out + static_cast<size_t>(t) * FA_HQ * FA_HD + h * FA_HD + d) = make_uint4(0u, 0u, 0u, 0u);
    return;
  }
  auto lse = [&](int s) {  // piece s's log-sum-exp (s == S: the new keys'), +inf (no key) as -inf
    const float v = s < S ? lse_ctx[s * ls_s + h * ls_h + t * ls_t] : lse_new[h * ln_h + t * ln_t];
    return v == INFINITY ? -INFINITY : v;
  };
  float m = -INFINITY;
  for (int s = 0; s <= S; ++s) m = fmaxf(m, lse(s));  // (the new keys' piece is never empty: m is finite)
  float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f}, wsum = 0.f;
  for (int s = 0; s <= S; ++s) {
    const float w = expf(lse(s) - m);
    if (w == 0.f) continue;
    float ov[8];
    load8((s < S ? o_ctx + (static_cast<size_t>(s) * T + t) * FA_HQ * FA_HD : o_new + static_cast<size_t>(t) * FA_HQ * FA_HD) +
              h * FA_HD + d, ov);
    wsum += w;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = fmaf(w, ov[e], acc[e]);
  }
  float gv[8], y[8];
  load8(proj + static_cast<size_t>(t) * FA_QKV + h * 2 * FA_HD + FA_HD + d, gv);
#pragma unroll
  for (int e = 0; e < 8; ++e) y[e] = rnd(acc[e] / wsum) * rnd(sigmoidf_(gv[e]));
  store8(out + static_cast<size_t>(t) * FA_HQ * FA_HD + h * FA_HD + d, y);
}

// ---- a fresh prompt's last layer for its last row alone (NOTES "Prefill" v23) ----------------------------------
// Attention of the last valid row t over keys [0, start + t]: grid (S, FA_HKV), ALR_THREADS threads; block (s, g)
// takes the chunks of kpb keys s, s + S, s + 2S, ... (every key covered whatever their count) for the FA_GROUP q heads
// of kv head g; warp w every ALR_WARPS-th key of a chunk (lane: 8 dims of the key, the value and each q head; a score
// is a warp sum), an online softmax in base 2 a (warp, q head); the warps merged through shared memory into the
// block's partial of each head (max, sum, o[FA_HD]: thread i = dim i) in `part`; the last block of kv head g to count
// itself in (`count`) merges the S partials, o = bf16(sum o / sum), times bf16(sigmoid(gate)) as attn_gate does, into
// out's row t, and sets its counter back to 0 (the next launch, a graph's replay too, starts from 0).
constexpr int ALR_THREADS = 256, ALR_WARPS = ALR_THREADS / 32, ALR_O = LAST_ROW_PART_HEAD, ALR_PART = ALR_O + FA_HD;
static_assert(ALR_O % 4 == 0, "attn_last_row: a partial's o 16-byte aligned (the merge loads it 4 floats at a time)");
constexpr int ALR_MAX_SPLITS = LAST_ROW_MAX_SPLITS;  // (prefill.cuh) the merge's maxima and sums: a thread each
static_assert(ALR_MAX_SPLITS * FA_GROUP <= ALR_THREADS, "attn_last_row: a thread a (split, head) in the merge");
constexpr int ALR_KEYS_AT_ONCE = 4;                      // a warp's keys whose loads go out together
static_assert(FA_HD == ALR_THREADS && FA_HD == 32 * 8, "attn_last_row: thread i = dim i; a lane 8 dims of a head");
__global__ void __launch_bounds__(ALR_THREADS) attn_last_row_kernel(
    const uint16_t* __restrict__ qbuf, const uint16_t* __restrict__ kv, int max_seq, const uint16_t* __restrict__ proj,
    const int64_t* __restrict__ table, float* __restrict__ part, int* __restrict__ count, uint16_t* __restrict__ out,
    int kpb) {
  __shared__ float red[ALR_WARPS][FA_GROUP][ALR_PART];
  __shared__ float weight[FA_GROUP][ALR_MAX_SPLITS], lsum[FA_GROUP][ALR_MAX_SPLITS], total[FA_GROUP];
  __shared__ bool last;
  const int S = gridDim.x, s = blockIdx.x, g = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int valid = table_valid(table), t = valid - 1, n = table_start(table) + valid;
  const float qscale = rsqrtf(static_cast<float>(FA_HD)) * 1.4426950408889634f;  // (the softmax in base 2)
  // the merge's thread i: q head hm = i / 64 of the group, dims dm .. dm + 3 (its gates loaded now, by every block: only
  // the last one uses them, but then without a round trip of their own)
  const int hm = threadIdx.x / (FA_HD / 4), dm = threadIdx.x % (FA_HD / 4) * 4;
  const uint2 gates = *reinterpret_cast<const uint2*>(proj + static_cast<size_t>(t) * FA_QKV +
                                                      (g * FA_GROUP + hm) * 2 * FA_HD + FA_HD + dm);
  float q[FA_GROUP][8], o[FA_GROUP][8], m[FA_GROUP], l[FA_GROUP];
#pragma unroll
  for (int hh = 0; hh < FA_GROUP; ++hh) {
    load8(qbuf + (static_cast<size_t>(t) * FA_HQ + g * FA_GROUP + hh) * FA_HD + lane * 8, q[hh]);
    scale8(q[hh], qscale);
    m[hh] = -INFINITY;
    l[hh] = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) o[hh][e] = 0.f;
  }
  for (int base = s * kpb; base < n; base += S * kpb) {
    const int end = min(n, base + kpb);
    for (int p0 = base + warp; p0 < end; p0 += ALR_WARPS * ALR_KEYS_AT_ONCE) {
      uint4 kraw[ALR_KEYS_AT_ONCE], vraw[ALR_KEYS_AT_ONCE];
#pragma unroll
      for (int u = 0; u < ALR_KEYS_AT_ONCE; ++u) {
        const int p = p0 + u * ALR_WARPS;
        if (p < end) {
          kraw[u] = *reinterpret_cast<const uint4*>(kv + (static_cast<size_t>(p) * FA_HKV + g) * FA_HD + lane * 8);
          vraw[u] = *reinterpret_cast<const uint4*>(kv + ((static_cast<size_t>(max_seq) + p) * FA_HKV + g) * FA_HD + lane * 8);
        }
      }
#pragma unroll
      for (int u = 0; u < ALR_KEYS_AT_ONCE; ++u) {
        if (p0 + u * ALR_WARPS >= end) break;
        float kk[8], vv[8];
        unpack8(kraw[u], kk);
        unpack8(vraw[u], vv);
#pragma unroll
        for (int hh = 0; hh < FA_GROUP; ++hh) {
          float d = 0.f;
#pragma unroll
          for (int e = 0; e < 8; ++e) d = fmaf(q[hh][e], kk[e], d);
          d = group_sum<32>(d);
          const float mn = fmaxf(m[hh], d), c = exp2f(m[hh] - mn), w = exp2f(d - mn);
          l[hh] = l[hh] * c + w;
#pragma unroll
          for (int e = 0; e < 8; ++e) o[hh][e] = fmaf(o[hh][e], c, w * vv[e]);
          m[hh] = mn;
        }
      }
    }
  }
#pragma unroll
  for (int hh = 0; hh < FA_GROUP; ++hh) {
    if (lane == 0) {
      red[warp][hh][0] = m[hh];
      red[warp][hh][1] = l[hh];
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) red[warp][hh][ALR_O + lane * 8 + e] = o[hh][e];
  }
  __syncthreads();
  const int i = threadIdx.x;
  float* mine = part + (static_cast<size_t>(g) * S + s) * FA_GROUP * ALR_PART;
#pragma unroll
  for (int hh = 0; hh < FA_GROUP; ++hh) {
    float M = -INFINITY, L = 0.f, O = 0.f;
    for (int w = 0; w < ALR_WARPS; ++w) M = fmaxf(M, red[w][hh][0]);
    for (int w = 0; w < ALR_WARPS; ++w) {
      const float c = M == -INFINITY ? 0.f : exp2f(red[w][hh][0] - M);  // (a warp, or the block, without keys: 0)
      L = fmaf(red[w][hh][1], c, L);
      O = fmaf(red[w][hh][ALR_O + i], c, O);
    }
    mine[hh * ALR_PART + ALR_O + i] = O;
    if (i == 0) {
      mine[hh * ALR_PART] = M;
      mine[hh * ALR_PART + 1] = L;
    }
  }
  __threadfence();  // (the partial before the count: the last block reads it)
  __syncthreads();
  if (i == 0) last = atomicAdd(count + g, 1) == S - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  // the merge: thread (j, hh) loads split j's max and sum of head hh (all at once); each head's max, then its weights
  // exp2(M_j - M) and their sum (in split order: the same bits whichever block merges) through shared memory; then
  // thread (hm, dm) the S partials of its 4 dims (16-byte loads, 8 splits' in flight together)
  const float* all = part + static_cast<size_t>(g) * S * FA_GROUP * ALR_PART;
  const int jj = i / FA_GROUP, hj = i % FA_GROUP;
  float Mj = -INFINITY, Lj = 0.f;
  if (jj < S) {
    Mj = __ldcg(all + (jj * FA_GROUP + hj) * ALR_PART);
    Lj = __ldcg(all + (jj * FA_GROUP + hj) * ALR_PART + 1);
  }
  weight[hj][jj] = Mj;  // (the maxima first)
  __syncthreads();
  if (i < FA_GROUP) {
    float M = -INFINITY;
    for (int j = 0; j < S; ++j) M = fmaxf(M, weight[i][j]);
    total[i] = M;
  }
  __syncthreads();
  const float c = jj < S && Mj != -INFINITY ? exp2f(Mj - total[hj]) : 0.f;
  weight[hj][jj] = c;  // (every thread read its max above, before the barrier, and the maxima were read before that)
  lsum[hj][jj] = Lj * c;
  __syncthreads();
  if (i < FA_GROUP) {
    float L = 0.f;
    for (int j = 0; j < S; ++j) L += lsum[i][j];
    total[i] = L;
  }
  __syncthreads();
  float4 O = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
  for (int j = 0; j < S; ++j) {
    const float4 p = __ldcg(reinterpret_cast<const float4*>(all + (j * FA_GROUP + hm) * ALR_PART + ALR_O + dm));
    const float w = weight[hm][j];
    O.x = fmaf(p.x, w, O.x);
    O.y = fmaf(p.y, w, O.y);
    O.z = fmaf(p.z, w, O.z);
    O.w = fmaf(p.w, w, O.w);
  }
  const float ov[4] = {O.x / total[hm], O.y / total[hm], O.z / total[hm], O.w / total[hm]};
  const float gv[4] = {__uint_as_float(gates.x << 16), __uint_as_float(gates.x & 0xffff0000u),
                       __uint_as_float(gates.y << 16), __uint_as_float(gates.y & 0xffff0000u)};
  uint32_t packed[2];
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const uint32_t a = __bfloat16_as_ushort(__float2bfloat16_rn(rnd(ov[2 * e]) * rnd(sigmoidf_(gv[2 * e]))));
    const uint32_t b = __bfloat16_as_ushort(__float2bfloat16_rn(rnd(ov[2 * e + 1]) * rnd(sigmoidf_(gv[2 * e + 1]))));
    packed[e] = a | (b << 16);
  }
  *reinterpret_cast<uint2*>(out + static_cast<size_t>(t) * FA_OIN + (g * FA_GROUP + hm) * FA_HD + dm) =
      make_uint2(packed[0], packed[1]);
  if (i == 0) count[g] = 0;
}

// a lane's dot of 8 bf16 weights (packed) with 8 values, a pair at a time (the lm_head's and the M = 1 kernels')
__device__ __forceinline__ float dot8(const uint4 wv, const float (&x)[8], float acc) {
  const uint32_t u[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
  for (int e = 0; e < 4; ++e) acc += __uint_as_float(u[e] << 16) * x[2 * e] + __uint_as_float(u[e] & 0xffff0000u) * x[2 * e + 1];
  return acc;
}

// The out-projection's and down's M = 1 product: res [D] <- bf16(res + W [D][K] . x [K]) (one rounding, as the GEMM with
// beta = 1). Block = 8 warps, warp = one row of W (D / 8 blocks), lane 16 bytes at lane * 8 + 256 c: a row's loads in
// groups of up to 16 vectors a lane, the first group's issued before x is staged in shared memory by the block (the
// barrier keeps them ahead of it, in flight together), then the products.
template <int K>
__global__ void __launch_bounds__(256) gemv_add_row_kernel(const uint16_t* __restrict__ x, const uint16_t* __restrict__ w,
                                                           uint16_t* __restrict__ res) {
  constexpr int CH = K / 256, G = CH < 16 ? CH : 16;
  static_assert(K % 256 == 0, "gemv_add_row: whole 256-wide pieces of a row");
  __shared__ __align__(16) uint16_t xs[K];
  const int n = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  const uint16_t* row = w + static_cast<size_t>(n) * K + lane * 8;
  float acc = 0.f;
#pragma unroll
  for (int c0 = 0; c0 < CH; c0 += G) {
    uint4 wv[G];
#pragma unroll
    for (int c = 0; c < G; ++c)
      if (c0 + c < CH) wv[c] = __ldcs(reinterpret_cast<const uint4*>(row + 256 * (c0 + c)));  // (read once: streamed)
    if (c0 == 0) {
      for (int i = threadIdx.x * 8; i < K; i += 256 * 8)
        *reinterpret_cast<uint4*>(xs + i) = *reinterpret_cast<const uint4*>(x + i);
      __syncthreads();
    }
#pragma unroll
    for (int c = 0; c < G; ++c)
      if (c0 + c < CH) {
        float xv[8];
        unpack8(*reinterpret_cast<const uint4*>(xs + lane * 8 + 256 * (c0 + c)), xv);
        acc = dot8(wv[c], xv, acc);
      }
  }
  acc = group_sum<32>(acc);
  if (lane == 0) res[n] = __bfloat16_as_ushort(__float2bfloat16_rn(bf(res[n]) + acc));
}

// The gate/up's M = 1 product and SwiGLU with the folded post-attention norm (silu_mul's arithmetic): act [INTER] <-
// bf16(bf16(silu(g * r)) * (u * r)), g = bf16(W[k] . x), u = bf16(W[INTER + k] . x) (the GEMM's bf16 outputs), r = 1 /
// rms(x); W [2 INTER][D] the folded gate/up weights, x [D] the residual row. Block = 8 warps, warp = column k (both of
// its rows, loaded before the block's reduction of r), lane 16 bytes at lane * 8 + 256 c.
__global__ void __launch_bounds__(256) gate_up_swiglu_row_kernel(const uint16_t* __restrict__ x, const uint16_t* __restrict__ w,
                                                                 uint16_t* __restrict__ act, float eps) {
  constexpr int CH = D / 256;
  static_assert(D % 256 == 0 && CH <= 16, "gate_up_swiglu_row: whole 256-wide pieces of a row, at most 16 a lane");
  const int k = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  const uint16_t* gate_row = w + static_cast<size_t>(k) * D + lane * 8;
  const uint16_t* up_row = w + (static_cast<size_t>(INTER) + k) * D + lane * 8;
  uint4 gw[CH], uw[CH];
#pragma unroll
  for (int c = 0; c < CH; ++c) {
    gw[c] = __ldcs(reinterpret_cast<const uint4*>(gate_row + 256 * c));
    uw[c] = __ldcs(reinterpret_cast<const uint4*>(up_row + 256 * c));
  }
  const float inv = block_rms_inv(x, eps);
  float gd = 0.f, ud = 0.f;
#pragma unroll
  for (int c = 0; c < CH; ++c) {
    float xv[8];
    load8(x + lane * 8 + 256 * c, xv);
    gd = dot8(gw[c], xv, gd);
    ud = dot8(uw[c], xv, ud);
  }
  gd = group_sum<32>(gd);
  ud = group_sum<32>(ud);
  if (lane == 0) act[k] = __bfloat16_as_ushort(__float2bfloat16_rn(rnd(siluf_(rnd(gd) * inv)) * (rnd(ud) * inv)));
}

// ---- lm_head GEMV: block = 8 warps x LM_ROWS_PER_WARP rows (4 at D = 1024: 16 registers of weights
// a lane); lane reads 16 bytes at lane*8 + 256*c of a row ------
constexpr int LM_CH = D / 256, LM_ROWS_PER_WARP = LM_CH <= 4 ? 4 : 16 / LM_CH, LM_WARPS = 8;
static_assert(LM_CH * LM_ROWS_PER_WARP <= 16, "lm_head: 16 registers of weights a lane");
__global__ void __launch_bounds__(256) lm_head_kernel(const uint16_t* __restrict__ rows, const int64_t* __restrict__ table,
                                                      const uint16_t* __restrict__ w, float* __restrict__ logits, int vocab) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const uint16_t* x = rows + static_cast<size_t>(table_valid(table) - 1) * D;  // the last valid row
  const int row0 = (blockIdx.x * LM_WARPS + warp) * LM_ROWS_PER_WARP;
  float xv[LM_CH][8];
#pragma unroll
  for (int c = 0; c < LM_CH; ++c) load8(x + lane * 8 + 256 * c, xv[c]);
  uint4 wv[LM_ROWS_PER_WARP][LM_CH];
#pragma unroll
  for (int r = 0; r < LM_ROWS_PER_WARP; ++r)
#pragma unroll
    for (int c = 0; c < LM_CH; ++c)
      wv[r][c] = row0 + r < vocab ? __ldcs(reinterpret_cast<const uint4*>(w + static_cast<size_t>(row0 + r) * D + lane * 8 + 256 * c))
                                  : make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int r = 0; r < LM_ROWS_PER_WARP; ++r) {
    float acc = 0.f;
#pragma unroll
    for (int c = 0; c < LM_CH; ++c) acc = dot8(wv[r][c], xv[c], acc);
    acc = group_sum<32>(acc);
    if (lane == 0 && row0 + r < vocab) logits[row0 + r] = rnd(acc);
  }
}

inline int blocks_for(size_t n, int threads, int cap = 132 * 8) {
  const size_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < static_cast<size_t>(cap) ? (b > 0 ? b : 1) : cap);
}

}  // namespace

cudaError_t bind(const int64_t* ids, int64_t* words, const BindArgs& a, cudaStream_t s) {
  bind_kernel<<<blocks_for(static_cast<size_t>(a.T), BIND_THREADS), BIND_THREADS, 0, s>>>(ids, words, a);
  return cudaGetLastError();
}

cudaError_t add_rms_norm(const float* x32, int splits, const int64_t* ids, const uint16_t* embed,
                         uint16_t* residual, const uint16_t* w, uint16_t* out, int T, float eps, cudaStream_t s) {
  add_rms_norm_kernel<<<T, NORM_THREADS, 0, s>>>(x32, splits, T, ids, embed, residual, w, out, eps);
  return cudaGetLastError();
}

cudaError_t dn_prep(const uint16_t* proj, const int64_t* table, int slot, const uint16_t* conv_w,
                    const uint16_t* a_log, const uint16_t* dt_bias, uint16_t* q, uint16_t* k, uint16_t* v,
                    float* g, float* beta, float* h0, uint16_t* A, int g_chunk, int T, int R, cudaStream_t s) {
  if (T < 1 || R < T || R - T >= DN_GATE_ROWS) return cudaErrorInvalidValue;  // (padding within the last chunk: dn_gates)
  if (A != nullptr && R % WY_ROWS != 0) return cudaErrorInvalidValue;           // (the WY blocks take whole chunks)
  const int wy = A != nullptr ? R / WY_ROWS * DN_HK : 0, passes = DN_CONV / 2048 - (A != nullptr ? DN_KEY / 2048 : 0);
  const int work = wy + (R + DN_GATE_ROWS - 1) / DN_GATE_ROWS + R * passes, copy = (StateIn::N4 + 511) / 512;
  const int blocks = work > wy + copy ? work : wy + copy;  // (an op call's short prompt: the grid widened for the state's copy)
  dn_prep_kernel<<<blocks, 256, A != nullptr ? sizeof(WySmem) : 0, s>>>(proj, table, slot, conv_w, a_log, dt_bias, q, k, v,
                                                                        g, beta, reinterpret_cast<float4*>(h0), A, g_chunk,
                                                                        T, R);
  return cudaGetLastError();
}

cudaError_t dn_out_norm(const uint16_t* o, const uint16_t* proj, const uint16_t* w, const float* final_state,
                        const int64_t* table, int slot, uint16_t* out, int T, float eps, cudaStream_t s) {
  constexpr int DN_COPY_BLOCKS = 128;  // at least this many blocks copy the state (a 2-row prompt's 2 alone: 128 loads in a row each)
  dn_out_norm_kernel<<<T > DN_COPY_BLOCKS ? T : DN_COPY_BLOCKS, 256, 0, s>>>(
      o, proj, w, reinterpret_cast<const float4*>(final_state), table, slot, out, eps, T);
  return cudaGetLastError();
}

cudaError_t silu_mul(const uint16_t* gu, const uint16_t* x, uint16_t* out, int T, float eps, cudaStream_t s) {
  if (T == 0) return cudaSuccess;
  silu_mul_kernel<<<T, SILU_THREADS, 0, s>>>(gu, x, out, eps);
  return cudaGetLastError();
}

cudaError_t attn_prep(uint16_t* proj, const uint16_t* q_w, const uint16_t* k_w, const int64_t* table, int slot,
                      int max_seq, uint16_t* qbuf, uint16_t* kv, const uint16_t* x, int T, float eps, cudaStream_t s) {
  attn_prep_kernel<<<T, ATTN_PREP_THREADS, 0, s>>>(proj, q_w, k_w, table, slot, max_seq, qbuf, kv, x, eps);
  return cudaGetLastError();
}

cudaError_t kv_prefix(const int64_t* table, int slot, int max_seq, uint16_t* kv, cudaStream_t s) {
  kv_prefix_kernel<<<blocks_for(static_cast<size_t>(max_seq) * 2 * FA_HKV * FA_HD / 8, 256), 256, 0, s>>>(
      table, slot, max_seq, kv);
  return cudaGetLastError();
}

cudaError_t attn_gate(const uint16_t* o, long long o_stride_h, long long o_stride_t, const uint16_t* proj,
                      const int64_t* table, uint16_t* out, int T, cudaStream_t s) {
  attn_gate_kernel<<<T, GATE_THREADS, 0, s>>>(o, o_stride_h, o_stride_t, proj, table, out);
  return cudaGetLastError();
}

cudaError_t attn_merge_gate(const uint16_t* o_ctx, const float* lse_ctx, long long ls_s, long long ls_h, long long ls_t,
                            int S, const uint16_t* o_new, const float* lse_new, long long ln_h, long long ln_t,
                            const uint16_t* proj, const int64_t* table, uint16_t* out, int T, cudaStream_t s) {
  attn_merge_gate_kernel<<<T, GATE_THREADS, 0, s>>>(o_ctx, lse_ctx, ls_s, ls_h, ls_t, S, o_new, lse_new, ln_h, ln_t, proj, table, out, T);
  return cudaGetLastError();
}

cudaError_t attn_last_row(const uint16_t* qbuf, const uint16_t* kv, int max_seq, const uint16_t* proj, const int64_t* table,
                          float* part, int* count, uint16_t* out, int splits, int keys_per_block, cudaStream_t s) {
  if (splits < 1 || splits > LAST_ROW_MAX_SPLITS || keys_per_block < 1) return cudaErrorInvalidValue;  // (the merge's limit)
  attn_last_row_kernel<<<dim3(splits, FA_HKV), ALR_THREADS, 0, s>>>(qbuf, kv, max_seq, proj, table, part, count, out,
                                                                     keys_per_block);
  return cudaGetLastError();
}

cudaError_t gemv_add_row(const uint16_t* x, const uint16_t* w, uint16_t* res, int K, cudaStream_t s) {
  if (K == INTER) gemv_add_row_kernel<INTER><<<D / 8, 256, 0, s>>>(x, w, res);
  else if (K == FA_OIN) gemv_add_row_kernel<FA_OIN><<<D / 8, 256, 0, s>>>(x, w, res);
  else return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t gate_up_swiglu_row(const uint16_t* x, const uint16_t* w, uint16_t* act, float eps, cudaStream_t s) {
  gate_up_swiglu_row_kernel<<<INTER / 8, 256, 0, s>>>(x, w, act, eps);
  return cudaGetLastError();
}

cudaError_t lm_head(const uint16_t* rows, const int64_t* table, const uint16_t* w, float* logits, int vocab,
                    cudaStream_t s) {
  const int per_block = LM_WARPS * LM_ROWS_PER_WARP;
  lm_head_kernel<<<(vocab + per_block - 1) / per_block, 256, 0, s>>>(rows, table, w, logits, vocab);
  return cudaGetLastError();
}

}  // namespace mkp
