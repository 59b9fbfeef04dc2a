// The last phase: final norm, the lm_head (the tied embedding's VOCAB rows) and the greedy argmax
// (reference: ops.rms_norm, ops.lm_head, then torch.argmax: ties go to the lowest index).
//   every block   xs = norm(hidden); its vocabulary rows (matvec_rows); the logits (bf16-rounded,
//                 fp32 out) when asked; each warp's best (value, index), then the block's, in the
//                 workspace's amax areas
//   the last block to finish (grid_sync.cuh last_block_done): warp 0 reduces the G block results
//                 and writes the next token
#pragma once
#include "matvec.cuh"

namespace mk {
namespace {

__device__ __forceinline__ bool better(float v, int i, float bv, int bi) { return v > bv || (v == bv && i < bi); }

template <class Loader>
__device__ __forceinline__ void lm_head(const Args& a, uint8_t* sm, uint4 (&wv)[16], Loader& ld, const uint4 params) {
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
  const int r0 = part(VOCAB, b, G);
  float best = -INFINITY;
  int besti = 0x7fffffff;
  matvec_rows(ld, part(VOCAB, b + 1, G) - r0, xs, wv, [&](int i, float dot) {
    const float v = bfr(dot);  // logits are bf16 in the model dtype
    if (a.logits) a.logits[r0 + i] = v;
    if (better(v, r0 + i, best, besti)) { best = v; besti = r0 + i; }
  });
  if (lane == 0) { red[warp] = best; misc[warp] = besti; }
  sync_warps();
  if (t == 0) {
    float bv = red[0];
    int bi = misc[0];
    for (int w = 1; w < NWARPS; ++w)
      if (better(red[w], misc[w], bv, bi)) { bv = red[w]; bi = misc[w]; }
    a.amax_val[b] = bv;
    a.amax_idx[b] = bi;
  }
  if (last_block_done(a.sync, sm, NBARRIERS) && warp == 0) {  // the G block results
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
      if (a.times) a.times[NPHASES] = globaltimer();
    }
  }
}

}  // namespace
}  // namespace mk
