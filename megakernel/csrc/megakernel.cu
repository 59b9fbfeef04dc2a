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
//          DeltaNet recurrence: one v row of the state; attention: 2 q heads, every 8th position.
//   lane   16-byte weight chunks (8 bf16) at lane*8 + 256*c, fp32 accumulation, shuffle reduce.
//   ring   (MKF_RING, the default on sm_90) a 17th warp streams the block's weight slices into
//          shared-memory slots ahead of the phases (see "the weight stream"); the 16 compute
//          warps read them from there (MKF_TWO_PRODUCERS: an 18th warp shares the copying;
//          MKF_STREAM_ONLY: the compute warps only take and release the chunks, to time the
//          stream alone). The register schedules load each warp's rows straight into registers
//          (v4: those of the next phase before the barrier).
//   prefetch  (pf_dist > 0, register schedules) warp 0 issues L2 bulk prefetches of its block's
//          slice of phase q+pf_dist when phase q starts.
#include "megakernel.cuh"

#include <cuda_bf16.h>

#include "ring.cuh"

namespace mk {
namespace {

constexpr float EPS = 1e-6f;
constexpr int PF_PIECE = 16384;  // bytes per bulk prefetch instruction

// ---- shared-memory layout (bytes) ----
// The matrix phases' input vector (XS) and the mixer cores' areas (U) are never live in the
// same phase, so they share bytes: every byte left goes to the MKF_RING weight ring.
constexpr int SM_RED = 0;                          // float [64] reductions
constexpr int SM_MISC = SM_RED + 64 * 4;          // int [32]
constexpr int SM_XS = SM_MISC + 128;              // bf16 [INTER] matvec input vector
constexpr int SM_U = SM_XS;                       // phase-specific area of the mixer cores
constexpr int SM_DN_Q = SM_U;                     // float [128]
constexpr int SM_DN_K = SM_DN_Q + 512;            // float [128]
constexpr int SM_DN_V = SM_DN_K + 512;            // float [16]
constexpr int AT_ENTRIES = 4;                     // attention: the warp merge's partial results (slots 0-3)
constexpr int SM_AT_Q = SM_U;                     // float [4][256]
constexpr int SM_AT_K = SM_AT_Q + 4096;           // float [256]
constexpr int SM_AT_KB = SM_AT_K + 1024;          // bf16 [256]
constexpr int SM_AT_VB = SM_AT_KB + 512;          // bf16 [256]
constexpr int SM_AT_M = SM_AT_VB + 512;           // float [AT_ENTRIES][4]
constexpr int SM_AT_L = SM_AT_M + AT_ENTRIES * 16;  // float [AT_ENTRIES][4]
constexpr int SM_AT_ACC = SM_AT_L + AT_ENTRIES * 16;  // float [AT_ENTRIES][4][256]
constexpr int SM_END_XS = SM_XS + INTER * 2, SM_END_AT = SM_AT_ACC + AT_ENTRIES * 4 * FA_HD * 4;
constexpr int SM_END = SM_END_XS > SM_END_AT ? SM_END_XS : SM_END_AT;
constexpr int SM_RING = (SM_END + 127) & ~127;    // MKF_RING: ring_slots slots of ring::SLOT bytes, then their mbarriers
static_assert(SM_DN_V + 64 <= SM_END, "smem");
static_assert(THREADS * 4 == FA_OIN, "MKF_OUT_MERGE: four attention outputs per thread");
static_assert(AT_ENTRIES == 4, "the attention warp merge: position slots 4-7 hand over to slots 0-3");
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
// the block barrier of the 16 compute warps: named barrier 1, which the ring's producer warp
// (MKF_RING: a 17th warp) never joins
__device__ __forceinline__ void sync_warps() { asm volatile("bar.sync 1, %0;" ::"n"(THREADS) : "memory"); }
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
  sync_warps();
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
  sync_warps();
}

// MKF_DN_FLAGS / MKF_FA_FLAGS: is phase q (>= 0) an in-proj whose barrier is partial?
__device__ __forceinline__ bool partial_in_proj(int flags, int q) {
  if (q < 0) return false;
  const int mask = ((q / PHASES_PER_LAYER) & 3) == 3 ? MKF_FA_FLAGS : MKF_DN_FLAGS;
  return (flags & mask) && q % PHASES_PER_LAYER == 0;
}
// the block whose row slice [part(R, b, G), part(R, b+1, G)) holds row r
__device__ __forceinline__ int part(int n, int b, int G) { return (int)((unsigned)n * (unsigned)b / (unsigned)G); }
static_assert((long long)VOCAB * MAX_GRID < (1ll << 32), "part(): 32-bit products");
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
  const unsigned pieces = (unsigned)((bytes + PF_PIECE - 1) / PF_PIECE);  // (a slice is far below 2^32 pieces)
  for (unsigned i = 0; i < pieces; ++i) {
    const unsigned owner = (flags & MKF_PF_SPREAD) ? (i % NWARPS) * 32 + (i / NWARPS) % 32 : i % 32;
    if (owner == (unsigned)t) {
      const size_t off = (size_t)i * PF_PIECE;
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
  sync_warps();
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
    sync_warps();
    if (threadIdx.x < NWARPS / 2) {
      const int r = base + threadIdx.x;
      if (r < r1) {
        const float o = bfr(red[2 * threadIdx.x] + red[2 * threadIdx.x + 1]);
        const float h = bfr(ld_x1(hidden + r) + o);
        hidden[r] = bits(h);
        if (trace_row) trace_row[r] = h;
      }
    }
    sync_warps();
  }
}

// thread t's pair of a 1024-wide norm weight (the norm weights are evicted from L2 by every
// token's weight stream: a load of one is an HBM round trip, so it is issued early)
__device__ __forceinline__ uint32_t norm_pair(const uint16_t* w) { return __ldg(reinterpret_cast<const unsigned*>(w) + threadIdx.x); }
// every block: xs = bf16(rmsnorm(src) * (1 + w)) over D = 1024 (2 elements per thread; wp:
// this thread's pair of w, from norm_pair)
__device__ __forceinline__ void block_rmsnorm(const uint16_t* src, bool src_is_weight, uint32_t wp, uint16_t* xs, float* red) {
  const int t = threadIdx.x;
  uint32_t pair;
  if (src_is_weight) pair = __ldg(reinterpret_cast<const unsigned*>(src) + t);
  else pair = __ldcg(reinterpret_cast<const unsigned*>(src) + t);
  const float x0 = lo(pair), x1 = hi(pair);
  float ss = warp_sum(x0 * x0 + x1 * x1);
  if ((t & 31) == 0) red[t >> 5] = ss;
  sync_warps();
  float tot = 0.f;
#pragma unroll
  for (int i = 0; i < NWARPS; ++i) tot += red[i];
  const float r = rsqrtf(tot / (float)D + EPS);
  const uint32_t y = (uint32_t)bits((x0 * r) * (1.f + lo(wp))) | ((uint32_t)bits((x1 * r) * (1.f + hi(wp))) << 16);
  reinterpret_cast<uint32_t*>(xs)[t] = y;
  sync_warps();
}

// copy a bf16 vector written by other blocks into shared memory (n multiple of 8)
__device__ __forceinline__ void load_vec(const uint16_t* src, uint16_t* xs, int n) {
  for (int i = threadIdx.x; i < n / 8; i += THREADS) reinterpret_cast<uint4*>(xs)[i] = ld_x16(src + 8 * i);
  sync_warps();
}

// ---- the weight stream (MKF_RING) -------------------------------------------------
// A block reads its weights in a fixed order: phase by phase, its row slice of each matrix
// (in-proj, out-proj, gate/up, down; the lm_head's vocabulary slice last). The issuing warp
// copies that order chunk by chunk into a ring of ring_slots slots (ring.cuh) as soon as a slot
// is free, so the copies run ahead of the phases and stream on through every grid barrier;
// consumers wait for a chunk's slot and read the weights from shared memory. A chunk is whole
// rows of one matrix: 8 rows of K = 1024, 4 of K = 2048, 2 of K = 3584, or 4 gate rows (first
// half of the slot) with the same 4 up rows (second half). Chunk number n of the launch lives
// in slot n % S, fill n / S of that slot.
struct PhaseSlice {
  const uint16_t* w;   // first row of the block's slice (rows = 0: the phase streams nothing)
  const uint16_t* w2;  // gate/up: first up row (the chunks' second halves)
  int rows, rpc, k;    // rows (gate/up: units) in the slice, rows per chunk, row length
};
__device__ __forceinline__ int nchunks(const PhaseSlice& p) { return (p.rows + p.rpc - 1) / p.rpc; }

__device__ PhaseSlice phase_slice(const Args& a, int q) {
  const int G = gridDim.x, b = blockIdx.x;
  if (q >= NPHASES || (a.stop_after >= 0 && q > a.stop_after)) return {nullptr, nullptr, 0, 1, D};
  if (q == NPHASES - 1) {
    const int r0 = part(VOCAB, b, G);
    return {a.embed + (size_t)r0 * D, nullptr, part(VOCAB, b + 1, G) - r0, 8, D};
  }
  const int l = q / PHASES_PER_LAYER, r0 = part(D, b, G), r1 = part(D, b + 1, G);
  switch (q % PHASES_PER_LAYER) {
    case 0: {
      const int R = is_fa(l) ? FA_QKV : DN_WIN, i0 = part(R, b, G);
      return {lw<uint16_t>(a, l, SL_WIN) + (size_t)i0 * D, nullptr, part(R, b + 1, G) - i0, 8, D};
    }
    case 2: return {lw<uint16_t>(a, l, SL_OUT) + (size_t)r0 * DN_VAL, nullptr, r1 - r0, 4, DN_VAL};
    case 3: {
      const int u0 = part(INTER, b, G);
      const uint16_t* gu = lw<uint16_t>(a, l, SL_GATE_UP);
      return {gu + (size_t)u0 * D, gu + (size_t)(INTER + u0) * D, part(INTER, b + 1, G) - u0, 4, D};
    }
    case 4: return {lw<uint16_t>(a, l, SL_DOWN) + (size_t)r0 * INTER, nullptr, r1 - r0, 2, INTER};
    default: return {nullptr, nullptr, 0, 1, D};  // mixer core: no weights to stream
  }
}

// a position in the block's weight stream: chunk number n = chunk i of phase q (slice p)
struct Cursor {
  int n, q, i;
  PhaseSlice p;
};
// move past phases with no chunks left; false at the end of the stream
__device__ __forceinline__ bool cursor_valid(const Args& a, Cursor& c) {
  while (c.q < NPHASES && c.i >= nchunks(c.p)) {
    c.p = phase_slice(a, ++c.q);
    c.i = 0;
  }
  return c.q < NPHASES;
}

struct Stream {
  uint32_t slots, full, empty;  // shared addresses: slot 0, its "landed" and its "released" mbarrier
  int S;                        // slots
  int cons;                     // chunks consumed and released, mod 2S (every compute thread keeps the same count):
                                // the next one's slot is cons mod S, the parity of its fill cons >= S
  bool tma;                     // layer weights by bulk copies (sm_90) or per-lane cp.async (the lm_head's: bulk on sm_90)
};

__device__ void stream_start(const Args& a, Stream& s, uint8_t* sm) {
  s.S = a.ring_slots;
  s.slots = ring::smem_addr(sm + SM_RING);
  s.full = s.slots + s.S * ring::SLOT;
  s.empty = s.full + 8 * s.S;
  s.tma = ring::HAS_TMA && (a.flags & MKF_RING_TMA);
  s.cons = 0;
  if (threadIdx.x < s.S) {
    ring::bar_init(s.full + 8 * threadIdx.x, 32);  // every lane of the producer arrives once per fill
    ring::bar_init(s.empty + 8 * threadIdx.x, 1);
  }
  ring::fence_bar_init();
  __syncthreads();  // (all THREADS + 32 threads, the last time: the producer warp leaves the block barrier here)
}

// the slot after `slot`; flips the fill parity where the ring wraps around
__device__ __forceinline__ int next_slot(int slot, int S, unsigned& fill) {
  if (++slot < S) return slot;
  fill ^= 1u;
  return 0;
}

// The producer warp: copies the stream into the ring chunk after chunk, each as soon as its slot
// has been released and, in the layers, fewer than `ring_inflight` earlier chunks are still in
// flight (0, the default: no limit but the ring's size). With MKF_EVICT_FIRST (the default) the
// copies mark the weights' L2 lines as the first to evict, so the recurrent state, the K/V cache
// and the activations stay in the L2 from token to token; without it the stream evicted them and
// had to be paced to 2 chunks in flight (megakernel/NOTES.md, v6 and v9). The lm_head's chunks go
// by bulk copy where there is one. With MKF_TWO_PRODUCERS, producer warp `who` of the `nprod`
// copies the chunks n with n % nprod == who (nprod: 1 or 2).
template <bool TIMED>
__device__ void produce(const Args& a, const Stream& s, int who, int nprod) {
  const int lane = threadIdx.x & 31, S = s.S;
  const int M_layers = a.ring_inflight > 0 && a.ring_inflight < S ? a.ring_inflight : S;
  const bool hint = a.flags & MKF_EVICT_FIRST;
  const uint64_t pol = hint ? ring::evict_first_policy() : 0;
  unsigned long long full_ns = 0;  // TIMED (timing mode): how long the layers' chunks waited for a free slot
  Cursor c{0, 0, 0, phase_slice(a, 0)};
  int slot = 0;        // chunk n's slot, n mod S
  unsigned fill = 0;   // how often that slot was filled before chunk n, mod 2: (n / S) mod 2
  for (; cursor_valid(a, c); ++c.n, ++c.i, slot = next_slot(slot, S, fill)) {
    const int n = c.n;
    if ((n & (nprod - 1)) != who) continue;
    const bool lm = c.q == NPHASES - 1, tma = lm ? ring::HAS_TMA : s.tma;
    const int M = lm ? S : M_layers;
    if (n >= S) {  // chunk n - S released
      const unsigned long long t0 = TIMED ? globaltimer() : 0;
      ring::bar_wait(s.empty + 8 * slot, fill ^ 1u);
      if (TIMED && !lm) full_ns += globaltimer() - t0;
    }
    if (M < S && n >= M)  // chunk n - M landed
      ring::bar_wait(s.full + 8 * (slot >= M ? slot - M : slot - M + S), fill ^ (slot < M));
    const int r = c.i * c.p.rpc;
    const uint32_t dst = s.slots + slot * ring::SLOT, bar = s.full + 8 * slot;
    const uint32_t bytes = (uint32_t)min(c.p.rpc, c.p.rows - r) * c.p.k * 2;
    const uint16_t* src = c.p.w + (size_t)r * c.p.k;
    const uint16_t* src2 = c.p.w2 ? c.p.w2 + (size_t)r * c.p.k : nullptr;
    if (tma) {
      if (lane == 0) {
        ring::arrive_expect_bytes(bar, src2 ? 2 * bytes : bytes);
        ring::bulk_copy(dst, src, bytes, bar, hint, pol);
        if (src2) ring::bulk_copy(dst + ring::SLOT / 2, src2, bytes, bar, hint, pol);
      } else {
        ring::bar_arrive(bar);
      }
    } else {
      ring::warp_copy(dst, src, bytes, lane, hint, pol);
      if (src2) ring::warp_copy(dst + ring::SLOT / 2, src2, bytes, lane, hint, pol);
      ring::lane_arrive_on_copies(bar);
    }
  }
  if (TIMED && lane == 0) a.times[NTIMES + gridDim.x * NBARRIERS + blockIdx.x * RING_MAX_PRODUCERS + who] = full_ns;
}

// the slot of the k-th unreleased chunk (k < 8 <= S) and whether that slot's fill is an odd one
__device__ __forceinline__ int ring_slot(const Stream& s, int k, bool& odd) {
  int n = s.cons + k;
  if (n >= 2 * s.S) n -= 2 * s.S;
  odd = n >= s.S;
  return odd ? n - s.S : n;
}
// chunk c of the current item (counted from the first unreleased chunk): wait until it has
// landed; -> its shared address
__device__ __forceinline__ uint32_t chunk_wait(const Stream& s, int c) {
  bool odd;
  const int slot = ring_slot(s, c, odd);
  ring::bar_wait(s.full + 8 * slot, odd);
  return s.slots + slot * ring::SLOT;
}
// every compute thread, after its last read of the item's n <= 8 chunks: release them to the
// producer (thread i releases the item's chunk i)
__device__ __forceinline__ void chunks_done(Stream& s, int n) {
  sync_warps();
  if ((int)threadIdx.x < n) {
    bool odd;
    ring::bar_arrive(s.empty + 8 * ring_slot(s, threadIdx.x, odd));
  }
  s.cons += n;
  if (s.cons >= 2 * s.S) s.cons -= 2 * s.S;
}

// MKF_STREAM_ONLY (measurement), the compute warps' whole launch: take every phase's chunks as
// soon as they land and release them (8 at a time); arrive at every grid barrier without waiting
// (the counter keeps its epoch); hand the input id back as the output
__device__ void consume_stream_only(const Args& a, Stream& s) {
  const int warp = threadIdx.x >> 5;
  for (int q = 0; q < NPHASES; ++q) {
    if (a.stop_after >= 0 && q > a.stop_after) break;
    const int n = nchunks(phase_slice(a, q));
    for (int c = 0; c < n; c += 8) {
      const int k = min(8, n - c);
      if (warp < k) chunk_wait(s, warp);
      chunks_done(s, k);
    }
    if (q < NBARRIERS) barrier_arrive(a.sync, a.bar_base + (unsigned)(q + 1) * gridDim.x, a.flags, false, 0);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) a.out_token[0] = a.token[0];
}

__device__ __forceinline__ uint4 lds128(uint32_t addr) {
  uint4 r;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "r"(addr));
  return r;
}

// rows [0, rows) of a K = 1024 slice from the ring: an item is 64 rows (8 chunks), warp w takes
// its rows 4w .. 4w+3 (chunk w/2); epi(i, dot) on lane 0
template <class Epi>
__device__ __forceinline__ void ring_mv_k1024(Stream& s, int rows, const uint16_t* xs, Epi epi) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int i0 = 0; i0 < rows; i0 += NWARPS * 4) {
    const int i = i0 + warp * 4;
    if (i < rows) {
      const uint32_t p = chunk_wait(s, warp >> 1) + (warp & 1) * 4 * D * 2;
      uint4 wv[16];
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < 4; ++c) wv[r * 4 + c] = lds128(p + r * D * 2 + (c * 32 + lane) * 16);
      float acc[4];
      dot_regs<D / 256, 4>(wv, xs, lane, acc);
      if (lane == 0) {
#pragma unroll
        for (int r = 0; r < 4; ++r)
          if (i + r < rows) epi(i + r, acc[r]);
      }
    }
    chunks_done(s, (min(NWARPS * 4, rows - i0) + 7) / 8);
  }
}

// gate/up units [0, n) from the ring: an item is 32 units (8 chunks), warp w takes units
// 2w, 2w+1 (chunk w/2); act[u0 + i] = silu(gate) * up
__device__ __forceinline__ void ring_gate_up(const Args& a, Stream& s, int u0, int n, const uint16_t* xs) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int i0 = 0; i0 < n; i0 += NWARPS * 2) {
    const int i = i0 + warp * 2;
    if (i < n) {
      const uint32_t p = chunk_wait(s, warp >> 1) + (warp & 1) * 2 * D * 2;
      const uint32_t rows[4] = {p, p + ring::SLOT / 2, p + D * 2, p + ring::SLOT / 2 + D * 2};  // g, u, g, u
      uint4 wv[16];
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < 4; ++c) wv[r * 4 + c] = lds128(rows[r] + (c * 32 + lane) * 16);
      float acc[4];
      dot_regs<D / 256, 4>(wv, xs, lane, acc);
      if (lane == 0) {
        a.act[u0 + i] = bits(bfr(siluf_(bfr(acc[0]))) * bfr(acc[1]));
        if (i + 1 < n) a.act[u0 + i + 1] = bits(bfr(siluf_(bfr(acc[2]))) * bfr(acc[3]));
      }
    }
    chunks_done(s, (min(NWARPS * 2, n - i0) + 3) / 4);
  }
}

// rows [r0, r1) of W [*, K], K = 2048 or 3584, from the ring: two warps per row (each half
// of K), then hidden[row] += bf16(dot) (the residual add), optionally copied to the trace
template <int K>
__device__ __forceinline__ void ring_half_rows_residual(Stream& s, int r0, int r1, const uint16_t* xs, uint16_t* hidden, float* red,
                                                        float* trace_row) {
  constexpr int NCH = K / 512, RPC = ring::SLOT / (2 * K);
  static_assert(NCH * 512 == K && RPC >= 1, "K must be a multiple of 512 and a row must fit a slot");
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int base = r0; base < r1; base += NWARPS / 2) {
    const int j = warp >> 1, half = warp & 1;
    // the residual rows first: this block alone writes them, their latency hides behind the dots
    const float h_old = threadIdx.x < NWARPS / 2 && base + threadIdx.x < r1 ? ld_x1(hidden + base + threadIdx.x) : 0.f;
    float acc[1] = {0.f};
    if (base + j < r1) {
      const uint32_t p = chunk_wait(s, j / RPC) + ((j % RPC) * K + half * (K / 2)) * 2;
      uint4 wv[16];
#pragma unroll
      for (int c = 0; c < NCH; ++c) wv[c] = lds128(p + (c * 32 + lane) * 16);
      dot_regs<NCH, 1>(wv, xs + half * (K / 2), lane, acc);
    }
    if (lane == 0) red[warp] = acc[0];
    chunks_done(s, (min(NWARPS / 2, r1 - base) + RPC - 1) / RPC);
    if (threadIdx.x < NWARPS / 2) {
      const int r = base + threadIdx.x;
      if (r < r1) {
        const float o = bfr(red[2 * threadIdx.x] + red[2 * threadIdx.x + 1]);
        const float h = bfr(h_old + o);
        hidden[r] = bits(h);
        if (trace_row) trace_row[r] = h;
      }
    }
    sync_warps();
  }
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
// The inputs of DeltaNet unit u of layer l that this launch's in-proj does not write, so they
// can be loaded before the barrier that precedes the core (float bits): in[0] = this warp's
// state row (lane: 4 k), in[1] = dt_bias[h], A_log[h]; for a channel thread (t < 272: q, k of
// head h, the unit's 16 v) in[2] = its 4 conv taps, in[3] = its inputs at positions pos-3 .. pos-1.
__device__ __forceinline__ int dn_channel(int t, int h, int j) {
  return t < DN_DK ? h * DN_DK + t : t < 2 * DN_DK ? DN_KEY + h * DN_DK + (t - DN_DK) : 2 * DN_KEY + h * DN_DV + j * 16 + (t - 2 * DN_DK);
}
__device__ __forceinline__ void core_inputs(const Args& a, int l, int u, uint4* in) {
  const int t = threadIdx.x, h = u / DN_VSLICES, j = u % DN_VSLICES, slot = dn_slot(l);
  in[0] = __ldcg(reinterpret_cast<const uint4*>(a.dn_state + ((size_t)(slot * DN_H + h) * DN_DV + j * 16 + (t >> 5)) * DN_DK) + (t & 31));
  in[1] = make_uint4(__float_as_uint(ld_w1(lw<uint16_t>(a, l, SL_DT_BIAS) + h)), __float_as_uint(ld_w1(lw<uint16_t>(a, l, SL_A_LOG) + h)), 0, 0);
  if (t < 2 * DN_DK + 16) {
    const int c = dn_channel(t, h, j);
    const uint2 w = __ldg(reinterpret_cast<const uint2*>(lw<uint16_t>(a, l, SL_CONV_W) + c * 4));
    in[2] = make_uint4(w.x << 16, w.x & 0xffff0000u, w.y << 16, w.y & 0xffff0000u);
    const uint16_t* ring = a.conv_ring + (size_t)slot * 4 * DN_CONV + c;
    in[3] = make_uint4(__float_as_uint(ld_x1(ring + (size_t)((a.pos - 3) & 3) * DN_CONV)),
                       __float_as_uint(ld_x1(ring + (size_t)((a.pos - 2) & 3) * DN_CONV)),
                       __float_as_uint(ld_x1(ring + (size_t)((a.pos - 1) & 3) * DN_CONV)), 0);
  }
}
// The small parameters phase q starts with, as this thread's float / bf16-pair bits (the
// ring kernel loads them into wv[4] before the barrier that precedes q; the register kernels
// at the start of q): the norm weight pair of an in-proj, gate/up or the lm_head; the gated
// norm's 4 weights of a DeltaNet out-proj; q-norm, k-norm weight and RoPE cos, sin of an
// attention core.
__device__ __forceinline__ uint4 phase_params(const Args& a, int q) {
  const int t = threadIdx.x;
  if (q >= NPHASES) return make_uint4(0, 0, 0, 0);
  if (q == NPHASES - 1) return make_uint4(norm_pair(a.final_norm), 0, 0, 0);
  const int l = q / PHASES_PER_LAYER;
  switch (q % PHASES_PER_LAYER) {
    case 0: return make_uint4(norm_pair(lw<uint16_t>(a, l, SL_IN_NORM)), 0, 0, 0);
    case 3: return make_uint4(norm_pair(lw<uint16_t>(a, l, SL_POST_NORM)), 0, 0, 0);
    case 2:
      if (is_fa(l)) return make_uint4(0, 0, 0, 0);
      {
        const uint2 gn = __ldg(reinterpret_cast<const uint2*>(lw<uint16_t>(a, l, SL_GNORM) + (t & 31) * 4));
        return make_uint4(gn.x, gn.y, 0, 0);
      }
    case 1:
      if (is_fa(l)) {
        const int d = t & (FA_HD - 1), i = d & (FA_ROT / 2 - 1);
        const uint16_t* rope = a.rope + (size_t)a.pos * FA_ROT;
        return make_uint4(__float_as_uint(ld_w1(lw<uint16_t>(a, l, SL_Q_NORM) + d)),
                          __float_as_uint(t < FA_HD ? ld_w1(lw<uint16_t>(a, l, SL_K_NORM) + t) : 0.f),
                          __float_as_uint(d < FA_ROT ? ld_w1(rope + i) : 0.f), __float_as_uint(d < FA_ROT ? ld_w1(rope + FA_ROT / 2 + i) : 0.f));
      }
      return make_uint4(0, 0, 0, 0);
    default: return make_uint4(0, 0, 0, 0);
  }
}

// before the barrier that precedes phase q: if q is a DeltaNet core, the inputs of this
// block's first unit into wv[0..3] (all: the ring kernel; the state row alone, wv[0]: the
// register kernels, which have no registers to spare)
__device__ __forceinline__ void issue_core_inputs(const Args& a, int q, uint4 (&wv)[16], bool all) {
  if (q < NPHASES - 1 && q % PHASES_PER_LAYER == 1 && !is_fa(q / PHASES_PER_LAYER) && (int)blockIdx.x < DN_UNITS) {
    if (all) core_inputs(a, q / PHASES_PER_LAYER, blockIdx.x, wv);
    else wv[0] = __ldcg(reinterpret_cast<const uint4*>(a.dn_state + ((size_t)(dn_slot(q / PHASES_PER_LAYER) * DN_H + blockIdx.x / DN_VSLICES) * DN_DV +
                                                                      (blockIdx.x % DN_VSLICES) * 16 + (threadIdx.x >> 5)) * DN_DK) + (threadIdx.x & 31));
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
      for (int i = 0; i < 16; ++i) wv[i] = make_uint4(0, 0, 0, 0);
      issue_core_inputs(a, q, wv, false);
      break;
  }
}

// ---- DeltaNet phases --------------------------------------------------------
// phase 0: xs = norm(hidden); rows of [qkv | z | b | a] -> conv ring column pos%4 | zab
template <bool RING>
__device__ __forceinline__ void dn_in_proj(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16], Stream& st, const uint4 params) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  const int G = gridDim.x, b = blockIdx.x;
  if (l == 0) {  // the embedding row is the residual stream entering layer 0
    const uint16_t* e = a.embed + (size_t)a.token[0] * D;
    block_rmsnorm(e, true, params.x, xs, red);
    if (b == 0) {
      if (a.times && threadIdx.x == 0) a.times[NPHASES + 2] = globaltimer();
      for (int i = threadIdx.x; i < D; i += THREADS) {
        const uint16_t v = __ldg(e + i);
        a.hidden[i] = v;
        if (a.trace) a.trace[i] = f16b(v);
      }
    }
  } else {
    block_rmsnorm(a.hidden, false, params.x, xs, red);
  }
  uint16_t* ring = a.conv_ring + (size_t)(dn_slot(l) * 4 + (a.pos & 3)) * DN_CONV;
  uint16_t* zab = a.zab;
  const auto epi = [&](int r, float v) {
    if (r < DN_CONV) ring[r] = bits(v);
    else zab[r - DN_CONV] = bits(v);
  };
  const int r0 = part(DN_WIN, b, G), r1 = part(DN_WIN, b + 1, G);
  if constexpr (RING) ring_mv_k1024(st, r1 - r0, xs, [&](int i, float v) { epi(r0 + i, v); });
  else mv_k1024(lw<uint16_t>(a, l, SL_WIN), r0, r1, xs, wv, epi);
}

// phase 1: unit (head h, v-slice j): conv + SiLU of the head's q, k and 16 v channels,
// L2 norms, gates, then warp w updates state row v = 16j + w: S = aS + k (b(v - aS.k)), o = S.q
template <bool RING>
__device__ __forceinline__ void dn_recurrence(const Args& a, int l, uint8_t* sm, const uint4 (&wv)[16]) {
  float* qs = reinterpret_cast<float*>(sm + SM_DN_Q);
  float* ks = reinterpret_cast<float*>(sm + SM_DN_K);
  float* vs = reinterpret_cast<float*>(sm + SM_DN_V);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const int slot = dn_slot(l);
  const uint16_t* ring = a.conv_ring + (size_t)slot * 4 * DN_CONV;
  for (int u = blockIdx.x; u < DN_UNITS; u += gridDim.x) {
    const int h = u / DN_VSLICES, j = u % DN_VSLICES;
    const int v = j * 16 + warp;  // warp w: state row v = 16 j + w, lane owns k = 4 lane .. 4 lane + 3
    float* srow = a.dn_state + ((size_t)(slot * DN_H + h) * DN_DV + v) * DN_DK;
    // the inputs the in-proj does not write. The ring kernel loaded its first unit's before the
    // barrier; the register kernels (no registers to spare) only the state row, the rest here.
    uint4 in[4];
    if constexpr (RING) {
      if (u == (int)blockIdx.x) {
#pragma unroll
        for (int i = 0; i < 4; ++i) in[i] = wv[i];
      } else {
        core_inputs(a, l, u, in);
      }
    } else {
      in[0] = u == (int)blockIdx.x ? wv[0] : __ldcg(reinterpret_cast<const uint4*>(srow) + lane);
      in[1] = make_uint4(__float_as_uint(ld_w1(lw<uint16_t>(a, l, SL_DT_BIAS) + h)), __float_as_uint(ld_w1(lw<uint16_t>(a, l, SL_A_LOG) + h)), 0, 0);
    }
    const float4 s = make_float4(__uint_as_float(in[0].x), __uint_as_float(in[0].y), __uint_as_float(in[0].z), __uint_as_float(in[0].w));
    const float a_raw = ld_x1(a.zab + DN_VAL + DN_H + h), b_raw = ld_x1(a.zab + DN_VAL + h);
    const float dt = __uint_as_float(in[1].x), alog = __uint_as_float(in[1].y);
    float y = 0.f;
    if (t < 2 * DN_DK + 16) {
      const int c = dn_channel(t, h, j);
      float acc = 0.f;
      if constexpr (RING) {
        const float taps[4] = {__uint_as_float(in[2].x), __uint_as_float(in[2].y), __uint_as_float(in[2].z), __uint_as_float(in[2].w)};
        const float past[3] = {__uint_as_float(in[3].x), __uint_as_float(in[3].y), __uint_as_float(in[3].z)};
#pragma unroll
        for (int i = 0; i < 3; ++i) acc = fmaf(taps[i], past[i], acc);  // tap i multiplies position pos-3+i
        acc = fmaf(taps[3], ld_x1(ring + (size_t)(a.pos & 3) * DN_CONV + c), acc);  // tap 3: this token
      } else {
        const uint16_t* convw = lw<uint16_t>(a, l, SL_CONV_W);
#pragma unroll
        for (int i = 0; i < 4; ++i)  // tap i multiplies position pos-3+i; tap 3 is this token
          acc = fmaf(ld_w1(convw + c * 4 + i), ld_x1(ring + (size_t)((a.pos - 3 + i) & 3) * DN_CONV + c), acc);
      }
      y = bfr(siluf_(bfr(acc)));
      if (t < DN_DK) qs[t] = y;
      else if (t < 2 * DN_DK) ks[t - DN_DK] = y;
      else vs[t - 2 * DN_DK] = y;
    }
    const float ss = warp_sum(y * y);
    if (lane == 0 && warp < 8) red[warp] = ss;
    sync_warps();
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
    sync_warps();  // smem reuse by the next unit
  }
}

// phase 2: every block: gated RMSNorm of all 16 heads (warp = head) -> xs, then its rows
// of out_proj with the residual add
template <bool RING>
__device__ __forceinline__ void dn_out_proj(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16], Stream& st, const uint4 params) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const int base = warp * DN_DV + lane * 4;
  const uint2 ov = __ldcg(reinterpret_cast<const uint2*>(a.obuf + base));
  const uint2 zv = __ldcg(reinterpret_cast<const uint2*>(a.zab + base));
  const float o[4] = {lo(ov.x), hi(ov.x), lo(ov.y), hi(ov.y)};
  const float z[4] = {lo(zv.x), hi(zv.x), lo(zv.y), hi(zv.y)};
  const float w[4] = {lo(params.x), hi(params.x), lo(params.y), hi(params.y)};
  const float ss = warp_sum(o[0] * o[0] + o[1] * o[1] + o[2] * o[2] + o[3] * o[3]);
  const float r = rsqrtf(ss / (float)DN_DV + EPS);
  uint16_t y[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) y[i] = bits(bfr(w[i] * bfr(o[i] * r)) * siluf_(z[i]));
  *reinterpret_cast<uint2*>(xs + base) = make_uint2(y[0] | ((uint32_t)y[1] << 16), y[2] | ((uint32_t)y[3] << 16));
  sync_warps();
  const int G = gridDim.x, b = blockIdx.x;
  if constexpr (RING) ring_half_rows_residual<DN_VAL>(st, part(D, b, G), part(D, b + 1, G), xs, a.hidden, red, nullptr);
  else mv_half_rows_residual<DN_VAL>(lw<uint16_t>(a, l, SL_OUT), part(D, b, G), part(D, b + 1, G), xs, a.hidden, red, nullptr, wv);
}

// ---- gated attention phases ---------------------------------------------------
template <bool RING>
__device__ __forceinline__ void fa_in_proj(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16], Stream& st, const uint4 params) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  block_rmsnorm(a.hidden, false, params.x, xs, red);
  const int G = gridDim.x, b = blockIdx.x;
  uint16_t* out = a.qkv;
  const int r0 = part(FA_QKV, b, G), r1 = part(FA_QKV, b + 1, G);
  if constexpr (RING) ring_mv_k1024(st, r1 - r0, xs, [&](int i, float v) { out[r0 + i] = bits(v); });
  else mv_k1024(lw<uint16_t>(a, l, SL_WIN), r0, r1, xs, wv, [&](int r, float v) { out[r] = bits(v); });
}

// the final gate: bf16(bf16(o) * bf16(sigmoid(gate))), as bf16 bits
__device__ __forceinline__ uint16_t gated(float o, float gate) { return bits(bfr(o) * bfr(sigmoidf_(gate))); }
__device__ __forceinline__ void attn_finish(const Args& a, int h, int d, float o, float gate) { a.attn[h * FA_HD + d] = gated(o, gate); }

// MKF_OUT_MERGE: the split-K merge of one q head's ns <= OUT_MERGE_MAX partials (base: split 0's;
// split si at base + si * 4 * ATT_PART), dims dd .. dd+3, with the last-unit merge's arithmetic in
// split order (the bits do not depend on which path merges). Every split's m, then the l and the
// accumulators four splits at a time: one round of loads for ns <= 4, two for ns <= 8.
__device__ __forceinline__ void merge_splits(const float* base, int ns, int dd, float& L, float (&A)[4]) {
  constexpr int GROUP = 4;
  float pm[OUT_MERGE_MAX];
#pragma unroll
  for (int si = 0; si < OUT_MERGE_MAX; ++si) pm[si] = si < ns ? __ldcg(base + (size_t)si * 4 * ATT_PART) : -INFINITY;
  float M = -INFINITY;
#pragma unroll
  for (int si = 0; si < OUT_MERGE_MAX; ++si) M = fmaxf(M, pm[si]);
  L = 0.f;
  A[0] = A[1] = A[2] = A[3] = 0.f;
#pragma unroll
  for (int s0 = 0; s0 < OUT_MERGE_MAX; s0 += GROUP) {
    if (s0 >= ns) break;
    float pl[GROUP];
    float4 pa[GROUP];
#pragma unroll
    for (int i = 0; i < GROUP; ++i) {
      const float* pp = base + (size_t)(s0 + i < ns ? s0 + i : s0) * 4 * ATT_PART;  // (past ns: loaded, not used)
      pl[i] = __ldcg(pp + 1);
      pa[i] = __ldcg(reinterpret_cast<const float4*>(pp + 4 + dd));
    }
#pragma unroll
    for (int i = 0; i < GROUP; ++i) {
      if (s0 + i < ns) {
        const float e = expf(pm[s0 + i] - M);
        L = fmaf(pl[i], e, L);
        A[0] = fmaf(pa[i].x, e, A[0]);
        A[1] = fmaf(pa[i].y, e, A[1]);
        A[2] = fmaf(pa[i].z, e, A[2]);
        A[3] = fmaf(pa[i].w, e, A[3]);
      }
    }
  }
}

// MKF_OUT_MERGE (1 < ns <= OUT_MERGE_MAX): the out-proj's input vector, each attention output the
// gated merge of its head's split-K partials; thread t makes outputs 4t .. 4t+3 (q head t / 64)
__device__ __forceinline__ void load_attn_merged(const Args& a, uint16_t* xs) {
  const int t = threadIdx.x, h = t >> 6, d = (t & 63) * 4;
  const uint2 gw = __ldcg(reinterpret_cast<const uint2*>(a.qkv + h * 2 * FA_HD + FA_HD + d));
  float L, A[4];
  merge_splits(a.apart + ((size_t)((h >> 2) * ATT_MAX_SPLIT) * 4 + (h & 3)) * ATT_PART, a.nsplit, d, L, A);
  const float gate[4] = {lo(gw.x), hi(gw.x), lo(gw.y), hi(gw.y)};
  uint16_t o[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) o[k] = gated(A[k] / L, gate[k]);
  reinterpret_cast<uint2*>(xs)[t] = make_uint2(o[0] | ((uint32_t)o[1] << 16), o[2] | ((uint32_t)o[3] << 16));
  sync_warps();
}
__device__ __forceinline__ bool out_merge(const Args& a) { return (a.flags & MKF_OUT_MERGE) && a.nsplit > 1 && a.nsplit <= OUT_MERGE_MAX; }

// a warp's online-softmax state for q heads 2hg, 2hg+1 (lane: dims 8 lane ..) into merge entry e
__device__ __forceinline__ void att_put(float* wm, float* wl, float* wacc, int e, int hg, int lane, const float (&m)[2],
                                        const float (&lsum)[2], const float (&acc)[2][8]) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int i = e * 4 + 2 * hg + hh;
    if (lane == 0) { wm[i] = m[hh]; wl[i] = lsum[hh]; }
    float4* dst = reinterpret_cast<float4*>(wacc + i * FA_HD + lane * 8);
    dst[0] = make_float4(acc[hh][0], acc[hh][1], acc[hh][2], acc[hh][3]);
    dst[1] = make_float4(acc[hh][4], acc[hh][5], acc[hh][6], acc[hh][7]);
  }
}
// ... and the state in entry e merged into the warp's (a slot with no positions has m = -inf)
__device__ __forceinline__ void att_combine(const float* wm, const float* wl, const float* wacc, int e, int hg, int lane,
                                            float (&m)[2], float (&lsum)[2], float (&acc)[2][8]) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int i = e * 4 + 2 * hg + hh;
    const float pm = wm[i];
    if (pm == -INFINITY) continue;
    const float M = fmaxf(m[hh], pm), c = expf(m[hh] - M), x = expf(pm - M);
    lsum[hh] = fmaf(wl[i], x, lsum[hh] * c);
    const float4* src = reinterpret_cast<const float4*>(wacc + i * FA_HD + lane * 8);
    const float4 p0 = src[0], p1 = src[1];
    const float pv[8] = {p0.x, p0.y, p0.z, p0.w, p1.x, p1.y, p1.z, p1.w};
#pragma unroll
    for (int k = 0; k < 8; ++k) acc[hh][k] = fmaf(pv[k], x, acc[hh][k] * c);
    m[hh] = M;
  }
}

// phase 1: unit (kv head g, split s) covers positions [p0, p1) of 0..pos for q heads 4g..4g+3.
// All threads: q/k norm + partial RoPE; warp w: positions p0+w, p0+w+16, ... with an online
// softmax (lane = 8 dims); then the 16 warps merge in smem. With nsplit > 1 the last unit of
// a kv head to finish merges the splits (fixed order: deterministic) and resets its counter
// (MKF_OUT_MERGE: the out-proj merges them instead).
__device__ void fa_attention(const Args& a, int l, uint8_t* sm, const uint4 params) {
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
  const bool lean = a.flags & MKF_LEAN_MERGE, count = ns > 1 && !out_merge(a);
  for (int u = blockIdx.x; u < FA_HKV * ns; u += gridDim.x) {
    const int g = u / ns, s = u % ns;
    const int p0 = part(ctx, s, ns), p1 = part(ctx, s + 1, ns);
    const int d = t & (FA_HD - 1);
    // params: q-norm, k-norm weight, RoPE cos, sin (dims < 64) of this thread
    const float rc = __uint_as_float(params.z), rs = __uint_as_float(params.w);
    const uint32_t gates = __ldcg(reinterpret_cast<const unsigned*>(a.qkv + (4 * g + (t >> 7)) * 2 * FA_HD + FA_HD + (t & 127) * 2));
    // -- q (4 heads) and k: zero-centred RMSNorm per head over 256 dims --
    // thread t holds q elements e = t (heads 0,1) and e = t + 512 (heads 2,3); k[t] for t < 256
    const float q0 = ld_x1(a.qkv + (4 * g + (t >> 8)) * 2 * FA_HD + d);
    const float q1 = ld_x1(a.qkv + (4 * g + 2 + (t >> 8)) * 2 * FA_HD + d);
    const float kr = t < FA_HD ? ld_x1(a.qkv + 2 * FA_HQ * FA_HD + g * FA_HD + t) : 0.f;
    if (t >= FA_HD) vb[t - FA_HD] = bits(ld_x1(a.qkv + 2 * FA_HQ * FA_HD + FA_HKV * FA_HD + g * FA_HD + (t - FA_HD)));
    const float s0 = warp_sum(q0 * q0), s1 = warp_sum(q1 * q1), s2 = warp_sum(kr * kr);
    if (lane == 0) { red[warp * 3] = s0; red[warp * 3 + 1] = s1; red[warp * 3 + 2] = s2; }
    sync_warps();
    float t0 = 0.f, t1 = 0.f, tk = 0.f;
    const int wb = (t >> 8) * 8;  // warps 0-7 hold heads 0/2 (and k), warps 8-15 heads 1/3
#pragma unroll
    for (int i = 0; i < 8; ++i) { t0 += red[(wb + i) * 3]; t1 += red[(wb + i) * 3 + 1]; tk += red[i * 3 + 2]; }
    const float wq = 1.f + __uint_as_float(params.x);
    const float n0 = bfr((q0 * rsqrtf(t0 / FA_HD + EPS)) * wq);
    const float n1 = bfr((q1 * rsqrtf(t1 / FA_HD + EPS)) * wq);
    const float nk = t < FA_HD ? bfr((kr * rsqrtf(tk / FA_HD + EPS)) * (1.f + __uint_as_float(params.y))) : 0.f;
    qf[t] = n0;  // qf[hh*256 + d] with hh = t>>8 (0/1)
    qf[t + 512] = n1;
    if (t < FA_HD) kf[t] = nk;
    sync_warps();
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
    sync_warps();
    qf[t] = r0;
    qf[t + 512] = r1;
    if (t < FA_HD) kb[t] = bits(rk);
    sync_warps();
    const bool stamp = a.times && blockIdx.x == 0 && t == 0 && u == 0;  // block 0's unit, timing mode
    unsigned long long* stamps = a.times + NPHASES + 3 + fa_slot(l) * UNIT_STAMPS;
    if (stamp) stamps[0] = globaltimer();  // q, k normed and rotated
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
    if (stamp) stamps[1] = globaltimer();  // warp 0 has scored its positions
    // -- merge the 8 position slots of each head pair: slots 4-7 hand their state to slots 0-3
    // through the AT_ENTRIES = 4 entries of shared memory, then thread t merges the 4 entries of
    // head hh = t / 128, dims 2(t % 128), +1 --
    if (slot8 >= 4) att_put(wm, wl, wacc, slot8 - 4, hg, lane, m, lsum, acc);
    sync_warps();
    if (slot8 < 4) {  // the warp reads its entry, then rewrites it (m, l by lane 0: after every lane's read)
      att_combine(wm, wl, wacc, slot8, hg, lane, m, lsum, acc);
      __syncwarp();
      att_put(wm, wl, wacc, slot8, hg, lane, m, lsum, acc);
    }
    sync_warps();
    {
      const int hh = t >> 7, dd = (t & 127) * 2;
      float M = -INFINITY;
#pragma unroll
      for (int w = 0; w < AT_ENTRIES; ++w) M = fmaxf(M, wm[w * 4 + hh]);
      float L = 0.f, A0 = 0.f, A1 = 0.f;
#pragma unroll
      for (int w = 0; w < AT_ENTRIES; ++w) {
        const float mw = wm[w * 4 + hh];
        if (mw == -INFINITY) continue;  // slots with no positions
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
    if (stamp) stamps[2] = globaltimer();  // the unit's output (or partial) stored
    if (count) {
      // every writer publishes its partial before the count (lean: the block barrier, then one
      // release by the counting thread, whose acquire the block barrier hands on to the readers)
      if (!lean) __threadfence();
      sync_warps();
      if (t == 0) {
        if (!lean) __threadfence();
        const unsigned old = lean ? atom_add_acq_rel(a.sync + SYNC_ATT + 32 * g, 1u) : atomicAdd(a.sync + SYNC_ATT + 32 * g, 1u);
        misc[0] = (old == (unsigned)(ns - 1));
      }
      sync_warps();
      if (misc[0]) {  // last unit of kv head g: merge the ns partials in order
        const int hh = t >> 7, dd = (t & 127) * 2;
        const float* base = a.apart + ((size_t)(g * ATT_MAX_SPLIT) * 4 + hh) * ATT_PART;
        if (!lean) __threadfence();
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
    sync_warps();  // smem reuse by the next unit
    if (stamp) stamps[3] = globaltimer();  // split-K merged (by the last unit of the kv head)
  }
}

template <bool RING>
__device__ __forceinline__ void fa_out_proj(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16], Stream& st) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  if (out_merge(a)) load_attn_merged(a, xs);
  else load_vec(a.attn, xs, FA_OIN);
  const int G = gridDim.x, b = blockIdx.x;
  if constexpr (RING) ring_half_rows_residual<FA_OIN>(st, part(D, b, G), part(D, b + 1, G), xs, a.hidden, red, nullptr);
  else mv_half_rows_residual<FA_OIN>(lw<uint16_t>(a, l, SL_OUT), part(D, b, G), part(D, b + 1, G), xs, a.hidden, red, nullptr, wv);
}

// ---- MLP phases (every layer) -------------------------------------------------
// phase 3: xs = norm(hidden); units [u0, u1): warp takes 2 units (4 rows: gate, up, gate, up)
template <bool RING>
__device__ __forceinline__ void mlp_gate_up(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16], Stream& st, const uint4 params) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  block_rmsnorm(a.hidden, false, params.x, xs, red);
  const int G = gridDim.x, b = blockIdx.x;
  const int u0 = part(INTER, b, G), u1 = part(INTER, b + 1, G);
  if constexpr (RING) {
    ring_gate_up(a, st, u0, u1 - u0, xs);
    return;
  }
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
template <bool RING>
__device__ __forceinline__ void mlp_down(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16], Stream& st) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  load_vec(a.act, xs, INTER);
  const int G = gridDim.x, b = blockIdx.x;
  float* trace_row = a.trace ? a.trace + (size_t)(1 + l) * D : nullptr;
  if constexpr (RING) ring_half_rows_residual<INTER>(st, part(D, b, G), part(D, b + 1, G), xs, a.hidden, red, trace_row);
  else mv_half_rows_residual<INTER>(lw<uint16_t>(a, l, SL_DOWN), part(D, b, G), part(D, b + 1, G), xs, a.hidden, red, trace_row, wv);
}

// ---- final norm, lm_head and greedy argmax ---------------------------------------
__device__ __forceinline__ bool better(float v, int i, float bv, int bi) { return v > bv || (v == bv && i < bi); }

template <bool RING>
__device__ __forceinline__ void lm_head(const Args& a, uint8_t* sm, uint4 (&wv)[16], Stream& st, const uint4 params) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  int* misc = reinterpret_cast<int*>(sm + SM_MISC);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const int G = gridDim.x, b = blockIdx.x;
  block_rmsnorm(a.hidden, false, params.x, xs, red);
  if (b == 0) {
    if (a.trace)
      for (int i = t; i < D; i += THREADS) a.trace[(size_t)(NLAYER + 1) * D + i] = f16b(xs[i]);
    if (a.times && t == 0) a.times[NPHASES + 1] = globaltimer();
  }
  const int r0 = part(VOCAB, b, G), r1 = part(VOCAB, b + 1, G);
  float best = -INFINITY;
  int besti = 0x7fffffff;
  const auto keep = [&](int row, float dot) {
    const float v = bfr(dot);  // logits are bf16 in the model dtype
    if (a.logits) a.logits[row] = v;
    if (better(v, row, best, besti)) { best = v; besti = row; }
  };
  int it = 0;
  if constexpr (RING) ring_mv_k1024(st, r1 - r0, xs, [&](int i, float dot) { keep(r0 + i, dot); });
  else for (int base = r0 + warp * 4; base < r1; base += LM_ROWS_PER_IT, ++it) {
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
      for (int r = 0; r < 4; ++r)
        if (base + r < r1) keep(base + r, acc[r]);
    }
  }
  if (lane == 0) { red[warp] = best; misc[warp] = besti; }
  sync_warps();
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
  sync_warps();
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

// EARLY: each warp issues its loads of phase q+1 before barrier q (else after it).
// RING (MKF_RING): the weights come through the shared-memory ring, filled by a 17th warp (the
// producer) that runs ahead of the 16 compute warps, through the grid barriers.
template <bool EARLY, bool PARTIAL, bool RING>
__global__ void __launch_bounds__(RING ? THREADS + 32 * RING_MAX_PRODUCERS : THREADS, 1) mk_decode_kernel(const Args a) {
  extern __shared__ __align__(128) uint8_t sm[];
  const int t = threadIdx.x;
  const int G = gridDim.x;
  constexpr bool early = EARLY;
  const bool pf_end = EARLY || (a.flags & MKF_PF_END);  // EARLY: prefetch before the register loads
  const bool bar_warp = (t >> 5) == BAR_THREAD / 32;
  uint4 wv[16];  // this warp's weights of its first item of the current phase (RING: wv[0] = a state row)
  Stream st;
  if (a.times && blockIdx.x == 0 && t == 0) a.times[0] = globaltimer();
  if constexpr (RING) {
    stream_start(a, st, sm);
    if (t >= THREADS) {
      const int who = (t - THREADS) >> 5, nprod = (a.flags & MKF_TWO_PRODUCERS) ? 2 : 1;
      if (a.times) produce<true>(a, st, who, nprod);
      else produce<false>(a, st, who, nprod);
      return;
    }
    if (a.flags & MKF_STREAM_ONLY) {
      consume_stream_only(a, st);
      return;
    }
  }
  if (early) issue_phase(a, 0, wv);
  if (RING) wv[4] = phase_params(a, 0);
  const int pf_phases = RING ? 0 : a.pf_dist;  // (L2 prefetch: not with the ring)
  for (int q = 0; q < pf_phases; ++q) prefetch_phase(a, q);
  for (int q = 0; q < NPHASES; ++q) {
    if (a.stop_after >= 0 && q > a.stop_after) break;
    if (pf_phases > 0 && !pf_end) prefetch_phase(a, q + a.pf_dist);
    if (!early && !RING) issue_phase(a, q, wv);
    // the phase's small parameters: the ring kernel loaded them before the barrier
    const uint4 params = RING ? wv[4] : phase_params(a, q);
    if (q == NPHASES - 1) {
      lm_head<RING>(a, sm, wv, st, params);
      break;
    }
    const int l = q / PHASES_PER_LAYER, sub = q % PHASES_PER_LAYER;
    // MKF_DN_FLAGS / MKF_FA_FLAGS (PARTIAL kernel): the in-proj -> core barrier is partial: its
    // arrive publishes bar_base + q + 1 for the block, no grid wait; before the core phase the
    // block waits for its unit's producers. Every block still adds its arrival to the counter,
    // so the grid barriers' targets stay bar_base + (k+1)*G.
    if (PARTIAL && partial_in_proj(a.flags, q - 1)) wait_core_producers(a, l, a.bar_base + (unsigned)q);
    if (is_fa(l)) {
      if (sub == 0) fa_in_proj<RING>(a, l, sm, wv, st, params);
      else if (sub == 1) fa_attention(a, l, sm, params);
      else if (sub == 2) fa_out_proj<RING>(a, l, sm, wv, st);
    } else {
      if (sub == 0) dn_in_proj<RING>(a, l, sm, wv, st, params);
      else if (sub == 1) dn_recurrence<RING>(a, l, sm, wv);
      else if (sub == 2) dn_out_proj<RING>(a, l, sm, wv, st, params);
    }
    if (sub == 3) mlp_gate_up<RING>(a, l, sm, wv, st, params);
    else if (sub == 4) mlp_down<RING>(a, l, sm, wv, st);
    if (a.times && t == BAR_THREAD) a.times[NTIMES + blockIdx.x * NBARRIERS + q] = globaltimer();  // arrival
    const unsigned target = a.bar_base + (unsigned)(q + 1) * (unsigned)G;
    const bool wait = !PARTIAL || !partial_in_proj(a.flags, q);
    barrier_arrive(a.sync, target, a.flags, !wait, a.bar_base + (unsigned)(q + 1));
    if (pf_phases > 0 && pf_end) prefetch_phase(a, q + a.pf_dist);
    if (RING && !bar_warp) {
      issue_core_inputs(a, q + 1, wv, true);
      wv[4] = phase_params(a, q + 1);
    }
    else if (EARLY && !bar_warp) issue_phase(a, q + 1, wv);
    if (wait) barrier_wait(a.sync, target, a.flags);
    if (RING && bar_warp) {
      issue_core_inputs(a, q + 1, wv, true);
      wv[4] = phase_params(a, q + 1);
    }
    else if (EARLY && bar_warp) issue_phase(a, q + 1, wv);
    if (a.times && blockIdx.x == 0 && t == 0) a.times[q + 1] = globaltimer();
  }
}

}  // namespace

int smem_bytes() { return SM_END; }
int ring_smem_bytes(int slots) { return SM_RING + slots * (ring::SLOT + 16); }

// the kernel instances: v4's schedules (no partial barrier code at all), the partial-barrier one
// and the ring
constexpr int RING_KERNEL = 3;
const void* kernel_fn(int k) {
  return k == 0 ? reinterpret_cast<const void*>(mk_decode_kernel<false, false, false>)
       : k == 1 ? reinterpret_cast<const void*>(mk_decode_kernel<true, false, false>)
       : k == 2 ? reinterpret_cast<const void*>(mk_decode_kernel<true, true, false>)
                : reinterpret_cast<const void*>(mk_decode_kernel<false, false, true>);
}

cudaError_t configure(int device, int* blocks_per_sm, int* num_sms, int* ring_slots) {
  cudaError_t e = cudaSuccess;
  for (int k = 0; k < RING_KERNEL && e == cudaSuccess; ++k)
    e = cudaFuncSetAttribute(kernel_fn(k), cudaFuncAttributeMaxDynamicSharedMemorySize, SM_END);
  if (e != cudaSuccess) return e;
  e = cudaDeviceGetAttribute(num_sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return e;
  *blocks_per_sm = 1 << 30;
  for (int k = 0; k < RING_KERNEL && e == cudaSuccess; ++k) {
    int n = 0;
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel_fn(k), THREADS, SM_END);
    if (n < *blocks_per_sm) *blocks_per_sm = n;
  }
  if (e != cudaSuccess) return e;
  // the ring: as many slots as the block's shared-memory limit allows (at most RING_MAX_SLOTS)
  int optin = 0;
  e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (e != cudaSuccess) return e;
  int slots = (optin - SM_RING) / (ring::SLOT + 16);
  slots = slots > RING_MAX_SLOTS ? RING_MAX_SLOTS : slots;
  *ring_slots = 0;
  if (slots >= RING_MIN_SLOTS) {
    e = cudaFuncSetAttribute(kernel_fn(RING_KERNEL), cudaFuncAttributeMaxDynamicSharedMemorySize, ring_smem_bytes(slots));
    int n = 0;
    if (e == cudaSuccess)
      e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel_fn(RING_KERNEL), THREADS + 32 * RING_MAX_PRODUCERS,
                                                          ring_smem_bytes(slots));
    if (e == cudaSuccess && n >= 1) *ring_slots = slots;
  }
  return e;
}

cudaError_t launch(const Args& a, int grid, cudaStream_t stream) {
  if (grid > MAX_GRID) return cudaErrorInvalidValue;  // SYNC_PUB has one word per block
  const bool ring = a.flags & MKF_RING;
  if (ring && (a.ring_slots < RING_MIN_SLOTS || a.ring_slots > RING_MAX_SLOTS)) return cudaErrorInvalidValue;
  Args copy = a;
  void* params[] = {&copy};
  const bool partial = a.flags & (MKF_DN_FLAGS | MKF_FA_FLAGS);
  const int k = ring ? RING_KERNEL : !(a.flags & MKF_EARLY) ? 0 : partial ? 2 : 1;
  const dim3 block(ring ? THREADS + 32 * ((a.flags & MKF_TWO_PRODUCERS) ? 2 : 1) : THREADS);
  const int smem = ring ? ring_smem_bytes(a.ring_slots) : SM_END;
  return cudaLaunchCooperativeKernel(kernel_fn(k), dim3(grid), block, params, smem, stream);
}

}  // namespace mk
