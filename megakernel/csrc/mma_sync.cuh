// mma.sync m16n8k16 with bf16 operands and fp32 sums: the one PTX wrapper that a decode batch's matrix tiles
// (matvec_mma.cuh) and the prefill's WY blocks (prefill.cu, K Kᵀ) share.
#pragma once
#include <cstdint>

namespace mk {
namespace {

// c += A (16 x 16, rows: a0/a2 tile row g, a1/a3 tile row g + 8) * B (16 x 8: b0, b1 column g), fp32
__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

}  // namespace
}  // namespace mk
