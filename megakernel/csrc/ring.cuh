// Shared-memory weight ring (the MKF_RING schedule): the copy and mbarrier primitives.
//
// A block streams its weight slices through S slots of SLOT bytes, each guarded by an
// mbarrier. One warp fills a free slot with an asynchronous copy; every consumer waits on the
// slot's mbarrier (parity = how many times the slot has been filled, mod 2) before reading it.
//   sm_90: one lane issues a TMA bulk copy (cp.async.bulk ... complete_tx) per piece, after
//          arriving with the slot's bytes (mbarrier.arrive.expect_tx); the other 31 lanes arrive;
//   cp.async (below sm_90; on sm_90 the layers' chunks too, unless MKF_RING_TMA): the 32 lanes
//          issue 16-byte copies and each lane's cp.async.mbarrier.arrive.noinc arrives when its
//          copies have landed.
// Either way a fill is 32 arrivals (the barrier's count), plus the bytes for a bulk copy.
// A slot is refilled only after the compute warps have released it: one arrival on the slot's
// second ("empty") mbarrier, after the block barrier that follows every read of it.
#pragma once
#include <cstdint>

namespace mk {
namespace ring {

constexpr int SLOT = 16384;  // bytes per slot: 8 rows of K=1024, 4 of K=2048, 2 of K=3584

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

// spin until the barrier's phase with this parity has completed
__device__ __forceinline__ void bar_wait(uint32_t bar, unsigned parity) {
  uint32_t done = 0;
  while (!done) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
#else
    asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
#endif
  }
}

// one arrival (consumers releasing a slot to the producer)
__device__ __forceinline__ void bar_arrive(uint32_t bar) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" ::"r"(bar) : "memory");
}

// TMA (sm_90): the issuing lane arrives announcing `bytes` for the slot's barrier, then copies pieces
__device__ __forceinline__ void arrive_expect_bytes(uint32_t bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar, bool hint, uint64_t pol) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (hint)
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
                 ::"r"(dst), "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(bar), "l"(pol) : "memory");
  else
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(bar) : "memory");
#endif
}
constexpr bool HAS_TMA =
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    true;
#else
    false;
#endif

// an L2 policy that marks the lines a copy brings in as the first to evict: the weights are read
// once per token, so they should not push out what is read again soon (recurrent state, K/V cache)
__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}

// cp.async (sm_80+): one warp copies `bytes` (multiple of 16), 16 bytes per lane and step;
// hint: with the L2 policy `pol`
__device__ __forceinline__ void warp_copy(uint32_t dst, const void* src, uint32_t bytes, int lane, bool hint, uint64_t pol) {
  const char* s = static_cast<const char*>(src);
  if (hint) {
    for (uint32_t off = 16u * lane; off < bytes; off += 16u * 32u)
      asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;"
                   ::"r"(dst + off), "l"(__cvta_generic_to_global(s + off)), "l"(pol) : "memory");
  } else {
    for (uint32_t off = 16u * lane; off < bytes; off += 16u * 32u)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst + off), "l"(__cvta_generic_to_global(s + off)) : "memory");
  }
}
// each lane's arrival on the slot's barrier once all of its earlier cp.async copies have landed
__device__ __forceinline__ void lane_arrive_on_copies(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}

}  // namespace ring
}  // namespace mk
