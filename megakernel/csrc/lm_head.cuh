// The last phase: final norm, the lm_head (the tied embedding's VOCAB rows) and the greedy argmax
// (reference: ops.rms_norm, ops.lm_head, then torch.argmax: ties go to the lowest index).
//   every block   xs[b] = norm(hidden[b]) per batch row b; its vocabulary rows (matvec_rows); the
//                 logits (bf16-rounded, fp32 out) when asked; each warp's best (value, index) (at
//                 batch 1 of its rows; with a batch, warps 2b and 2b+1 see all of row b's), then the
//                 block's (thread b: row b), in the workspace's amax areas
//   the argmax    warp b reduces row b's G block results: at a launch's last step in the last block
//                 to finish (grid_sync.cuh last_block_done: no grid barrier), at the other steps of a
//                 many-token launch in every block after one more grid barrier (each block feeds the
//                 ids to its own next step). Block 0 (or the last block) writes them out: out_token,
//                 and the host-mapped stream as each step ends.
#pragma once
#include <type_traits>
#include "matvec.cuh"

namespace mk {
namespace {

__device__ __forceinline__ bool better(float v, int i, float bv, int bi) { return v > bv || (v == bv && i < bi); }

// ---- sampling (reference/sampling.py, the same function): key_i = logit_i * (1 / T) + g_i, the
// Gumbel noise g_i = -log(-log(u_i)) from a hash of (seed, position, row, i); the argmax of the keys
// is a draw from softmax(logit / T) ----
__device__ __forceinline__ uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  return h ^ (h >> 16);
}
constexpr float GUMBEL_MAX = 16.7f;  // above every g (u <= 1 - 2^-24: g <= ~16.64)
__device__ __forceinline__ float sampling_key(float logit, float inv_t, uint32_t row_key, int i) {
  const float u = ((float)(fmix32(row_key ^ (uint32_t)i) >> 9) + 0.5f) * (1.f / 8388608.f);  // 2^-23
  return __fadd_rn(__fmul_rn(logit, inv_t), -logf(-logf(u)));
}

// (MANY: a many-token launch's kernel, which writes no trace, stamps or logits: compiled out there)
template <int NB, bool MANY, class Loader>
__device__ __forceinline__ void lm_head(const Args& a, int step, uint8_t* sm, uint4 (&wv)[16], Loader& ld, const uint4 params) {
  float* xs = reinterpret_cast<float*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  int* misc = reinterpret_cast<int*>(sm + SM_MISC);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const int G = gridDim.x, blk = blockIdx.x;
  block_rmsnorm<NB>([&](int b) { return a.hidden + b * D; }, params, xs, red);
  if (!MANY && blk == 0) {
    if (a.trace)
      for (int i = t; i < NB * D; i += THREADS) {  // (a batch's: hi + lo, block_rmsnorm's planes)
        const int b = i / D, k = i % D;
        float v;
        if constexpr (NB == 1) v = xs[xs_slot(k)];
        else v = f16b(xs_planes(xs, b)[k]) + f16b(xs_planes(xs, b)[D + k]);
        a.trace[(size_t)b * (NLAYER + 2) * D + (size_t)(NLAYER + 1) * D + k] = v;
      }
    if (a.times && t == 0) a.times[NPHASES + 1] = globaltimer();
  }
  const int r0 = part(VOCAB, blk, G), n = part(VOCAB, blk + 1, G) - r0;
  // this thread's best of the rows it sees: at batch 1 lane 0 of each warp sees the warp's rows; with
  // a batch thread b * 64 + k sees rows k, k + 64, ... of batch row b, warps 2b, 2b+1 all of them
  float best = -INFINITY;
  int besti = 0x7fffffff;
  // the rows' pass: SAMPLE (a many-token launch at temperature > 0) keeps the best key, else the best
  // logit; two instantiations, so the argmax's pass carries no per-row test of the temperature
  const auto pass = [&](auto sample) {
    constexpr bool SAMPLE = decltype(sample)::value;
    const float inv_t = SAMPLE ? 1.f / a.temperature : 0.f;
    matvec_rows<NB>(ld, n, xs, wv, [&](int i, int b, float dot) {
      float v = bfr(dot);  // logits are bf16 in the model dtype
      if (!MANY && a.logits) a.logits[(size_t)b * VOCAB + r0 + i] = v;
      if constexpr (SAMPLE) {
        if (__fadd_rn(__fmul_rn(v, inv_t), GUMBEL_MAX) < best) return;  // its key cannot win: no noise needed
        const uint32_t row_key = fmix32(fmix32(fmix32(a.seed) ^ (uint32_t)row_pos(a, b, step)) ^ (uint32_t)b);
        v = sampling_key(v, inv_t, row_key, r0 + i);
      }
      if (better(v, r0 + i, best, besti)) { best = v; besti = r0 + i; }
    });
  };
  if (MANY && a.temperature > 0.f) {
    if constexpr (MANY) pass(std::true_type{});
  } else {
    pass(std::false_type{});
  }
  if constexpr (NB > 1) {
#pragma unroll
    for (int o = 16; o; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, best, o);
      const int oi = __shfl_xor_sync(0xffffffffu, besti, o);
      if (better(ov, oi, best, besti)) { best = ov; besti = oi; }
    }
  }
  constexpr int PARTS = NB == 1 ? NWARPS : 2;  // the warp results of a batch row
  if (lane == 0) {
    const int i = NB == 1 ? warp : (warp >> 1) * NWARPS + (warp & 1);
    red[i] = best;
    misc[i] = besti;
  }
  sync_warps();
  if (t < NB) {  // thread b: batch row b's best of the block
    float bv = red[t * NWARPS];
    int bi = misc[t * NWARPS];
    for (int w = 1; w < PARTS; ++w)
      if (better(red[t * NWARPS + w], misc[t * NWARPS + w], bv, bi)) { bv = red[t * NWARPS + w]; bi = misc[t * NWARPS + w]; }
    a.amax_val[t * MAX_GRID + blk] = bv;
    a.amax_idx[t * MAX_GRID + blk] = bi;
  }
}

// warp b: row b's argmax over the G blocks' results (every lane gets it)
__device__ __forceinline__ int row_argmax(const Args& a, int b) {
  const int lane = threadIdx.x & 31;
  float bv = -INFINITY;
  int bi = 0x7fffffff;
  for (int i = lane; i < (int)gridDim.x; i += 32) {
    const float v = __ldcg(a.amax_val + b * MAX_GRID + i);
    const int ix = __ldcg(a.amax_idx + b * MAX_GRID + i);
    if (better(v, ix, bv, bi)) { bv = v; bi = ix; }
  }
#pragma unroll
  for (int o = 16; o; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (better(ov, oi, bv, bi)) { bv = ov; bi = oi; }
  }
  return bi;
}

// row b's id of step `step` out: the device buffer, and the host-mapped stream (a relaxed store at
// system scope: nothing waits for it; the host polls the word until it is no longer -1)
__device__ __forceinline__ void put_token(const Args& a, int step, int b, int id) {
  a.out_token[(size_t)step * a.batch + b] = id;
  if (a.stream) asm volatile("st.relaxed.sys.global.b64 [%0], %1;" ::"l"(a.stream + (size_t)step * a.batch + b), "l"((int64_t)id) : "memory");
}

// the launch's last step (`barriers`: grid barriers the launch passed): the last block to finish
// reduces every row's argmax and writes it out
template <int NB>
__device__ __forceinline__ void argmax_last_block(const Args& a, uint8_t* sm, int step, int barriers) {
  const int warp = threadIdx.x >> 5;
  if (last_block_done(a.sync, sm, barriers) && warp < NB) {
    const int id = row_argmax(a, warp);
    if ((threadIdx.x & 31) == 0) {
      put_token(a, step, warp, id);
      if (a.times && warp == 0) a.times[NPHASES] = globaltimer();  // (null in a many-token launch)
    }
  }
}

// a many-token launch's other steps, after the grid barrier that follows the lm_head: every block
// reduces every row's argmax into its step_token slots (the next step's input ids; block 0 writes
// them out); lane 0 of warp b adds row b to the rows that have produced a stop id (misc[MISC_STOPPED])
// -> whether every row has. A row whose logits were all NaN has no argmax (the id stays 0x7fffffff):
// the launch ends after this step as if every row had stopped (that id is never fed to the next
// step's embedding; the host sees it, and a launch fed it refuses it: step_check.cuh)
template <int NB>
__device__ __forceinline__ bool argmax_every_block(const Args& a, uint8_t* sm, int step) {
  int* misc = reinterpret_cast<int*>(sm + SM_MISC);
  const int warp = threadIdx.x >> 5;
  if (warp < NB) {
    const int id = row_argmax(a, warp);
    if ((threadIdx.x & 31) == 0) {
      misc[MISC_TOKENS + warp] = id;
      if (blockIdx.x == 0) put_token(a, step, warp, id);
      bool stop = false;
      for (int i = 0; i < a.n_stop_ids; ++i) stop |= id == a.stop_ids[i];
      const unsigned rows = (unsigned)id >= (unsigned)VOCAB ? (1u << NB) - 1 : stop ? 1u << warp : 0u;
      if (rows) atomicOr(reinterpret_cast<unsigned*>(misc + MISC_STOPPED), rows);
    }
  }
  sync_warps();
  return misc[MISC_STOPPED] == (1 << NB) - 1;
}

}  // namespace
}  // namespace mk
