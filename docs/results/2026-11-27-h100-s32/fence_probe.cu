// Session 32 (issue 20, a diagnostic beside the results, not part of any tier): what does a release fence
// (fence.acq_rel.gpu = MEMBAR.ALL.GPU) wait for while the SM streams weights as the megakernel's ring does?
// One block per SM (132 on an H100), two warps each:
//   warp 1, the streamer: copies 16 KB chunks of a 1 GiB buffer into a 12-slot ring in shared memory, at most 12
//           chunks in flight (as the ring during a stream-bound phase), by   none  (idle)
//                                                                            cpa   cp.async 16 B a lane (LDGSTS, the ring's way)
//                                                                            tma   one cp.async.bulk a chunk (the async proxy)
//   warp 0, the prober (lane 0): every ~3 µs one probe, timed in SM cycles (clock64):
//           st+fence  a store, then fence.acq_rel.gpu     (the arrival's wait, s31/s32's what-ifs)
//           fence     the fence alone (nothing of its own outstanding)
//           load      one ld.relaxed.gpu of a word no one writes (an L2 round trip)
//           st+red.rel   a store, then red.release.gpu (the megakernel's arrival)
//           st+rel+red   a store, then fence.release.gpu and red.relaxed.gpu
//           fence.cta    fence.acq_rel.cta alone
// Reading: fence long under cpa but short when idle -> the fence waits for the other warp's copies (or their data's
// way back); st+fence >> fence -> the store's acknowledgement is what it waits for; tma vs cpa: whether the async
// proxy's copies count. Usage: nvcc -O3 -arch=sm_90a -o fence_probe fence_probe.cu && ./fence_probe > out.txt
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

constexpr int SLOTS = 12, SLOT = 16384, PROBES = 400;
constexpr size_t BUF = 1ull << 30;

__device__ __forceinline__ uint32_t saddr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

__global__ void __launch_bounds__(64, 1) probe_kernel(const uint8_t* buf, int stream_mode, int probe_mode, unsigned* words,
                                                      long long* out) {
  extern __shared__ __align__(128) uint8_t sm[];
  uint64_t* bars = reinterpret_cast<uint64_t*>(sm);  // SLOTS mbarriers (tma)
  uint8_t* ring = sm + 1024;
  volatile int* done = reinterpret_cast<volatile int*>(sm + 512);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    *done = 0;
    for (int i = 0; i < SLOTS; ++i) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(saddr(bars + i)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (warp == 1) {  // the streamer
    if (stream_mode == 0) return;
    size_t off = ((size_t)blockIdx.x * (BUF / gridDim.x)) & ~(size_t)(SLOT - 1);  // (16 KB aligned)
    unsigned phase[SLOTS] = {};
    for (long n = 0;; ++n) {
      if (*done) break;
      const int s = (int)(n % SLOTS);
      const uint8_t* src = buf + (off % BUF);
      off += SLOT;
      const uint32_t dst = saddr(ring + s * SLOT);
      if (stream_mode == 1) {  // cp.async, at most SLOTS groups in flight
        asm volatile("cp.async.wait_group %0;" ::"n"(SLOTS - 1) : "memory");
        for (int o = 16 * lane; o < SLOT; o += 512)
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst + o), "l"(__cvta_generic_to_global(src + o)) : "memory");
        asm volatile("cp.async.commit_group;" ::: "memory");
      } else if (lane == 0) {  // TMA: wait for the slot's last copy, then one bulk copy
        const uint32_t bar = saddr(bars + s);
        if (n >= SLOTS) {
          uint32_t ok = 0;
          while (!ok)
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                         : "=r"(ok) : "r"(bar), "r"(phase[s]) : "memory");
          phase[s] ^= 1u;
        }
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(SLOT) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(dst), "l"(__cvta_generic_to_global(src)), "r"(SLOT), "r"(bar) : "memory");
      }
      __syncwarp();
    }
    if (stream_mode == 1) asm volatile("cp.async.wait_all;" ::: "memory");
    return;
  }
  if (lane != 0) return;
  unsigned* mine = words + blockIdx.x * 32;  // (its own 128-byte line)
  const unsigned* nobody = words + (gridDim.x + blockIdx.x) * 32;
  long long t_wait = clock64();
  while (clock64() - t_wait < 40000) {  // let the stream start
  }
  for (int i = 0; i < PROBES; ++i) {
    const long long t_idle = clock64();
    while (clock64() - t_idle < 5000) {  // ~3 µs between probes
    }
    unsigned v = 0;
    const long long t0 = clock64();
    if (probe_mode == 0) {
      asm volatile("st.global.cg.u32 [%0], %1;" ::"l"(__cvta_generic_to_global(mine)), "r"((unsigned)i) : "memory");
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
    } else if (probe_mode == 1) {
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
    } else if (probe_mode == 3) {  // the arrival as the megakernel does it (MEMBAR.ALL.CTA, MEMBAR.ALL.GPU, RED)
      asm volatile("st.global.cg.u32 [%0], %1;" ::"l"(__cvta_generic_to_global(mine)), "r"((unsigned)i) : "memory");
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(__cvta_generic_to_global(mine + 1)) : "memory");
    } else if (probe_mode == 4) {  // the same with a release fence (MEMBAR.ALL.GPU alone) and a relaxed red
      asm volatile("st.global.cg.u32 [%0], %1;" ::"l"(__cvta_generic_to_global(mine)), "r"((unsigned)i) : "memory");
      asm volatile("fence.release.gpu;\n\tred.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(__cvta_generic_to_global(mine + 1)) : "memory");
    } else if (probe_mode == 5) {  // a CTA-scope fence alone (MEMBAR.ALL.CTA)
      asm volatile("fence.acq_rel.cta;" ::: "memory");
    } else {
      asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(__cvta_generic_to_global(nobody)) : "memory");
    }
    if (v == 0xdeadbeefu) asm volatile("trap;");  // (a branch on the loaded value: the stamp waits for it)
    const long long t1 = clock64();
    out[(size_t)blockIdx.x * PROBES + i] = t1 - t0;
  }
  *done = 1;
}

int main() {
  int dev = 0, sms = 0, khz = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev);
  uint8_t* buf;
  unsigned* words;
  long long* out;
  cudaMalloc(&buf, BUF);
  cudaMemset(buf, 1, BUF);
  cudaMalloc(&words, 2 * sms * 128);
  cudaMemset(words, 0, 2 * sms * 128);
  cudaMalloc(&out, sizeof(long long) * sms * PROBES);
  const int smem = 1024 + SLOTS * SLOT;
  cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  printf("SMs %d, clock %d MHz (cycles / (MHz) = µs); %d probes a block, all blocks; percentiles in cycles\n", sms, khz / 1000, PROBES);
  printf("%-6s %-10s %8s %8s %8s %8s   (µs at the clock above: p50)\n", "stream", "probe", "p10", "p50", "p90", "p99");
  const char* sname[] = {"none", "cpa", "tma"};
  const char* pname[] = {"st+fence", "fence", "load", "st+red.rel", "st+rel+red", "fence.cta"};
  std::vector<long long> h((size_t)sms * PROBES);
  for (int rep = 0; rep < 2; ++rep)
    for (int s = 0; s < 2; ++s)  // (none, cp.async: the ring's way; TMA measured in call 5's first version)
      for (int p = 0; p < 6; ++p) {
        probe_kernel<<<sms, 64, smem>>>(buf, s, p, words, out);
        cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
          printf("error %s\n", cudaGetErrorString(e));
          return 1;
        }
        cudaMemcpy(h.data(), out, h.size() * sizeof(long long), cudaMemcpyDeviceToHost);
        std::sort(h.begin(), h.end());
        auto q = [&](double f) { return h[(size_t)(f * (h.size() - 1))]; };
        printf("%-6s %-10s %8lld %8lld %8lld %8lld   %.3f\n", sname[s], pname[p], q(0.1), q(0.5), q(0.9), q(0.99),
               q(0.5) / (khz / 1000.0));
      }
  return 0;
}
