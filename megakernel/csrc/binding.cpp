// torch binding of the decode megakernel: raw device pointers in, one cooperative launch out.
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "megakernel.cuh"

namespace {

constexpr int N_PTRS = 23;
constexpr int N_INTS = 8;

// -> [blocks_per_sm, num_sms, smem_bytes]
std::vector<int64_t> configure(int64_t device) {
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  int blocks_per_sm = 0, num_sms = 0;
  const cudaError_t e = mk::configure(static_cast<int>(device), &blocks_per_sm, &num_sms);
  TORCH_CHECK(e == cudaSuccess, "megakernel: configuring the kernel failed: ", cudaGetErrorString(e));
  return {blocks_per_sm, num_sms, mk::smem_bytes()};
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
  TORCH_CHECK(a.nsplit >= 1 && a.nsplit <= mk::ATT_MAX_SPLIT && a.nsplit <= a.pos + 1,
              "megakernel.launch: nsplit ", a.nsplit, " outside [1, min(", mk::ATT_MAX_SPLIT, ", pos + 1)]");
  TORCH_CHECK(a.pos >= 0 && a.pos < a.max_seq, "megakernel.launch: pos ", a.pos, " outside [0, max_seq=", a.max_seq, ")");
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
  const cudaError_t e = mk::launch(a, grid, stream);
  TORCH_CHECK(e == cudaSuccess, "megakernel: launch failed: ", cudaGetErrorString(e));
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "Qwen3.5-0.8B single-launch decode megakernel";
  m.def("configure", &configure, "set the smem limit; -> [blocks_per_sm, num_sms, smem_bytes]");
  m.def("launch", &launch, "one decode step: launch(device, pointers[23], ints[8])");
  m.attr("N_PTRS") = N_PTRS;
  m.attr("N_INTS") = N_INTS;
  m.attr("NPHASES") = mk::NPHASES;
  m.attr("NBARRIERS") = mk::NBARRIERS;
  m.attr("NTIMES") = mk::NTIMES;
  m.attr("SYNC_WORDS") = static_cast<int>(mk::SYNC_WORDS);
  m.attr("ATT_MAX_SPLIT") = mk::ATT_MAX_SPLIT;
  m.attr("ATT_PART") = mk::ATT_PART;
  m.attr("NSLOT") = static_cast<int>(mk::NSLOT);
}
