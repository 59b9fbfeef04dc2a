#if defined(_MSC_VER) && !defined(__clang__) && _MSC_VER < 1940
#define _tl_orig_alignas alignas
#define alignas(N) _tl_orig_alignas((N) <= 64 ? (N) : 64)
#include <cuda.h>
#undef alignas
#define alignas _tl_orig_alignas
#endif
#include <tl_templates/cuda/instruction/wgmma.h>
#include <tl_templates/cuda/intrin.h>
#include <tl_templates/cuda/barrier.h>
#include <tl_templates/cuda/copy_sm90.h>
#include <tl_templates/cuda/reduce.h>
#include <tl_templates/cuda/scan.h>
#include <tl_templates/cuda/ldsm.h>
#include <tl_templates/cuda/threadblock_swizzle.h>
#include <tl_templates/cuda/debug.h>
#ifdef ENABLE_BF16
#include <tl_templates/cuda/cuda_bf16_fallbacks.cuh>
#endif

extern "C" __global__ void main_kernel(__grid_constant__ const CUtensorMap A_desc, bfloat16_t* __restrict__ O, __grid_constant__ const CUtensorMap W_desc, int M);
extern "C" __global__ void __launch_bounds__(256, 1) main_kernel(__grid_constant__ const CUtensorMap A_desc, bfloat16_t* __restrict__ O, __grid_constant__ const CUtensorMap W_desc, int M) {
  extern __shared__ __align__(1024) uchar buf_dyn_shmem[];
  void* Gs = ((void*)((char*)buf_dyn_shmem + 0));
  void* Us = ((void*)((char*)buf_dyn_shmem + 86016));
  void* As = ((void*)((char*)buf_dyn_shmem + 172032));
  __shared__ __align__(16) uint64_t mbarrier_mem[18];
  auto mbarrier = reinterpret_cast<Barrier*>(mbarrier_mem);
  float Cg[112];
  float Cu[112];
  bfloat16_t Ob[112];
  if (tl::tl_shuffle_elect<0>()) {
    tl::prefetch_tma_descriptor(A_desc);
    tl::prefetch_tma_descriptor(W_desc);
  }
  if (tl::tl_shuffle_elect<0>()) {
    mbarrier[0].init(1);
    mbarrier[1].init(1);
    mbarrier[2].init(1);
    mbarrier[3].init(1);
    mbarrier[4].init(1);
    mbarrier[5].init(1);
    mbarrier[6].init(1);
    mbarrier[7].init(1);
    mbarrier[8].init(1);
    mbarrier[9].init(128);
    mbarrier[10].init(128);
    mbarrier[11].init(128);
    mbarrier[12].init(128);
    mbarrier[13].init(128);
    mbarrier[14].init(128);
    mbarrier[15].init(128);
    mbarrier[16].init(128);
    mbarrier[17].init(128);
  }
  tl::fence_barrier_init();
  __syncthreads();
  if (((int)threadIdx.x) < 128) {
    tl::warpgroup_reg_dealloc<24>();
    for (int k = 0; k < 16; ++k) {
      mbarrier[((k % 3) + 9)].wait((((k % 6) / 3) ^ 1));
      if (tl::tl_shuffle_elect<128>()) {
        mbarrier[(k % 3)].arrive_and_expect_tx(8192);
        tl::tma_load(A_desc, mbarrier[(k % 3)], (&(((bfloat16_t*)As)[((k % 3) * 4096)])), (k * 64), (((int)blockIdx.y) * 64));
      }
      mbarrier[((k % 3) + 12)].wait((((k % 6) / 3) ^ 1));
      if (tl::tl_shuffle_elect<128>()) {
        mbarrier[((k % 3) + 3)].arrive_and_expect_tx(28672);
        tl::tma_load(W_desc, mbarrier[((k % 3) + 3)], (&(((bfloat16_t*)Gs)[((k % 3) * 14336)])), (k * 64), (((int)blockIdx.x) * 224));
      }
      mbarrier[((k % 3) + 15)].wait((((k % 6) / 3) ^ 1));
      if (tl::tl_shuffle_elect<128>()) {
        mbarrier[((k % 3) + 6)].arrive_and_expect_tx(28672);
        tl::tma_load(W_desc, mbarrier[((k % 3) + 6)], (&(((bfloat16_t*)Us)[((k % 3) * 14336)])), (k * 64), ((((int)blockIdx.x) * 224) + 3584));
      }
    }
  } else {
    tl::warpgroup_reg_alloc<240>();
    #pragma unroll
    for (int i = 0; i < 28; ++i) {
      float broadcast_var = 0x0p+0f/*0.000000e+00*/;
      *(float4*)(Cg + (i * 4)) = make_float4(broadcast_var, broadcast_var, broadcast_var, broadcast_var);
    }
    #pragma unroll
    for (int i_1 = 0; i_1 < 28; ++i_1) {
      float broadcast_var_1 = 0x0p+0f/*0.000000e+00*/;
      *(float4*)(Cu + (i_1 * 4)) = make_float4(broadcast_var_1, broadcast_var_1, broadcast_var_1, broadcast_var_1);
    }
    for (int k_1 = 0; k_1 < 16; ++k_1) {
      mbarrier[(k_1 % 3)].wait(((k_1 % 6) / 3));
      mbarrier[((k_1 % 3) + 3)].wait(((k_1 % 6) / 3));
      {
        tl::GmmaDescriptor desc_a;
        tl::GmmaDescriptor desc_b;
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_a, (&(((bfloat16_t*)As)[0])));
        tl::increase_descriptor_offset<int>(desc_a, ((k_1 % 3) * 8192));
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_b, (&(((bfloat16_t*)Gs)[0])));
        tl::increase_descriptor_offset<int>(desc_b, ((k_1 % 3) * 28672));
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(Cg + 0), 112);
        tl::warpgroup_arrive();
        #pragma unroll
        for (int ki = 0; ki < 4; ++ki) {
          tl::wgmma_ss<tl::DataType::kBFloat16, tl::DataType::kBFloat16, tl::DataType::kFloat32, 64, 224, 16, false, false, 1, 1>(uint64_t(desc_a + ((ki * 32) >> 4)), uint64_t(desc_b + ((ki * 32) >> 4)), ((uint32_t*)(Cg + 0)), 1);
        }
        tl::warpgroup_commit_batch();
        tl::warpgroup_wait<0>();
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(Cg + 0), 112);
      }
      mbarrier[((k_1 % 3) + 12)].arrive();
      mbarrier[((k_1 % 3) + 6)].wait(((k_1 % 6) / 3));
      {
        tl::GmmaDescriptor desc_a_1;
        tl::GmmaDescriptor desc_b_1;
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_a_1, (&(((bfloat16_t*)As)[0])));
        tl::increase_descriptor_offset<int>(desc_a_1, ((k_1 % 3) * 8192));
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_b_1, (&(((bfloat16_t*)Us)[0])));
        tl::increase_descriptor_offset<int>(desc_b_1, ((k_1 % 3) * 28672));
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(Cu + 0), 112);
        tl::warpgroup_arrive();
        #pragma unroll
        for (int ki_1 = 0; ki_1 < 4; ++ki_1) {
          tl::wgmma_ss<tl::DataType::kBFloat16, tl::DataType::kBFloat16, tl::DataType::kFloat32, 64, 224, 16, false, false, 1, 1>(uint64_t(desc_a_1 + ((ki_1 * 32) >> 4)), uint64_t(desc_b_1 + ((ki_1 * 32) >> 4)), ((uint32_t*)(Cu + 0)), 1);
        }
        tl::warpgroup_commit_batch();
        tl::warpgroup_wait<0>();
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(Cu + 0), 112);
      }
      mbarrier[((k_1 % 3) + 9)].arrive();
      mbarrier[((k_1 % 3) + 15)].arrive();
    }
    #pragma unroll
    for (int i_2 = 0; i_2 < 28; ++i_2) {
      float broadcast_var_2 = 0x1p+0f/*1.000000e+00*/;
      float broadcast_var_3 = -0x1p+0f/*-1.000000e+00*/;
      uint2 __1;
      float4 __2;
        float4 __3;
        uint2 __4;
        float4 __5;
          float4 __6;
          uint2 __7;
          float4 v_ = *(float4*)(Cg + (i_2 * 4));
          (reinterpret_cast<__nv_bfloat162*>(&__7))[0] = __float22bfloat162_rn(((float2*)(&v_))[0]);
          (reinterpret_cast<__nv_bfloat162*>(&__7))[1] = __float22bfloat162_rn(((float2*)(&v_))[1]);
          ((float2*)(&__6))[0] = __bfloat1622float2((reinterpret_cast<__nv_bfloat162*>(&__7))[0]);
          ((float2*)(&__6))[1] = __bfloat1622float2((reinterpret_cast<__nv_bfloat162*>(&__7))[1]);
          float4 __8;
            float4 v__1 = make_float4(broadcast_var_2, broadcast_var_2, broadcast_var_2, broadcast_var_2);
            float4 __9;
            float4 __10;
              float4 __11;
              uint2 __12;
              (reinterpret_cast<__nv_bfloat162*>(&__12))[0] = __float22bfloat162_rn(((float2*)(&v_))[0]);
              (reinterpret_cast<__nv_bfloat162*>(&__12))[1] = __float22bfloat162_rn(((float2*)(&v_))[1]);
              ((float2*)(&__11))[0] = __bfloat1622float2((reinterpret_cast<__nv_bfloat162*>(&__12))[0]);
              ((float2*)(&__11))[1] = __bfloat1622float2((reinterpret_cast<__nv_bfloat162*>(&__12))[1]);
              float4 v__2 = make_float4(broadcast_var_3, broadcast_var_3, broadcast_var_3, broadcast_var_3);
              __10.x = (__11.x*v__2.x);
              __10.y = (__11.y*v__2.y);
              __10.z = (__11.z*v__2.z);
              __10.w = (__11.w*v__2.w);
            __9.x = expf(__10.x);
            __9.y = expf(__10.y);
            __9.z = expf(__10.z);
            __9.w = expf(__10.w);
            __8.x = (v__1.x+__9.x);
            __8.y = (v__1.y+__9.y);
            __8.z = (v__1.z+__9.z);
            __8.w = (v__1.w+__9.w);
          __5.x = (__6.x/__8.x);
          __5.y = (__6.y/__8.y);
          __5.z = (__6.z/__8.z);
          __5.w = (__6.w/__8.w);
        (reinterpret_cast<__nv_bfloat162*>(&__4))[0] = __float22bfloat162_rn(((float2*)(&__5))[0]);
        (reinterpret_cast<__nv_bfloat162*>(&__4))[1] = __float22bfloat162_rn(((float2*)(&__5))[1]);
        ((float2*)(&__3))[0] = __bfloat1622float2((reinterpret_cast<__nv_bfloat162*>(&__4))[0]);
        ((float2*)(&__3))[1] = __bfloat1622float2((reinterpret_cast<__nv_bfloat162*>(&__4))[1]);
        float4 __13;
        uint2 __14;
        float4 v__3 = *(float4*)(Cu + (i_2 * 4));
        (reinterpret_cast<__nv_bfloat162*>(&__14))[0] = __float22bfloat162_rn(((float2*)(&v__3))[0]);
        (reinterpret_cast<__nv_bfloat162*>(&__14))[1] = __float22bfloat162_rn(((float2*)(&v__3))[1]);
        ((float2*)(&__13))[0] = __bfloat1622float2((reinterpret_cast<__nv_bfloat162*>(&__14))[0]);
        ((float2*)(&__13))[1] = __bfloat1622float2((reinterpret_cast<__nv_bfloat162*>(&__14))[1]);
        __2.x = (__3.x*__13.x);
        __2.y = (__3.y*__13.y);
        __2.z = (__3.z*__13.z);
        __2.w = (__3.w*__13.w);
      (reinterpret_cast<__nv_bfloat162*>(&__1))[0] = __float22bfloat162_rn(((float2*)(&__2))[0]);
      (reinterpret_cast<__nv_bfloat162*>(&__1))[1] = __float22bfloat162_rn(((float2*)(&__2))[1]);
      *(uint2*)(Ob + (i_2 * 4)) = __1;
    }
    #pragma unroll
    for (int i_3 = 0; i_3 < 56; ++i_3) {
      if (((((((int)blockIdx.y) * 64) + ((((int)threadIdx.x) >> 5) * 16)) + ((i_3 & 1) * 8)) + ((((int)threadIdx.x) & 31) >> 2)) < (M + 64)) {
        *(uint1*)(O + ((((((((((int64_t)((int)blockIdx.y)) * (int64_t)229376) + ((((int64_t)((int)threadIdx.x)) >> (int64_t)5) * (int64_t)57344)) + ((((int64_t)i_3) & (int64_t)1) * (int64_t)28672)) + (((((int64_t)((int)threadIdx.x)) & (int64_t)31) >> (int64_t)2) * (int64_t)3584)) + (((int64_t)((int)blockIdx.x)) * (int64_t)224)) + ((((int64_t)i_3) >> (int64_t)1) * (int64_t)8)) + ((((int64_t)((int)threadIdx.x)) & (int64_t)3) * (int64_t)2)) - (int64_t)229376)) = *(uint1*)(Ob + (i_3 * 2));
      }
    }
  }
}

