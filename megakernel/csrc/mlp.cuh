// The MLP phases of every layer (reference: ops.swiglu between two projections).
//   gate/up  every block: xs[b] = norm(hidden[b]) per batch row b (a batch: unscaled, block_rmsnorm UNSCALED); its
//            units u of act[b][u] = silu(gate[u]) * up[u] (in fp32, rounded once to bf16: down's input)
//   down     every block: its rows of hidden[b] += down act[b] (batch 1: act copied into shared
//            memory first; a batch: read by the tensor-core tiles from global); the result is layer
//            l's output (also into the trace when asked)
// Who owns what inside a block: matvec.cuh (matvec_gate_up, matvec_row_parts).
#pragma once
#include "matvec.cuh"

namespace mk {
namespace {

template <int NB, class Loader>
__device__ __forceinline__ void mlp_gate_up(const Args& a, uint8_t* sm, uint4 (&wv)[16], Loader& ld, const uint4 params) {
  float* xs = reinterpret_cast<float*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  block_rmsnorm<NB, (NB > 1)>([&](int b) { return a.hidden + b * D; }, params, xs, red);  // (a batch: unscaled)
  const int u0 = part(INTER, blockIdx.x, gridDim.x), u1 = part(INTER, blockIdx.x + 1, gridDim.x);
  matvec_gate_up<NB>(ld, u0, u1 - u0, xs, red, a.act, wv);
}

template <int NB, class Loader>
__device__ __forceinline__ void mlp_down(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16], Loader& ld) {
  if constexpr (NB > 1) {  // a batch: each warp reads its piece of act from global memory
    float* trace_row = a.trace ? a.trace + (size_t)(1 + l) * D : nullptr;
    matvec_row_parts<INTER, NB>(ld, part(D, blockIdx.x, gridDim.x), part(D, blockIdx.x + 1, gridDim.x), a.act, a.hidden,
                                      reinterpret_cast<float*>(sm + SM_RED), trace_row, (NLAYER + 2) * D, wv);
  } else {
    uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
    load_vec(a.act, xs, INTER);
    float* trace_row = a.trace ? a.trace + (size_t)(1 + l) * D : nullptr;
    matvec_row_parts<INTER, 1>(ld, part(D, blockIdx.x, gridDim.x), part(D, blockIdx.x + 1, gridDim.x), xs, a.hidden,
                               reinterpret_cast<float*>(sm + SM_RED), trace_row, (NLAYER + 2) * D, wv);
  }
}

}  // namespace
}  // namespace mk
