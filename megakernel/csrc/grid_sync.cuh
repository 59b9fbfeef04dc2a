// The grid's synchronisation: the split grid barrier after every layer phase, the launch's epoch,
// and "the last block done" for the reductions that end a launch.
//
// Who owns what: thread BAR_THREAD (the last compute warp's lane 0) of every block does the
// barrier's atomics and polls; the other threads wait at the block barrier (bar.sync 1).
//
// The barrier counter SYNC_BAR only grows: barrier k of a launch waits until it reaches
// epoch + (k + 1) * G (a wrap-safe compare), where epoch is the count when the launch started.
// The last block of every launch stores the next launch's epoch (SYNC_EPOCH), so nothing is
// cleared per token and the host keeps no count: a launch depends on the sync words alone, and
// so does a replayed graph or a copy of the words.
#pragma once
#include "device_common.cuh"

namespace mk {
namespace {

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(__cvta_generic_to_global(p)) : "memory");
  return v;
}
__device__ __forceinline__ void red_add_release(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned atom_add_acq_rel(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(__cvta_generic_to_global(p)), "r"(v) : "memory");
  return old;
}

constexpr int BAR_THREAD = THREADS - 32;

// The launch's epoch: thread 0 of every block loads it at the start (the previous launch's last
// block wrote it; the kernel boundary makes it visible) and, once the block's setup has been
// issued, keeps it in the block's shared memory (SM_EPOCH), where the barrier's thread and the
// last block find it (the first reader waits for a block barrier of the first phase).
__device__ __forceinline__ unsigned load_epoch(const unsigned* sync) { return threadIdx.x == 0 ? __ldcg(sync + SYNC_EPOCH) : 0u; }
__device__ __forceinline__ void keep_epoch(unsigned epoch, uint8_t* sm) {
  if (threadIdx.x == 0) *reinterpret_cast<unsigned*>(sm + SM_EPOCH) = epoch;
}
__device__ __forceinline__ unsigned epoch_of(const uint8_t* sm) { return *reinterpret_cast<const unsigned*>(sm + SM_EPOCH); }

// The grid barrier is split: arrive (after the block's writes) ... wait. Between the two the warps
// issue their loads of the next phase (weights and inputs no block writes in this phase), so they
// stream while the block waits, and the release does not wait for them. The red.release /
// ld.acquire pair orders the block's writes (made visible to BAR_THREAD by bar.sync; release is
// cumulative) before everyone's reads after the barrier; every cross-block read is ld.global.cg.
__device__ __forceinline__ void barrier_arrive(unsigned* sync) {
  sync_warps();
  if (threadIdx.x == BAR_THREAD) red_add_release(sync + SYNC_BAR, 1u);
}
// k: the barrier's number in the launch; it opens at epoch + (k + 1) G arrivals
__device__ __forceinline__ void barrier_wait(const unsigned* sync, const uint8_t* sm, int k) {
  if (threadIdx.x == BAR_THREAD) {
    const unsigned target = epoch_of(sm) + (unsigned)(k + 1) * gridDim.x;
    while ((int)(ld_acquire(sync + SYNC_BAR) - target) < 0) {
    }
  }
  sync_warps();
}

// Every compute thread of every block, once, after the block's last write of the launch
// (`barriers`: how many grid barriers the launch passed). -> true in the block that arrives last
// (every thread of it), which may then read what all blocks wrote. That block also stores the next
// launch's epoch and clears the count for the next launch.
__device__ __forceinline__ bool last_block_done(unsigned* sync, uint8_t* sm, int barriers) {
  int* misc = reinterpret_cast<int*>(sm + SM_MISC);
  sync_warps();
  if (threadIdx.x == 0) {
    const bool last = atom_add_acq_rel(sync + SYNC_LAST, 1u) == gridDim.x - 1;
    if (last) {
      sync[SYNC_EPOCH] = epoch_of(sm) + (unsigned)barriers * gridDim.x;
      sync[SYNC_LAST] = 0u;
    }
    misc[MISC_LAST] = last;
  }
  sync_warps();
  return misc[MISC_LAST];
}

}  // namespace
}  // namespace mk
