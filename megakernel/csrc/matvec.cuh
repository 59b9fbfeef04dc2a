// The matrix-vector phases: y_b = W x_b for the block's slice of W's rows (schedule.cuh phase_slice)
// and each of the batch's NB rows b, x_b a bf16 vector in shared memory (rows K apart), fp32
// accumulation, every piece of W read once. A batch (NB >= 2) runs on the tensor cores
// (matvec_mma.cuh); batch 1 on FMA dots, here. One template per shape of work, and two loaders that
// say where a warp's weights come from:
//   RegisterLoader  (the register schedule, batch 1) straight from global memory into registers;
//                   the warp's first item was issued before the barrier that precedes the phase
//                   (prepare_phase in megakernel.cu), so it streams during the wait;
//   RingLoader      (the ring schedule) from the shared-memory slots the producer filled
//                   (weight_ring.cuh); the item's chunks are released after it.
// Both hand the warp the same 16 x 16 bytes per lane in the same order, so both compute the same bits.
//
// Who owns what at batch 1 (an "item" is what the 16 warps compute between two releases of ring chunks)
//   matvec_rows   K = 1024 (in-projections, lm_head): an item is 64 rows (8 chunks); warp w takes
//                 rows 4w .. 4w+3 of it, lane l the 16-byte pieces l, l+32, l+64, l+96 of each row.
//   matvec_gate_up  an item is 32 units (8 chunks); warp w takes units 2w, 2w+1 (4 rows: gate, up,
//                 gate, up), act = silu(gate) * up.
//   matvec_half_rows  K = 2048 or 3584 (out-projections, down): an item is 8 rows; warps 2j, 2j+1
//                 take the two halves of row j, thread j adds row j's dot to that row's residual.
#pragma once
#include "matvec_mma.cuh"

namespace mk {
namespace {

// ---- the dot products: a warp's rows in wv[16] (NR rows x NCH 16-byte pieces per lane) times the
// input vector x: acc[r] ----
template <int NCH, int NR>
__device__ __forceinline__ void dot_regs(const uint4 (&wv)[16], const uint16_t* x, int lane, float (&acc)[NR]) {
  static_assert(NCH * NR <= 16, "16 registers of weights per lane");
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

// a batch's partial tiles (matvec_mma.cuh): SM_PART, after its input vectors (device_common.cuh)
template <int NB>
__device__ __forceinline__ float* batch_partials() {
  return reinterpret_cast<float*>(mk_smem + sm_part(NB));
}

// ---- where the weights come from --------------------------------------------------------
struct RegisterLoader {
  PhaseSlice p;
  bool first;  // the warp's first item is already in wv (issued before the barrier)

  // rows i .. i+3 (K = 1024; a row past the slice repeats its last row: the result is not used)
  __device__ __forceinline__ void issue_rows4(int i, uint4 (&wv)[16]) const {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) wv[r * 4 + c] = ld_w(p.w + (size_t)min(i + r, p.rows - 1) * D + (c * 32 + lane) * 8);
  }
  // units i, i+1: gate, up, gate, up
  __device__ __forceinline__ void issue_gate_up2(int i, uint4 (&wv)[16]) const {
    const int lane = threadIdx.x & 31, i1 = min(i + 1, p.rows - 1);
    const uint16_t* w[4] = {p.w + (size_t)i * D, p.w2 + (size_t)i * D, p.w + (size_t)i1 * D, p.w2 + (size_t)i1 * D};
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) wv[r * 4 + c] = ld_w(w[r] + (c * 32 + lane) * 8);
  }
  // half `half` of row j (K = p.k)
  template <int K>
  __device__ __forceinline__ void issue_half_row(int j, int half, uint4 (&wv)[16]) const {
    const int lane = threadIdx.x & 31;
    const uint16_t* w = p.w + (size_t)j * K + half * (K / 2);
#pragma unroll
    for (int c = 0; c < K / 512; ++c) wv[c] = ld_w(w + (c * 32 + lane) * 8);
  }

  __device__ __forceinline__ void rows4(int i, uint4 (&wv)[16]) {
    if (!first) issue_rows4(i, wv);
    first = false;
  }
  __device__ __forceinline__ void gate_up2(int i, uint4 (&wv)[16]) {
    if (!first) issue_gate_up2(i, wv);
    first = false;
  }
  template <int K>
  __device__ __forceinline__ void half_row(int j, int half, uint4 (&wv)[16]) {
    if (!first) issue_half_row<K>(j, half, wv);
    first = false;
  }
  __device__ __forceinline__ void release(int) {}              // nothing to give back
  __device__ __forceinline__ void sync_and_release(int) { sync_warps(); }
};

struct RingLoader {
  Stream& s;

  __device__ __forceinline__ void rows4(int, uint4 (&wv)[16]) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const uint32_t p = chunk_wait(s, warp >> 1) + (warp & 1) * 4 * D * 2;
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) wv[r * 4 + c] = lds128(p + r * D * 2 + (c * 32 + lane) * 16);
  }
  __device__ __forceinline__ void gate_up2(int, uint4 (&wv)[16]) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const uint32_t p = chunk_wait(s, warp >> 1) + (warp & 1) * 2 * D * 2;
    const uint32_t rows[4] = {p, p + RING_SLOT / 2, p + D * 2, p + RING_SLOT / 2 + D * 2};  // g, u, g, u
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) wv[r * 4 + c] = lds128(rows[r] + (c * 32 + lane) * 16);
  }
  template <int K>
  __device__ __forceinline__ void half_row(int, int half, uint4 (&wv)[16]) {
    constexpr int RPC = RING_SLOT / (2 * K);  // rows per chunk
    const int lane = threadIdx.x & 31, j = threadIdx.x >> 6;  // the warp's row within the item
    const uint32_t p = chunk_wait(s, j / RPC) + ((j % RPC) * K + half * (K / 2)) * 2;
#pragma unroll
    for (int c = 0; c < K / 512; ++c) wv[c] = lds128(p + (c * 32 + lane) * 16);
  }
  __device__ __forceinline__ void release(int chunks) { chunks_done(s, chunks); }
  __device__ __forceinline__ void sync_and_release(int chunks) { chunks_done(s, chunks); }
};

// ---- the three shapes of work (a batch: matvec_mma.cuh, each weight read once for every row) ----
// The K = 1024 shapes at batch 1: items of NWARPS * PER_WARP outputs, PER_CHUNK of them per ring
// chunk; warp w loads its 4 rows of outputs i .. i+PER_WARP-1 (load(i)), takes their dots with xs,
// and lane 0 hands the sums acc[0..3] to epi(i, acc).
template <int PER_WARP, int PER_CHUNK, class Loader, class Load, class Epi>
__device__ __forceinline__ void matvec_k1024(Loader& ld, int n, const uint16_t* xs, uint4 (&wv)[16], Load load, Epi epi) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int i0 = 0; i0 < n; i0 += NWARPS * PER_WARP) {
    const int i = i0 + warp * PER_WARP;
    if (i < n) {
      load(i);
      float acc[4];
      dot_regs<D / 256, 4>(wv, xs, lane, acc);
      if (lane == 0) epi(i, acc);
    }
    ld.release((min(NWARPS * PER_WARP, n - i0) + PER_CHUNK - 1) / PER_CHUNK);
  }
}

// rows [0, rows) of a K = 1024 slice; epi(i, b, dot) (i: the row within the slice, b: the batch
// row): at batch 1 on lane 0 of the row's warp, with a batch by thread b * 64 + i % 64
template <int NB, class Loader, class Epi>
__device__ __forceinline__ void matvec_rows(Loader& ld, int rows, const uint16_t* xs, uint4 (&wv)[16], Epi epi) {
  if constexpr (NB > 1) {
    mma_rows<NB>(ld.s, rows, xs, batch_partials<NB>(), epi);
  } else {
    matvec_k1024<4, 8>(ld, rows, xs, wv, [&](int i) { ld.rows4(i, wv); }, [&](int i, const float (&acc)[4]) {
#pragma unroll
      for (int r = 0; r < 4; ++r)
        if (i + r < rows) epi(i + r, 0, acc[r]);
    });
  }
}

// gate/up units [0, n) of the slice: act[b][u0 + i] = silu(gate) * up (bf16 where torch rounds; rows INTER apart)
template <int NB, class Loader>
__device__ __forceinline__ void matvec_gate_up(Loader& ld, int u0, int n, const uint16_t* xs, uint16_t* act, uint4 (&wv)[16]) {
  if constexpr (NB > 1) {
    mma_gate_up<NB>(ld.s, u0, n, xs, act, batch_partials<NB>());
  } else {
    matvec_k1024<2, 4>(ld, n, xs, wv, [&](int i) { ld.gate_up2(i, wv); }, [&](int i, const float (&acc)[4]) {
      uint16_t* out = act + u0 + i;
      out[0] = bits(bfr(siluf_(bfr(acc[0]))) * bfr(acc[1]));
      if (i + 1 < n) out[1] = bits(bfr(siluf_(bfr(acc[2]))) * bfr(acc[3]));
    });
  }
}

// rows [r0, r1) of a K = 2048 or 3584 matrix, for each batch row b (xs + b * K, hidden + b * D):
// hidden[row] += bf16(dot) (the residual add), also into trace_row + b * trace_stride when set.
// xs in shared memory, or (X_GLOBAL, a batch) in global memory. At batch 1 thread j (< 8) adds row j of the item.
template <int K, int NB, bool X_GLOBAL = false, class Loader>
__device__ __forceinline__ void matvec_half_rows(Loader& ld, int r0, int r1, const uint16_t* xs, uint16_t* hidden, float* red,
                                                 float* trace_row, int trace_stride, uint4 (&wv)[16]) {
  static_assert(!X_GLOBAL || NB > 1, "batch 1 reads its input from shared memory");
  static_assert(X_GLOBAL || K <= xs_k(NB), "the input vectors in shared memory are xs_k(NB) wide (a batch's: D)");
  if constexpr (NB > 1) {
    mma_half_rows<K, NB, X_GLOBAL>(ld.s, r0, r1, xs, hidden, batch_partials<NB>(), trace_row, trace_stride);
  } else {
    constexpr int NCH = K / 512, RPC = RING_SLOT / (2 * K), ROWS = NWARPS / 2;
    static_assert(NCH * 512 == K && RPC >= 1, "K must be a multiple of 512 and a row must fit a slot");
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    // the residual thread's item row; rb is 0 wherever it is used (threads 0..7), but spelled this
    // way ptxas gives the batch-1 kernels the same SASS as before the batch (B = 1 unchanged)
    const int rj = threadIdx.x % ROWS, rb = threadIdx.x / ROWS;
    const bool adds = threadIdx.x < ROWS;
    for (int base = r0; base < r1; base += ROWS) {
      const int j = warp >> 1, half = warp & 1;
      // the residual rows first: this block alone writes them, their latency hides behind the dots
      const float h_old = adds && base + rj < r1 ? ld_x1(hidden + rb * D + base + rj) : 0.f;
      float acc[1];
      acc[0] = 0.f;
      if (base + j < r1) {
        ld.template half_row<K>(base - r0 + j, half, wv);
        dot_regs<NCH, 1>(wv, xs + half * (K / 2), lane, acc);
      }
      if (lane == 0) red[warp] = acc[0];
      ld.sync_and_release((min(ROWS, r1 - base) + RPC - 1) / RPC);
      if (adds) {
        const int r = base + rj;
        if (r < r1) {
          const float o = bfr(red[rb * NWARPS + 2 * rj] + red[rb * NWARPS + 2 * rj + 1]);
          const float h = bfr(h_old + o);
          hidden[rb * D + r] = bits(h);
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
    if (warp * 2 < p.rows) ld.issue_gate_up2(warp * 2, wv);
  } else if (kind_or_lm == PH_OUT_PROJ) {
    if ((warp >> 1) < p.rows) ld.issue_half_row<DN_VAL>(warp >> 1, warp & 1, wv);
  } else if (kind_or_lm == PH_DOWN) {
    if ((warp >> 1) < p.rows) ld.issue_half_row<INTER>(warp >> 1, warp & 1, wv);
  } else {  // an in-projection or the lm_head: K = 1024 rows
    if (warp * 4 < p.rows) ld.issue_rows4(warp * 4, wv);
  }
}

}  // namespace
}  // namespace mk
