// The matrix phases of a batch (NB >= 2 rows, the ring schedule) on the tensor cores: each weight
// piece read once from the ring and multiplied with every row's input vector by mma.sync
// m16n8k16 (bf16 in, fp32 sums), the batch's rows as the mma's 8 columns (rows NB..7 are zero).
// The inputs are fp32: each is split into bf16 hi = bf16(x) and lo = bf16(x - hi), two mmas (the
// products of W with hi and with lo add up to W x within ~2^-16 of x: fp32 activations, issue 20
// part 5), twice the mma work of a bf16 input on phases whose time is the weight stream's.
// matvec.cuh hands its three shapes of work here when NB >= 2; the batch-1 kernels keep the FMA
// dots (dot_regs), so their bits and their speed do not change.
//
// One tile: 16 weight rows x 8 batch rows. Lane l = 4 g + t holds rows g and g + 8 of the tile
// and batch row g's input; in every 32-wide block of k it loads the 16 bytes k0 + 8 t .. k0 + 8 t + 7
// of the weights (one lds128 each) and its 8 inputs (two 16-byte loads), which feed two pairs of mmas
// (hi, lo): the first takes k +0..3 as the mma's slots 2t, 2t+1, 2t+8, 2t+9, the second k +4..7 (any
// one-to-one map of k to slots is the same sum, as long as the weights and the inputs use the same one).
//   -> c[0], c[1]: tile row g, batch rows 2t, 2t+1; c[2], c[3]: tile row g + 8, the same batch rows.
// The k range of a tile is split over warps; each warp writes its partial tile to the shared area
// SM_PART ([warp][batch row][16 rows] floats), and after the item's barrier one thread per (batch
// row, output row) adds the partials in warp order. The sums do not depend on the other batch
// rows or on NB (a row's bits are the same in every batch of 2..8), nor on the grid.
//
// Who owns what, per item (what the 16 warps compute between two releases of ring chunks)
//   mma_rows       K = 1024 (in-projections, lm_head): 64 rows (8 chunks). Warp w: tile w / 4 (rows
//                  16 (w/4) ..; chunks 2 (w/4), 2 (w/4) + 1 give its rows g, g + 8), k quarter w % 4
//                  (256 k: 8 blocks). Thread b * 64 + r: output row r for batch row b.
//   mma_gate_up    32 units (8 chunks): warp w: units 8 (w/4) .. 8 (w/4) + 7 (tile row g: gate of unit
//                  g, row g + 8: its up), k quarter w % 4. Thread b * 32 + u: unit u for batch row b.
//   mma_half_rows  K = 2048 or 3584 (out-projections, down): 8 rows (tile rows 8..15 unused); warp w:
//                  k sixteenth w (128 or 224 k), its inputs straight from global memory (each piece
//                  of obuf, attn or act is read by one warp of the block, so a copy into shared
//                  memory would only add a round trip).
//                  Thread b * 8 + j adds row j's dot to batch row b's residual.
// Bank conflicts: a quarter warp's 8 lanes read two weight rows (2 KB apart: the same banks), so each
// lds128 takes two passes; measured against the FMA dots in NOTES v15.
#pragma once
#include "weight_ring.cuh"

namespace mk {
namespace {

// c += A (16 x 16, rows: a0/a2 tile row g, a1/a3 tile row g + 8) * B (16 x 8: b0, b1 column g), fp32
__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// two fp32 values as a bf16 pair (the first in the low half)
__device__ __forceinline__ uint32_t pack_bf16(float a, float b) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&v);
}
// 4 fp32 inputs as the mma's B operand twice: hi (b[0], b[1]) = bf16(x), lo (b[2], b[3]) = bf16(x - hi)
__device__ __forceinline__ void split_bf16(const float4 x, uint32_t (&b)[4]) {
  b[0] = pack_bf16(x.x, x.y), b[1] = pack_bf16(x.z, x.w);
  b[2] = pack_bf16(x.x - lo(b[0]), x.y - hi(b[0])), b[3] = pack_bf16(x.z - lo(b[1]), x.w - hi(b[1]));
}

// One warp's part of a tile: NBLK blocks of 32 k. wlo / whi: shared addresses of tile rows g and
// g + 8 at this lane's first k (0: the row is past the slice, its products are zero); x: batch row
// g's fp32 input at the same k (null for g >= NB), in shared memory (at xs_slot; the lane's first
// group of 8 with bit 2 clear, so block k's has it set where k is odd), or in global memory where
// X_GLOBAL (in order; written by other blocks this launch: read through L2). -> c (this warp's partial tile)
template <int NBLK, bool X_GLOBAL = false>
__device__ __forceinline__ void tile_dot(uint32_t wlo, uint32_t whi, const float* x, float (&c)[4]) {
  constexpr int SUB = 4;  // blocks whose weights are loaded together (all 8 of a K = D quarter and the split inputs spilled)
  const uint4 zero = make_uint4(0, 0, 0, 0);
  c[0] = c[1] = c[2] = c[3] = 0.f;
#pragma unroll
  for (int k0 = 0; k0 < NBLK; k0 += SUB) {
    uint4 lo[SUB], hi[SUB];
#pragma unroll
    for (int k = k0; k < k0 + SUB && k < NBLK; ++k) lo[k - k0] = wlo ? lds128(wlo + k * 64) : zero;
#pragma unroll
    for (int k = k0; k < k0 + SUB && k < NBLK; ++k) hi[k - k0] = whi ? lds128(whi + k * 64) : zero;
#pragma unroll
    for (int k = k0; k < k0 + SUB && k < NBLK; ++k) {
      uint32_t b0[4] = {0u, 0u, 0u, 0u}, b1[4] = {0u, 0u, 0u, 0u};  // k +0..3, +4..7: hi, hi, lo, lo
      if (x) {
        const float* xk = x + k * 32;
        const int h = X_GLOBAL ? 0 : (k & 1) * 4;  // the slot of the group's values 0-3 (xs_slot)
        const float4 xa = X_GLOBAL ? __ldcg(reinterpret_cast<const float4*>(xk)) : *reinterpret_cast<const float4*>(xk + h);
        const float4 xb = X_GLOBAL ? __ldcg(reinterpret_cast<const float4*>(xk) + 1) : *reinterpret_cast<const float4*>(xk + 4 - h);
        split_bf16(xa, b0);
        split_bf16(xb, b1);
      }
      const uint4 wl = lo[k - k0], wh = hi[k - k0];
      mma_bf16(c, wl.x, wh.x, wl.y, wh.y, b0[0], b0[1]);
      mma_bf16(c, wl.x, wh.x, wl.y, wh.y, b0[2], b0[3]);
      mma_bf16(c, wl.z, wh.z, wl.w, wh.w, b1[0], b1[1]);
      mma_bf16(c, wl.z, wh.z, wl.w, wh.w, b1[2], b1[3]);
    }
  }
}

// the warp's partial tile into SM_PART: part[warp][batch row][tile row]
__device__ __forceinline__ void put_partial(float* part, const float (&c)[4]) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  float* p = part + warp * PART_TILE;
  p[(2 * t) * 16 + g] = c[0];
  p[(2 * t + 1) * 16 + g] = c[1];
  p[(2 * t) * 16 + g + 8] = c[2];
  p[(2 * t + 1) * 16 + g + 8] = c[3];
}

// A K = 1024 shape's lane (warp w: tile w / 4, k quarter w % 4): its tile, its group g, its first
// k (the warp's quarter, the lane's 8 k in each 32), and batch row g's input there (null past NB)
struct QuarterLane {
  int tile, g, k0;
  const float* x;
};
static_assert(D / 4 % 64 == 0, "quarter_lane: a lane's first group of 8 inputs has bit 2 of its index clear (tile_dot)");
template <int NB>
__device__ __forceinline__ QuarterLane quarter_lane(const float* xs) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int k0 = (warp & 3) * (D / 4) + 8 * t;
  return QuarterLane{warp >> 2, g, k0, g < NB ? xs + g * D + k0 : nullptr};
}

// one tile entry's four k-quarter partials (p: the entry in the first quarter's partial tile),
// added in warp order
__device__ __forceinline__ float quarter_sum(const float* p) {
  return ((p[0] + p[PART_TILE]) + p[2 * PART_TILE]) + p[3 * PART_TILE];
}

// K = 1024 rows [0, n) of the slice (8 rows a chunk); epi(i, b, dot) by thread b * 64 + (i % 64)
template <int NB, class Epi>
__device__ __forceinline__ void mma_rows(Stream& s, int n, const float* xs, float* part, Epi epi) {
  static_assert(NB == 1 || (RING_SLOT == 8 * 2 * D && NWARPS == 16), "mma_rows: 8 rows a chunk, 4 tiles x 4 k quarters");
  const QuarterLane q = quarter_lane<NB>(xs);
  const int ob = threadIdx.x >> 6, orow = threadIdx.x & 63;  // this thread's output
  for (int i0 = 0; i0 < n; i0 += 64) {
    const int rows = min(64, n - i0);
    float c[4] = {0.f, 0.f, 0.f, 0.f};
    if (16 * q.tile < rows) {
      const uint32_t wlo = chunk_wait(s, 2 * q.tile) + (q.g * D + q.k0) * 2;
      const uint32_t whi = 16 * q.tile + 8 < rows ? chunk_wait(s, 2 * q.tile + 1) + (q.g * D + q.k0) * 2 : 0u;
      tile_dot<D / 4 / 32>(wlo, whi, q.x, c);
    }
    put_partial(part, c);
    chunks_done(s, (rows + 7) / 8);  // (a barrier: every partial is in)
    if (ob < NB && orow < rows) {
      const float* p = part + (orow >> 4) * 4 * PART_TILE + ob * 16 + (orow & 15);
      epi(i0 + orow, ob, quarter_sum(p));
    }
    sync_warps();  // SM_PART is the next item's
  }
}

// gate/up units [0, n) of the slice (4 units a chunk: gate rows in the slot's first half, up rows
// in its second): act[b][u0 + i] = silu(gate) * up, fp32 (rows INTER apart)
template <int NB>
__device__ __forceinline__ void mma_gate_up(Stream& s, int u0, int n, const float* xs, float* act, float* part) {
  static_assert(NB == 1 || RING_SLOT == 2 * 4 * 2 * D, "mma_gate_up: 4 units a chunk");
  const QuarterLane q = quarter_lane<NB>(xs);
  const int ob = threadIdx.x >> 5, ou = threadIdx.x & 31;  // this thread's output
  for (int i0 = 0; i0 < n; i0 += 32) {
    const int units = min(32, n - i0);
    float c[4] = {0.f, 0.f, 0.f, 0.f};
    if (8 * q.tile < units) {
      const uint32_t c0 = chunk_wait(s, 2 * q.tile);
      const uint32_t c1 = 8 * q.tile + 4 < units ? chunk_wait(s, 2 * q.tile + 1) : 0u;
      const uint32_t ch = q.g < 4 ? c0 : c1;  // unit g's chunk (0: past the slice)
      const uint32_t w = ch ? ch + ((q.g & 3) * D + q.k0) * 2 : 0u;
      tile_dot<D / 4 / 32>(w, w ? w + RING_SLOT / 2 : 0u, q.x, c);
    }
    put_partial(part, c);
    chunks_done(s, (units + 3) / 4);
    if (ob < NB && ou < units) {
      const float* p = part + (ou >> 3) * 4 * PART_TILE + ob * 16 + (ou & 7);
      const float gate = quarter_sum(p);
      const float up = quarter_sum(p + 8);
      act[ob * INTER + u0 + i0 + ou] = siluf_(gate) * up;
    }
    sync_warps();
  }
}

// rows [r0, r1) of a K = 2048 or 3584 matrix, for each batch row b (xs + b * K in global memory;
// hidden + b * D): hidden[row] += dot (the residual add, fp32), also into trace_row + b * trace_stride
// when set
template <int K, int NB, bool X_GLOBAL>
__device__ __forceinline__ void mma_half_rows(Stream& s, int r0, int r1, const float* xs, float* hidden, float* part,
                                              float* trace_row, int trace_stride) {
  static_assert(X_GLOBAL, "a batch's out- and down projections read their inputs from global memory (in order, not at xs_slot)");
  constexpr int RPC = RING_SLOT / (2 * K), KW = K / NWARPS;  // rows per chunk, k per warp
  static_assert(KW % 32 == 0 && RPC >= 1, "mma_half_rows: whole 32-k blocks per warp, a row in a slot");
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int k0 = warp * KW + 8 * t;
  const float* x = g < NB ? xs + g * K + k0 : nullptr;
  const int ob = threadIdx.x >> 3, oj = threadIdx.x & 7;  // the residual thread's batch row and item row
  const bool adds = ob < NB;
  for (int base = r0; base < r1; base += 8) {
    const int rows = min(8, r1 - base);
    // the residual rows first: this block alone writes them, their latency hides behind the dots
    const float h_old = adds && oj < rows ? __ldcg(hidden + ob * D + base + oj) : 0.f;
    uint32_t ch = 0;  // row g's chunk (the warp waits for every chunk of the item)
#pragma unroll
    for (int c = 0; c < 8 / RPC; ++c)
      if (c * RPC < rows) {
        const uint32_t p = chunk_wait(s, c);
        if (g / RPC == c) ch = p;
      }
    float c[4];
    tile_dot<KW / 32, X_GLOBAL>(g < rows ? ch + ((g % RPC) * K + k0) * 2 : 0u, 0u, x, c);
    put_partial(part, c);
    chunks_done(s, (rows + RPC - 1) / RPC);
    if (adds && oj < rows) {
      float o = 0.f;
#pragma unroll
      for (int w = 0; w < NWARPS; ++w) o += part[w * PART_TILE + ob * 16 + oj];
      const float h = h_old + o;
      hidden[ob * D + base + oj] = h;
      if (trace_row) trace_row[(size_t)ob * trace_stride + base + oj] = h;
    }
    sync_warps();
  }
}

}  // namespace
}  // namespace mk
