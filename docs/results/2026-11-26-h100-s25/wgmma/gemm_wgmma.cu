// Session 25 (issue 21), an experiment: our own Hopper GEMM for the prefill's shapes at ~520 rows, to see whether a
// hand-written schedule beats cuBLAS where TileLang's (calls 1, 3, 4) did not, and what SwiGLU in its epilogue saves.
//
// C = A · Bᵀ: A [M, K] and B [N, K] bf16 row-major (both K-major, as the prefill's activations and weights are), fp32
// accumulation in registers by wgmma, operands through shared memory by TMA with the 128-byte swizzle.
//   block: warp group 0 the producer (its thread 0 issues each stage's TMA loads), warp groups 1..C the consumers;
//          consumer c owns rows [64 c, 64 c + 64) of the block's BM = 64 C rows and all its BN columns
//   K:     steps of 64 (one 128-byte swizzle row of bf16) through STAGES buffers, `full` mbarriers (TMA bytes
//          landed) and `empty` ones (every consumer thread done reading); each consumer keeps one wgmma group in
//          flight (wait_group 1) and releases a stage when the group after it has been issued
//   epilogue: the tile staged in shared memory (the stage buffers, once every consumer is done), then stored in
//          16-byte pieces along its rows;
//   kinds: EPI_BF16 C [M, N]; EPI_SPLIT fp32 partials [split][M][N] (K in gridDim.z slices: the prefill's
//          split-K layout, summed by add_rms_norm); EPI_SWIGLU: B's rows [0, F) are gate, [F, 2F) up, two
//          accumulators, act [M, F] = bf16(bf16(silu(bf16 g)) · bf16 u) (prefill.cu silu_mul's rounding points)
// grid: (ceil(N_out / BN), ceil(M / BM), split); rows past M are TMA's zero fill and are not stored.
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <torch/extension.h>

namespace {

#include "wgmma_shapes.inc"

constexpr int BK = 64;
constexpr int EPI_BF16 = 0, EPI_SPLIT = 1, EPI_SWIGLU = 2;

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
// the same into every block of the cluster in `mask` (same shared offsets, each block's own barrier)
__device__ __forceinline__ void tma_load_mc(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, %4}], "
      "[%2], %5;" ::"r"(smem_u32(dst)),
      "l"(map), "r"(smem_u32(bar)), "r"(x), "r"(y), "h"(mask)
      : "memory");
}
// an arrival on the barrier at the same shared offset in block `rank` of the cluster (this block: rank of its own),
// with the default (CTA-scope) release: `.release.cluster` costs a fence a K step (call 7: +0.4 µs a step)
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t rank) {
  asm volatile(
      "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\nmbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(
          smem_u32(bar)),
      "r"(rank)
      : "memory");
}
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
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
__device__ __forceinline__ float rnd(float x) { return __bfloat162float(__float2bfloat16(x)); }

template <int C, int BN, int STAGES, int EPI>
struct Tile {
  static constexpr int NB = EPI == EPI_SWIGLU ? 2 : 1;  // B tiles a stage (gate and up)
  static constexpr int A_BYTES = 64 * C * BK * 2, B_BYTES = BN * BK * 2;
  static constexpr int STAGE = A_BYTES + NB * B_BYTES;
  static constexpr int SMEM = STAGES * STAGE + 2 * STAGES * 8 + 1024;  // (+ the 1,024-byte alignment)
  static constexpr int THREADS = 128 * (C + 1);
  static_assert(BN % 8 == 0 && BN <= 256 && STAGE % 1024 == 0, "wgmma's N; swizzled tiles 1,024-byte aligned");
};

// CL > 1: a cluster of CL blocks shares one operand, each block loading 1/CL of its rows for all of them (TMA
// multicast): SHARE_B, blocks along y (the M tiles of one N tile) share B's tile; SHARE_A, blocks along x share A's.
// A stage is then released when every consumer warp group of the cluster is done with it (an arrival each, by its
// thread r on block r's `empty`), and no block leaves before the cluster is done (its barriers take arrivals).
constexpr int SHARE_B = 0, SHARE_A = 1;
template <int C, int BN, int STAGES, int EPI, int CL, int SHARE>
__global__ void __launch_bounds__(128 * (C + 1), C == 1 ? 2 : 1)
    gemm_kernel(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb, void* __restrict__ out,
                int M, int N_out, int k_steps, int F) {
  using Tl = Tile<C, BN, STAGES, EPI>;
  static_assert(CL == 1 || (SHARE == SHARE_B ? BN : 64 * C) % (8 * CL) == 0, "a multicast slice: whole 8-row swizzle groups");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * Tl::STAGE);
  uint64_t* empty = full + STAGES;
  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  const int m0 = blockIdx.y * 64 * C, n0 = blockIdx.x * BN, k0 = blockIdx.z * k_steps * BK;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], C * CL);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if constexpr (CL > 1) cluster_sync();  // (every block's barriers ready before any multicast)
  const uint32_t rank = CL > 1 ? cluster_rank() : 0;
  if (wg == 0) {  // the producer
    if constexpr (C > 1) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    if (t == 0) {
      for (int kt = 0; kt < k_steps; ++kt) {
        const int s = kt % STAGES;
        if (kt >= STAGES) mbar_wait(&empty[s], ((kt / STAGES) - 1) & 1);
        uint8_t* st = smem + s * Tl::STAGE;
        const int k = k0 + kt * BK;
        mbar_expect_tx(&full[s], Tl::STAGE);
        if constexpr (CL == 1) {
          tma_load(st, &ta, &full[s], k, m0);
          tma_load(st + Tl::A_BYTES, &tb, &full[s], k, n0);
          if constexpr (EPI == EPI_SWIGLU) tma_load(st + Tl::A_BYTES + Tl::B_BYTES, &tb, &full[s], k, F + n0);
        } else if constexpr (SHARE == SHARE_B) {  // (tb's boxes are BN / CL rows)
          constexpr int SL = BN / CL;
          const uint16_t all = (1u << CL) - 1;
          tma_load(st, &ta, &full[s], k, m0);
          tma_load_mc(st + Tl::A_BYTES + rank * SL * BK * 2, &tb, &full[s], k, n0 + rank * SL, all);
          if constexpr (EPI == EPI_SWIGLU)
            tma_load_mc(st + Tl::A_BYTES + Tl::B_BYTES + rank * SL * BK * 2, &tb, &full[s], k, F + n0 + rank * SL, all);
        } else {  // (ta's boxes are 64 C / CL rows)
          constexpr int SL = 64 * C / CL;
          const uint16_t all = (1u << CL) - 1;
          tma_load_mc(st + rank * SL * BK * 2, &ta, &full[s], k, m0 + rank * SL, all);
          tma_load(st + Tl::A_BYTES, &tb, &full[s], k, n0);
          if constexpr (EPI == EPI_SWIGLU) tma_load(st + Tl::A_BYTES + Tl::B_BYTES, &tb, &full[s], k, F + n0);
        }
      }
    }
    if constexpr (CL > 1) cluster_sync();
    return;
  }
  if constexpr (C == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  if constexpr (C == 3) asm volatile("setmaxnreg.inc.sync.aligned.u32 152;");
  const int c = wg - 1;
  constexpr int R = BN / 2;
  float acc[R], acc2[EPI == EPI_SWIGLU ? R : 1];
#pragma unroll
  for (int i = 0; i < R; ++i) acc[i] = 0.f;
#pragma unroll
  for (int i = 0; i < (EPI == EPI_SWIGLU ? R : 1); ++i) acc2[i] = 0.f;
  for (int kt = 0; kt < k_steps; ++kt) {
    const int s = kt % STAGES;
    mbar_wait(&full[s], (kt / STAGES) & 1);
    const uint32_t st = smem_u32(smem + s * Tl::STAGE);
    const uint64_t da = smem_desc(st + c * 64 * BK * 2), db = smem_desc(st + Tl::A_BYTES);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {  // (16 bf16 = 32 bytes further along the swizzled rows: +2 encoded)
      Wgmma<BN>::mma(acc, da + 2 * kk, db + 2 * kk, 1);
      if constexpr (EPI == EPI_SWIGLU) Wgmma<BN>::mma(acc2, da + 2 * kk, smem_desc(st + Tl::A_BYTES + Tl::B_BYTES) + 2 * kk, 1);
    }
    wgmma_commit();
    fence_acc(acc);
    if constexpr (EPI == EPI_SWIGLU) fence_acc(acc2);
    wgmma_wait<1>();
    if (kt > 0 && t < CL) mbar_arrive_cluster(&empty[(kt - 1) % STAGES], t);
  }
  wgmma_wait<0>();
  fence_acc(acc);
  if constexpr (EPI == EPI_SWIGLU) fence_acc(acc2);
  // the output tile through shared memory (every consumer's wgmmas done first: the stage buffers are free), then
  // 16-byte stores along its rows. Accumulator j (of R): column 8 (j / 4) + 2 (lane % 4) + j % 2, row 16 warp +
  // lane / 4 + 8 ((j / 2) % 2); a staged row is padded by 16 bytes (a warp's 8 rows of one store in distinct banks)
  asm volatile("bar.sync 1, %0;" ::"r"(128 * C) : "memory");
  constexpr int OUT = EPI == EPI_SPLIT ? 4 : 2, ROW = BN * OUT + 16, CH = BN * OUT / 16;
  static_assert(C * 64 * ROW <= STAGES * Tl::STAGE, "the staged output tile fits the stage buffers");
  uint8_t* staged = smem + c * 64 * ROW;
  const int warp = t / 32, lane = t % 32;
#pragma unroll
  for (int j = 0; j < R; j += 2) {
    uint8_t* at = staged + (warp * 16 + lane / 4 + 8 * ((j / 2) % 2)) * ROW + (8 * (j / 4) + 2 * (lane % 4)) * OUT;
    if constexpr (EPI == EPI_BF16) {
      *reinterpret_cast<__nv_bfloat162*>(at) = __floats2bfloat162_rn(acc[j], acc[j + 1]);
    } else if constexpr (EPI == EPI_SPLIT) {
      *reinterpret_cast<float2*>(at) = make_float2(acc[j], acc[j + 1]);
    } else {
      float y[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float g = rnd(acc[j + e]), u = rnd(acc2[j + e]);
        y[e] = rnd(g / (1.f + expf(-g))) * u;
      }
      *reinterpret_cast<__nv_bfloat162*>(at) = __floats2bfloat162_rn(y[0], y[1]);
    }
  }
  asm volatile("bar.sync %0, 128;" ::"r"(2 + c) : "memory");
  uint8_t* dst = static_cast<uint8_t*>(out) + (size_t)blockIdx.z * M * N_out * OUT;
  for (int i = t; i < 64 * CH; i += 128) {
    const int r = i / CH, ch = i % CH, row = m0 + c * 64 + r, col = n0 + ch * (16 / OUT);
    if (row < M && col < N_out)
      *reinterpret_cast<uint4*>(dst + ((size_t)row * N_out + col) * OUT) = *reinterpret_cast<const uint4*>(staged + r * ROW + ch * 16);
  }
  if constexpr (CL > 1) cluster_sync();
}

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

template <int C, int BN, int STAGES, int EPI, int CL, int SHARE>
void launch(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& out, int split, int F) {
  using Tl = Tile<C, BN, STAGES, EPI>;
  const int M = a.size(0), K = a.size(1);
  const int n_out = EPI == EPI_SWIGLU ? F : b.size(0);
  TORCH_CHECK(K % (split * BK) == 0, "K ", K, " is not a multiple of split x 64");
  const int a_rows = CL > 1 && SHARE == SHARE_A ? 64 * C / CL : 64 * C, b_rows = CL > 1 && SHARE == SHARE_B ? BN / CL : BN;
  const CUtensorMap ta = tensor_map(a, a_rows), tb = tensor_map(b, b_rows);
  auto kernel = gemm_kernel<C, BN, STAGES, EPI, CL, SHARE>;
  static bool attr = false;
  if (!attr) {
    TORCH_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tl::SMEM) == cudaSuccess,
                "smem attribute");
    attr = true;
  }
  const dim3 grid((n_out + BN - 1) / BN, (M + 64 * C - 1) / (64 * C), split);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(Tl::THREADS);
  cfg.dynamicSmemBytes = Tl::SMEM;
  cfg.stream = c10::cuda::getCurrentCUDAStream();
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = CL > 1 && SHARE == SHARE_A ? CL : 1;
  at[0].val.clusterDim.y = CL > 1 && SHARE == SHARE_B ? CL : 1;
  at[0].val.clusterDim.z = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  TORCH_CHECK(grid.x % at[0].val.clusterDim.x == 0 && grid.y % at[0].val.clusterDim.y == 0, "grid ", grid.x, " x ",
              grid.y, " does not split into clusters of ", CL);
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, ta, tb, out.data_ptr(), M, n_out, K / split / BK, F);
  TORCH_CHECK(e == cudaSuccess, "launch failed: ", cudaGetErrorString(e));
}

// way: "C-BN-STAGES-EPI[-CL-SHARE]" as instantiated below (SHARE: B or A)
void gemm(const torch::Tensor& a, const torch::Tensor& b, torch::Tensor out, const std::string& way, int64_t split,
          int64_t F) {
#define WAY(C, BN, S, E)                                                 \
  if (way == #C "-" #BN "-" #S "-" #E) return launch<C, BN, S, E, 1, SHARE_B>(a, b, out, split, F);
#define WAY_CL(C, BN, S, E, CL, SH)                                      \
  if (way == #C "-" #BN "-" #S "-" #E "-" #CL "-" #SH) return launch<C, BN, S, E, CL, SHARE_##SH>(a, b, out, split, F);
  WAY(3, 176, 4, 0)
  WAY(3, 168, 4, 0)
  WAY(3, 96, 4, 2)
  WAY(3, 64, 4, 1)
  WAY_CL(3, 168, 4, 0, 3, B)
  WAY_CL(3, 192, 4, 0, 3, B)
  WAY_CL(3, 96, 4, 2, 3, B)
  WAY_CL(3, 64, 4, 1, 2, A)
  WAY_CL(3, 64, 4, 1, 4, A)
  WAY_CL(3, 128, 4, 1, 2, A)
#undef WAY
#undef WAY_CL
  TORCH_CHECK(false, "no way ", way);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("gemm", &gemm); }
