// The grid's synchronisation: the split grid barrier after every layer phase, the launch's epoch,
// and "the last block done" for the reductions that end a launch.
//
// Who owns what: thread BAR_THREAD (the last compute warp's lane 0) of every block does the
// barrier's arrival (bar.sync 1 of the compute warps, then one red.release). Who waits: in the
// ring schedule, BAR_POLLERS poller warps (after the producer; lane 0 of each) poll the counter
// with ld.acquire, from staggered starts, so that several polls are in flight across a round trip;
// the first to see the barrier open arrives on the block's OPEN mbarrier, on which every compute
// thread waits. In the register schedule BAR_THREAD polls alone and the others wait at bar.sync 1.
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

// mbarriers in shared memory (the weight ring's slots, the barrier pollers' signals)
namespace ring {

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void bar_init(uint32_t bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// makes the initialised barriers visible to the async proxy (TMA) before the first copy
__device__ __forceinline__ void fence_bar_init() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}
// whether the barrier's phase with this parity has completed (sm_90: after waiting a while for it)
__device__ __forceinline__ bool bar_try(uint32_t bar, unsigned parity) {
  uint32_t done;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
               : "=r"(done) : "r"(bar), "r"(parity) : "memory");
#else
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
               : "=r"(done) : "r"(bar), "r"(parity) : "memory");
#endif
  return done;
}
// spin until the barrier's phase with this parity has completed
__device__ __forceinline__ void bar_wait(uint32_t bar, unsigned parity) {
  while (!bar_try(bar, parity)) {
  }
}
__device__ __forceinline__ void bar_arrive(uint32_t bar) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" ::"r"(bar) : "memory");
}

}  // namespace ring

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
// the count at which barrier k of the launch opens
__device__ __forceinline__ unsigned barrier_target(const uint8_t* sm, int k) { return epoch_of(sm) + (unsigned)(k + 1) * gridDim.x; }

// The grid barrier is split: arrive (after the block's writes) ... wait. Between the two the warps
// issue their loads of the next phase (weights and inputs no block writes in this phase), so they
// stream while the block waits, and the release does not wait for them. The red.release / ld.acquire
// pair orders the block's writes (made visible to BAR_THREAD by bar.sync; release is cumulative)
// before the acquiring thread's reads, and that thread hands its acquire on to the block (the ring
// schedule: the poller's arrival on OPEN releases, each compute thread's wait on it acquires; the
// register schedule: bar.sync); every cross-block read is ld.global.cg.
// k: the barrier's number in the launch; it opens at epoch + (k + 1) G arrivals. RING: tell the block's
// pollers (the ring schedule; not the stream-only one, which has none)
template <bool RING>
__device__ __forceinline__ void barrier_arrive(unsigned* sync, uint8_t* sm, int k) {
  sync_warps();
  if (threadIdx.x == BAR_THREAD) {
    red_add_release(sync + SYNC_BAR, 1u);
    if constexpr (RING) {  // the barrier's number and target, then the pollers' signal (its release hands them on)
      *reinterpret_cast<volatile unsigned long long*>(sm + SM_POLL_BARRIER) = ((unsigned long long)(k + 1) << 32) | barrier_target(sm, k);
      ring::bar_arrive(ring::smem_addr(sm + SM_POLL_ARRIVED));
    }
  }
}
template <bool RING>
__device__ __forceinline__ void barrier_wait(const unsigned* sync, const uint8_t* sm, int k) {
  if constexpr (RING) {
    ring::bar_wait(ring::smem_addr(sm + SM_POLL_OPEN), (unsigned)k & 1u);  // (OPEN completes once a barrier, in order)
  } else {
    if (threadIdx.x == BAR_THREAD) {
      const unsigned target = barrier_target(sm, k);
      while ((int)(ld_acquire(sync + SYNC_BAR) - target) < 0) {
      }
    }
    sync_warps();
  }
}

// The ring schedule's poller warps, their whole launch (lane 0 of each; set up by stream_start; none
// in the stream-only schedule, where nobody waits). Poller j waits for its block's arrival at a
// barrier, sleeps j * POLL_STAGGER_NS, then polls until the barrier opens or another poller has
// opened it. A poller can fall behind: its in-flight poll may outlast the barrier's opening and
// the next phase, and its wait on ARRIVED by parity may then cover two of ARRIVED's completions.
// So it reads the barrier's number and target as one word (the latest barrier's, never half of
// two), the election takes the highest number (atomicMax: a poller behind never opens an old
// barrier a second time, which would open the next one early), and the end flag is read while
// it waits (so two completions the last of which is the end cannot strand it). The first to
// raise the number has seen the target reached by its own acquire, and arrives on OPEN: OPEN
// completes once a barrier, in order, for the compute threads waiting on it by parity.
// What a poller learns from the wait it learns from the barrier word read after the wait's branch,
// never from the end flag: nvcc merges a flag read inside the wait loop with one after it into one
// load issued beside try_wait, before its result is known, and that load can miss the end flag
// written before the arrival (s31 call 5: every poller of a refused launch read 0 and polled a word
// no barrier had written). A word read too early names a barrier already opened (numbers are raised
// once each, in order: every number older than the latest is open; the initial word's 0 too), so
// `opened >= n`, nothing happens and the iteration repeats. (tests/test_megakernel.py checks the PTX:
// no memory access between any mbarrier wait and its branch.)
constexpr unsigned POLL_STAGGER_NS = 250;  // about a third of a poll's round trip under the grid's polls
constexpr unsigned POLL_END_MARK = 0xffffffffu;  // the barrier word's number once the launch ended
__device__ void poll_barriers(const unsigned* sync, uint8_t* sm) {
  if ((threadIdx.x & 31) != 0) return;
  const unsigned j = (threadIdx.x - THREADS - 32) >> 5;
  const volatile unsigned long long* barrier_w = reinterpret_cast<const volatile unsigned long long*>(sm + SM_POLL_BARRIER);
  unsigned* opened = reinterpret_cast<unsigned*>(sm + SM_POLL_OPENED);
  const volatile int* ended = reinterpret_cast<const volatile int*>(sm + SM_POLL_END);
  const uint32_t arrived = ring::smem_addr(sm + SM_POLL_ARRIVED), open = ring::smem_addr(sm + SM_POLL_OPEN);
  // ARRIVED's phase m completes at barrier m + 1's arrival: after handling barrier n, wait for phase n
  // (parity n & 1), the next barrier's, whatever was waited for before (a count of the poller's own
  // waits could fall out of step with the barrier it read, and then wait for a phase already past)
  for (unsigned k = 0;;) {
    while (!ring::bar_try(arrived, k & 1u))
      if (*ended) return;  // (a read that misses it only waits one more round)
    const unsigned long long w = *barrier_w;
    const unsigned n = (unsigned)(w >> 32), target = (unsigned)w;
    if (n == POLL_END_MARK) return;
    if (j) __nanosleep(j * POLL_STAGGER_NS);
    while (*reinterpret_cast<volatile unsigned*>(opened) < n && (int)(ld_acquire(sync + SYNC_BAR) - target) < 0) {
    }
    if (atomicMax(opened, n) < n) ring::bar_arrive(open);
    k = n;
  }
}
// every compute warp's launch ends through here (the ring schedule): the pollers stop
__device__ __forceinline__ void end_polls(uint8_t* sm) {
  if (threadIdx.x == BAR_THREAD) {
    *reinterpret_cast<volatile unsigned long long*>(sm + SM_POLL_BARRIER) = (unsigned long long)POLL_END_MARK << 32;
    *reinterpret_cast<volatile int*>(sm + SM_POLL_END) = 1;
    ring::bar_arrive(ring::smem_addr(sm + SM_POLL_ARRIVED));
  }
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
