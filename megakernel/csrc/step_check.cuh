// The device-side input check of a decode launch: the batch's token ids (fed back from the previous
// launch's argmax, never seen by the host) and positions, checked before the launch writes anything
// (a many-token launch's later steps take their ids from its own argmax).
//
// Who owns what: every thread of every block loads the id and the state's fault word at the
// launch's start (step_inputs) and decides alone, with no barrier, whether the step runs: all
// blocks read the same words, so all decide alike (block 0 may write the fault word during the
// launch, but only when the id it read is bad, which every other block reads too). A refused step
// (an id outside [0, VOCAB), a position outside the caches, or a fault already recorded by an
// earlier step of the state) writes nothing but, in block 0 thread 0, the fault words (the first
// fault only) and out_token = the input id; no block arrives at a grid barrier or touches the sync
// words, so the next launch starts from the same epoch. The host reads the fault words where it
// syncs anyway (Tier.check), rolls the state back and clears them.
#pragma once
#include "megakernel.cuh"

namespace mk {
namespace {

// the batch's NB input ids and the fault word
template <int NB>
struct StepInputs {
  int64_t token[NB], fault;
};

// issued at the launch's start; the values are used once the first loads of the step are in flight
template <int NB>
__device__ __forceinline__ StepInputs<NB> step_inputs(const Args& a) {
  StepInputs<NB> in;
#pragma unroll
  for (int b = 0; b < NB; ++b) in.token[b] = a.token[b];
  in.fault = __ldcg(a.fault);
  return in;
}

__device__ __forceinline__ bool bad_token(int64_t token) { return token < 0 || token >= VOCAB; }
// (every step of the launch: positions pos[b] .. pos[b] + steps - 1 inside the caches)
__device__ __forceinline__ bool bad_position(const Args& a, int b) { return a.pos[b] < 0 || a.pos[b] > a.max_seq - a.steps; }

template <int NB>
__device__ __forceinline__ bool step_refused(const Args& a, const StepInputs<NB>& in) {
  bool bad = in.fault != FAULT_NONE;
#pragma unroll
  for (int b = 0; b < NB; ++b) bad |= bad_token(in.token[b]) || bad_position(a, b);
  return bad;
}

// a refused step's only writes (block 0, thread 0): every row's output is its input id; the fault
// words name the first row (lowest b) found bad, a bad id before a bad position
template <int NB>
__device__ __forceinline__ void record_refused_step(const Args& a, const StepInputs<NB>& in) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
#pragma unroll
  for (int b = 0; b < NB; ++b) a.out_token[b] = in.token[b];
  if (in.fault != FAULT_NONE) return;  // an earlier step's fault stays the one reported
  int row = -1;
  bool token_fault = false;
#pragma unroll
  for (int b = NB - 1; b >= 0; --b) {
    if (bad_token(in.token[b])) { row = b; token_fault = true; }
  }
  if (row < 0)
#pragma unroll
    for (int b = NB - 1; b >= 0; --b)
      if (bad_position(a, b)) row = b;
  int64_t token = 0;
#pragma unroll
  for (int b = 0; b < NB; ++b)
    if (b == row) token = in.token[b];
  const int pos = a.pos[row];
  a.fault[1] = token_fault ? token : pos;
  a.fault[2] = pos;
  a.fault[3] = row;
  a.fault[0] = token_fault ? FAULT_TOKEN : FAULT_POSITION;
}

}  // namespace
}  // namespace mk
