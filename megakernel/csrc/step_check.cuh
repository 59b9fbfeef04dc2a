// The device-side input check of a decode step: the token id (fed back from the previous step's
// argmax, never seen by the host) and the position, checked before the step writes anything.
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

struct StepInputs {
  int64_t token, fault;
};

// issued at the launch's start; the values are used once the first loads of the step are in flight
__device__ __forceinline__ StepInputs step_inputs(const Args& a) { return StepInputs{*a.token, __ldcg(a.fault)}; }

__device__ __forceinline__ bool step_refused(const Args& a, const StepInputs& in) {
  return in.fault != FAULT_NONE || in.token < 0 || in.token >= VOCAB || a.pos < 0 || a.pos >= a.max_seq;
}

// a refused step's only writes (block 0, thread 0)
__device__ __forceinline__ void record_refused_step(const Args& a, const StepInputs& in) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  a.out_token[0] = in.token;
  if (in.fault != FAULT_NONE) return;  // an earlier step's fault stays the one reported
  const bool bad_token = in.token < 0 || in.token >= VOCAB;
  a.fault[1] = bad_token ? in.token : a.pos;
  a.fault[2] = a.pos;
  a.fault[3] = 0;
  a.fault[0] = bad_token ? FAULT_TOKEN : FAULT_POSITION;
}

}  // namespace
}  // namespace mk
