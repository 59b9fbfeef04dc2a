// Qwen3.5-0.8B decode megakernel: one persistent launch per token does the embedding row,
// 18 Gated DeltaNet + 6 gated attention layers, the final norm, the lm_head and the greedy
// argmax (and writes logits / per-layer hidden states / globaltimer stamps when asked).
//
// Who owns what
//   grid   one block per SM (occupancy-checked, cooperative launch: all blocks resident).
//   phase  the token is a fixed list of 121 phases (5 per layer + lm_head); a grid barrier
//          (monotonic counter, epoch from the host: never cleared per token) ends each layer phase;
//          Args::flags picks its variant (generation-word exit, per-producer waits before a core).
//   block  in matrix phases: a contiguous slice of the rows (rows*b/G .. rows*(b+1)/G), so its
//          weights are one contiguous byte range; in unit phases: units b, b+G, b+2G, ...
//          (DeltaNet: unit = head x 16-row v-slice; attention: unit = kv head x position split).
//          Every block recomputes the RMSNorm of the 1024-wide hidden state itself.
//   warp   matrix phases: 4 rows at a time (K = 1024) or one half row (K = 2048 / 3584);
//          DeltaNet recurrence: one v row of the state; attention: every 16th position.
//   lane   16-byte weight chunks (8 bf16) at lane*8 + 256*c, fp32 accumulation, shuffle reduce.
//   prefetch  warp 0 issues L2 bulk prefetches of its block's slice of phase q+pf_dist when
//          phase q starts, so HBM keeps streaming through barriers and serial phases.
#include "megakernel.cuh"

#include <cuda_bf16.h>

namespace mk {
namespace {

constexpr float EPS = 1e-6f;
constexpr int PF_PIECE = 16384;  // bytes per bulk prefetch instruction

// ---- shared-memory layout (bytes) ----
constexpr int SM_XS = 0;                          // bf16 [INTER] matvec input vector
constexpr int SM_RED = SM_XS + INTER * 2;         // float [64] reductions
constexpr int SM_MISC = SM_RED + 64 * 4;          // int [32]
constexpr int SM_U = SM_MISC + 128;                // phase-specific area
constexpr int SM_DN_Q = SM_U;                     // float [128]
constexpr int SM_DN_K = SM_DN_Q + 512;            // float [128]
constexpr int SM_DN_V = SM_DN_K + 512;            // float [16]
constexpr int SM_AT_Q = SM_U;                     // float [4][256]
constexpr int SM_AT_K = SM_AT_Q + 4096;           // float [256]
constexpr int SM_AT_KB = SM_AT_K + 1024;          // bf16 [256]
constexpr int SM_AT_VB = SM_AT_KB + 512;          // bf16 [256]
constexpr int SM_AT_M = SM_AT_VB + 512;           // float [8][4]
constexpr int SM_AT_L = SM_AT_M + 128;            // float [8][4]
constexpr int SM_AT_ACC = SM_AT_L + 128;          // float [8][4][256]
constexpr int SM_END = SM_AT_ACC + 8 * 4 * FA_HD * 4;
static_assert(SM_DN_V + 64 <= SM_END, "smem");
static_assert(NWARPS == DN_H, "gated norm: one warp per DeltaNet head");
static_assert(NWARPS == DN_DV / DN_VSLICES, "recurrence: one warp per v row of a unit");

// ---- small helpers ----
__device__ __forceinline__ float bfr(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
__device__ __forceinline__ uint16_t bits(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
__device__ __forceinline__ float f16b(uint32_t b) { return __uint_as_float(b << 16); }  // bf16 bits -> float
__device__ __forceinline__ float lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ float sigmoidf_(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ float siluf_(float x) { return x / (1.f + expf(-x)); }

__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  f[0] = lo(v.x); f[1] = hi(v.x); f[2] = lo(v.y); f[3] = hi(v.y);
  f[4] = lo(v.z); f[5] = hi(v.z); f[6] = lo(v.w); f[7] = hi(v.w);
}
__device__ __forceinline__ float dot8(const uint4& w, const float (&x)[8], float acc) {
  acc = fmaf(lo(w.x), x[0], acc); acc = fmaf(hi(w.x), x[1], acc);
  acc = fmaf(lo(w.y), x[2], acc); acc = fmaf(hi(w.y), x[3], acc);
  acc = fmaf(lo(w.z), x[4], acc); acc = fmaf(hi(w.z), x[5], acc);
  acc = fmaf(lo(w.w), x[6], acc); acc = fmaf(hi(w.w), x[7], acc);
  return acc;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// weights: read-only for the whole launch -> non-coherent path, no L1 allocation
__device__ __forceinline__ uint4 ld_w(const void* p) {
  uint4 r;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(__cvta_generic_to_global(p)));
  return r;
}
__device__ __forceinline__ float ld_w1(const uint16_t* p) { return f16b(__ldg(p)); }
// data written by other blocks during this launch: bypass L1 (ld.global.cg)
__device__ __forceinline__ float ld_x1(const uint16_t* p) { return f16b(__ldcg(reinterpret_cast<const unsigned short*>(p))); }
__device__ __forceinline__ uint4 ld_x16(const void* p) { return __ldcg(reinterpret_cast<const uint4*>(p)); }

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(__cvta_generic_to_global(p)) : "memory");
  return v;
}
__device__ __forceinline__ void red_add_release(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned atom_add_acq_rel(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(__cvta_generic_to_global(p)), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Grid barrier k of this launch: everyone adds 1, then waits for target = bar_base + (k+1)*G.
// The counter only grows (wrap-safe compare), so the host never clears it between tokens.
// The grid barrier is split: arrive (after the block's writes) ... wait. Between the two the
// warps issue their loads of the next phase (weights only: they depend on no other block), so
// they stream while the block waits, and the release does not wait for them. The last warp
// does the barrier's atomics (its own next-phase loads go after the wait, so its acquire
// polls are not queued behind them). light: the red.release / ld.acquire pair alone orders
// the block's writes (made visible to that thread by bar.sync; release is cumulative)
// before everyone's reads after the barrier; all cross-block reads here are ld.global.cg
// (L2), never a stale L1 line. Not light: a membar.gl before the arrive and after the wait.
// gen (MKF_GEN_BAR): arrivals are atom.acq_rel (they return the old count); the one that
// completes the count stores the target into SYNC_GEN (release), and waiters poll that word,
// which is written once per barrier, instead of the counter that all G arrivals hammer. They
// wait for equality: the word holds exactly this target until they themselves arrive again,
// so a stale value from long ago (variant off for a while, counter wrapped) never passes.
// publish (MKF_DN_FLAGS / MKF_FA_FLAGS after an in-proj): the block also stores `pub` into its
// own word SYNC_PUB + b (release) for consumers that wait on a few blocks only.
constexpr int BAR_THREAD = THREADS - 32;
__device__ __forceinline__ void barrier_arrive(unsigned* sync, unsigned target, int flags, bool publish, unsigned pub) {
  __syncthreads();
  if (threadIdx.x == BAR_THREAD) {
    if (!(flags & MKF_LIGHT_BAR)) __threadfence();
    if (flags & MKF_GEN_BAR) {
      if (atom_add_acq_rel(sync + SYNC_BAR, 1u) == target - 1u) st_release(sync + SYNC_GEN, target);
    } else {
      red_add_release(sync + SYNC_BAR, 1u);
    }
    if (publish) st_release(sync + SYNC_PUB + blockIdx.x, pub);
  }
}
__device__ __forceinline__ void barrier_wait(const unsigned* sync, unsigned target, int flags) {
  if (threadIdx.x == BAR_THREAD) {
    if (flags & MKF_GEN_BAR) {
      while (ld_acquire(sync + SYNC_GEN) != target) {  // (the word cannot pass target before we arrive again)
      }
    } else {
      while ((int)(ld_acquire(sync + SYNC_BAR) - target) < 0) {
      }
    }
    if (!(flags & MKF_LIGHT_BAR)) __threadfence();
  }
  __syncthreads();
}

// MKF_DN_FLAGS / MKF_FA_FLAGS: is phase q (>= 0) an in-proj whose barrier is partial?
__device__ __forceinline__ bool partial_in_proj(int flags, int q) {
  if (q < 0) return false;
  const int mask = ((q / PHASES_PER_LAYER) & 3) == 3 ? MKF_FA_FLAGS : MKF_DN_FLAGS;
  return (flags & mask) && q % PHASES_PER_LAYER == 0;
}
// the block whose row slice [part(R, b, G), part(R, b+1, G)) holds row r
__device__ __forceinline__ int part(int n, int b, int G) { return (int)(((long long)n * b) / G); }
__device__ __forceinline__ int row_owner(int R, int r, int G) {  // (R, G <= MAX_GRID: 32-bit products)
  int b = (int)((unsigned)(r * G) / (unsigned)R);  // part(R, b, G) <= r for this b
  while (b + 1 < G && (int)((unsigned)(R * (b + 1)) / (unsigned)G) <= r) ++b;
  return b;
}
// Partial barrier (MKF_DN_FLAGS / MKF_FA_FLAGS), before the core phase of layer l: the block
// waits until every block owning an in-proj row that its unit reads has published `pub`
// (equality: a producer cannot publish its next in-proj before this block passes the next grid
// barrier). DeltaNet unit (h, j): q and k rows of head h, its 16 v rows, b[h], a[h]; attention
// unit (g, s): q + gate rows of heads 4g..4g+3, k and v rows of head g. A block with several
// units (grid < units) waits for every block. The last warp polls, a lane group per row range,
// each lane a few owner blocks, with relaxed loads (four in flight per lane), then
// fence.acq_rel (after reads of the producers' release stores: orders everything after it)
// and bar.sync.
// Deadlock-free: the owners' in-proj depends on no other block, and all blocks are resident.
__device__ __forceinline__ unsigned ld_relaxed(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(__cvta_generic_to_global(p)) : "memory");
  return v;
}

// ---- L2 prefetch (a hint; correctness never depends on it) ----
__device__ __forceinline__ void l2_prefetch(const void* p, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(bytes) : "memory");
#else
  const char* c = static_cast<const char*>(p);
  for (uint32_t off = 0; off < bytes; off += 128)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(__cvta_generic_to_global(c + off)));
#endif
}
__device__ __forceinline__ void line_prefetch(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(__cvta_generic_to_global(p)));
}
// called by one warp: the range is cut into PF_PIECE pieces spread over the lanes
__device__ __forceinline__ void warp_prefetch(const void* p, size_t bytes, int lane) {
  const char* c = static_cast<const char*>(p);
  for (size_t off = (size_t)lane * PF_PIECE; off < bytes; off += (size_t)32 * PF_PIECE) {
    const size_t n = bytes - off < (size_t)PF_PIECE ? bytes - off : (size_t)PF_PIECE;
    l2_prefetch(c + off, (uint32_t)n);
  }
}
// called by every thread of the block (flags pick the mechanism, see MKF_*)
__device__ __forceinline__ void block_prefetch(const void* p, size_t bytes, int flags) {
  const char* c = static_cast<const char*>(p);
  const int t = threadIdx.x;
  if (flags & MKF_PF_LINES) {
    for (size_t off = (size_t)t * 128; off < bytes; off += (size_t)THREADS * 128) line_prefetch(c + off);
    return;
  }
  const size_t pieces = (bytes + PF_PIECE - 1) / PF_PIECE;
  for (size_t i = 0; i < pieces; ++i) {
    const int owner = (flags & MKF_PF_SPREAD) ? (int)((i % NWARPS) * 32 + (i / NWARPS) % 32) : (int)(i % 32);
    if (owner == t) {
      const size_t off = i * PF_PIECE;
      const size_t n = bytes - off < (size_t)PF_PIECE ? bytes - off : (size_t)PF_PIECE;
      l2_prefetch(c + off, (uint32_t)n);
    }
  }
}

__device__ __forceinline__ bool is_fa(int layer) { return (layer & 3) == 3; }
__device__ __forceinline__ int dn_slot(int layer) { return layer - (layer >> 2); }
__device__ __forceinline__ int fa_slot(int layer) { return layer >> 2; }
template <class T>
__device__ __forceinline__ const T* lw(const Args& a, int layer, int slot) {
  return reinterpret_cast<const T*>(a.layers[layer * NSLOT + slot]);
}

__device__ __forceinline__ void wait_core_producers(const Args& a, int l, unsigned pub) {
  const int G = gridDim.x, b = blockIdx.x;
  const bool fa = is_fa(l);
  const int units = fa ? FA_HKV * a.nsplit : DN_UNITS, R = fa ? FA_QKV : DN_WIN;
  if (b >= units) return;  // no unit in this block
  if ((threadIdx.x >> 5) == BAR_THREAD / 32) {
    const int lane = threadIdx.x & 31;
    int r0 = 0, r1 = 0, first = 0, nl = 32;  // this lane's row range, its lane group [first, first + nl)
    if (b + G < units) {
      r1 = R;
    } else if (fa) {  // lanes 0-19: q + gate (2048 rows), 20-25: k, 26-31: v
      const int g = b / a.nsplit, i = lane < 20 ? 0 : lane < 26 ? 1 : 2;
      r0 = i == 0 ? g * 4 * 2 * FA_HD : i == 1 ? 2 * FA_HQ * FA_HD + g * FA_HD : 2 * FA_HQ * FA_HD + FA_HKV * FA_HD + g * FA_HD;
      r1 = r0 + (i == 0 ? 4 * 2 * FA_HD : FA_HD);
      first = i == 0 ? 0 : i == 1 ? 20 : 26;
      nl = i == 0 ? 20 : 6;
    } else {  // 6 lanes each: q, k, the unit's 16 v rows, b[h], a[h]; lanes 30, 31 idle
      const int h = b / DN_VSLICES, j = b % DN_VSLICES, i = lane / 6;
      r0 = i == 0 ? h * DN_DK : i == 1 ? DN_KEY + h * DN_DK : i == 2 ? 2 * DN_KEY + h * DN_DV + j * 16
         : i == 3 ? DN_CONV + DN_VAL + h : DN_CONV + DN_VAL + DN_H + h;
      r1 = i <= 1 ? r0 + DN_DK : i == 2 ? r0 + 16 : i <= 4 ? r0 + 1 : r0;
      first = 6 * i;
      nl = 6;
    }
    const int lo = r1 > r0 ? row_owner(R, r0, G) + lane - first : 1, hi = r1 > r0 ? row_owner(R, r1 - 1, G) : 0;
    bool done;
    do {  // four polls in flight per lane and round
      done = true;
      for (int p = lo; p <= hi; p += 4 * nl) {
        unsigned v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) v[k] = p + k * nl <= hi ? ld_relaxed(a.sync + SYNC_PUB + p + k * nl) : pub;
#pragma unroll
        for (int k = 0; k < 4; ++k) done &= v[k] == pub;
      }
    } while (!__all_sync(0xffffffffu, done));
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
  }
  __syncthreads();
}

// ---- matrix-vector products -------------------------------------------------
// A warp's rows live in wv[16] (NR rows x NCH 16-byte chunks per lane, all loads in flight
// before the FMAs); x is the bf16 input vector in shared memory.
template <int NCH, int NR>
__device__ __forceinline__ void issue_rows(const uint16_t* const (&w)[NR], int lane, uint4 (&wv)[16]) {
  static_assert(NCH * NR <= 16, "16 registers of weights per lane");
#pragma unroll
  for (int r = 0; r < NR; ++r)
#pragma unroll
    for (int c = 0; c < NCH; ++c) wv[r * NCH + c] = ld_w(w[r] + (c * 32 + lane) * 8);
}
template <int NCH, int NR>
__device__ __forceinline__ void dot_regs(const uint4 (&wv)[16], const uint16_t* x, int lane, float (&acc)[NR]) {
#pragma unroll
  for (int r = 0; r < NR; ++r) acc[r] = 0.f;
#pragma unroll
  for (int c = 0; c < NCH; ++c) {
    float xf[8];
    unpack8(*reinterpret_cast<const uint4*>(x + (c * 32 + lane) * 8), xf);
#pragma unroll
    for (int r = 0; r < NR; ++r) acc[r] = dot8(wv[r * NCH + c], xf, acc[r]);
  }
#pragma unroll
  for (int r = 0; r < NR; ++r) acc[r] = warp_sum(acc[r]);
}
__device__ __forceinline__ void issue_quad(const uint16_t* W, int base, int r1, int lane, uint4 (&wv)[16]);
template <int K>
__device__ __forceinline__ void issue_half(const uint16_t* W, int row, int r1, int half, int lane, uint4 (&wv)[16]);
__device__ __forceinline__ void issue_gate_up(const uint16_t* gw, int base, int u1, int lane, uint4 (&wv)[16]);

// rows [r0, r1) of W [*, 1024]; warp w takes rows r0 + 4w + 64i .. +4 (its first quad is
// already in wv); epi(row, dot) on lane 0
template <class Epi>
__device__ __forceinline__ void mv_k1024(const uint16_t* W, int r0, int r1, const uint16_t* xs, uint4 (&wv)[16], Epi epi) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int base = r0 + warp * 4; base < r1; base += NWARPS * 4) {
    if (base != r0 + warp * 4) issue_quad(W, base, r1, lane, wv);
    float acc[4];
    dot_regs<D / 256, 4>(wv, xs, lane, acc);
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < 4; ++r)
        if (base + r < r1) epi(base + r, acc[r]);
    }
  }
}

// rows [r0, r1) of W [*, K], K = 2048 or 3584: two warps per row (each half of K), then
// hidden[row] += bf16(dot) (the residual add), optionally copied to the trace.
template <int K>
__device__ __forceinline__ void mv_half_rows_residual(const uint16_t* W, int r0, int r1, const uint16_t* xs, uint16_t* hidden,
                                                      float* red, float* trace_row, uint4 (&wv)[16]) {
  constexpr int NCH = K / 512;
  static_assert(NCH * 512 == K, "K must be a multiple of 512");
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int base = r0; base < r1; base += NWARPS / 2) {
    const int row = base + (warp >> 1), half = warp & 1;
    if (base != r0) issue_half<K>(W, row, r1, half, lane, wv);
    float acc[1] = {0.f};
    if (row < r1) dot_regs<NCH, 1>(wv, xs + half * (K / 2), lane, acc);
    if (lane == 0) red[warp] = acc[0];
    __syncthreads();
    if (threadIdx.x < NWARPS / 2) {
      const int r = base + threadIdx.x;
      if (r < r1) {
        const float o = bfr(red[2 * threadIdx.x] + red[2 * threadIdx.x + 1]);
        const float h = bfr(ld_x1(hidden + r) + o);
        hidden[r] = bits(h);
        if (trace_row) trace_row[r] = h;
      }
    }
    __syncthreads();
  }
}

// every block: xs = bf16(rmsnorm(src) * (1 + w)) over D = 1024 (2 elements per thread)
__device__ __forceinline__ void block_rmsnorm(const uint16_t* src, bool src_is_weight, const uint16_t* w, uint16_t* xs, float* red) {
  const int t = threadIdx.x;
  uint32_t pair;
  if (src_is_weight) pair = __ldg(reinterpret_cast<const unsigned*>(src) + t);
  else pair = __ldcg(reinterpret_cast<const unsigned*>(src) + t);
  const float x0 = lo(pair), x1 = hi(pair);
  float ss = warp_sum(x0 * x0 + x1 * x1);
  if ((t & 31) == 0) red[t >> 5] = ss;
  __syncthreads();
  float tot = 0.f;
#pragma unroll
  for (int i = 0; i < NWARPS; ++i) tot += red[i];
  const float r = rsqrtf(tot / (float)D + EPS);
  const uint32_t wp = __ldg(reinterpret_cast<const unsigned*>(w) + t);
  const uint32_t y = (uint32_t)bits((x0 * r) * (1.f + lo(wp))) | ((uint32_t)bits((x1 * r) * (1.f + hi(wp))) << 16);
  reinterpret_cast<uint32_t*>(xs)[t] = y;
  __syncthreads();
}

// copy a bf16 vector written by other blocks into shared memory (n multiple of 8)
__device__ __forceinline__ void load_vec(const uint16_t* src, uint16_t* xs, int n) {
  for (int i = threadIdx.x; i < n / 8; i += THREADS) reinterpret_cast<uint4*>(xs)[i] = ld_x16(src + 8 * i);
  __syncthreads();
}

// ---- L2 prefetch of one phase's slice for this block (all threads call it) ----
__device__ void prefetch_phase(const Args& a, int q) {
  if (q >= NPHASES) return;
  const int G = gridDim.x, b = blockIdx.x, f = a.flags;
  if (q == NPHASES - 1) {  // lm_head: the first pf_dist iterations of this block's rows
    const int r0 = part(VOCAB, b, G), r1 = part(VOCAB, b + 1, G);
    const int n = min(r1 - r0, LM_ROWS_PER_IT * a.pf_dist);
    block_prefetch(a.embed + (size_t)r0 * D, (size_t)n * D * 2, f);
    return;
  }
  const int l = q / PHASES_PER_LAYER, sub = q % PHASES_PER_LAYER;
  const bool fa = is_fa(l);
  switch (sub) {
    case 0: {
      const int R = fa ? FA_QKV : DN_WIN, r0 = part(R, b, G), r1 = part(R, b + 1, G);
      block_prefetch(lw<uint16_t>(a, l, SL_WIN) + (size_t)r0 * D, (size_t)(r1 - r0) * D * 2, f);
      break;
    }
    case 1:
      if (!fa) {
        for (int u = b; u < DN_UNITS; u += G) {
          const int h = u / DN_VSLICES, j = u % DN_VSLICES;
          block_prefetch(a.dn_state + ((size_t)(dn_slot(l) * DN_H + h) * DN_DV + j * 16) * DN_DK, 16 * DN_DK * 4, f);
        }
      } else {
        const int ctx = a.pos + 1;
        for (int u = b; u < FA_HKV * a.nsplit; u += G) {
          const int g = u / a.nsplit, s = u % a.nsplit;
          const int p0 = part(ctx, s, a.nsplit), p1 = min(part(ctx, s + 1, a.nsplit), a.pos);
          if (p1 <= p0) continue;
          const size_t off = ((size_t)(fa_slot(l) * FA_HKV + g) * a.max_seq + p0) * FA_HD;
          block_prefetch(a.k_cache + off, (size_t)(p1 - p0) * FA_HD * 2, f);
          block_prefetch(a.v_cache + off, (size_t)(p1 - p0) * FA_HD * 2, f);
        }
      }
      break;
    case 2: {
      const int r0 = part(D, b, G), r1 = part(D, b + 1, G);
      block_prefetch(lw<uint16_t>(a, l, SL_OUT) + (size_t)r0 * 2048, (size_t)(r1 - r0) * 2048 * 2, f);
      break;
    }
    case 3: {
      const int u0 = part(INTER, b, G), u1 = part(INTER, b + 1, G);
      const uint16_t* gu = lw<uint16_t>(a, l, SL_GATE_UP);
      block_prefetch(gu + (size_t)u0 * D, (size_t)(u1 - u0) * D * 2, f);
      block_prefetch(gu + (size_t)(INTER + u0) * D, (size_t)(u1 - u0) * D * 2, f);
      break;
    }
    default: {
      const int r0 = part(D, b, G), r1 = part(D, b + 1, G);
      block_prefetch(lw<uint16_t>(a, l, SL_DOWN) + (size_t)r0 * INTER, (size_t)(r1 - r0) * INTER * 2, f);
      break;
    }
  }
}

// ---- early issue: each warp's weights of its first item of phase q, into registers ----
// (the same loads the phase would make; issued before the barrier that precedes the phase,
// they are in flight while the block waits and normalises). Every entry is written.
__device__ __forceinline__ void issue_quad(const uint16_t* W, int base, int r1, int lane, uint4 (&wv)[16]) {
  if (base < r1) {
    const uint16_t* w[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) w[r] = W + (size_t)min(base + r, r1 - 1) * D;
    issue_rows<4, 4>(w, lane, wv);
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i) wv[i] = make_uint4(0, 0, 0, 0);
  }
}
template <int K>
__device__ __forceinline__ void issue_half(const uint16_t* W, int row, int r1, int half, int lane, uint4 (&wv)[16]) {
  constexpr int NCH = K / 512;
  if (row < r1) {
    const uint16_t* w[1] = {W + (size_t)row * K + half * (K / 2)};
    issue_rows<NCH, 1>(w, lane, wv);
  } else {
#pragma unroll
    for (int i = 0; i < NCH; ++i) wv[i] = make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (int i = NCH; i < 16; ++i) wv[i] = make_uint4(0, 0, 0, 0);
}
__device__ __forceinline__ void issue_gate_up(const uint16_t* gw, int base, int u1, int lane, uint4 (&wv)[16]) {
  if (base < u1) {
    const uint16_t* uw = gw + (size_t)INTER * D;
    const int ub = min(base + 1, u1 - 1);
    const uint16_t* w[4] = {gw + (size_t)base * D, uw + (size_t)base * D, gw + (size_t)ub * D, uw + (size_t)ub * D};
    issue_rows<4, 4>(w, lane, wv);
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i) wv[i] = make_uint4(0, 0, 0, 0);
  }
}
__device__ __forceinline__ void issue_phase(const Args& a, int q, uint4 (&wv)[16]) {
  const int G = gridDim.x, b = blockIdx.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (q >= NPHASES) {
#pragma unroll
    for (int i = 0; i < 16; ++i) wv[i] = make_uint4(0, 0, 0, 0);
    return;
  }
  if (q == NPHASES - 1) {
    issue_quad(a.embed, part(VOCAB, b, G) + warp * 4, part(VOCAB, b + 1, G), lane, wv);
    return;
  }
  const int l = q / PHASES_PER_LAYER, sub = q % PHASES_PER_LAYER;
  const int r0 = part(D, b, G), r1 = part(D, b + 1, G);
  switch (sub) {
    case 0: {
      const int R = is_fa(l) ? FA_QKV : DN_WIN;
      issue_quad(lw<uint16_t>(a, l, SL_WIN), part(R, b, G) + warp * 4, part(R, b + 1, G), lane, wv);
      break;
    }
    case 2: issue_half<2048>(lw<uint16_t>(a, l, SL_OUT), r0 + (warp >> 1), r1, warp & 1, lane, wv); break;
    case 3: issue_gate_up(lw<uint16_t>(a, l, SL_GATE_UP), part(INTER, b, G) + warp * 2, part(INTER, b + 1, G), lane, wv); break;
    case 4: issue_half<INTER>(lw<uint16_t>(a, l, SL_DOWN), r0 + (warp >> 1), r1, warp & 1, lane, wv); break;
    default:  // sub 1: the DeltaNet state row of this warp's first unit (attention: nothing)
#pragma unroll
      for (int i = 1; i < 16; ++i) wv[i] = make_uint4(0, 0, 0, 0);
      wv[0] = make_uint4(0, 0, 0, 0);
      if (!is_fa(l) && b < DN_UNITS) {
        const int h = b / DN_VSLICES, j = b % DN_VSLICES;
        wv[0] = __ldcg(reinterpret_cast<const uint4*>(a.dn_state + ((size_t)(dn_slot(l) * DN_H + h) * DN_DV + j * 16 + warp) * DN_DK) + lane);
      }
      break;
  }
}

// ---- DeltaNet phases --------------------------------------------------------
// phase 0: xs = norm(hidden); rows of [qkv | z | b | a] -> conv ring column pos%4 | zab
__device__ __forceinline__ void dn_in_proj(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16]) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  const int G = gridDim.x, b = blockIdx.x;
  if (l == 0) {  // the embedding row is the residual stream entering layer 0
    const uint16_t* e = a.embed + (size_t)a.token[0] * D;
    block_rmsnorm(e, true, lw<uint16_t>(a, l, SL_IN_NORM), xs, red);
    if (b == 0) {
      if (a.times && threadIdx.x == 0) a.times[NPHASES + 2] = globaltimer();
      for (int i = threadIdx.x; i < D; i += THREADS) {
        const uint16_t v = __ldg(e + i);
        a.hidden[i] = v;
        if (a.trace) a.trace[i] = f16b(v);
      }
    }
  } else {
    block_rmsnorm(a.hidden, false, lw<uint16_t>(a, l, SL_IN_NORM), xs, red);
  }
  uint16_t* ring = a.conv_ring + (size_t)(dn_slot(l) * 4 + (a.pos & 3)) * DN_CONV;
  uint16_t* zab = a.zab;
  mv_k1024(lw<uint16_t>(a, l, SL_WIN), part(DN_WIN, b, G), part(DN_WIN, b + 1, G), xs, wv, [&](int r, float v) {
    if (r < DN_CONV) ring[r] = bits(v);
    else zab[r - DN_CONV] = bits(v);
  });
}

// phase 1: unit (head h, v-slice j): conv + SiLU of the head's q, k and 16 v channels,
// L2 norms, gates, then warp w updates state row v = 16j + w: S = aS + k (b(v - aS.k)), o = S.q
__device__ __forceinline__ void dn_recurrence(const Args& a, int l, uint8_t* sm, const uint4 (&wv)[16]) {
  float* qs = reinterpret_cast<float*>(sm + SM_DN_Q);
  float* ks = reinterpret_cast<float*>(sm + SM_DN_K);
  float* vs = reinterpret_cast<float*>(sm + SM_DN_V);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const int slot = dn_slot(l);
  const uint16_t* convw = lw<uint16_t>(a, l, SL_CONV_W);
  const uint16_t* ring = a.conv_ring + (size_t)slot * 4 * DN_CONV;
  for (int u = blockIdx.x; u < DN_UNITS; u += gridDim.x) {
    const int h = u / DN_VSLICES, j = u % DN_VSLICES;
    // loads that do not depend on the conv first, so their latency overlaps it
    const int v = j * 16 + warp;  // warp w: state row v = 16 j + w, lane owns k = 4 lane .. 4 lane + 3
    float* srow = a.dn_state + ((size_t)(slot * DN_H + h) * DN_DV + v) * DN_DK;
    float4 s;
    if (u == (int)blockIdx.x) {  // the first unit's row was loaded with the phase's other early loads
      s = make_float4(__uint_as_float(wv[0].x), __uint_as_float(wv[0].y), __uint_as_float(wv[0].z), __uint_as_float(wv[0].w));
    } else {
      s = __ldcg(reinterpret_cast<const float4*>(srow) + lane);
    }
    const float a_raw = ld_x1(a.zab + DN_VAL + DN_H + h), b_raw = ld_x1(a.zab + DN_VAL + h);
    const float dt = ld_w1(lw<uint16_t>(a, l, SL_DT_BIAS) + h), alog = ld_w1(lw<uint16_t>(a, l, SL_A_LOG) + h);
    float y = 0.f;
    if (t < 2 * DN_DK + 16) {
      const int c = t < DN_DK ? h * DN_DK + t
                  : t < 2 * DN_DK ? DN_KEY + h * DN_DK + (t - DN_DK)
                  : 2 * DN_KEY + h * DN_DV + j * 16 + (t - 2 * DN_DK);
      float acc = 0.f;
#pragma unroll
      for (int i = 0; i < 4; ++i)  // tap i multiplies position pos-3+i; tap 3 is this token
        acc = fmaf(ld_w1(convw + c * 4 + i), ld_x1(ring + (size_t)((a.pos - 3 + i) & 3) * DN_CONV + c), acc);
      y = bfr(siluf_(bfr(acc)));
      if (t < DN_DK) qs[t] = y;
      else if (t < 2 * DN_DK) ks[t - DN_DK] = y;
      else vs[t - 2 * DN_DK] = y;
    }
    const float ss = warp_sum(y * y);
    if (lane == 0 && warp < 8) red[warp] = ss;
    __syncthreads();
    const float rq = rsqrtf(red[0] + red[1] + red[2] + red[3] + EPS) * rsqrtf((float)DN_DK);
    const float rk = rsqrtf(red[4] + red[5] + red[6] + red[7] + EPS);
    // gates (fp32): g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b) rounded to bf16
    const float av = a_raw + dt;
    const float sp = av > 20.f ? av : log1pf(expf(av));
    const float alpha = expf(-expf(alog) * sp);
    const float beta = bfr(sigmoidf_(b_raw));
    const float4 q4 = reinterpret_cast<const float4*>(qs)[lane];
    const float4 k4 = reinterpret_cast<const float4*>(ks)[lane];
    const float kx = k4.x * rk, ky = k4.y * rk, kz = k4.z * rk, kw = k4.w * rk;
    const float qx = q4.x * rq, qy = q4.y * rq, qz = q4.z * rq, qw = q4.w * rq;
    float4 sd = make_float4(alpha * s.x, alpha * s.y, alpha * s.z, alpha * s.w);
    const float sk = warp_sum(sd.x * kx + sd.y * ky + sd.z * kz + sd.w * kw);
    const float du = beta * (vs[warp] - sk);
    sd.x = fmaf(kx, du, sd.x); sd.y = fmaf(ky, du, sd.y); sd.z = fmaf(kz, du, sd.z); sd.w = fmaf(kw, du, sd.w);
    const float o = warp_sum(sd.x * qx + sd.y * qy + sd.z * qz + sd.w * qw);
    __stcg(reinterpret_cast<float4*>(srow) + lane, sd);
    if (lane == 0) a.obuf[h * DN_DV + v] = bits(o);
    __syncthreads();  // smem reuse by the next unit
  }
}

// phase 2: every block: gated RMSNorm of all 16 heads (warp = head) -> xs, then its rows
// of out_proj with the residual add
__device__ __forceinline__ void dn_out_proj(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16]) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const int base = warp * DN_DV + lane * 4;
  const uint2 ov = __ldcg(reinterpret_cast<const uint2*>(a.obuf + base));
  const uint2 zv = __ldcg(reinterpret_cast<const uint2*>(a.zab + base));
  const uint2 gn = __ldg(reinterpret_cast<const uint2*>(lw<uint16_t>(a, l, SL_GNORM) + lane * 4));
  const float o[4] = {lo(ov.x), hi(ov.x), lo(ov.y), hi(ov.y)};
  const float z[4] = {lo(zv.x), hi(zv.x), lo(zv.y), hi(zv.y)};
  const float w[4] = {lo(gn.x), hi(gn.x), lo(gn.y), hi(gn.y)};
  const float ss = warp_sum(o[0] * o[0] + o[1] * o[1] + o[2] * o[2] + o[3] * o[3]);
  const float r = rsqrtf(ss / (float)DN_DV + EPS);
  uint16_t y[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) y[i] = bits(bfr(w[i] * bfr(o[i] * r)) * siluf_(z[i]));
  *reinterpret_cast<uint2*>(xs + base) = make_uint2(y[0] | ((uint32_t)y[1] << 16), y[2] | ((uint32_t)y[3] << 16));
  __syncthreads();
  const int G = gridDim.x, b = blockIdx.x;
  mv_half_rows_residual<DN_VAL>(lw<uint16_t>(a, l, SL_OUT), part(D, b, G), part(D, b + 1, G), xs, a.hidden, red, nullptr, wv);
}

// ---- gated attention phases ---------------------------------------------------
__device__ __forceinline__ void fa_in_proj(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16]) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  block_rmsnorm(a.hidden, false, lw<uint16_t>(a, l, SL_IN_NORM), xs, red);
  const int G = gridDim.x, b = blockIdx.x;
  uint16_t* out = a.qkv;
  mv_k1024(lw<uint16_t>(a, l, SL_WIN), part(FA_QKV, b, G), part(FA_QKV, b + 1, G), xs, wv, [&](int r, float v) { out[r] = bits(v); });
}

// final gate: attn[h*256+d] = bf16(bf16(o) * bf16(sigmoid(gate)))
__device__ __forceinline__ void attn_finish(const Args& a, int h, int d, float o, float gate) {
  a.attn[h * FA_HD + d] = bits(bfr(o) * bfr(sigmoidf_(gate)));
}

// phase 1: unit (kv head g, split s) covers positions [p0, p1) of 0..pos for q heads 4g..4g+3.
// All threads: q/k norm + partial RoPE; warp w: positions p0+w, p0+w+16, ... with an online
// softmax (lane = 8 dims); then the 16 warps merge in smem. With nsplit > 1 the last unit of
// a kv head to finish merges the splits (fixed order: deterministic) and resets its counter.
__device__ void fa_attention(const Args& a, int l, uint8_t* sm) {
  float* qf = reinterpret_cast<float*>(sm + SM_AT_Q);
  float* kf = reinterpret_cast<float*>(sm + SM_AT_K);
  uint16_t* kb = reinterpret_cast<uint16_t*>(sm + SM_AT_KB);
  uint16_t* vb = reinterpret_cast<uint16_t*>(sm + SM_AT_VB);
  float* wm = reinterpret_cast<float*>(sm + SM_AT_M);
  float* wl = reinterpret_cast<float*>(sm + SM_AT_L);
  float* wacc = reinterpret_cast<float*>(sm + SM_AT_ACC);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  int* misc = reinterpret_cast<int*>(sm + SM_MISC);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const int slot = fa_slot(l), ctx = a.pos + 1, ns = a.nsplit;
  const uint16_t* qn_w = lw<uint16_t>(a, l, SL_Q_NORM);
  const uint16_t* kn_w = lw<uint16_t>(a, l, SL_K_NORM);
  for (int u = blockIdx.x; u < FA_HKV * ns; u += gridDim.x) {
    const int g = u / ns, s = u % ns;
    const int p0 = part(ctx, s, ns), p1 = part(ctx, s + 1, ns);
    const int d = t & (FA_HD - 1);
    // loads independent of the norms first: RoPE cos/sin (dims < 64), this thread's two gate values
    float rc = 0.f, rs = 0.f;
    if (d < FA_ROT) {
      rc = ld_w1(a.rope + (size_t)a.pos * FA_ROT + (d & (FA_ROT / 2 - 1)));
      rs = ld_w1(a.rope + (size_t)a.pos * FA_ROT + FA_ROT / 2 + (d & (FA_ROT / 2 - 1)));
    }
    const uint32_t gates = __ldcg(reinterpret_cast<const unsigned*>(a.qkv + (4 * g + (t >> 7)) * 2 * FA_HD + FA_HD + (t & 127) * 2));
    // -- q (4 heads) and k: zero-centred RMSNorm per head over 256 dims --
    // thread t holds q elements e = t (heads 0,1) and e = t + 512 (heads 2,3); k[t] for t < 256
    const float q0 = ld_x1(a.qkv + (4 * g + (t >> 8)) * 2 * FA_HD + d);
    const float q1 = ld_x1(a.qkv + (4 * g + 2 + (t >> 8)) * 2 * FA_HD + d);
    const float kr = t < FA_HD ? ld_x1(a.qkv + 2 * FA_HQ * FA_HD + g * FA_HD + t) : 0.f;
    if (t >= FA_HD) vb[t - FA_HD] = bits(ld_x1(a.qkv + 2 * FA_HQ * FA_HD + FA_HKV * FA_HD + g * FA_HD + (t - FA_HD)));
    const float s0 = warp_sum(q0 * q0), s1 = warp_sum(q1 * q1), s2 = warp_sum(kr * kr);
    if (lane == 0) { red[warp * 3] = s0; red[warp * 3 + 1] = s1; red[warp * 3 + 2] = s2; }
    __syncthreads();
    float t0 = 0.f, t1 = 0.f, tk = 0.f;
    const int wb = (t >> 8) * 8;  // warps 0-7 hold heads 0/2 (and k), warps 8-15 heads 1/3
#pragma unroll
    for (int i = 0; i < 8; ++i) { t0 += red[(wb + i) * 3]; t1 += red[(wb + i) * 3 + 1]; tk += red[i * 3 + 2]; }
    const float wq = 1.f + ld_w1(qn_w + d);
    const float n0 = bfr((q0 * rsqrtf(t0 / FA_HD + EPS)) * wq);
    const float n1 = bfr((q1 * rsqrtf(t1 / FA_HD + EPS)) * wq);
    const float nk = t < FA_HD ? bfr((kr * rsqrtf(tk / FA_HD + EPS)) * (1.f + ld_w1(kn_w + t))) : 0.f;
    qf[t] = n0;  // qf[hh*256 + d] with hh = t>>8 (0/1)
    qf[t + 512] = n1;
    if (t < FA_HD) kf[t] = nk;
    __syncthreads();
    // -- partial RoPE (NeoX halves) on dims 0..63, in bf16 as transformers does --
    float r0 = n0, r1 = n1, rk = nk;
    if (d < FA_ROT) {
      const float c = rc, sn = rs;
      const int pd = d < FA_ROT / 2 ? d + FA_ROT / 2 : d - FA_ROT / 2;
      const float sg = d < FA_ROT / 2 ? -1.f : 1.f;
      const int hb = t & ~(FA_HD - 1);
      r0 = bfr(bfr(n0 * c) + bfr(sg * qf[hb + pd] * sn));
      r1 = bfr(bfr(n1 * c) + bfr(sg * qf[512 + hb + pd] * sn));
      if (t < FA_HD) rk = bfr(bfr(nk * c) + bfr(sg * kf[pd] * sn));
    }
    __syncthreads();
    qf[t] = r0;
    qf[t + 512] = r1;
    if (t < FA_HD) kb[t] = bits(rk);
    __syncthreads();
    // the new k, v go to the cache at pos (one unit per kv head); nobody reads row pos from
    // the cache in this launch (the unit holding pos takes it from smem)
    if (s == ns - 1) {
      const size_t off = ((size_t)(slot * FA_HKV + g) * a.max_seq + a.pos) * FA_HD;
      if (t < FA_HD) a.k_cache[off + t] = kb[t];
      else a.v_cache[off + t - FA_HD] = vb[t - FA_HD];
    }
    // -- scores and online softmax: warp w takes positions p0 + w + 16 i; lane = dims 8 lane.. --
    // warps 0-7 take q heads 0, 1 and warps 8-15 heads 2, 3; warp w covers positions
    // p0 + (w % 8) + 8 i (two heads per warp keeps the loop within the register budget)
    const int hg = warp >> 3, slot8 = warp & 7;
    float m[2], lsum[2], acc[2][8];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      m[hh] = -INFINITY;
      lsum[hh] = 0.f;
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[hh][i] = 0.f;
    }
    const uint16_t* kc = a.k_cache + (size_t)(slot * FA_HKV + g) * a.max_seq * FA_HD;
    const uint16_t* vc = a.v_cache + (size_t)(slot * FA_HKV + g) * a.max_seq * FA_HD;
    for (int p = p0 + slot8; p < p1; p += 8) {
      uint4 kv, vv;
      if (p == a.pos) {
        kv = reinterpret_cast<const uint4*>(kb)[lane];
        vv = reinterpret_cast<const uint4*>(vb)[lane];
      } else {
        kv = ld_x16(kc + (size_t)p * FA_HD + lane * 8);
        vv = ld_x16(vc + (size_t)p * FA_HD + lane * 8);
      }
      float sc[2];
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {  // q stays in smem
        const float* qh = qf + (2 * hg + hh) * FA_HD + lane * 8;
        const float4 qa = reinterpret_cast<const float4*>(qh)[0];
        const float4 qb = reinterpret_cast<const float4*>(qh)[1];
        float dd = 0.f;
        dd = fmaf(qa.x, lo(kv.x), dd); dd = fmaf(qa.y, hi(kv.x), dd); dd = fmaf(qa.z, lo(kv.y), dd); dd = fmaf(qa.w, hi(kv.y), dd);
        dd = fmaf(qb.x, lo(kv.z), dd); dd = fmaf(qb.y, hi(kv.z), dd); dd = fmaf(qb.z, lo(kv.w), dd); dd = fmaf(qb.w, hi(kv.w), dd);
        sc[hh] = dd;
      }
#pragma unroll
      for (int o = 16; o; o >>= 1) {
        sc[0] += __shfl_xor_sync(0xffffffffu, sc[0], o);
        sc[1] += __shfl_xor_sync(0xffffffffu, sc[1], o);
      }
      float vx[8];
      unpack8(vv, vx);
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const float scv = sc[hh] * (1.f / 16.f);  // 256^-1/2
        const float mn = fmaxf(m[hh], scv);
        const float corr = expf(m[hh] - mn);
        const float pw = expf(scv - mn);
        lsum[hh] = lsum[hh] * corr + pw;
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[hh][i] = fmaf(pw, vx[i], acc[hh][i] * corr);
        m[hh] = mn;
      }
    }
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int hq = 2 * hg + hh;
      if (lane == 0) { wm[slot8 * 4 + hq] = m[hh]; wl[slot8 * 4 + hq] = lsum[hh]; }
#pragma unroll
      for (int i = 0; i < 8; ++i) wacc[(slot8 * 4 + hq) * FA_HD + lane * 8 + i] = acc[hh][i];
    }
    __syncthreads();
    // -- merge the 8 position slots: thread t -> head hh = t / 128, dims 2(t % 128), +1 --
    {
      const int hh = t >> 7, dd = (t & 127) * 2;
      float M = -INFINITY;
#pragma unroll
      for (int w = 0; w < 8; ++w) M = fmaxf(M, wm[w * 4 + hh]);
      float L = 0.f, A0 = 0.f, A1 = 0.f;
#pragma unroll
      for (int w = 0; w < 8; ++w) {
        const float mw = wm[w * 4 + hh];
        if (mw == -INFINITY) continue;  // a warp with no positions
        const float e = expf(mw - M);
        L = fmaf(wl[w * 4 + hh], e, L);
        A0 = fmaf(wacc[(w * 4 + hh) * FA_HD + dd], e, A0);
        A1 = fmaf(wacc[(w * 4 + hh) * FA_HD + dd + 1], e, A1);
      }
      const int h = 4 * g + hh;
      if (ns == 1) {
        attn_finish(a, h, dd, A0 / L, lo(gates));
        attn_finish(a, h, dd + 1, A1 / L, hi(gates));
      } else {
        float* pp = a.apart + ((size_t)(g * ATT_MAX_SPLIT + s) * 4 + hh) * ATT_PART;
        if (dd == 0) { pp[0] = M; pp[1] = L; }
        pp[4 + dd] = A0;
        pp[4 + dd + 1] = A1;
      }
    }
    if (ns > 1) {
      __threadfence();  // every writer publishes its partial before the count
      __syncthreads();
      if (t == 0) {
        __threadfence();
        const unsigned old = atomicAdd(a.sync + SYNC_ATT + 32 * g, 1u);
        misc[0] = (old == (unsigned)(ns - 1));
      }
      __syncthreads();
      if (misc[0]) {  // last unit of kv head g: merge the ns partials in order
        __threadfence();
        const int hh = t >> 7, dd = (t & 127) * 2;
        const float* base = a.apart + ((size_t)(g * ATT_MAX_SPLIT) * 4 + hh) * ATT_PART;
        float M = -INFINITY;
        for (int si = 0; si < ns; ++si) M = fmaxf(M, __ldcg(base + (size_t)si * 4 * ATT_PART));
        float L = 0.f, A0 = 0.f, A1 = 0.f;
        for (int si = 0; si < ns; ++si) {
          const float* pp = base + (size_t)si * 4 * ATT_PART;
          const float e = expf(__ldcg(pp) - M);
          L = fmaf(__ldcg(pp + 1), e, L);
          A0 = fmaf(__ldcg(pp + 4 + dd), e, A0);
          A1 = fmaf(__ldcg(pp + 4 + dd + 1), e, A1);
        }
        attn_finish(a, 4 * g + hh, dd, A0 / L, lo(gates));
        attn_finish(a, 4 * g + hh, dd + 1, A1 / L, hi(gates));
        if (t == 0) atomicExch(a.sync + SYNC_ATT + 32 * g, 0u);
      }
    }
    __syncthreads();  // smem reuse by the next unit
  }
}

__device__ __forceinline__ void fa_out_proj(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16]) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  load_vec(a.attn, xs, FA_OIN);
  const int G = gridDim.x, b = blockIdx.x;
  mv_half_rows_residual<FA_OIN>(lw<uint16_t>(a, l, SL_OUT), part(D, b, G), part(D, b + 1, G), xs, a.hidden, red, nullptr, wv);
}

// ---- MLP phases (every layer) -------------------------------------------------
// phase 3: xs = norm(hidden); units [u0, u1): warp takes 2 units (4 rows: gate, up, gate, up)
__device__ __forceinline__ void mlp_gate_up(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16]) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  block_rmsnorm(a.hidden, false, lw<uint16_t>(a, l, SL_POST_NORM), xs, red);
  const int G = gridDim.x, b = blockIdx.x;
  const int u0 = part(INTER, b, G), u1 = part(INTER, b + 1, G);
  const uint16_t* gw = lw<uint16_t>(a, l, SL_GATE_UP);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int base = u0 + warp * 2; base < u1; base += NWARPS * 2) {
    if (base != u0 + warp * 2) issue_gate_up(gw, base, u1, lane, wv);
    float acc[4];
    dot_regs<D / 256, 4>(wv, xs, lane, acc);
    if (lane == 0) {
      a.act[base] = bits(bfr(siluf_(bfr(acc[0]))) * bfr(acc[1]));
      if (base + 1 < u1) a.act[base + 1] = bits(bfr(siluf_(bfr(acc[2]))) * bfr(acc[3]));
    }
  }
}

// phase 4: down projection of act with the residual add; the result is layer l's output
__device__ __forceinline__ void mlp_down(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16]) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  load_vec(a.act, xs, INTER);
  const int G = gridDim.x, b = blockIdx.x;
  mv_half_rows_residual<INTER>(lw<uint16_t>(a, l, SL_DOWN), part(D, b, G), part(D, b + 1, G), xs, a.hidden, red,
                               a.trace ? a.trace + (size_t)(1 + l) * D : nullptr, wv);
}

// ---- final norm, lm_head and greedy argmax ---------------------------------------
__device__ __forceinline__ bool better(float v, int i, float bv, int bi) { return v > bv || (v == bv && i < bi); }

__device__ __forceinline__ void lm_head(const Args& a, uint8_t* sm, uint4 (&wv)[16]) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  int* misc = reinterpret_cast<int*>(sm + SM_MISC);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const int G = gridDim.x, b = blockIdx.x;
  block_rmsnorm(a.hidden, false, a.final_norm, xs, red);
  if (b == 0) {
    if (a.trace)
      for (int i = t; i < D; i += THREADS) a.trace[(size_t)(NLAYER + 1) * D + i] = f16b(xs[i]);
    if (a.times && t == 0) a.times[NPHASES + 1] = globaltimer();
  }
  const int r0 = part(VOCAB, b, G), r1 = part(VOCAB, b + 1, G);
  float best = -INFINITY;
  int besti = 0x7fffffff;
  int it = 0;
  for (int base = r0 + warp * 4; base < r1; base += LM_ROWS_PER_IT, ++it) {
    if (it > 0) issue_quad(a.embed, base, r1, lane, wv);
    if (warp == 0 && a.pf_dist > 0 && (a.flags & MKF_LM_PF)) {  // keep pf_dist iterations of rows in flight
      const int pr0 = r0 + (it + a.pf_dist) * LM_ROWS_PER_IT;
      const int pr1 = min(pr0 + LM_ROWS_PER_IT, r1);
      if (pr0 < pr1) warp_prefetch(a.embed + (size_t)pr0 * D, (size_t)(pr1 - pr0) * D * 2, lane);
    }
    float acc[4];
    dot_regs<D / 256, 4>(wv, xs, lane, acc);
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        if (base + r < r1) {
          const float v = bfr(acc[r]);  // logits are bf16 in the model dtype
          if (a.logits) a.logits[base + r] = v;
          if (better(v, base + r, best, besti)) { best = v; besti = base + r; }
        }
      }
    }
  }
  if (lane == 0) { red[warp] = best; misc[warp] = besti; }
  __syncthreads();
  if (t == 0) {
    float bv = red[0];
    int bi = misc[0];
    for (int w = 1; w < NWARPS; ++w)
      if (better(red[w], misc[w], bv, bi)) { bv = red[w]; bi = misc[w]; }
    a.amax_val[b] = bv;
    a.amax_idx[b] = bi;
    __threadfence();
    const unsigned old = atomicAdd(a.sync + SYNC_LM, 1u);
    misc[16] = (old == (unsigned)(G - 1));
  }
  __syncthreads();
  if (misc[16] && warp == 0) {  // the last block to finish reduces the G block results
    __threadfence();
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int i = lane; i < G; i += 32) {
      const float v = __ldcg(a.amax_val + i);
      const int ix = __ldcg(a.amax_idx + i);
      if (better(v, ix, bv, bi)) { bv = v; bi = ix; }
    }
#pragma unroll
    for (int o = 16; o; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (better(ov, oi, bv, bi)) { bv = ov; bi = oi; }
    }
    if (lane == 0) {
      a.out_token[0] = (int64_t)bi;
      atomicExch(a.sync + SYNC_LM, 0u);
      if (a.times) a.times[NPHASES] = globaltimer();
    }
  }
}

// EARLY: each warp issues its loads of phase q+1 before barrier q (else after it)
template <bool EARLY, bool PARTIAL>
__global__ void __launch_bounds__(THREADS, 1) mk_decode_kernel(const Args a) {
  extern __shared__ __align__(16) uint8_t sm[];
  const int t = threadIdx.x;
  const int G = gridDim.x;
  constexpr bool early = EARLY;
  const bool pf_end = EARLY || (a.flags & MKF_PF_END);  // EARLY: prefetch before the register loads
  uint4 wv[16];  // this warp's weights of its first item of the current phase
  if (a.times && blockIdx.x == 0 && t == 0) a.times[0] = globaltimer();
  if (early) issue_phase(a, 0, wv);
  for (int q = 0; q < a.pf_dist; ++q) prefetch_phase(a, q);
  for (int q = 0; q < NPHASES; ++q) {
    if (a.stop_after >= 0 && q > a.stop_after) break;
    if (a.pf_dist > 0 && !pf_end) prefetch_phase(a, q + a.pf_dist);
    if (!early) issue_phase(a, q, wv);
    if (q == NPHASES - 1) {
      lm_head(a, sm, wv);
      break;
    }
    const int l = q / PHASES_PER_LAYER, sub = q % PHASES_PER_LAYER;
    // MKF_DN_FLAGS / MKF_FA_FLAGS (PARTIAL kernel): the in-proj -> core barrier is partial: its
    // arrive publishes bar_base + q + 1 for the block, no grid wait; before the core phase the
    // block waits for its unit's producers. Every block still adds its arrival to the counter,
    // so the grid barriers' targets stay bar_base + (k+1)*G.
    if (PARTIAL && partial_in_proj(a.flags, q - 1)) wait_core_producers(a, l, a.bar_base + (unsigned)q);
    if (is_fa(l)) {
      if (sub == 0) fa_in_proj(a, l, sm, wv);
      else if (sub == 1) fa_attention(a, l, sm);
      else if (sub == 2) fa_out_proj(a, l, sm, wv);
    } else {
      if (sub == 0) dn_in_proj(a, l, sm, wv);
      else if (sub == 1) dn_recurrence(a, l, sm, wv);
      else if (sub == 2) dn_out_proj(a, l, sm, wv);
    }
    if (sub == 3) mlp_gate_up(a, l, sm, wv);
    else if (sub == 4) mlp_down(a, l, sm, wv);
    if (a.times && t == BAR_THREAD) a.times[NTIMES + blockIdx.x * NBARRIERS + q] = globaltimer();  // arrival
    const unsigned target = a.bar_base + (unsigned)(q + 1) * (unsigned)G;
    const bool wait = !PARTIAL || !partial_in_proj(a.flags, q);
    barrier_arrive(a.sync, target, a.flags, !wait, a.bar_base + (unsigned)(q + 1));
    if (a.pf_dist > 0 && pf_end) prefetch_phase(a, q + a.pf_dist);
    const bool bar_warp = (t >> 5) == BAR_THREAD / 32;
    if (EARLY && !bar_warp) issue_phase(a, q + 1, wv);
    if (wait) barrier_wait(a.sync, target, a.flags);
    if (EARLY && bar_warp) issue_phase(a, q + 1, wv);
    if (a.times && blockIdx.x == 0 && t == 0) a.times[q + 1] = globaltimer();
  }
}

}  // namespace

int smem_bytes() { return SM_END; }

// the kernel instances: v4's schedules (no partial barrier code at all) and the partial-barrier one
constexpr int NKERNELS = 3;
const void* kernel_fn(int k) {
  return k == 0 ? reinterpret_cast<const void*>(mk_decode_kernel<false, false>)
       : k == 1 ? reinterpret_cast<const void*>(mk_decode_kernel<true, false>)
                : reinterpret_cast<const void*>(mk_decode_kernel<true, true>);
}

cudaError_t configure(int device, int* blocks_per_sm, int* num_sms) {
  cudaError_t e = cudaSuccess;
  for (int k = 0; k < NKERNELS && e == cudaSuccess; ++k)
    e = cudaFuncSetAttribute(kernel_fn(k), cudaFuncAttributeMaxDynamicSharedMemorySize, SM_END);
  if (e != cudaSuccess) return e;
  e = cudaDeviceGetAttribute(num_sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return e;
  *blocks_per_sm = 1 << 30;
  for (int k = 0; k < NKERNELS && e == cudaSuccess; ++k) {
    int n = 0;
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel_fn(k), THREADS, SM_END);
    if (n < *blocks_per_sm) *blocks_per_sm = n;
  }
  return e;
}

cudaError_t launch(const Args& a, int grid, cudaStream_t stream) {
  if (grid > MAX_GRID) return cudaErrorInvalidValue;  // SYNC_PUB has one word per block
  Args copy = a;
  void* params[] = {&copy};
  const bool partial = a.flags & (MKF_DN_FLAGS | MKF_FA_FLAGS);
  const int k = !(a.flags & MKF_EARLY) ? 0 : partial ? 2 : 1;
  return cudaLaunchCooperativeKernel(kernel_fn(k), dim3(grid), dim3(THREADS), params, SM_END, stream);
}

}  // namespace mk
