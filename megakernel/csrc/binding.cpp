// torch binding of the decode megakernel: raw device pointers in, one cooperative launch out.
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "megakernel.cuh"
#include "prefill.cuh"

namespace {

constexpr int N_PTRS = 23;
constexpr int N_INTS = 10;

// -> [blocks_per_sm, num_sms, smem_bytes, ring_slots, ring_smem_bytes] (ring_slots 0: no MKF_RING here)
std::vector<int64_t> configure(int64_t device) {
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  int blocks_per_sm = 0, num_sms = 0, ring_slots = 0;
  const cudaError_t e = mk::configure(static_cast<int>(device), &blocks_per_sm, &num_sms, &ring_slots);
  TORCH_CHECK(e == cudaSuccess, "megakernel: configuring the kernel failed: ", cudaGetErrorString(e));
  return {blocks_per_sm, num_sms, mk::smem_bytes(), ring_slots, ring_slots ? mk::ring_smem_bytes(ring_slots) : 0};
}

template <class T>
T* ptr(int64_t v) { return reinterpret_cast<T*>(static_cast<uintptr_t>(v)); }

void launch(int64_t device, const std::vector<int64_t>& p, const std::vector<int64_t>& n) {
  TORCH_CHECK(p.size() == N_PTRS, "megakernel.launch: expected ", N_PTRS, " pointers, got ", p.size());
  TORCH_CHECK(n.size() == N_INTS, "megakernel.launch: expected ", N_INTS, " ints, got ", n.size());
  mk::Args a{};
  a.layers = ptr<const uint64_t>(p[0]);
  a.embed = ptr<const uint16_t>(p[1]);
  a.final_norm = ptr<const uint16_t>(p[2]);
  a.dn_state = ptr<float>(p[3]);
  a.conv_ring = ptr<uint16_t>(p[4]);
  a.k_cache = ptr<uint16_t>(p[5]);
  a.v_cache = ptr<uint16_t>(p[6]);
  a.hidden = ptr<uint16_t>(p[7]);
  a.zab = ptr<uint16_t>(p[8]);
  a.obuf = ptr<uint16_t>(p[9]);
  a.qkv = ptr<uint16_t>(p[10]);
  a.attn = ptr<uint16_t>(p[11]);
  a.act = ptr<uint16_t>(p[12]);
  a.apart = ptr<float>(p[13]);
  a.amax_val = ptr<float>(p[14]);
  a.amax_idx = ptr<int>(p[15]);
  a.sync = ptr<unsigned>(p[16]);
  a.token = ptr<const int64_t>(p[17]);
  a.out_token = ptr<int64_t>(p[18]);
  a.logits = ptr<float>(p[19]);
  a.trace = ptr<float>(p[20]);
  a.times = ptr<unsigned long long>(p[21]);
  a.rope = ptr<const uint16_t>(p[22]);
  a.max_seq = static_cast<int>(n[0]);
  a.pos = static_cast<int>(n[1]);
  a.nsplit = static_cast<int>(n[2]);
  a.bar_base = static_cast<unsigned>(n[3] & 0xffffffffLL);
  a.pf_dist = static_cast<int>(n[4]);
  a.stop_after = static_cast<int>(n[5]);
  const int grid = static_cast<int>(n[6]);
  a.flags = static_cast<int>(n[7]);
  a.ring_slots = static_cast<int>(n[8]);
  a.ring_inflight = static_cast<int>(n[9]);
  TORCH_CHECK(!(a.flags & mk::MKF_RING) || (a.ring_slots >= mk::RING_MIN_SLOTS && a.ring_slots <= mk::RING_MAX_SLOTS),
              "megakernel.launch: the ring schedule (MKF_RING) needs ", mk::RING_MIN_SLOTS, "..", mk::RING_MAX_SLOTS,
              " slots; configure() found room for ", a.ring_slots, " on this GPU");
  TORCH_CHECK(a.nsplit >= 1 && a.nsplit <= mk::ATT_MAX_SPLIT && a.nsplit <= a.pos + 1,
              "megakernel.launch: nsplit ", a.nsplit, " outside [1, min(", mk::ATT_MAX_SPLIT, ", pos + 1)]");
  TORCH_CHECK(a.pos >= 0 && a.pos < a.max_seq, "megakernel.launch: pos ", a.pos, " outside [0, max_seq=", a.max_seq, ")");
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
  const cudaError_t e = mk::launch(a, grid, stream);
  TORCH_CHECK(e == cudaSuccess, "megakernel: launch failed: ", cudaGetErrorString(e));
}

// ---- prefill kernels (prefill.cuh): tensors in, checked, launched on the current stream ----
const uint16_t* cbf(const torch::Tensor& t, const char* what) {
  TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kBFloat16 && t.is_contiguous(),
              "megakernel prefill: ", what, " must be a contiguous CUDA bfloat16 tensor, got ", t.scalar_type(),
              t.is_cuda() ? "" : " on the CPU", t.is_contiguous() ? "" : " (not contiguous)");
  return reinterpret_cast<const uint16_t*>(t.data_ptr());
}
uint16_t* mbf(const torch::Tensor& t, const char* what) { return const_cast<uint16_t*>(cbf(t, what)); }
float* f32(const torch::Tensor& t, const char* what) {
  TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(),
              "megakernel prefill: ", what, " must be a contiguous CUDA float32 tensor");
  return t.data_ptr<float>();
}
const int64_t* i64(const torch::Tensor& t, const char* what) {
  TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kInt64 && t.is_contiguous(),
              "megakernel prefill: ", what, " must be a contiguous CUDA int64 tensor");
  return t.data_ptr<int64_t>();
}
cudaStream_t stream_of(const torch::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}
void ok(cudaError_t e, const char* what) { TORCH_CHECK(e == cudaSuccess, "megakernel prefill: ", what, ": ", cudaGetErrorString(e)); }

int rows(const torch::Tensor& t, int64_t width, const char* what) {
  TORCH_CHECK(t.dim() >= 1 && t.numel() % width == 0, "megakernel prefill: ", what, " is not a [T, ", width, "] buffer");
  return static_cast<int>(t.numel() / width);
}

void p_add_rms_norm(const c10::optional<torch::Tensor>& x, const c10::optional<torch::Tensor>& ids,
                    const torch::Tensor& embed, const torch::Tensor& residual, const torch::Tensor& w,
                    const torch::Tensor& out, double eps) {
  const int T = rows(out, mk::D, "out");
  TORCH_CHECK(rows(residual, mk::D, "residual") == T, "megakernel prefill: residual and out differ in T");
  c10::cuda::CUDAGuard g(out.device());
  ok(mkp::add_rms_norm(x ? cbf(*x, "x") : nullptr, ids ? i64(*ids, "ids") : nullptr, cbf(embed, "embed"),
                       mbf(residual, "residual"), cbf(w, "w"), mbf(out, "out"), T, static_cast<float>(eps),
                       stream_of(out)), "add_rms_norm");
}

void p_dn_prep(const torch::Tensor& proj, const torch::Tensor& table, int64_t slot, int64_t start,
               const torch::Tensor& conv_w, const torch::Tensor& a_log, const torch::Tensor& dt_bias,
               const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& g,
               const torch::Tensor& beta) {
  const int T = rows(proj, mk::DN_WIN, "proj");
  c10::cuda::CUDAGuard guard(proj.device());
  ok(mkp::dn_prep(cbf(proj, "proj"), i64(table, "table"), slot, start, cbf(conv_w, "conv_w"), cbf(a_log, "A_log"),
                  cbf(dt_bias, "dt_bias"), mbf(q, "q"), mbf(k, "k"), mbf(v, "v"), f32(g, "g"), f32(beta, "beta"), T,
                  stream_of(proj)), "dn_prep");
}

void p_dn_out_norm(const torch::Tensor& o, const torch::Tensor& proj, const torch::Tensor& w, const torch::Tensor& table,
                   int64_t slot, int64_t start, const torch::Tensor& out, double eps) {
  const int T = rows(proj, mk::DN_WIN, "proj");
  c10::cuda::CUDAGuard guard(proj.device());
  ok(mkp::dn_out_norm(cbf(o, "o"), cbf(proj, "proj"), cbf(w, "norm weight"), i64(table, "table"), slot, start,
                      mbf(out, "out"), T, static_cast<float>(eps), stream_of(proj)), "dn_out_norm");
}

void p_dn_state_in(const torch::Tensor& table, const torch::Tensor& dst) {
  c10::cuda::CUDAGuard guard(dst.device());
  ok(mkp::dn_state_in(i64(table, "table"), f32(dst, "dst"), stream_of(dst)), "dn_state_in");
}

void p_dn_state_out(const torch::Tensor& table, int64_t slot, const torch::Tensor& src) {
  c10::cuda::CUDAGuard guard(src.device());
  ok(mkp::dn_state_out(i64(table, "table"), slot, f32(src, "src"), stream_of(src)), "dn_state_out");
}

void p_silu_mul(const torch::Tensor& gu, const torch::Tensor& out) {
  c10::cuda::CUDAGuard guard(gu.device());
  ok(mkp::silu_mul(cbf(gu, "gate_up"), mbf(out, "out"), rows(gu, 2 * mk::INTER, "gate_up"), stream_of(gu)), "silu_mul");
}

void p_attn_prep(const torch::Tensor& proj, const torch::Tensor& q_w, const torch::Tensor& k_w, const torch::Tensor& table,
                 int64_t slot, int64_t start, int64_t max_seq, const torch::Tensor& qbuf, const torch::Tensor& kv,
                 double eps) {
  const int T = rows(proj, mk::FA_QKV, "proj");
  TORCH_CHECK(kv.numel() == 2LL * mk::FA_HKV * (start + T) * mk::FA_HD, "megakernel prefill: kv is not [2, 2, start + T, 256]");
  c10::cuda::CUDAGuard guard(proj.device());
  ok(mkp::attn_prep(cbf(proj, "proj"), cbf(q_w, "q_norm"), cbf(k_w, "k_norm"), i64(table, "table"), slot, start,
                    max_seq, mbf(qbuf, "qbuf"), mbf(kv, "kv"), T, static_cast<float>(eps), stream_of(proj)), "attn_prep");
}

void p_kv_prefix(const torch::Tensor& table, int64_t slot, int64_t start, int64_t max_seq, const torch::Tensor& kv) {
  const int n_ctx = static_cast<int>(kv.numel() / (2LL * mk::FA_HKV * mk::FA_HD));
  c10::cuda::CUDAGuard guard(kv.device());
  ok(mkp::kv_prefix(i64(table, "table"), slot, start, max_seq, mbf(kv, "kv"), n_ctx, stream_of(kv)), "kv_prefix");
}

void p_attn_gate(const torch::Tensor& o, const torch::Tensor& proj, const torch::Tensor& out) {
  TORCH_CHECK(o.is_cuda() && o.scalar_type() == torch::kBFloat16 && o.dim() == 4 && o.stride(3) == 1,
              "megakernel prefill: attention output must be a bf16 [1, 8, T, 256] tensor with unit last stride");
  c10::cuda::CUDAGuard guard(proj.device());
  ok(mkp::attn_gate(reinterpret_cast<const uint16_t*>(o.data_ptr()), o.stride(1), o.stride(2), cbf(proj, "proj"),
                    mbf(out, "out"), rows(proj, mk::FA_QKV, "proj"), stream_of(proj)), "attn_gate");
}

void p_lm_head(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& logits) {
  TORCH_CHECK(x.numel() == mk::D && w.numel() == static_cast<int64_t>(mk::VOCAB) * mk::D && logits.numel() == mk::VOCAB,
              "megakernel prefill: lm_head wants x [1024], w [248320, 1024], logits [248320]");
  c10::cuda::CUDAGuard guard(x.device());
  ok(mkp::lm_head(cbf(x, "x"), cbf(w, "w"), f32(logits, "logits"), mk::VOCAB, stream_of(x)), "lm_head");
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "Qwen3.5-0.8B single-launch decode megakernel";
  m.def("configure", &configure, "set the smem limits; -> [blocks_per_sm, num_sms, smem_bytes, ring_slots, ring_smem_bytes]");
  m.def("launch", &launch, "one decode step: launch(device, pointers[23], ints[10])");
  m.def("p_add_rms_norm", &p_add_rms_norm);
  m.def("p_dn_prep", &p_dn_prep);
  m.def("p_dn_out_norm", &p_dn_out_norm);
  m.def("p_dn_state_in", &p_dn_state_in);
  m.def("p_dn_state_out", &p_dn_state_out);
  m.def("p_silu_mul", &p_silu_mul);
  m.def("p_attn_prep", &p_attn_prep);
  m.def("p_kv_prefix", &p_kv_prefix);
  m.def("p_attn_gate", &p_attn_gate);
  m.def("p_lm_head", &p_lm_head);
  m.attr("N_PTRS") = N_PTRS;
  m.attr("N_INTS") = N_INTS;
  m.attr("NPHASES") = mk::NPHASES;
  m.attr("NBARRIERS") = mk::NBARRIERS;
  m.attr("NTIMES") = mk::NTIMES;
  m.attr("RING_MAX_PRODUCERS") = mk::RING_MAX_PRODUCERS;
  m.attr("SYNC_WORDS") = static_cast<int>(mk::SYNC_WORDS);
  m.attr("ATT_MAX_SPLIT") = mk::ATT_MAX_SPLIT;
  m.attr("ATT_PART") = mk::ATT_PART;
  m.attr("NSLOT") = static_cast<int>(mk::NSLOT);
}
