// The matrix phases of a batch (NB >= 2 rows, the ring schedule) on the tensor cores: each weight
// piece read once from the ring and multiplied with every row's input vector by mma.sync
// m16n8k16 (bf16 in, fp32 sums), the batch's rows as the mma's 8 columns (rows NB..7 are zero).
// matvec.cuh hands its three shapes of work here when NB >= 2; the batch-1 kernels keep the FMA
// dots (dot_regs), so their bits and their speed do not change.
// The inputs: the K = D shapes' (the normed residual streams, in shared memory; the in-projections' and gate/up's
// x (1 + w) unscaled, each dot times the row's 1 / rms in the epilogue: block_rmsnorm UNSCALED) are fp32 as two bf16
// planes, hi = bf16(x) and lo = bf16(x - hi) (block_rmsnorm), so each weight block meets two mmas,
// W hi + W lo = W x within ~2^-16 of x (issue 20 part 5); the out- and down projections' (obuf, attn,
// act, read from global memory) are bf16, rounded once by their writer (shapes.cuh, the workspace).
//
// One tile: 16 weight rows x 8 batch rows. Lane l = 4 g + t holds rows g and g + 8 of the tile
// and batch row g's input; in every 32-wide block of k it loads the 16 bytes k0 + 8 t .. k0 + 8 t + 7
// of each (one lds128 each; a K = D input's hi and lo plane: two), which feed two mmas (two pairs with
// hi and lo): the first takes their k +0..3 as the mma's slots 2t, 2t+1, 2t+8, 2t+9, the second their
// k +4..7 (any one-to-one map of k to slots is the same sum, as long as the weights and the inputs use
// the same one).
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
#include "mma_sync.cuh"  // (mma_bf16)
#include "weight_ring.cuh"

namespace mk {
namespace {

// One warp's part of a tile: NBLK blocks of 32 k. wlo / whi: shared addresses of tile rows g and
// g + 8 at this lane's first k (0: the row is past the slice, its products are zero); x: batch row
// g's input at the same k (null for g >= NB): SPLIT, a K = D input's hi plane in shared memory (its lo
// plane D values on: two mmas a block), else bf16 in global memory (written by other blocks this
// launch: read through L2). -> c (this warp's partial tile)
template <int NBLK, bool SPLIT>
__device__ __forceinline__ void tile_dot(uint32_t wlo, uint32_t whi, const uint16_t* x, float (&c)[4]) {
  // blocks whose weights are loaded together (SPLIT: 4, all 8 of a K = D quarter with both planes spilled)
  constexpr int SUB = SPLIT ? 4 : NBLK;
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
      const uint4 wl = lo[k - k0], wh = hi[k - k0];
      if constexpr (SPLIT) {
        const uint4 xh = x ? *reinterpret_cast<const uint4*>(x + k * 32) : zero;
        const uint4 xl = x ? *reinterpret_cast<const uint4*>(x + D + k * 32) : zero;
        mma_bf16(c, wl.x, wh.x, wl.y, wh.y, xh.x, xh.y);
        mma_bf16(c, wl.x, wh.x, wl.y, wh.y, xl.x, xl.y);
        mma_bf16(c, wl.z, wh.z, wl.w, wh.w, xh.z, xh.w);
        mma_bf16(c, wl.z, wh.z, wl.w, wh.w, xl.z, xl.w);
      } else {
        const uint4 xv = x ? ld_x16(x + k * 32) : zero;
        mma_bf16(c, wl.x, wh.x, wl.y, wh.y, xv.x, xv.y);
        mma_bf16(c, wl.z, wh.z, wl.w, wh.w, xv.z, xv.w);
      }
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
  const uint16_t* x;
};
template <int NB>
__device__ __forceinline__ QuarterLane quarter_lane(const float* xs) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int k0 = (warp & 3) * (D / 4) + 8 * t;
  return QuarterLane{warp >> 2, g, k0, g < NB ? xs_planes(xs, g) + k0 : nullptr};
}

// one tile entry's four k-quarter partials (p: the entry in the first quarter's partial tile),
// added in warp order
__device__ __forceinline__ float quarter_sum(const float* p) {
  return ((p[0] + p[PART_TILE]) + p[2 * PART_TILE]) + p[3 * PART_TILE];
}

// K = 1024 rows [0, n) of the slice (8 rows a chunk); epi(i, b, dot) by thread b * 64 + (i % 64). red: the rows' sums
// of squares where xs is unscaled (block_rmsnorm UNSCALED: each dot times row_rstd), else null
template <int NB, class Epi>
__device__ __forceinline__ void mma_rows(Stream& s, int n, const float* xs, const float* red, float* part, Epi epi) {
  static_assert(NB == 1 || (RING_SLOT == 8 * 2 * D && NWARPS == 16), "mma_rows: 8 rows a chunk, 4 tiles x 4 k quarters");
  const QuarterLane q = quarter_lane<NB>(xs);
  const int ob = threadIdx.x >> 6, orow = threadIdx.x & 63;  // this thread's output
  const float scale = red && ob < NB ? row_rstd(red, ob) : 1.f;
  for (int i0 = 0; i0 < n; i0 += 64) {
    const int rows = min(64, n - i0);
    float c[4] = {0.f, 0.f, 0.f, 0.f};
    if (16 * q.tile < rows) {
      const uint32_t wlo = chunk_wait(s, 2 * q.tile) + (q.g * D + q.k0) * 2;
      const uint32_t whi = 16 * q.tile + 8 < rows ? chunk_wait(s, 2 * q.tile + 1) + (q.g * D + q.k0) * 2 : 0u;
      tile_dot<D / 4 / 32, true>(wlo, whi, q.x, c);
    }
    put_partial(part, c);
    chunks_done(s, (rows + 7) / 8);  // (a barrier: every partial is in)
    if (ob < NB && orow < rows) {
      const float* p = part + (orow >> 4) * 4 * PART_TILE + ob * 16 + (orow & 15);
      epi(i0 + orow, ob, red ? quarter_sum(p) * scale : quarter_sum(p));
    }
    sync_warps();  // SM_PART is the next item's
  }
}

// gate/up units [0, n) of the slice (4 units a chunk: gate rows in the slot's first half, up rows
// in its second): act[b][u0 + i] = silu(gate) * up, computed in fp32, rounded once to bf16 (rows INTER apart).
// xs unscaled (block_rmsnorm UNSCALED): gate and up times row_rstd of red
template <int NB>
__device__ __forceinline__ void mma_gate_up(Stream& s, int u0, int n, const float* xs, const float* red, uint16_t* act, float* part) {
  static_assert(NB == 1 || RING_SLOT == 2 * 4 * 2 * D, "mma_gate_up: 4 units a chunk");
  const QuarterLane q = quarter_lane<NB>(xs);
  const int ob = threadIdx.x >> 5, ou = threadIdx.x & 31;  // this thread's output
  const float scale = ob < NB ? row_rstd(red, ob) : 1.f;  // (red: never null here, the gate/up's norm is unscaled)
  for (int i0 = 0; i0 < n; i0 += 32) {
    const int units = min(32, n - i0);
    float c[4] = {0.f, 0.f, 0.f, 0.f};
    if (8 * q.tile < units) {
      const uint32_t c0 = chunk_wait(s, 2 * q.tile);
      const uint32_t c1 = 8 * q.tile + 4 < units ? chunk_wait(s, 2 * q.tile + 1) : 0u;
      const uint32_t ch = q.g < 4 ? c0 : c1;  // unit g's chunk (0: past the slice)
      const uint32_t w = ch ? ch + ((q.g & 3) * D + q.k0) * 2 : 0u;
      tile_dot<D / 4 / 32, true>(w, w ? w + RING_SLOT / 2 : 0u, q.x, c);
    }
    put_partial(part, c);
    chunks_done(s, (units + 3) / 4);
    if (ob < NB && ou < units) {
      const float* p = part + (ou >> 3) * 4 * PART_TILE + ob * 16 + (ou & 7);
      const float gate = quarter_sum(p) * scale;
      const float up = quarter_sum(p + 8) * scale;
      act[ob * INTER + u0 + i0 + ou] = bits(siluf_(gate) * up);
    }
    sync_warps();
  }
}

// rows [r0, r1) of a K = 2048 or 3584 matrix, for each batch row b (xs + b * K: bf16 in global memory;
// hidden + b * D): hidden[row] += dot (the residual add, fp32), also into trace_row + b * trace_stride
// when set
template <int K, int NB>
__device__ __forceinline__ void mma_half_rows(Stream& s, int r0, int r1, const uint16_t* xs, float* hidden, float* part,
                                              float* trace_row, int trace_stride) {
  constexpr int RPC = RING_SLOT / (2 * K), KW = K / NWARPS;  // rows per chunk, k per warp
  static_assert(KW % 32 == 0 && RPC >= 1, "mma_half_rows: whole 32-k blocks per warp, a row in a slot");
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int k0 = warp * KW + 8 * t;
  const uint16_t* x = g < NB ? xs + g * K + k0 : nullptr;
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
    tile_dot<KW / 32, false>(g < rows ? ch + ((g % RPC) * K + k0) * 2 : 0u, 0u, x, c);
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
