// What every phase of the decode kernel uses: the block's shared-memory map, bf16 bits, the
// loads by kind of data, warp and block reductions, the block's slice of a row range, the
// layer table. Included once, by megakernel.cu (one compilation unit).
#pragma once
#include <cuda_bf16.h>
#include <type_traits>

#include "megakernel.cuh"

// the block's dynamic shared memory (the kernel's `sm`): the one array every phase indexes by the offsets below
extern __shared__ __align__(128) uint8_t mk_smem[];

namespace mk {
namespace {

// ---- the block's shared memory (bytes) -------------------------------------------------------
// The matrix phases' input vectors (XS, one per row of the batch; a batch's partial tiles after
// them) and the mixer cores' areas (U) are never live in the same phase, so they share bytes; every byte after them goes to the
// weight ring (weight_ring.cuh), so the ring has fewer slots at larger batches.
constexpr int RED_ROWS = MAX_BATCH > 4 ? MAX_BATCH : 4;  // (4: matvec_gate_up's halves at D = 4096, two items of 2 per warp)
constexpr int SM_RED = 0;                             // float [NWARPS * RED_ROWS] reductions
constexpr int SM_MISC = SM_RED + NWARPS * RED_ROWS * 4;  // int [MISC_INTS]: warp results, flags
constexpr int MISC_LAST = NWARPS * MAX_BATCH;         //   misc[MISC_LAST]: "this block is the last" (grid_sync.cuh)
constexpr int MISC_ENDED = MISC_LAST + 1;             //   misc[MISC_ENDED]: the compute warps ended the launch early (the producer stops)
constexpr int MISC_STOPPED = MISC_LAST + 2;           //   misc[MISC_STOPPED]: bit b: row b has produced a stop id (a many-token launch)
constexpr int MISC_TOKENS = MISC_LAST + 8;            //   misc[MISC_TOKENS + b]: row b's input id of the current step
constexpr int MISC_INTS = MISC_LAST + 32;
static_assert(MISC_TOKENS + MAX_BATCH <= MISC_INTS, "misc");
constexpr int SM_EPOCH = SM_MISC + MISC_INTS * 4;     // uint32: the launch's epoch (grid_sync.cuh)
constexpr int SM_POLL = SM_EPOCH + 8;                // the grid barrier's pollers (the ring schedule, grid_sync.cuh):
constexpr int SM_POLL_ARRIVED = SM_POLL;             //   mbarrier: the block arrived at a grid barrier (or ended)
constexpr int SM_POLL_OPEN = SM_POLL + 8;            //   mbarrier: a poller saw that barrier open
constexpr int SM_POLL_BARRIER = SM_POLL + 16;        //   uint64: that barrier's number n = k + 1 (high half) and the count that
                                                     //   opens it (low half), one word so that no reader sees half of each;
                                                     //   POLL_END_MARK as the number: the launch ended (grid_sync.cuh end_polls)
constexpr int SM_POLL_OPENED = SM_POLL + 24;         //   uint32: the highest barrier number a poller saw open (the election)
constexpr int SM_POLL_END = SM_POLL + 28;            //   int: the compute warps ended the launch (read while a poller waits)
static_assert(SM_EPOCH % 8 == 0 && SM_POLL_END + 4 <= SM_EPOCH + 128, "the pollers' words beside the epoch");
constexpr int SM_XS = SM_EPOCH + 128;                 // a matrix phase's input vectors (xs_bytes(B)): batch 1 float [D] at xs_slot
                                                      //   (the normed residual) or bf16 [K] (an out- or down projection's input);
                                                      //   a batch [B][bf16 hi plane [D] | bf16 lo plane [D]] (block_rmsnorm)
constexpr int SM_U = SM_XS;                           // a mixer core's area:
constexpr int SM_DN_Q = SM_U;                         //   DeltaNet: float [DN_DK] q
constexpr int SM_DN_K = SM_DN_Q + 4 * DN_DK;          //             float [DN_DK] k
constexpr int SM_DN_V = SM_DN_K + 4 * DN_DK;          //             float [DN_DV] v (batch 1: the unit's 16)
constexpr int SM_DN_O = SM_DN_V + 4 * DN_DV;          //             a batch: float [DN_DV] the head's outputs
constexpr int SM_DN_GATES = SM_DN_O + 4 * DN_DV;      //             a batch: float [2] alpha, beta
constexpr int SM_DN_Z = SM_DN_GATES + 32;             //             a batch: float [DN_DV] the head's z (warp 0 keeps it here from the unit's start to its norm)
constexpr int AT_ENTRIES = 4;                         //   attention: the warp merge: a partial per position slot
constexpr int SM_AT_Q = SM_U;                         //             float [4][FA_HD] q (4 heads)
constexpr int SM_AT_K = SM_AT_Q + 4 * 4 * FA_HD;      //             float [FA_HD] k
constexpr int SM_AT_KB = SM_AT_K + 4 * FA_HD;         //             bf16 [FA_HD] k (rotated)
constexpr int SM_AT_VB = SM_AT_KB + 2 * FA_HD;        //             bf16 [FA_HD] v
constexpr int SM_AT_M = SM_AT_VB + 2 * FA_HD;         //             float [AT_ENTRIES][4] m
constexpr int SM_AT_L = SM_AT_M + AT_ENTRIES * 16;    //             float [AT_ENTRIES][4] l
constexpr int SM_AT_ACC = SM_AT_L + AT_ENTRIES * 16;  //             float [AT_ENTRIES][4][FA_HD] acc
constexpr int SM_AT_GATE = SM_AT_ACC + AT_ENTRIES * 4 * FA_HD * 4;  //   float [4][FA_HD] the output gates: thread t keeps its two
                                                      //             here from the unit's start to its end (not in registers over the scoring)
constexpr int SM_END_AT = SM_AT_GATE + 4 * FA_HD * 4;
// The input vectors' bytes: at batch 1 the larger of the normed residual (fp32 [D]) and the widest out- or
// down projection's input copied in (bf16 [INTER], or [DN_VAL] where wider); a batch's out- and down
// projections read their inputs from global memory (matvec_mma.cuh), so its rows' normed residuals
// alone (the in-projections' and gate/up's unscaled: block_rmsnorm UNSCALED), as hi and lo planes (4 bytes a value). Then a batch's partial tiles (nb >= 2): [NWARPS][8 batch
// rows][16 tile rows] floats.
constexpr int XS_K1 = INTER > DN_VAL ? INTER : DN_VAL;  // the widest input at batch 1 (bf16)
constexpr int xs_bytes(int nb) { return nb > 1 ? 4 * D * nb : 2 * XS_K1 > 4 * D ? 2 * XS_K1 : 4 * D; }
constexpr int PART_TILE = 8 * 16;
constexpr int sm_part(int nb) { return SM_XS + xs_bytes(nb); }
constexpr int sm_xs_end(int nb) { return nb > 1 ? sm_part(nb) + 4 * NWARPS * PART_TILE : sm_part(nb); }
// a batch's int8 argmax (lm_head.cuh lm_head_bounded_batch): [8] lower bounds, [8] counts, [8] norms, [8][LM_BATCH_CAP]
// candidates, after the partial tiles
constexpr int LM_BATCH_BYTES = LM_I8 ? 3 * 8 * 4 + 8 * LM_BATCH_CAP * 8 : 0;
constexpr int sm_lm_batch(int nb) { return sm_xs_end(nb); }
constexpr int sm_used(int nb) { return nb > 1 ? sm_xs_end(nb) + LM_BATCH_BYTES : sm_xs_end(nb); }
constexpr int sm_end(int nb) { return sm_used(nb) > SM_END_AT ? sm_used(nb) : SM_END_AT; }
// the ring: its mbarriers (RING_MAX_SLOTS "full", then RING_MAX_SLOTS "empty": fixed offsets, so their
// addresses are constants, not registers), then its slots
constexpr int sm_ring(int nb) { return (sm_end(nb) + 127) & ~127; }
constexpr int RING_BARS = 2 * 8 * RING_MAX_SLOTS;
static_assert(RING_BARS % 128 == 0, "the ring's slots 128-byte aligned");
static_assert(SM_DN_V + 64 <= sm_end(1) && SM_DN_Z + 4 * DN_DV <= sm_end(2), "smem");
// batch 1's lm_head from its int8 rows (lm_head.cuh lm_head_bounded): each warp's candidate rows after batch 1's input
// vector, [NWARPS][LM_CAND_CAP] {row, bound} (the attention core's area, unused in the lm_head)
constexpr int SM_LM_CAND = SM_XS + xs_bytes(1);
static_assert(!LM_I8 || SM_LM_CAND + NWARPS * LM_CAND_CAP * 8 <= sm_end(1), "smem: the lm_head's candidate rows");
static_assert(FA_GROUP == 4, "attention: a unit's 4 q heads (two per warp half)");

// ---- bf16 bits and small math ----------------------------------------------------------------
__device__ __forceinline__ float bfr(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }  // round to bf16
__device__ __forceinline__ uint16_t bits(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
__device__ __forceinline__ uint32_t pack_bf16(float a, float b) {  // two values as a bf16 pair (the first in the low half)
  const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&v);
}
__device__ __forceinline__ float f16b(uint32_t b) { return __uint_as_float(b << 16); }  // bf16 bits -> float
__device__ __forceinline__ float lo(uint32_t w) { return __uint_as_float(w << 16); }     // the pair's first
__device__ __forceinline__ float hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ float sigmoidf_(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ float siluf_(float x) { return x / (1.f + expf(-x)); }
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  f[0] = lo(v.x); f[1] = hi(v.x); f[2] = lo(v.y); f[3] = hi(v.y);
  f[4] = lo(v.z); f[5] = hi(v.z); f[6] = lo(v.w); f[7] = hi(v.w);
}
// Batch 1's normed-residual input vectors (the K = D phases') are fp32 in shared memory, value k at
// xs_slot(k) (the out- and down projections' bf16 inputs lie in order): each group of 8
// (a lane's 16 bytes of bf16 weights meet 8 of them) has its two halves swapped where bit 2 of the
// group's index is set, so a lane that reads its group as two lds128, the half at xs_slot(8 g) first,
// always gets values 0-3 first, and each quarter warp's 8 lanes meet 32 distinct banks (lanes 0-3 the
// first 16 bytes of their groups, lanes 4-7 the second; unswizzled, lanes 0 and 4 collide: 2-way).
// Writers put 2 or 4 aligned values at xs_slot of the first.
__device__ __forceinline__ int xs_slot(int k) { return k ^ ((k >> 3) & 4); }
// group g's 8 values (x: the vector's start; g: of the vector) from shared memory: fp32 at xs_slot, or
// bf16 in order (the out- and down projections' inputs)
__device__ __forceinline__ void xs_group(const uint16_t* x, int g, float (&f)[8]) { unpack8(*reinterpret_cast<const uint4*>(x + 8 * g), f); }
__device__ __forceinline__ void xs_group(const float* x, int g, float (&f)[8]) {
  const int h = (g & 4);  // the slot of values 0-3 within the group (0 or 4)
  const float4 a = *reinterpret_cast<const float4*>(x + 8 * g + h), b = *reinterpret_cast<const float4*>(x + 8 * g + (4 - h));
  f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}
__device__ __forceinline__ float dot8(const uint4& w, const float (&x)[8], float acc) {
  acc = fmaf(lo(w.x), x[0], acc); acc = fmaf(hi(w.x), x[1], acc);
  acc = fmaf(lo(w.y), x[2], acc); acc = fmaf(hi(w.y), x[3], acc);
  acc = fmaf(lo(w.z), x[4], acc); acc = fmaf(hi(w.z), x[5], acc);
  acc = fmaf(lo(w.w), x[6], acc); acc = fmaf(hi(w.w), x[7], acc);
  return acc;
}

// ---- reductions and the compute warps' barrier ---------------------------------------------------
// named barrier 1: the 16 compute warps (the ring's producer warp never joins it)
__device__ __forceinline__ void sync_warps() { asm volatile("bar.sync 1, %0;" ::"n"(THREADS) : "memory"); }
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// ---- loads by kind of data ---------------------------------------------------------------------
// weights: read-only for the whole launch -> non-coherent path, no L1 allocation
__device__ __forceinline__ uint4 ld_w(const void* p) {
  uint4 r;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(__cvta_generic_to_global(p)));
  return r;
}
__device__ __forceinline__ float ld_w1(const uint16_t* p) { return f16b(__ldg(p)); }
// data other blocks write during this launch: through L2 only (ld.global.cg), never a stale L1 line
__device__ __forceinline__ float ld_x1(const uint16_t* p) { return f16b(__ldcg(reinterpret_cast<const unsigned short*>(p))); }
__device__ __forceinline__ uint4 ld_x16(const void* p) { return __ldcg(reinterpret_cast<const uint4*>(p)); }
// a past K/V cache row: written at an earlier step (an earlier launch, or an earlier step of this
// one by another block) and read only after that step's grid barrier; no block reads a row's lines
// before the row is written (the row at pos comes from shared memory), so no L1 holds a stale copy:
// through L1 (ld.global.ca), where the attention unit's four head warps share each row
__device__ __forceinline__ uint4 ld_kv16(const void* p) { return __ldca(reinterpret_cast<const uint4*>(p)); }
// 16 bytes of shared memory (a ring slot's weights, an input vector). The "memory" clobber keeps every
// read after the mbarrier wait (chunk_wait) or block barrier before it by contract, not by the
// compiler's habit of keeping volatile asm in order (it changed no instruction: NOTES v30).
__device__ __forceinline__ uint4 lds128(uint32_t addr) {
  uint4 r;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "r"(addr) : "memory");
  return r;
}
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---- who owns what -----------------------------------------------------------------------------
// block b of G owns rows [part(n, b, G), part(n, b + 1, G)) of an n-row range (32-bit products:
// n <= VOCAB, G <= MAX_GRID)
__device__ __forceinline__ int part(int n, int b, int G) { return (int)((unsigned)n * (unsigned)b / (unsigned)G); }

// row b's position at step `step` of the launch, and its attention split-K units per kv head there
// (the first step's from Args, where a one-step launch reads them; a many-token launch computes the
// later steps')
__device__ __forceinline__ int row_pos(const Args& a, int b, int step) { return a.pos[b] + step; }
__device__ __forceinline__ int row_splits(const Args& a, int b, int step) {
  return step == 0 ? a.nsplit[b] : attention_splits(a.pos[b] + step, a.positions_per_split);
}
// row b's input id at step `step`: the launch's first step Args::token (checked: step_check.cuh),
// then the last step's argmax, which every block keeps in its misc[MISC_TOKENS + b] (lm_head.cuh)
__device__ __forceinline__ int64_t step_token(const Args& a, const uint8_t* sm, int step, int b) {
  return step == 0 ? a.token[b] : reinterpret_cast<const int*>(sm + SM_MISC)[MISC_TOKENS + b];
}

template <class T>
__device__ __forceinline__ const T* lw(const Args& a, int layer, int slot) {
  return reinterpret_cast<const T*>(a.layers[layer * NSLOT + slot]);
}

// A D-wide vector over the block: thread t owns the pairs t, t + THREADS, ... below D / 2 (NORM_PAIRS
// at most; at D = 2560 threads 0-255 own 3, the others 2)
constexpr int NORM_PAIRS = (D / 2 + THREADS - 1) / THREADS;
constexpr bool NORM_EVEN = D / 2 % THREADS == 0;
static_assert(D % 2 == 0 && NORM_PAIRS <= 4, "block_rmsnorm: at most 4 pairs per thread (a uint4 of weights)");
__device__ __forceinline__ bool owns_pair(int i) { return NORM_EVEN || (int)threadIdx.x + i * THREADS < D / 2; }

// thread t's pairs of a D-wide norm weight, word i = pair t + i THREADS (the weight stream evicts the
// norm weights from L2 every token: each load is an HBM round trip, so it is issued before the
// barrier that precedes its phase)
__device__ __forceinline__ uint4 norm_pairs(const uint16_t* w) {
  uint32_t p[4] = {0, 0, 0, 0};
#pragma unroll
  for (int i = 0; i < NORM_PAIRS; ++i)
    if (owns_pair(i)) p[i] = __ldg(reinterpret_cast<const unsigned*>(w) + threadIdx.x + i * THREADS);
  return make_uint4(p[0], p[1], p[2], p[3]);
}
__device__ __forceinline__ uint32_t word(const uint4& v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

// thread t's pair i of a D-wide row: the embedding's (bf16 weights) or the residual stream's (fp32,
// written by other blocks this launch: through L2)
__device__ __forceinline__ float2 load_pair(const uint16_t* w, int i) {
  const uint32_t p = __ldg(reinterpret_cast<const unsigned*>(w) + i);
  return make_float2(lo(p), hi(p));
}
__device__ __forceinline__ float2 load_pair(const float* x, int i) { return __ldcg(reinterpret_cast<const float2*>(x) + i); }

// a batch's row b of the input vectors: its bf16 hi plane (D values; the lo plane follows)
__device__ __forceinline__ uint16_t* xs_planes(float* xs, int b) { return reinterpret_cast<uint16_t*>(xs) + b * 2 * D; }
__device__ __forceinline__ const uint16_t* xs_planes(const float* xs, int b) { return reinterpret_cast<const uint16_t*>(xs) + b * 2 * D; }

// The DeltaNet core's output in the workspace (obuf): batch 1 fp32 o (each block norms it for its
// out-projection), a batch bf16, normed by the core (the tensor-core tiles read it from global memory)
template <int NB>
using ObufT = std::conditional_t<NB == 1, float, uint16_t>;
template <int NB>
__device__ __forceinline__ ObufT<NB>* obuf_of(const Args& a) { return static_cast<ObufT<NB>*>(a.obuf); }

// row b's 1 / rms over D from block_rmsnorm's per-warp sums of squares in red (added in warp order)
__device__ __forceinline__ float row_rstd(const float* red, int b) {
  float tot = 0.f;
#pragma unroll
  for (int i = 0; i < NWARPS; ++i) tot += red[b * NWARPS + i];
  return rsqrtf(tot / (float)D + RMS_EPS);
}

// every block: xs[b] = rmsnorm(src(b)) * (1 + w) over D for each row b (wp: this thread's pairs of w,
// norm_pairs; src(b): row b's D values, the embedding's bf16 rows or the fp32 residual streams other
// blocks wrote). Batch 1: fp32 at xs_slot; a batch: each value y as bf16 hi = bf16(y) and lo = bf16(y -
// hi), row b's hi plane at xs_planes(xs, b), its lo plane D values after it (the tensor cores' two
// products, matvec_mma.cuh). UNSCALED (a batch's in-projections and gate/up): the planes hold x (1 + w), the 1 / rms
// not applied, and red keeps each row's per-warp sums of squares, whose row_rstd the phase's epilogue applies to each
// dot (equal in exact arithmetic; the planes split a different fp32 value, so every rounding moves), so the planes are
// written before the sums are added up and the tiles wait for one block barrier, not two.
template <int NB, bool UNSCALED = false, class Src>
__device__ __forceinline__ void block_rmsnorm(Src src, const uint4 wp, float* xs, float* red) {
  static_assert(!UNSCALED || NB > 1, "block_rmsnorm: batch 1 applies its scale (its FMA dots read fp32 xs)");
  const int t = threadIdx.x;
  float x0[NB][NORM_PAIRS], x1[NB][NORM_PAIRS];
#pragma unroll
  for (int b = 0; b < NB; ++b)
#pragma unroll
    for (int i = 0; i < NORM_PAIRS; ++i) {
      const float2 pair = owns_pair(i) ? load_pair(src(b), t + i * THREADS) : make_float2(0.f, 0.f);
      x0[b][i] = pair.x, x1[b][i] = pair.y;
    }
#pragma unroll
  for (int b = 0; b < NB; ++b) {
    float ss = 0.f;
#pragma unroll
    for (int i = 0; i < NORM_PAIRS; ++i) ss += x0[b][i] * x0[b][i] + x1[b][i] * x1[b][i];
    ss = warp_sum(ss);
    if ((t & 31) == 0) red[b * NWARPS + (t >> 5)] = ss;
  }
  if constexpr (!UNSCALED) sync_warps();
#pragma unroll
  for (int b = 0; b < NB; ++b) {
    const float r = UNSCALED ? 1.f : row_rstd(red, b);
#pragma unroll
    for (int i = 0; i < NORM_PAIRS; ++i) {
      const uint32_t w = word(wp, i);
      const float y0 = (x0[b][i] * r) * (1.f + lo(w)), y1 = (x1[b][i] * r) * (1.f + hi(w));
      if (!owns_pair(i)) continue;
      const int p = t + i * THREADS;
      if constexpr (NB == 1) {
        *reinterpret_cast<float2*>(xs + xs_slot(2 * p)) = make_float2(y0, y1);
      } else {
        const uint32_t h = pack_bf16(y0, y1);
        uint32_t* planes = reinterpret_cast<uint32_t*>(xs_planes(xs, b));
        planes[p] = h;
        planes[D / 2 + p] = pack_bf16(y0 - lo(h), y1 - hi(h));
      }
    }
  }
  sync_warps();
}

// a bf16 vector of n that other blocks wrote, into shared memory in order (n a multiple of 8): batch 1's
// out- and down projections' inputs
__device__ __forceinline__ void load_vec(const uint16_t* src, uint16_t* xs, int n) {
  for (int i = threadIdx.x; i < n / 8; i += THREADS) reinterpret_cast<uint4*>(xs)[i] = ld_x16(src + 8 * i);
  sync_warps();
}

}  // namespace
}  // namespace mk
