// The matrix-vector phases: y_b = W x_b for the block's slice of W's rows (schedule.cuh phase_slice)
// and each of the batch's NB rows b, x_b a vector in shared memory (rows K apart: fp32 at xs_slot, the
// normed residual, or bf16, an out- or down projection's input: device_common.cuh), fp32 accumulation,
// every piece of W read once. A batch (NB >= 2) runs on the tensor cores
// (matvec_mma.cuh); batch 1 on FMA dots, here. One template per shape of work, and two loaders that
// say where a warp's weights come from:
//   RegisterLoader  (the register schedule, batch 1) straight from global memory into registers;
//                   the warp's first item was issued before the barrier that precedes the phase
//                   (prepare_phase in megakernel.cu), so it streams during the wait;
//   RingLoader      (the ring schedule) from the shared-memory slots the producer filled
//                   (weight_ring.cuh); the item's chunks are released after it.
// Both hand the warp the same 16 x 16 bytes per lane in the same order, so both compute the same bits.
//
// Rows are cut into pieces (shapes.cuh PIECE, row_parts; schedule.cuh phase_slice counts pieces).
// Who owns what at batch 1 (an "item" is what the 16 warps compute between two releases of ring chunks)
//   matvec_rows   K = D (in-projections, lm_head): an item is 16 WARP_PIECES pieces (8 or 4 chunks); warp w
//                 takes pieces WARP_PIECES w .. of it (whole rows), lane l the 16-byte parts l, l+32, ...
//                 of each piece (at D = 1024: 64 rows, warp w rows 4w .. 4w+3).
//   matvec_gate_up  an item is 8 (or 4) chunks of gate pieces and their up pieces. Pieces of 1024: warp w
//                 takes pieces 2w, 2w+1 of each (4 rows: gate, up, gate, up): 2 units at D = 1024, one
//                 at 2048, half of one at 4096 (warps 2j, 2j+1 then add their halves); whole-row pieces
//                 (ROW_PIECES): warp 2j the gate row of the item's unit j, 2j+1 its up row (GATE_UP_PER_CHUNK
//                 units a chunk); act = silu(gate) * up.
//   matvec_row_parts  K = DN_VAL or INTER (out-projections, down): a row is P = row_parts(K) pieces,
//                 an item 16 / P rows; warp w takes piece w % P of row w / P, thread j adds row j's
//                 dot to that row's residual.
#pragma once
#include "matvec_mma.cuh"

namespace mk {
namespace {

// ---- the dot products: a warp's rows in wv[16] (NR rows x NCH 16-byte parts per lane) times the
// input vector: row r's at x + ((r / RPS) % NSEG) * PIECE (the pieces of a wider row: its segments
// of x; NSEG = 1: every row x itself; x a multiple of 64 values into the vector, so xs_slot's
// groups are the vector's): acc[r] ----
template <int NCH, int NR, int RPS = 1, int NSEG = 1, class XT>
__device__ __forceinline__ void dot_regs(const uint4 (&wv)[16], const XT* x, int lane, float (&acc)[NR]) {
  static_assert(NCH * NR <= 16, "16 registers of weights per lane");
#pragma unroll
  for (int r = 0; r < NR; ++r) acc[r] = 0.f;
#pragma unroll
  for (int c = 0; c < NCH; ++c)
#pragma unroll
    for (int sg = 0; sg < NSEG; ++sg) {
      float xf[8];
      xs_group(x + sg * PIECE, c * 32 + lane, xf);
#pragma unroll
      for (int r = 0; r < NR; ++r)
        if ((r / RPS) % NSEG == sg) acc[r] = dot8(wv[r * NCH + c], xf, acc[r]);
    }
#pragma unroll
  for (int r = 0; r < NR; ++r) acc[r] = warp_sum(acc[r]);
}

// a batch's partial tiles (matvec_mma.cuh): SM_PART, after its input vectors (device_common.cuh)
template <int NB>
__device__ __forceinline__ float* batch_partials() {
  return reinterpret_cast<float*>(mk_smem + sm_part(NB));
}

// ---- where the weights come from --------------------------------------------------------
struct RegisterLoader {
  PhaseSlice p;
  bool first;  // the warp's first item is already in wv (issued before the barrier)

  // pieces i .. i+WARP_PIECES-1 of K = D rows (a piece past the slice repeats its last piece: the result is not used)
  __device__ __forceinline__ void issue_rows4(int i, uint4 (&wv)[16]) const {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int r = 0; r < WARP_PIECES; ++r)
#pragma unroll
      for (int c = 0; c < PIECE_STEPS; ++c)
        wv[r * PIECE_STEPS + c] = ld_w(p.w + (size_t)min(i + r, p.rows - 1) * PIECE + (c * 32 + lane) * 8);
  }
  // whole-row pieces: gate/up unit i's gate row (an even warp) or up row (an odd one)
  __device__ __forceinline__ void issue_gate_or_up(int i, uint4 (&wv)[16]) const {
    const int lane = threadIdx.x & 31;
    const uint16_t* w = ((threadIdx.x >> 5) & 1 ? p.w2 : p.w) + (size_t)i * PIECE;
#pragma unroll
    for (int c = 0; c < PIECE_STEPS; ++c) wv[c] = ld_w(w + (c * 32 + lane) * 8);
  }
  // gate/up pieces i, i+1: gate, up, gate, up
  __device__ __forceinline__ void issue_gate_up2(int i, uint4 (&wv)[16]) const {
    const int lane = threadIdx.x & 31, i1 = min(i + 1, p.rows - 1);
    const uint16_t* w[4] = {p.w + (size_t)i * PIECE, p.w2 + (size_t)i * PIECE, p.w + (size_t)i1 * PIECE, p.w2 + (size_t)i1 * PIECE};
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) wv[r * 4 + c] = ld_w(w[r] + (c * 32 + lane) * 8);
  }
  // piece i of the slice's K-wide rows (row i / row_parts(K), part i % row_parts(K))
  template <int K>
  __device__ __forceinline__ void issue_row_part(int i, uint4 (&wv)[16]) const {
    constexpr int KP = K / row_parts(K);
    const int lane = threadIdx.x & 31;
    const uint16_t* w = p.w + (size_t)i * KP;
#pragma unroll
    for (int c = 0; c < KP / 256; ++c) wv[c] = ld_w(w + (c * 32 + lane) * 8);
  }

  __device__ __forceinline__ void rows4(int i, uint4 (&wv)[16]) {
    if (!first) issue_rows4(i, wv);
    first = false;
  }
  __device__ __forceinline__ void gate_up2(int i, uint4 (&wv)[16]) {
    if (!first) issue_gate_up2(i, wv);
    first = false;
  }
  __device__ __forceinline__ void gate_or_up(int i, uint4 (&wv)[16]) {
    if (!first) issue_gate_or_up(i, wv);
    first = false;
  }
  template <int K>
  __device__ __forceinline__ void row_part(int i, uint4 (&wv)[16]) {
    if (!first) issue_row_part<K>(i, wv);
    first = false;
  }
  __device__ __forceinline__ void release(int) {}              // nothing to give back
  __device__ __forceinline__ void sync_and_release(int) { sync_warps(); }
};

struct RingLoader {
  Stream& s;

  __device__ __forceinline__ void rows4(int, uint4 (&wv)[16]) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const uint32_t p = chunk_wait(s, warp / WARPS_PER_CHUNK) + (warp % WARPS_PER_CHUNK) * WARP_PIECES * PIECE * 2;
#pragma unroll
    for (int r = 0; r < WARP_PIECES; ++r)
#pragma unroll
      for (int c = 0; c < PIECE_STEPS; ++c) wv[r * PIECE_STEPS + c] = lds128(p + r * PIECE * 2 + (c * 32 + lane) * 16);
  }
  // whole-row pieces: the item's unit j = warp / 2 is row j % GATE_UP_PER_CHUNK of chunk j / GATE_UP_PER_CHUNK's
  // gate half (an even warp) or up half (an odd one)
  __device__ __forceinline__ void gate_or_up(int, uint4 (&wv)[16]) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, j = warp >> 1;
    const uint32_t p = chunk_wait(s, j / GATE_UP_PER_CHUNK) + (warp & 1) * (RING_SLOT / 2) + (j % GATE_UP_PER_CHUNK) * PIECE * 2;
#pragma unroll
    for (int c = 0; c < PIECE_STEPS; ++c) wv[c] = lds128(p + (c * 32 + lane) * 16);
  }
  __device__ __forceinline__ void gate_up2(int, uint4 (&wv)[16]) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const uint32_t p = chunk_wait(s, warp >> 1) + (warp & 1) * 2 * PIECE * 2;
    const uint32_t rows[4] = {p, p + RING_SLOT / 2, p + PIECE * 2, p + RING_SLOT / 2 + PIECE * 2};  // g, u, g, u
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) wv[r * 4 + c] = lds128(rows[r] + (c * 32 + lane) * 16);
  }
  template <int K>
  __device__ __forceinline__ void row_part(int, uint4 (&wv)[16]) {  // the item's piece w (the warp's)
    constexpr int KP = K / row_parts(K), PPC = parts_per_chunk(K);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const uint32_t p = chunk_wait(s, w / PPC) + (w % PPC) * KP * 2;
#pragma unroll
    for (int c = 0; c < KP / 256; ++c) wv[c] = lds128(p + (c * 32 + lane) * 16);
  }
  __device__ __forceinline__ void release(int chunks) { chunks_done(s, chunks); }
  __device__ __forceinline__ void sync_and_release(int chunks) { chunks_done(s, chunks); }
};

// ---- the three shapes of work (a batch: matvec_mma.cuh, each weight read once for every row) ----
// The K = D shapes at batch 1: items of NWARPS * PER_WARP pieces (the 0.8B's rows), PER_CHUNK of
// them per ring chunk; warp w loads the NR rows of pieces i .. i+PER_WARP-1 (load(i); gate/up: a gate
// and an up row a piece), takes their dots with xs (row r's piece with its segment of xs: dot_regs'
// RPS), and lane 0 hands the sums acc[0..NR-1] to epi(i, acc).
template <int PER_WARP, int PER_CHUNK, int RPS, int NR, class Loader, class Load, class Epi>
__device__ __forceinline__ void matvec_k1024(Loader& ld, int n, const float* xs, uint4 (&wv)[16], Load load, Epi epi) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  constexpr int NSEG = D_PIECES < NR / RPS ? D_PIECES : NR / RPS;  // the segments of xs one warp's rows meet
  for (int i0 = 0; i0 < n; i0 += NWARPS * PER_WARP) {
    const int i = i0 + warp * PER_WARP;
    if (i < n) {
      load(i);
      float acc[NR];
      dot_regs<PIECE_STEPS, NR, RPS, NSEG>(wv, xs + (i % D_PIECES) * PIECE, lane, acc);
      if (lane == 0) epi(i, acc);
    }
    ld.release((min(NWARPS * PER_WARP, n - i0) + PER_CHUNK - 1) / PER_CHUNK);
  }
}

// rows [0, rows) of a K = D slice; epi(i, b, dot) (i: the row within the slice, b: the batch
// row): at batch 1 on lane 0 of the row's warp, with a batch by thread b * 64 + i % 64 (red: a batch's sums of squares
// where xs is unscaled, block_rmsnorm UNSCALED, else null)
template <int NB, class Loader, class Epi>
__device__ __forceinline__ void matvec_rows(Loader& ld, int rows, const float* xs, const float* red, uint4 (&wv)[16], Epi epi) {
  if constexpr (NB > 1) {
    mma_rows<NB>(ld.s, rows, xs, red, batch_partials<NB>(), epi);
  } else {
    matvec_k1024<WARP_PIECES, CHUNK_PIECES, 1, WARP_PIECES>(ld, rows * D_PIECES, xs, wv, [&](int i) { ld.rows4(i, wv); },
                                               [&](int i, const float (&acc)[WARP_PIECES]) {
#pragma unroll
      for (int r = 0; r < WARP_PIECES / D_PIECES; ++r) {  // the warp's pieces are rows i / D_PIECES .. (whole rows)
        float v = acc[r * D_PIECES];
#pragma unroll
        for (int k = 1; k < D_PIECES; ++k) v += acc[r * D_PIECES + k];
        if (i / D_PIECES + r < rows) epi(i / D_PIECES + r, 0, v);
      }
    });
  }
}

// gate/up units [0, n) of the slice: act[b][u0 + i] = silu(gate) * up, in fp32 rounded once to bf16 (down's
// input; rows INTER apart). red: a batch's sums of squares (its xs unscaled, block_rmsnorm UNSCALED)
__device__ __forceinline__ uint16_t swiglu(float gate, float up) { return bits(siluf_(gate) * up); }
template <int NB, class Loader>
__device__ __forceinline__ void matvec_gate_up(Loader& ld, int u0, int n, const float* xs, const float* red, uint16_t* act, uint4 (&wv)[16]) {
  if constexpr (NB > 1) {
    mma_gate_up<NB>(ld.s, u0, n, xs, red, act, batch_partials<NB>());
  } else if constexpr (ROW_PIECES) {  // whole rows: warp 2j the gate row of the item's unit j, 2j+1 its up row
    float* halves = reinterpret_cast<float*>(mk_smem + SM_RED);  // (two areas, by item: the next item's writes never meet this one's reads)
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int item = 0;
    for (int i0 = 0; i0 < n; i0 += NWARPS / 2, item ^= 1) {
      const int u = i0 + (warp >> 1);
      float* h = halves + item * NWARPS;
      if (u < n) {
        ld.gate_or_up(u, wv);
        float acc[1];
        dot_regs<PIECE_STEPS, 1>(wv, xs, lane, acc);
        if (lane == 0) h[warp] = acc[0];
      }
      ld.release((min(NWARPS / 2, n - i0) + GATE_UP_PER_CHUNK - 1) / GATE_UP_PER_CHUNK);
      sync_warps();
      if (lane == 0 && !(warp & 1) && u < n) act[u0 + u] = swiglu(h[warp], h[warp + 1]);
    }
  } else if constexpr (D_PIECES == 1) {  // two units a warp
    matvec_k1024<2, 4, 2, 4>(ld, n, xs, wv, [&](int i) { ld.gate_up2(i, wv); }, [&](int i, const float (&acc)[4]) {
      uint16_t* out = act + u0 + i;
      out[0] = swiglu(acc[0], acc[1]);
      if (i + 1 < n) out[1] = swiglu(acc[2], acc[3]);
    });
  } else if constexpr (D_PIECES == 2) {  // one unit a warp: its two pieces
    matvec_k1024<2, 4, 2, 4>(ld, n * 2, xs, wv, [&](int i) { ld.gate_up2(i, wv); }, [&](int i, const float (&acc)[4]) {
      act[u0 + i / 2] = swiglu(acc[0] + acc[2], acc[1] + acc[3]);
    });
  } else {  // half a unit a warp: warp 2j's and 2j+1's sums meet in shared memory (two areas, by item)
    static_assert(NB == 1 && D_PIECES == 4 && 4 * NWARPS <= NWARPS * RED_ROWS, "the halves' area: SM_RED");
    float* halves = reinterpret_cast<float*>(mk_smem + SM_RED);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int item = 0;
    for (int i0 = 0; i0 < n * 4; i0 += NWARPS * 2, item ^= 1) {
      const int i = i0 + warp * 2;
      float* h = halves + item * 2 * NWARPS;
      if (i < n * 4) {
        ld.gate_up2(i, wv);
        float acc[4];
        dot_regs<PIECE / 256, 4, 2, 2>(wv, xs + (i % 4) * PIECE, lane, acc);
        if (lane == 0) { h[2 * warp] = acc[0] + acc[2]; h[2 * warp + 1] = acc[1] + acc[3]; }
      }
      ld.release((min(NWARPS * 2, n * 4 - i0) + 3) / 4);
      sync_warps();
      if (lane == 0 && !(warp & 1) && i < n * 4) act[u0 + i / 4] = swiglu(h[2 * warp] + h[2 * warp + 2], h[2 * warp + 1] + h[2 * warp + 3]);
    }
  }
}

// rows [r0, r1) of a K = DN_VAL or INTER matrix, for each batch row b (xs + b * K, hidden + b * D):
// hidden[row] += dot (the residual add, fp32), also into trace_row + b * trace_stride when set.
// xs: bf16, batch 1 in shared memory, a batch in global memory. At batch 1 a row is P = row_parts(K)
// pieces: warp w takes piece w % P of the item's row w / P; thread j (< 16 / P) adds row j of the item.
template <int K, int NB, class Loader>
__device__ __forceinline__ void matvec_row_parts(Loader& ld, int r0, int r1, const uint16_t* xs, float* hidden, float* red,
                                                 float* trace_row, int trace_stride, uint4 (&wv)[16]) {
  static_assert(NB > 1 || K <= XS_K1, "batch 1's input vector in shared memory: XS_K1 bf16 values at most");
  if constexpr (NB > 1) {
    mma_half_rows<K, NB>(ld.s, r0, r1, xs, hidden, batch_partials<NB>(), trace_row, trace_stride);
  } else {
    constexpr int P = row_parts(K), KP = K / P, NCH = KP / 256, PPC = parts_per_chunk(K), ROWS = NWARPS / P;
    static_assert(NCH * 256 * P == K && PPC >= 1 && ROWS >= 1, "K: pieces of whole 256-column steps, a piece within a slot");
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    // the residual thread's item row; rb is 0 wherever it is used (threads 0..ROWS-1), but spelled this
    // way ptxas gives the batch-1 kernels the same SASS as before the batch (B = 1 unchanged)
    const int rj = threadIdx.x % ROWS, rb = threadIdx.x / ROWS;
    const bool adds = threadIdx.x < ROWS;
    for (int base = r0; base < r1; base += ROWS) {
      const int j = warp / P, pt = warp % P;
      // the residual rows first: this block alone writes them, their latency hides behind the dots
      const float h_old = adds && base + rj < r1 ? __ldcg(hidden + rb * D + base + rj) : 0.f;
      float acc[1];
      acc[0] = 0.f;
      if (base + j < r1) {
        ld.template row_part<K>((base - r0) * P + warp, wv);
        dot_regs<NCH, 1>(wv, xs + pt * KP, lane, acc);
      }
      if (lane == 0) red[warp] = acc[0];
      ld.sync_and_release((min(ROWS, r1 - base) * P + PPC - 1) / PPC);
      if (adds) {
        const int r = base + rj;
        if (r < r1) {
          float sum = red[rb * NWARPS + P * rj];
#pragma unroll
          for (int k = 1; k < P; ++k) sum += red[rb * NWARPS + P * rj + k];
          const float h = h_old + sum;
          hidden[rb * D + r] = h;
          if (trace_row) trace_row[(size_t)rb * trace_stride + r] = h;
        }
      }
      sync_warps();
    }
  }
}

// The register schedule, before the barrier that precedes a matrix phase: each warp's first item
// of the block's slice into wv (the loads the phase would make first).
__device__ __forceinline__ void issue_first_item(int kind_or_lm, const PhaseSlice& p, uint4 (&wv)[16]) {
  const int warp = threadIdx.x >> 5;
  const RegisterLoader ld{p, false};
  if (kind_or_lm == PH_GATE_UP) {
    if constexpr (ROW_PIECES) {
      if ((warp >> 1) < p.rows) ld.issue_gate_or_up(warp >> 1, wv);
    } else {
      if (warp * 2 < p.rows) ld.issue_gate_up2(warp * 2, wv);
    }
  } else if (kind_or_lm == PH_OUT_PROJ) {
    if (warp < p.rows) ld.issue_row_part<DN_VAL>(warp, wv);
  } else if (kind_or_lm == PH_DOWN) {
    if (warp < p.rows) ld.issue_row_part<INTER>(warp, wv);
  } else {  // an in-projection or the lm_head: K = D pieces
    if (warp * WARP_PIECES < p.rows) ld.issue_rows4(warp * WARP_PIECES, wv);
  }
}

}  // namespace
}  // namespace mk
