// Session 30 (issue 21), an experiment: the prefill's N = hidden GEMMs (out-projections and downs: y [T, 1024] =
// x [T, K] · Wᵀ, K = 2048 or 3584) computed transposed, yᵀ = W · xᵀ, so that the weights' 1,024 rows are wgmma's M
// side (64 a consumer warp group, no waste) and the T tokens its N side (any multiple of 8: 520 = 5 x 104), with
// K split over gridDim.z and the split's partial tiles added inside the kernel by the last block of a tile to
// finish (a fixed order: the sum is the same bits whichever block is last). cuBLAS at 520 rows runs these shapes
// at 64 x 88 tiles (108 blocks, ~350 TFLOP/s): 520 = 4 x 128 + 8 wastes its M tiles, and 40 tiles of 128 x 128
// leave 92 SMs idle.
//
//   block: warp group 0 the producer (its thread 0 issues each stage's two TMA loads: W's 64 C rows, x's BN rows,
//          64 k each, 128-byte swizzle), warp groups 1..C the consumers; consumer c owns weight rows (= output
//          columns) [m0 + 64 c, +64) and the tile's BN tokens (output rows), one wgmma group in flight
//   K:     64-deep steps; block z of S takes steps [z ks / S ...) (the first ks % S blocks one more)
//   epilogue (S > 1): every block stores its fp32 tile in its threads' own order (float4s, coalesced) into the
//          workspace, then counts itself on the tile's counter; the last one in adds the S tiles in z order (its
//          own from registers) and resets the counter for the next launch; the sum is staged transposed in
//          shared memory and stored as bf16 rows of y (16-byte pieces along the 1,024 columns).
// grid: (ceil(T / BN), N_out / (64 C), S); tokens past T are TMA's zero fill and are not stored.
#include <cuda.h>
#include <cuda_bf16.h>
#ifndef GEMM_T_NO_TORCH  // (nvcc alone: the kernels only, for a compile check)
#include <c10/cuda/CUDAStream.h>
#include <torch/extension.h>
#endif

namespace {

#include "wgmma_shapes.inc"

constexpr int BK = 64;
constexpr int MAX_SPLIT = 4;

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  }
}
__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
          smem_u32(dst)),
      "l"(map), "r"(smem_u32(bar)), "r"(x), "r"(y)
      : "memory");
}
// a shared-memory matrix descriptor: K-major rows of 128 bytes, 128-byte swizzle, 8-row groups 1,024 bytes apart
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (1ull << 16) | (static_cast<uint64_t>(1024 >> 4) << 32) |
         (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
template <int R>
__device__ __forceinline__ void fence_acc(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

__device__ __forceinline__ unsigned atom_add_acq_rel(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ float4 ld_cluster_f4(uint32_t local_addr, uint32_t rank) {
  float4 v;
  asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %4, %5;\nld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [ra];\n}\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(local_addr), "r"(rank)
               : "memory");
  return v;
}

template <int C, int BN, int STAGES>
struct Tile {
  static constexpr int A_BYTES = 64 * C * BK * 2, B_BYTES = BN * BK * 2;
  static constexpr int STAGE = A_BYTES + B_BYTES;
  static constexpr int SMEM = STAGES * STAGE + 2 * STAGES * 8 + 16 + 1024;  // (+ the flag, the 1,024-byte alignment)
  static constexpr int THREADS = 128 * (C + 1);
  static constexpr int R = BN / 2;  // a consumer thread's accumulators
  static constexpr int ROW = 64 * C * 2 + 16;  // a staged output row (one token's 64 C columns, bf16) + padding
  static_assert(BN % 8 == 0 && BN <= 256 && STAGE % 1024 == 0 && R % 4 == 0, "wgmma's N; swizzled tiles 1,024-byte aligned");
  static_assert(BN * ROW <= STAGES * STAGE, "the staged output tile fits the stage buffers");
};

template <int C, int BN, int STAGES, int CL, bool TILED>
__global__ void __launch_bounds__(128 * (C + 1), C == 1 ? 2 : 1)
    gemm_t_kernel(const __grid_constant__ CUtensorMap tw, const __grid_constant__ CUtensorMap tx, __nv_bfloat16* __restrict__ y,
                  float4* __restrict__ ws, unsigned* __restrict__ counters, int T, int N_out, int k_steps) {
  using Tl = Tile<C, BN, STAGES>;
  constexpr int R = Tl::R;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * Tl::STAGE);
  uint64_t* empty = full + STAGES;
  int* flag = reinterpret_cast<int*>(empty + STAGES);
  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  const int m0 = blockIdx.y * 64 * C, n0 = blockIdx.x * BN, z = blockIdx.z, S = gridDim.z;
  const int base = k_steps / S, rem = k_steps % S;
  const int kn = base + (z < rem ? 1 : 0), kbeg = z * base + (z < rem ? z : rem);
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], C);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (wg == 0) {  // the producer
    if constexpr (C > 1) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (t == 0) {
      for (int kt = 0; kt < kn; ++kt) {
        const int s = kt % STAGES;
        if (kt >= STAGES) mbar_wait(&empty[s], ((kt / STAGES) - 1) & 1);
        uint8_t* st = smem + s * Tl::STAGE;
        const int k = (kbeg + kt) * BK;
        mbar_expect_tx(&full[s], Tl::STAGE);
        if constexpr (TILED) tma_load(st, &tw, &full[s], 0, (kbeg + kt) * N_out + m0);  // (W as [K / 64][N_out][64])
        else tma_load(st, &tw, &full[s], k, m0);
        tma_load(st + Tl::A_BYTES, &tx, &full[s], k, n0);
      }
    }
    __syncwarp();
    if constexpr (CL > 1) cluster_sync(), cluster_sync();  // (the consumers' two: staged, then read)
    return;
  }
  if constexpr (C == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  if constexpr (C == 3) asm volatile("setmaxnreg.inc.sync.aligned.u32 152;");
  const int c = wg - 1;
  float acc[R];
#pragma unroll
  for (int i = 0; i < R; ++i) acc[i] = 0.f;
  for (int kt = 0; kt < kn; ++kt) {
    const int s = kt % STAGES;
    mbar_wait(&full[s], (kt / STAGES) & 1);
    const uint32_t st = smem_u32(smem + s * Tl::STAGE);
    const uint64_t da = smem_desc(st + c * 64 * BK * 2), db = smem_desc(st + Tl::A_BYTES);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) Wgmma<BN>::mma(acc, da + 2 * kk, db + 2 * kk, 1);
    wgmma_commit();
    fence_acc(acc);
    wgmma_wait<1>();
    if (kt > 0 && t == 0) mbar_arrive(&empty[(kt - 1) % STAGES]);
  }
  wgmma_wait<0>();
  fence_acc(acc);
  const int ct = c * 128 + t;  // the thread among the consumers
  if constexpr (CL > 1) {  // the split's CL blocks a cluster: each stages its tile, each adds 1 / CL of the tokens' rows
    asm volatile("bar.sync 1, %0;" ::"r"(128 * C) : "memory");  // (every consumer's wgmmas read their stages)
    constexpr int ROW32 = 64 * C * 4 + 16, CH4 = 64 * C / 4;
    static_assert(BN * ROW32 <= STAGES * Tl::STAGE, "the staged fp32 tile fits the stage buffers");
    const int warp = t / 32, lane = t % 32;
#pragma unroll
    for (int j = 0; j < R; ++j) {
      const int m = c * 64 + warp * 16 + lane / 4 + 8 * ((j / 2) % 2), n = 8 * (j / 4) + 2 * (lane % 4) + j % 2;
      *reinterpret_cast<float*>(smem + n * ROW32 + m * 4) = acc[j];
    }
    cluster_sync();
    const int lo = z * BN / CL, hi = (z + 1) * BN / CL, chunks = (hi - lo) * CH4;
    constexpr int U = 5;
    const uint32_t base = smem_u32(smem);
    for (int i0 = ct; i0 < chunks; i0 += U * 128 * C) {
      float4 v[U][CL];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = i0 + u * 128 * C;
        if (i < chunks) {
#pragma unroll
          for (int zz = 0; zz < CL; ++zz) v[u][zz] = ld_cluster_f4(base + (lo + i / CH4) * ROW32 + (i % CH4) * 16, zz);
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = i0 + u * 128 * C, n = n0 + lo + i / CH4;
        if (i < chunks && n < T) {
          float4 a = v[u][0];
#pragma unroll
          for (int zz = 1; zz < CL; ++zz) a.x += v[u][zz].x, a.y += v[u][zz].y, a.z += v[u][zz].z, a.w += v[u][zz].w;
          const __nv_bfloat162 p0 = __floats2bfloat162_rn(a.x, a.y), p1 = __floats2bfloat162_rn(a.z, a.w);
          uint2 packed;
          packed.x = *reinterpret_cast<const uint32_t*>(&p0);
          packed.y = *reinterpret_cast<const uint32_t*>(&p1);
          *reinterpret_cast<uint2*>(y + (size_t)n * N_out + m0 + (i % CH4) * 4) = packed;
        }
      }
    }
    cluster_sync();  // (no block leaves while the others read its tile)
    return;
  }
  if (S > 1) {  // the split's partial tiles: [tile][z][R / 4][consumer thread] float4s
    const int tile = blockIdx.y * gridDim.x + blockIdx.x;
    float4* mine = ws + (size_t)(tile * S + z) * (R / 4) * (128 * C) + ct;
#pragma unroll
    for (int j = 0; j < R; j += 4) __stcg(mine + (j / 4) * (128 * C), make_float4(acc[j], acc[j + 1], acc[j + 2], acc[j + 3]));
    asm volatile("bar.sync 1, %0;" ::"r"(128 * C) : "memory");
    if (ct == 0) *flag = atom_add_acq_rel(counters + tile, 1u) == (unsigned)(S - 1);  // (release: cumulative over bar.sync)
    asm volatile("bar.sync 1, %0;" ::"r"(128 * C) : "memory");
    if (!*flag) return;
    // ((p_0 + p_1) + p_2) ...: this block's own p_z from its registers, each other split's loads issued together
    float sum[R];
#pragma unroll
    for (int i = 0; i < R; ++i) sum[i] = 0.f;
    for (int zz = 0; zz < S; ++zz) {
      if (zz == z) {
#pragma unroll
        for (int i = 0; i < R; ++i) sum[i] += acc[i];
      } else {
        const float4* p = ws + (size_t)(tile * S + zz) * (R / 4) * (128 * C) + ct;
        float4 v[R / 4];
#pragma unroll
        for (int j = 0; j < R / 4; ++j) v[j] = __ldcg(p + j * (128 * C));
#pragma unroll
        for (int j = 0; j < R / 4; ++j) sum[4 * j] += v[j].x, sum[4 * j + 1] += v[j].y, sum[4 * j + 2] += v[j].z, sum[4 * j + 3] += v[j].w;
      }
    }
#pragma unroll
    for (int i = 0; i < R; ++i) acc[i] = sum[i];
    if (ct == 0) counters[tile] = 0u;  // (the next launch's count; the kernel boundary orders it)
  }
  // staged transposed: accumulator j is weight row (output column) 16 warp + lane / 4 + 8 ((j / 2) % 2) of the
  // consumer's 64, token (output row) 8 (j / 4) + 2 (lane % 4) + j % 2
  asm volatile("bar.sync 1, %0;" ::"r"(128 * C) : "memory");  // (every consumer's wgmmas read their stages)
  const int warp = t / 32, lane = t % 32;
#pragma unroll
  for (int j = 0; j < R; ++j) {
    const int m = c * 64 + warp * 16 + lane / 4 + 8 * ((j / 2) % 2), n = 8 * (j / 4) + 2 * (lane % 4) + j % 2;
    *reinterpret_cast<__nv_bfloat16*>(smem + n * Tl::ROW + m * 2) = __float2bfloat16_rn(acc[j]);
  }
  asm volatile("bar.sync 1, %0;" ::"r"(128 * C) : "memory");
  constexpr int CH = 64 * C * 2 / 16;  // 16-byte pieces of a staged row
  for (int i = ct; i < BN * CH; i += 128 * C) {
    const int r = i / CH, ch = i % CH, n = n0 + r;
    if (n < T)
      *reinterpret_cast<uint4*>(reinterpret_cast<uint8_t*>(y + (size_t)n * N_out + m0) + ch * 16) =
          *reinterpret_cast<const uint4*>(smem + r * Tl::ROW + ch * 16);
  }
}

#ifndef GEMM_T_NO_TORCH
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                                 const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

CUtensorMap tensor_map(const torch::Tensor& x, int box_rows) {  // x [rows, K] bf16, boxes of [box_rows][64]
  static EncodeTiled encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    TORCH_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) ==
                        cudaSuccess && fn,
                "cuTensorMapEncodeTiled not found");
    return reinterpret_cast<EncodeTiled>(fn);
  }();
  CUtensorMap m;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(x.size(1)), static_cast<cuuint64_t>(x.size(0))};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(x.stride(0) * 2)};
  const cuuint32_t box[2] = {BK, static_cast<cuuint32_t>(box_rows)}, one[2] = {1, 1};
  const CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, x.data_ptr(), dims, strides, box, one,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  TORCH_CHECK(r == CUDA_SUCCESS, "cuTensorMapEncodeTiled failed: ", static_cast<int>(r));
  return m;
}

template <int C, int BN, int STAGES, int CL, bool TILED>
void launch(const torch::Tensor& x, const torch::Tensor& w, torch::Tensor& y, torch::Tensor& ws, torch::Tensor& counters,
            int split) {
  using Tl = Tile<C, BN, STAGES>;
  const int T = x.size(0), K = x.size(1), N_out = TILED ? w.size(0) / (K / BK) : w.size(0);
  TORCH_CHECK(split >= 1 && split <= MAX_SPLIT && (CL == 0 || CL == split) && K % BK == 0 && N_out % (64 * C) == 0 &&
                  (TILED ? w.size(1) == BK && w.size(0) == (int64_t)N_out * (K / BK) : w.size(1) == K), "shapes");
  const int tiles = (T + BN - 1) / BN * (N_out / (64 * C));
  TORCH_CHECK(split == 1 || CL > 1 || (ws.numel() * 4 >= (int64_t)tiles * split * 64 * C * BN && counters.numel() >= tiles),
              "workspace");
  const CUtensorMap tw = tensor_map(w, 64 * C), tx = tensor_map(x, BN);
  auto kernel = gemm_t_kernel<C, BN, STAGES, CL, TILED>;
  static bool attr = false;
  if (!attr) {
    TORCH_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tl::SMEM) == cudaSuccess, "smem");
    if (CL > 1)
      TORCH_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess, "cluster");
    attr = true;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((T + BN - 1) / BN, N_out / (64 * C), split);
  cfg.blockDim = dim3(Tl::THREADS);
  cfg.dynamicSmemBytes = Tl::SMEM;
  cfg.stream = c10::cuda::getCurrentCUDAStream();
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = 1;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = CL > 1 ? CL : 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, tw, tx, reinterpret_cast<__nv_bfloat16*>(y.data_ptr()),
                                           reinterpret_cast<float4*>(ws.data_ptr()),
                                           reinterpret_cast<unsigned*>(counters.data_ptr()), T, N_out, K / BK);
  TORCH_CHECK(e == cudaSuccess, "launch failed: ", cudaGetErrorString(e));
}

// way: "C-BN" as instantiated below; split: K's slices
void gemm_t(const torch::Tensor& x, const torch::Tensor& w, torch::Tensor y, torch::Tensor ws, torch::Tensor counters,
            const std::string& way, int64_t split) {
#define WAY(C, BN, S, TL, NAME) \
  if (way == NAME) return launch<C, BN, S, 0, TL>(x, w, y, ws, counters, split);
#define WAY_CL(C, BN, S, CL, TL, NAME) \
  if (way == NAME && split == CL) return launch<C, BN, S, CL, TL>(x, w, y, ws, counters, split);
  WAY(2, 104, 4, false, "2-104")
  WAY(2, 104, 7, false, "2-104-7")
  WAY(2, 104, 4, true, "2-104p")
  WAY(2, 104, 7, true, "2-104-7p")
  WAY(1, 104, 8, true, "1-104-8p")
  WAY_CL(2, 104, 4, 2, false, "2-104c")
  WAY_CL(2, 104, 7, 2, false, "2-104-7c")
  WAY_CL(2, 104, 4, 2, true, "2-104pc")
  WAY_CL(2, 104, 7, 2, true, "2-104-7pc")
  WAY_CL(1, 104, 4, 2, true, "1-104pc")
  WAY_CL(1, 104, 4, 3, true, "1-104pc")
  WAY_CL(2, 104, 4, 3, true, "2-104pc")
#undef WAY
#undef WAY_CL
  TORCH_CHECK(false, "no way ", way);
}

#else
template __global__ void gemm_t_kernel<2, 104, 4, 0, false>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, __nv_bfloat16*, float4*, unsigned*, int, int, int);
template __global__ void gemm_t_kernel<2, 104, 7, 0, false>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, __nv_bfloat16*, float4*, unsigned*, int, int, int);
template __global__ void gemm_t_kernel<2, 104, 4, 0, true>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, __nv_bfloat16*, float4*, unsigned*, int, int, int);
template __global__ void gemm_t_kernel<2, 104, 7, 0, true>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, __nv_bfloat16*, float4*, unsigned*, int, int, int);
template __global__ void gemm_t_kernel<1, 104, 8, 0, true>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, __nv_bfloat16*, float4*, unsigned*, int, int, int);
template __global__ void gemm_t_kernel<2, 104, 4, 2, false>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, __nv_bfloat16*, float4*, unsigned*, int, int, int);
template __global__ void gemm_t_kernel<2, 104, 7, 2, false>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, __nv_bfloat16*, float4*, unsigned*, int, int, int);
template __global__ void gemm_t_kernel<2, 104, 4, 2, true>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, __nv_bfloat16*, float4*, unsigned*, int, int, int);
template __global__ void gemm_t_kernel<2, 104, 7, 2, true>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, __nv_bfloat16*, float4*, unsigned*, int, int, int);
template __global__ void gemm_t_kernel<1, 104, 4, 2, true>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, __nv_bfloat16*, float4*, unsigned*, int, int, int);
template __global__ void gemm_t_kernel<1, 104, 4, 3, true>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, __nv_bfloat16*, float4*, unsigned*, int, int, int);
template __global__ void gemm_t_kernel<2, 104, 4, 3, true>(const __grid_constant__ CUtensorMap, const __grid_constant__ CUtensorMap, __nv_bfloat16*, float4*, unsigned*, int, int, int);
#endif
}  // namespace

#ifndef GEMM_T_NO_TORCH
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("gemm_t", &gemm_t); }
#endif
