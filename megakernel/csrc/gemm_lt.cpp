// cuBLASLt through the library torch loaded (gemm_lt.h says why). The enum values are cublasLt.h's (CUDA 12 and 13):
// CUBLAS_COMPUTE_32F, CUDA_R_32F / CUDA_R_16BF, the matmul descriptor's TRANSA / TRANSB, the preference's
// MAX_WORKSPACE_BYTES (uint64) and MIN_ALIGNMENT_A..D_BYTES (uint32). One handle for the process, made on the device
// current at the first use (the prefill has run on one device only; other devices with it: untested). Row-major out = x wᵀ is, in cuBLASLt's column-major terms, D (N x M) = op(W) (N x K) . Xᵀ
// (K x M) with W read transposed: A = w as K x N (ld K, TRANSA = T), B = x as K x M (ld lda), C = D = out as N x M
// (ld ldc).
#include "gemm_lt.h"

#include <dlfcn.h>

namespace mkl {
namespace {

using Status = int;
using Handle = void*;
using Desc = void*;
using Layout = void*;
using Pref = void*;
struct Heuristic {  // cublasLtMatmulHeuristicResult_t
  Algo algo;
  size_t workspace;
  Status state;
  float waves;
  int reserved[4];
};
constexpr int COMPUTE_32F = 68, R_32F = 0, R_16BF = 14;
constexpr int DESC_TRANSA = 3, DESC_TRANSB = 4, OP_N = 0, OP_T = 1;
constexpr int PREF_MAX_WORKSPACE = 1, PREF_ALIGN_A = 5, PREF_ALIGN_B = 6, PREF_ALIGN_C = 7, PREF_ALIGN_D = 8;

struct Api {
  Status (*create)(Handle*) = nullptr;
  Status (*desc_create)(Desc*, int, int) = nullptr;
  Status (*desc_destroy)(Desc) = nullptr;
  Status (*desc_set)(Desc, int, const void*, size_t) = nullptr;
  Status (*layout_create)(Layout*, int, uint64_t, uint64_t, int64_t) = nullptr;
  Status (*layout_destroy)(Layout) = nullptr;
  Status (*pref_create)(Pref*) = nullptr;
  Status (*pref_destroy)(Pref) = nullptr;
  Status (*pref_set)(Pref, int, const void*, size_t) = nullptr;
  Status (*heuristic)(Handle, Desc, Layout, Layout, Layout, Layout, Pref, int, Heuristic*, int*) = nullptr;
  Status (*matmul)(Handle, Desc, const void*, const void*, Layout, const void*, Layout, const void*, const void*, Layout,
                   void*, Layout, const Algo*, void*, size_t, cudaStream_t) = nullptr;
  const char* (*status_name)(Status) = nullptr;
  Handle handle = nullptr;
  std::string error;  // why not usable ("" where usable)
};

// f = the library's `name`; the first one missing named in `error`
template <class F>
void bind(void* lib, const char* name, F& f, std::string& error) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (f == nullptr && error.empty()) error = std::string("cuBLASLt has no ") + name;
}

Api load() {
  Api a;
  void* lib = nullptr;
  for (const char* name : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"})
    if ((lib = dlopen(name, RTLD_NOLOAD | RTLD_LAZY)) != nullptr) break;
  if (lib == nullptr) {
    a.error = "cuBLASLt is not loaded in this process (a CUDA build of torch loads it; this one did not)";
    return a;
  }
  std::string& e = a.error;
  bind(lib, "cublasLtCreate", a.create, e);
  bind(lib, "cublasLtMatmulDescCreate", a.desc_create, e);
  bind(lib, "cublasLtMatmulDescDestroy", a.desc_destroy, e);
  bind(lib, "cublasLtMatmulDescSetAttribute", a.desc_set, e);
  bind(lib, "cublasLtMatrixLayoutCreate", a.layout_create, e);
  bind(lib, "cublasLtMatrixLayoutDestroy", a.layout_destroy, e);
  bind(lib, "cublasLtMatmulPreferenceCreate", a.pref_create, e);
  bind(lib, "cublasLtMatmulPreferenceDestroy", a.pref_destroy, e);
  bind(lib, "cublasLtMatmulPreferenceSetAttribute", a.pref_set, e);
  bind(lib, "cublasLtMatmulAlgoGetHeuristic", a.heuristic, e);
  bind(lib, "cublasLtMatmul", a.matmul, e);
  bind(lib, "cublasLtGetStatusName", a.status_name, e);
  if (e.empty() && a.create(&a.handle) != 0) e = "cublasLtCreate failed";
  return a;
}

const Api& api() {
  static const Api a = load();  // (thread-safe once: C++11 statics)
  return a;
}

std::string failed(const char* call, Status s) {
  const char* name = api().status_name != nullptr ? api().status_name(s) : nullptr;
  return std::string(call) + " returned " + (name != nullptr ? name : std::to_string(s));
}

// the descriptor and three layouts of one problem, destroyed with it
struct Problem {
  Desc desc = nullptr;
  Layout a = nullptr, b = nullptr, c = nullptr;
  std::string error;
  explicit Problem(const Gemm& g) {
    const Api& L = api();
    const int ta = OP_T, tb = OP_N;
    Status s;
    if ((s = L.desc_create(&desc, COMPUTE_32F, R_32F)) != 0) { error = failed("cublasLtMatmulDescCreate", s); return; }
    if ((s = L.desc_set(desc, DESC_TRANSA, &ta, sizeof ta)) != 0 || (s = L.desc_set(desc, DESC_TRANSB, &tb, sizeof tb)) != 0) {
      error = failed("cublasLtMatmulDescSetAttribute", s);
      return;
    }
    if ((s = L.layout_create(&a, R_16BF, g.K, g.N, g.K)) != 0 || (s = L.layout_create(&b, R_16BF, g.K, g.M, g.lda)) != 0 ||
        (s = L.layout_create(&c, R_16BF, g.N, g.M, g.ldc)) != 0)
      error = failed("cublasLtMatrixLayoutCreate", s);
  }
  ~Problem() {
    const Api& L = api();
    for (Layout l : {a, b, c})
      if (l != nullptr) L.layout_destroy(l);
    if (desc != nullptr) L.desc_destroy(desc);
  }
};

}  // namespace

const std::string& unavailable() { return api().error; }

std::vector<Algo> candidates(const Gemm& g, int count, size_t workspace_bytes, uint32_t align_x, uint32_t align_w,
                             uint32_t align_out, std::string& error) {
  std::vector<Algo> out;
  if (!(error = unavailable()).empty()) return out;
  Problem p(g);
  if (!(error = p.error).empty()) return out;
  const Api& L = api();
  Pref pref = nullptr;
  Status s = L.pref_create(&pref);
  if (s != 0) {
    error = failed("cublasLtMatmulPreferenceCreate", s);
    return out;
  }
  const uint64_t ws = workspace_bytes;
  std::vector<Heuristic> found(count > 0 ? count : 1);
  int n = 0;
  if ((s = L.pref_set(pref, PREF_MAX_WORKSPACE, &ws, sizeof ws)) != 0 ||
      (s = L.pref_set(pref, PREF_ALIGN_A, &align_w, sizeof align_w)) != 0 ||  // (A is w, B is x, C = D is out)
      (s = L.pref_set(pref, PREF_ALIGN_B, &align_x, sizeof align_x)) != 0 ||
      (s = L.pref_set(pref, PREF_ALIGN_C, &align_out, sizeof align_out)) != 0 ||
      (s = L.pref_set(pref, PREF_ALIGN_D, &align_out, sizeof align_out)) != 0)
    error = failed("cublasLtMatmulPreferenceSetAttribute", s);
  else if ((s = L.heuristic(L.handle, p.desc, p.a, p.b, p.c, p.c, pref, count, found.data(), &n)) != 0)
    error = failed("cublasLtMatmulAlgoGetHeuristic", s);
  L.pref_destroy(pref);
  for (int i = 0; i < n && error.empty(); ++i)
    if (found[i].state == 0 && found[i].workspace <= workspace_bytes) out.push_back(found[i].algo);
  return out;
}

std::string run(const Gemm& g, const Algo& algo, const void* x, const void* w, void* out, float beta, void* workspace,
                size_t workspace_bytes, cudaStream_t s) {
  if (!unavailable().empty()) return unavailable();
  Problem p(g);
  if (!p.error.empty()) return p.error;
  const float alpha = 1.f;  // (host scalars: read when the call is enqueued, so a captured graph keeps them)
  const Api& L = api();
  const Status st = L.matmul(L.handle, p.desc, &alpha, w, p.a, x, p.b, &beta, out, p.c, out, p.c, &algo, workspace,
                             workspace_bytes, s);
  return st == 0 ? std::string() : failed("cublasLtMatmul", st);
}

}  // namespace mkl
