// cuBLASLt for the fast prefill's tuned GEMMs (megakernel/prefill_gemm.py): out[M][N] = x[M][K] . w[N][K]ᵀ + beta out,
// row-major bf16 in and out, fp32 compute, with an algorithm the caller chose among cuBLASLt's heuristic candidates.
// Reached through the cuBLASLt library torch itself loaded (dlopen without loading, then dlsym; gemm_lt.cpp): no
// cuBLASLt header or link is needed, so the binding builds where CUDA's math libraries are absent (a CPU-only
// torch), and the GEMMs run in the very library torch's own do. Plain C++ interface (no torch types).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>

namespace mkl {

struct Algo {  // cublasLtMatmulAlgo_t's bytes (opaque; valid in this process's cuBLASLt)
  uint64_t data[8];
};
struct Gemm {  // the problem: x [M][K] (rows lda apart), w [N][K] (contiguous), out [M][N] (rows ldc apart)
  int64_t M, N, K, lda, ldc;
};

// why cuBLASLt cannot be used in this process, or "" where it can
const std::string& unavailable();
// up to `count` of cuBLASLt's heuristic algorithms for g needing at most workspace_bytes, for pointers aligned to
// align_x / align_w / align_out bytes (each a power of two up to 256), its best first; `error` set (and nothing
// returned) where the query failed
std::vector<Algo> candidates(const Gemm& g, int count, size_t workspace_bytes, uint32_t align_x, uint32_t align_w,
                             uint32_t align_out, std::string& error);
// the product with `algo`, enqueued on s: "" or what failed (the cuBLASLt call and its status)
std::string run(const Gemm& g, const Algo& algo, const void* x, const void* w, void* out, float beta, void* workspace,
                size_t workspace_bytes, cudaStream_t s);

}  // namespace mkl
