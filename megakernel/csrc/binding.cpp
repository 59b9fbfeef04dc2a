// The megakernel tier's kernels as torch operators (namespace qwen35_megakernel, or the shape's own:
// MK_OPS_NAMESPACE; CUDA only):
//   decode                one decode step, or many (each fed the last one's argmax): the megakernel (megakernel.cuh)
//   prefill_*             the fast prefill's fused kernels (prefill.cuh), and prefill_gemm_lt: one of its GEMMs
//                         with a cuBLASLt algorithm the tier chose by timing (gemm_lt.h, megakernel/prefill_gemm.py)
// Every op has a named schema (the tensors it writes marked `(a!)`), checks what it is given
// (dtype, device, shape against shapes.cuh) before launching on the current stream, and has a
// fake (meta) implementation in megakernel/ops.py, so `torch.library.opcheck` and
// `torch.compile(fullgraph=True)` see them as first-class ops. The Python module adds
// `configure(device)`, `constants()` (every number of shapes.cuh), `launch_prefill_graph` (a captured
// prefill graph's launch after its bind launch: a CUDA graph handle, not tensors) and `gemm_lt_candidates`
// (cuBLASLt's heuristic algorithms for a GEMM shape: host data, not tensors).
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>
#include <mutex>

#include "gemm_lt.h"
#include "megakernel.cuh"
#include "prefill.cuh"

// The ops' namespace: qwen35_megakernel for the 0.8B, its own per shape otherwise (megakernel/family.py),
// so builds of several shapes load side by side in one process. (The two-step macros expand the name.)
#ifndef MK_OPS_NAMESPACE
#define MK_OPS_NAMESPACE qwen35_megakernel
#endif
#define MK_STR2(x) #x
#define MK_STR(x) MK_STR2(x)
#define MK_TORCH_LIBRARY(ns, m) TORCH_LIBRARY(ns, m)
#define MK_TORCH_LIBRARY_IMPL(ns, k, m) TORCH_LIBRARY_IMPL(ns, k, m)

namespace {

using torch::Tensor;

// ---- error messages, formatted without iostreams ---------------------------------------------
// TORCH_CHECK(cond, a, b, ...) formats through a std::ostringstream made in this library, whose
// constructor the dynamic linker may bind to another library's static copy of libstdc++: FlashQLA's
// tvm_ffi (loaded RTLD_GLOBAL) exports one, and a refusal formatted by that half-foreign stream
// crashed the process (SIGSEGV in ostream::_M_insert<long>; docs/results/2026-11-26-h100-s24 call 2).
// MK_CHECK formats its message here, into a std::string, and hands it to c10's own failure path
// (torchCheckFail, in libc10): the same c10::Error, a RuntimeError in Python.
void append(std::string& s, const char* v) { s += v; }
void append(std::string& s, const std::string& v) { s += v; }
void append(std::string& s, c10::ScalarType v) { s += c10::toString(v); }
void append(std::string& s, const c10::Device& v) { s += v.str(); }
void append(std::string& s, c10::IntArrayRef v) {
  s += '[';
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  s += ']';
}
template <class T, std::enable_if_t<std::is_arithmetic_v<T> || std::is_enum_v<T>, int> = 0>
void append(std::string& s, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
    s += buf;
  } else if constexpr (std::is_enum_v<T>) {
    s += std::to_string(static_cast<long long>(v));
  } else {
    s += std::to_string(v);
  }
}
template <class... A>
std::string say(const A&... parts) {
  std::string s;
  (append(s, parts), ...);
  return s;
}
#define MK_CHECK(cond, ...)                                                                           \
  do {                                                                                                \
    if (C10_UNLIKELY(!(cond)))                                                                        \
      ::c10::detail::torchCheckFail(__func__, __FILE__, static_cast<uint32_t>(__LINE__), say(__VA_ARGS__)); \
  } while (0)

// ---- argument checks ------------------------------------------------------------------------
void check_tensor(const Tensor& t, const char* op, const char* what, c10::ScalarType dtype, c10::IntArrayRef shape) {
  MK_CHECK(t.is_cuda(), op, ": ", what, " must be a CUDA tensor (got one on ", t.device(), ")");
  MK_CHECK(t.scalar_type() == dtype, op, ": ", what, " must be ", dtype, " (got ", t.scalar_type(), ")");
  MK_CHECK(t.is_contiguous(), op, ": ", what, " must be contiguous");
  MK_CHECK(shape.empty() || t.sizes() == shape, op, ": ", what, " has shape ", t.sizes(), "; expected ", shape);
}
// a [..., width] buffer of T rows
int rows_of(const Tensor& t, int64_t width, const char* op, const char* what) {
  MK_CHECK(t.dim() >= 1 && t.numel() % width == 0, op, ": ", what, " is not a [T, ", width, "] buffer (", t.sizes(), ")");
  return static_cast<int>(t.numel() / width);
}
template <class T>
T* ptr(const Tensor& t) { return t.numel() ? reinterpret_cast<T*>(t.data_ptr()) : nullptr; }
cudaStream_t stream_of(const Tensor& t) { return c10::cuda::getCurrentCUDAStream(t.device().index()).stream(); }
void ok(cudaError_t e, const char* op) { MK_CHECK(e == cudaSuccess, op, ": ", cudaGetErrorString(e)); }

// ---- configure: once per device -------------------------------------------------------------
mk::Config configured(int device) {
  static std::mutex mutex;
  static std::vector<std::pair<int, mk::Config>> done;
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [d, c] : done)
    if (d == device) return c;
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  mk::Config c{};
  ok(mk::configure(device, &c), "qwen35_megakernel.configure");
  done.emplace_back(device, c);
  return c;
}

py::dict configure_py(int64_t device) {
  const mk::Config c = configured(static_cast<int>(device));
  py::dict d;
  d["blocks_per_sm"] = c.blocks_per_sm;
  d["num_sms"] = c.num_sms;
  py::list smem, slots, ring_smem;  // [batch - 1]
  for (int i = 0; i < mk::MAX_BATCH; ++i) {
    smem.append(c.smem_bytes[i]);
    slots.append(c.ring_slots[i]);
    ring_smem.append(c.ring_smem_bytes[i]);
  }
  d["smem_bytes"] = smem;
  d["ring_slots"] = slots;
  d["ring_smem_bytes"] = ring_smem;
  return d;
}

// ---- decode -------------------------------------------------------------------------------------
void decode(const Tensor& layer_table, const Tensor& embed, const Tensor& lm_head, const Tensor& lm_q, const Tensor& lm_qs,
            const Tensor& final_norm, const Tensor& dn_state,
            const Tensor& conv_ring, const Tensor& k_cache, const Tensor& v_cache, const Tensor& rope,
            const Tensor& workspace, const Tensor& sync, const Tensor& token, const Tensor& next_token,
            const Tensor& fault, const Tensor& logits, const Tensor& trace, const Tensor& times, const Tensor& stream,
            c10::IntArrayRef pos, int64_t positions_per_split, int64_t steps, c10::IntArrayRef stop_ids, double temperature,
            int64_t seed, int64_t grid, int64_t schedule, int64_t ring_slots, int64_t stop_after) {
  using namespace mk;
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".decode";
  const auto bf = torch::kBFloat16, f32 = torch::kFloat32;
  MK_CHECK(dn_state.dim() == 5, op, ": dn_state must be [B, ", NDN, ", ", DN_HV, ", ", DN_DV, ", ", DN_DK, "]");
  const int64_t B = dn_state.size(0);
  MK_CHECK(B >= 1 && B <= MAX_BATCH, op, ": batch ", B, " outside [1, ", MAX_BATCH, "] (the rows one launch decodes)");
  check_tensor(layer_table, op, "layer_table", torch::kInt64, {NLAYER, NSLOT});
  check_tensor(embed, op, "embed", bf, {VOCAB, D});
  check_tensor(lm_head, op, "lm_head", bf, {VOCAB, D});
  MK_CHECK(lm_q.numel() == 0 || LM_I8, op, ": lm_q given, but this build's lm_head reads no int8 rows (LM_I8: D = 1024 only); "
           "pass empty lm_q and lm_qs");
  MK_CHECK((lm_q.numel() == 0) == (lm_qs.numel() == 0), op, ": lm_q and lm_qs go together (both given or both empty); got ",
           lm_q.numel(), " and ", lm_qs.numel(), " elements");
  if (lm_q.numel()) {
    check_tensor(lm_q, op, "lm_q", torch::kUInt8, {VOCAB + 1, D});
    check_tensor(lm_qs, op, "lm_qs", f32, {VOCAB, 2});
  }
  check_tensor(final_norm, op, "final_norm", bf, {D});
  check_tensor(dn_state, op, "dn_state", f32, {B, NDN, DN_HV, DN_DV, DN_DK});
  check_tensor(conv_ring, op, "conv_ring", bf, {B, NDN, CONV_K, DN_CONV});
  MK_CHECK(k_cache.dim() == 5, op, ": k_cache must be [B, ", NFA, ", ", FA_HKV, ", max_seq, ", FA_HD, "]");
  const int64_t max_seq = k_cache.size(3);
  check_tensor(k_cache, op, "k_cache", bf, {B, NFA, FA_HKV, max_seq, FA_HD});
  check_tensor(v_cache, op, "v_cache", bf, {B, NFA, FA_HKV, max_seq, FA_HD});
  check_tensor(rope, op, "rope", bf, {max_seq, 2, FA_ROT / 2});
  check_tensor(workspace, op, "workspace", torch::kUInt8, {WS_BYTES});
  check_tensor(sync, op, "sync", torch::kInt32, {SYNC_WORDS});
  check_tensor(token, op, "token", torch::kInt64, {B});
  MK_CHECK(steps >= 1 && steps <= max_seq, op, ": steps ", steps, " outside [1, max_seq=", max_seq, "]");
  MK_CHECK((steps == 1 && temperature == 0.0) ||
                  (!logits.numel() && !trace.numel() && !times.numel() && stop_after == -1 && schedule == SCHEDULE_RING),
              op, ": a launch of ", steps, " steps or at temperature ", temperature, " (the many-token kernel) writes no "
              "logits, trace or stamps, runs to the end (stop_after -1) and needs the ring schedule");
  check_tensor(next_token, op, "next_token", torch::kInt64, {});
  MK_CHECK(next_token.numel() == steps * B, op, ": next_token has ", next_token.numel(), " elements; expected steps x B = ",
              steps * B);
  MK_CHECK(temperature == 0.0 || (temperature > 0.0 && std::isfinite(temperature)), op, ": temperature ", temperature,
              " must be 0 (the argmax) or finite and > 0");
  MK_CHECK(seed >= 0 && seed <= 0xFFFFFFFFll, op, ": seed ", seed, " outside [0, 2^32)");
  MK_CHECK((int64_t)stop_ids.size() <= MAX_STOP_IDS, op, ": ", stop_ids.size(), " stop ids; at most ", MAX_STOP_IDS);
  for (int64_t id : stop_ids) MK_CHECK(id >= 0 && id < VOCAB, op, ": stop id ", id, " outside [0, ", VOCAB, ")");
  int64_t* stream_ptr = nullptr;
  if (stream.numel()) {  // host memory the kernel writes as each step ends: pinned, mapped into the device's address space
    MK_CHECK(stream.device().is_cpu() && stream.is_pinned(), op, ": stream must be pinned host memory (pin_memory=True)");
    MK_CHECK(stream.scalar_type() == torch::kInt64 && stream.is_contiguous() && stream.numel() == steps * B, op,
                ": stream must be a contiguous int64 buffer of steps x B = ", steps * B, " words (got ", stream.scalar_type(),
                ", ", stream.numel(), ")");
    cudaPointerAttributes at{};
    const cudaError_t e = cudaPointerGetAttributes(&at, stream.data_ptr());
    if (e != cudaSuccess) cudaGetLastError();  // (clear it: reported below)
    MK_CHECK(e == cudaSuccess && at.type == cudaMemoryTypeHost && at.devicePointer != nullptr, op,
                ": stream's pinned memory is not mapped into the device's address space (",
                e == cudaSuccess ? "no device pointer" : cudaGetErrorString(e), ")");
    stream_ptr = static_cast<int64_t*>(at.devicePointer);
  }
  check_tensor(fault, op, "fault", torch::kInt64, {FAULT_WORDS});
  if (logits.numel()) check_tensor(logits, op, "logits", f32, {B, VOCAB});
  if (trace.numel()) check_tensor(trace, op, "trace", f32, {B, NLAYER + 2, D});
  MK_CHECK((int64_t)pos.size() == B, op, ": pos needs one entry per row (", B, "); got ", pos.size());
  MK_CHECK(positions_per_split >= 1 && positions_per_split <= (1 << 20), op, ": positions_per_split ", positions_per_split,
              " outside [1, 2^20]");
  if (times.numel()) check_tensor(times, op, "times", torch::kInt64, {times_words(static_cast<int>(grid))});
  for (const Tensor* t : {&lm_q, &lm_qs})
    MK_CHECK(!t->numel() || t->device() == layer_table.device(), op, ": every tensor must be on ", layer_table.device());
  for (const Tensor* t : {&embed, &lm_head, &final_norm, &dn_state, &conv_ring, &k_cache, &v_cache, &rope, &workspace, &sync, &token,
                          &next_token, &fault})
    MK_CHECK(t->device() == layer_table.device(), op, ": every tensor must be on ", layer_table.device());
  const int device = layer_table.device().index();
  const Config c = configured(device);
  const int max_grid = std::min(c.num_sms * std::min(c.blocks_per_sm, 1), MAX_GRID);
  MK_CHECK(grid >= 1 && grid <= max_grid, op, ": grid ", grid, " outside [1, ", max_grid, "] (blocks resident at once)");
  MK_CHECK(schedule == SCHEDULE_RING || schedule == SCHEDULE_REGISTER || schedule == SCHEDULE_STREAM_ONLY, op,
              ": schedule ", schedule, " is not one of ring (0), register (1), stream-only (2)");
  MK_CHECK(schedule != SCHEDULE_REGISTER || B == 1, op, ": the register schedule decodes batch 1 only; got batch ", B,
              " (the ring schedule takes 1..", MAX_BATCH, ")");
  const int fit = c.ring_slots[B - 1];
  MK_CHECK(schedule == SCHEDULE_REGISTER || (ring_slots >= RING_MIN_SLOTS && ring_slots <= fit), op,
              ": the ring schedule at batch ", B, " needs ", RING_MIN_SLOTS, "..", fit, " slots (configure() found room for ",
              fit, " on this GPU); got ring_slots ", ring_slots);
  for (int64_t b = 0; b < B; ++b) {
    MK_CHECK(pos[b] >= 0 && pos[b] + steps <= max_seq, op, ": pos[", b, "] = ", pos[b], " and ", steps,
                " step(s) outside [0, max_seq=", max_seq, ")");
  }
  MK_CHECK(stop_after >= -1 && stop_after < NPHASES, op, ": stop_after ", stop_after, " outside [-1, ", NPHASES, ")");
  Args a{};
  a.layers = ptr<const uint64_t>(layer_table);
  a.embed = ptr<const uint16_t>(embed);
  a.lm_head = ptr<const uint16_t>(lm_head);
  a.lm_q = lm_q.numel() ? reinterpret_cast<const uint16_t*>(ptr<uint8_t>(lm_q)) : nullptr;
  a.lm_qs = lm_qs.numel() ? reinterpret_cast<const float2*>(ptr<float>(lm_qs)) : nullptr;
  a.final_norm = ptr<const uint16_t>(final_norm);
  a.dn_state = ptr<float>(dn_state);
  a.conv_ring = ptr<uint16_t>(conv_ring);
  a.k_cache = ptr<uint16_t>(k_cache);
  a.v_cache = ptr<uint16_t>(v_cache);
  a.rope = ptr<const uint16_t>(rope);
  a.max_seq = static_cast<int>(max_seq);
  uint8_t* ws = ptr<uint8_t>(workspace);
  a.hidden = reinterpret_cast<float*>(ws + WS_HIDDEN);
  a.zab = reinterpret_cast<float*>(ws + WS_ZAB);
  a.obuf = ws + WS_OBUF;
  a.qkv = reinterpret_cast<float*>(ws + WS_QKV);
  a.attn = reinterpret_cast<uint16_t*>(ws + WS_ATTN);
  a.act = reinterpret_cast<uint16_t*>(ws + WS_ACT);
  a.apart = reinterpret_cast<float*>(ws + WS_APART);
  a.amax_val = reinterpret_cast<float*>(ws + WS_AMAX_VAL);
  a.amax_idx = reinterpret_cast<int*>(ws + WS_AMAX_IDX);
  a.sync = ptr<unsigned>(sync);
  a.token = ptr<const int64_t>(token);
  a.out_token = ptr<int64_t>(next_token);
  a.stream = stream_ptr;
  a.fault = ptr<int64_t>(fault);
  a.logits = ptr<float>(logits);
  a.trace = ptr<float>(trace);
  a.times = ptr<unsigned long long>(times);
  a.batch = static_cast<int>(B);
  a.positions_per_split = static_cast<int>(positions_per_split);
  for (int64_t b = 0; b < B; ++b) {
    a.pos[b] = static_cast<int>(pos[b]);
    a.nsplit[b] = attention_splits(a.pos[b], a.positions_per_split);
  }
  a.steps = static_cast<int>(steps);
  a.n_stop_ids = static_cast<int>(stop_ids.size());
  a.temperature = static_cast<float>(temperature);
  a.seed = static_cast<unsigned>(seed);
  for (size_t i = 0; i < stop_ids.size(); ++i) a.stop_ids[i] = static_cast<int>(stop_ids[i]);
  a.stop_after = static_cast<int>(stop_after);
  a.schedule = static_cast<int>(schedule);
  a.ring_slots = static_cast<int>(ring_slots);
  c10::cuda::CUDAGuard guard(layer_table.device());
  ok(launch(a, static_cast<int>(grid), stream_of(layer_table)), op);
}

// ---- prefill ------------------------------------------------------------------------------------
// (their state is reached through a device table of 5 pointers, the start and the valid tokens,
// prefill.cuh StateSlot, so one captured CUDA graph serves every state and start of a shape: what they read and write
// through it is not in their schemas; the prefill is a captured graph, not something torch.compile
// traces)
const auto BF = torch::kBFloat16;
const auto F32 = torch::kFloat32;
const auto I64 = torch::kInt64;
const auto I32 = torch::kInt32;

// the words' index of the ids' min (max after it) in a plan of T rows and `pieces` pieces (prefill.cuh BindWord)
int64_t range_word(int64_t T, int64_t pieces) { return T + mkp::ST_N + (mkp::BIND_USED_PIECES + pieces + 1) / 2; }

// What a bind launch is given (prefill.cuh BindArgs) for the prompt ids (CPU or CUDA int64 [1, n], contiguous) into a
// plan's words of T rows with `pieces` pieces of `piece` positions, checked; range_at -1 (no range asked).
mkp::BindArgs bind_args(const char* op, const Tensor& ids, const Tensor& words, c10::IntArrayRef table, int64_t T,
                        int64_t pieces, int64_t piece, int64_t max_seq) {
  MK_CHECK(ids.dim() == 2 && ids.size(0) == 1, op, ": ids must be the prompt [1, n], got ", ids.sizes());
  MK_CHECK(ids.scalar_type() == I64 && ids.is_contiguous(), op, ": ids must be contiguous int64 (got ", ids.scalar_type(), ")");
  MK_CHECK(ids.is_cpu() || ids.device() == words.device(), op, ": ids must be on the CPU or on words' device ",
           words.device(), " (got one on ", ids.device(), ")");
  const int64_t n = ids.size(1);
  MK_CHECK((int64_t)table.size() == mkp::ST_N, op, ": table needs ", static_cast<int>(mkp::ST_N), " values, got ",
           table.size());
  MK_CHECK(T >= 1 && n >= 1 && n <= T && table[mkp::ST_VALID] == n, op, ": a prompt of ", n, " ids (table's valid ",
           table[mkp::ST_VALID], ") into a plan of ", T, " rows");
  MK_CHECK(table[mkp::ST_START] >= 0 && table[mkp::ST_START] + n <= max_seq, op, ": ", n, " ids at position ",
           table[mkp::ST_START], " do not fit max_seq ", max_seq);
  MK_CHECK(table[mkp::ST_REFUSED] == 0, op, ": the table's refused word is the bind launch's to set (got ",
           table[mkp::ST_REFUSED], "; pass 0)");
  MK_CHECK(pieces >= 1 && piece >= 1 && pieces * piece >= max_seq && pieces <= 1024, op, ": ", pieces, " pieces of ", piece,
           " positions do not cover max_seq ", max_seq);
  check_tensor(words, op, "words", I64, {range_word(T, pieces) + mkp::BIND_RANGE_WORDS});
  mkp::BindArgs a{};
  for (int i = 0; i < mkp::ST_N; ++i) a.table[i] = table[i];
  a.T = static_cast<int>(T);
  a.pieces = static_cast<int>(pieces);
  a.piece = static_cast<int>(piece);
  a.max_seq = static_cast<int>(max_seq);
  a.range_at = -1;
  a.host_range = nullptr;
  return a;
}

// CPU ids into the first n words, in stream order: pageable memory is staged before the copy call returns; pinned
// memory is read by the copy itself, so the stream is synced before returning (the caller may then change or free
// them, as after torch's blocking copy)
void copy_cpu_ids(const char* op, const Tensor& ids, const Tensor& words, cudaStream_t s) {
  ok(cudaMemcpyAsync(ptr<int64_t>(words), ids.data_ptr<int64_t>(), ids.numel() * sizeof(int64_t), cudaMemcpyHostToDevice,
                     s), op);
  if (ids.is_pinned()) ok(cudaStreamSynchronize(s), op);
}

// The CPU ids' smallest and largest (n >= 1)
std::pair<int64_t, int64_t> cpu_range(const Tensor& ids) {
  const int64_t* p = ids.data_ptr<int64_t>();
  int64_t lo = p[0], hi = p[0];
  for (int64_t i = 1; i < ids.numel(); ++i) lo = std::min(lo, p[i]), hi = std::max(hi, p[i]);
  return {lo, hi};
}

// A pinned CPU int64 [BIND_HOST_WORDS] the bind kernel writes the device ids' min, max and the launch's seq into
// (BindArgs host_range)
void check_host_range(const Tensor& r, const char* op, const char* what) {
  MK_CHECK(r.is_cpu() && r.is_pinned() && r.scalar_type() == I64 && r.numel() == mkp::BIND_HOST_WORDS && r.is_contiguous(),
           op, ": ", what, " must be a contiguous pinned CPU int64 tensor of ", static_cast<int>(mkp::BIND_HOST_WORDS),
           " values");
}

// The prompt's ids (CPU or CUDA int64 [1, n]) into the plan's words, the table and flash's lengths by one launch, and,
// where id_range (a pinned CPU int64 [BIND_HOST_WORDS]) is given, the ids' smallest and largest into it, for the caller
// to check against the vocabulary: CPU ids are scanned here (before this returns), device ids by the bind launch,
// which stores them there itself (mapped pinned memory), not synced here: the caller waits for an event after this
// op. The launch that finds an id outside the vocabulary takes it as 0 and sets the table's ST_REFUSED, with which the
// kernels write nothing of the state (prefill.cuh). None given: the caller checked them already.
void prefill_bind(const Tensor& ids, const Tensor& words, const c10::optional<Tensor>& id_range, c10::IntArrayRef table,
                  int64_t T, int64_t pieces, int64_t piece, int64_t max_seq) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_bind";
  if (id_range) check_host_range(*id_range, op, "id_range");
  mkp::BindArgs a = bind_args(op, ids, words, table, T, pieces, piece, max_seq);
  c10::cuda::CUDAGuard guard(words.device());
  const cudaStream_t s = stream_of(words);
  if (ids.is_cpu()) {
    if (id_range) {
      const auto [lo, hi] = cpu_range(ids);
      id_range->data_ptr<int64_t>()[0] = lo;
      id_range->data_ptr<int64_t>()[1] = hi;
    }
    copy_cpu_ids(op, ids, words, s);
    ok(mkp::bind(ptr<int64_t>(words), ptr<int64_t>(words), a, s), op);
  } else {
    if (id_range) a.range_at = range_word(T, pieces), a.host_range = id_range->data_ptr<int64_t>();
    ok(mkp::bind(ptr<const int64_t>(ids), ptr<int64_t>(words), a, s), op);
  }
}

// cudaGraphLaunch; a failure cleared (so the next launch's check does not report it as its own) and, where the bind
// launch before it writes host memory, that launch waited for (nothing then writes into a plan's memory after a raise)
void launch_graph(cudaGraphExec_t graph, cudaStream_t s, bool bind_writes_host, const char* op) {
  const cudaError_t e = cudaGraphLaunch(graph, s);
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();
  if (bind_writes_host) (void)cudaStreamSynchronize(s);
  ok(e, op);
}

// The bind launch, then the instantiated prefill graph `exec` (torch.cuda.CUDAGraph's raw_cuda_graph_exec()), on the
// current stream: prefill_bind and a replay in one module function (not an op: no dispatcher; and not torch's
// replay, whose prologue fills the captured generators' seeds: the prefill graph draws none; NOTES "Prefill" v21).
// With host_range (a pinned CPU int64 [BIND_HOST_WORDS]) the ids are checked: CPU ids scanned here, and nothing is
// launched where they fall outside [0, vocab); device ids by the bind launch, which takes such ids as 0 and sets
// the table's ST_REFUSED (the graph then writes nothing of the state), stores their min and max into host_range and
// then `seq`, which this polls after launching the graph (the host waits for the bind launch, not the graph).
// -> [min, max] of the ids where host_range is given (the caller refuses them), else [].
std::vector<int64_t> launch_prefill_graph(int64_t exec, const Tensor& ids, const Tensor& words,
                                          const c10::optional<Tensor>& host_range, std::vector<int64_t> table, int64_t T,
                                          int64_t pieces, int64_t piece, int64_t max_seq, int64_t vocab, int64_t seq) {
  const char* op = "launch_prefill_graph";
  mkp::BindArgs a = bind_args(op, ids, words, table, T, pieces, piece, max_seq);
  if (host_range) check_host_range(*host_range, op, "host_range");
  c10::cuda::CUDAGuard guard(words.device());
  const cudaStream_t s = stream_of(words);
  const auto graph = reinterpret_cast<cudaGraphExec_t>(exec);
  if (ids.is_cpu()) {
    std::pair<int64_t, int64_t> r{0, 0};
    if (host_range && ((r = cpu_range(ids)).first < 0 || r.second >= vocab)) return {r.first, r.second};
    copy_cpu_ids(op, ids, words, s);
    ok(mkp::bind(ptr<int64_t>(words), ptr<int64_t>(words), a, s), op);
    launch_graph(graph, s, false, op);
    return host_range ? std::vector<int64_t>{r.first, r.second} : std::vector<int64_t>{};
  }
  int64_t* w = host_range ? host_range->data_ptr<int64_t>() : nullptr;  // (min, max, then this launch's seq: the
  if (w) a.range_at = range_word(T, pieces), a.host_range = w, a.seq = seq;  // plan's launches number them 1, 2, ...)
  ok(mkp::bind(ptr<const int64_t>(ids), ptr<int64_t>(words), a, s), op);
  launch_graph(graph, s, w != nullptr, op);
  if (!w) return {};
  {
    py::gil_scoped_release nogil;  // (behind a busy GPU this waits long: other Python threads and Ctrl-C go on)
    for (long spin = 1; __atomic_load_n(&w[2], __ATOMIC_ACQUIRE) != seq; ++spin) {
      if (spin % 4096 == 0) {  // (the stream idle or failed and no seq written: the bind launch never wrote it)
        const cudaError_t e = cudaStreamQuery(s);
        if (e != cudaErrorNotReady && __atomic_load_n(&w[2], __ATOMIC_ACQUIRE) != seq) {
          (void)cudaGetLastError();
          MK_CHECK(false, op, ": the bind launch did not report the ids' range (",
                   e == cudaSuccess ? "the stream is idle" : cudaGetErrorString(e), ")");
        }
        std::this_thread::yield();
      }
    }
  }
  return {w[0], w[1]};  // (read after the acquire of the seq the kernel stored after them)
}

void prefill_add_rms_norm(const c10::optional<Tensor>& x, const c10::optional<Tensor>& ids, const Tensor& embed,
                          const Tensor& residual, const Tensor& w, const Tensor& out, double eps) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_add_rms_norm";
  const int T = rows_of(out, mk::D, op, "out");
  check_tensor(residual, op, "residual", BF, {T, mk::D});
  check_tensor(out, op, "out", BF, {T, mk::D});
  check_tensor(embed, op, "embed", BF, {mk::VOCAB, mk::D});
  check_tensor(w, op, "w", BF, {mk::D});
  // x: a split-K GEMM's fp32 partials [splits, T, D] (1 <= splits <= 4); none where the GEMMs added into the
  // residual themselves (the plans past the split-K rows: prefill.py)
  const int splits = x && x->dim() == 3 ? static_cast<int>(x->size(0)) : 0;
  if (x) {
    MK_CHECK(x->scalar_type() == F32 && x->dim() == 3 && splits >= 1 && splits <= 4, op,
             ": x must be a split-K GEMM's partials, float32 [splits, ", T, ", ", mk::D, "] with 1 <= splits <= 4, got ",
             x->scalar_type(), " ", x->sizes());
    check_tensor(*x, op, "x", F32, {splits, T, mk::D});
  }
  if (ids) check_tensor(*ids, op, "ids", I64, {T});
  c10::cuda::CUDAGuard g(out.device());
  ok(mkp::add_rms_norm(x ? ptr<const float>(*x) : nullptr, splits,
                       ids ? ptr<const int64_t>(*ids) : nullptr, ptr<const uint16_t>(embed), ptr<uint16_t>(residual),
                       ptr<const uint16_t>(w), ptr<uint16_t>(out), T, static_cast<float>(eps), stream_of(out)), op);
}

void prefill_dn_prep(const Tensor& proj, const Tensor& table, int64_t layer, const Tensor& conv_w,
                     const Tensor& a_log, const Tensor& dt_bias, const Tensor& q, const Tensor& k, const Tensor& v,
                     const Tensor& g, const Tensor& beta, const Tensor& h0, int64_t g_chunk,
                     const c10::optional<Tensor>& A) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_dn_prep";
  const int T = rows_of(proj, mk::DN_WIN, op, "proj");
  check_tensor(proj, op, "proj", BF, {T, mk::DN_WIN});
  check_tensor(table, op, "state_table", I64, {mkp::ST_N});
  check_tensor(conv_w, op, "conv_w", BF, {mk::DN_CONV, mk::CONV_K});
  check_tensor(a_log, op, "A_log", BF, {mk::DN_HV});
  check_tensor(dt_bias, op, "dt_bias", BF, {mk::DN_HV});
  // the rule's rows R (q's): proj's T, then padding rows up to a whole number of the rule's chunks
  const int R = q.dim() == 4 ? static_cast<int>(q.size(1)) : T;
  MK_CHECK(T >= 1, op, ": proj has no rows (a prompt of at least one token expected)");
  MK_CHECK(R >= T && R - T < mkp::DN_GATE_ROWS, op, ": q has ", R, " rows for proj's ", T, "; expected T to T + ",
           mkp::DN_GATE_ROWS - 1, " (the rule's rows: T, then padding up to a whole chunk)");
  for (const auto& [t, what] : {std::pair{&q, "q"}, {&k, "k"}}) check_tensor(*t, op, what, BF, {1, R, mk::DN_HK, mk::DN_DK});
  check_tensor(v, op, "v", BF, {1, R, mk::DN_HV, mk::DN_DV});
  check_tensor(g, op, "g", F32, {1, R, mk::DN_HV});
  check_tensor(beta, op, "beta", F32, {1, R, mk::DN_HV});
  check_tensor(h0, op, "h0", F32, {1, mk::DN_HV, mk::DN_DV, mk::DN_DK});
  MK_CHECK(layer >= 0 && layer < mk::NDN, op, ": DeltaNet layer ", layer, " outside [0, ", mk::NDN, ")");
  MK_CHECK(g_chunk == 0 || g_chunk == mkp::DN_GATE_ROWS, op, ": g_chunk ", g_chunk, " is neither 0 (g itself) nor ",
              mkp::DN_GATE_ROWS, " (g summed within chunks of that many rows)");
  if (A) {  // (FlashQLA's chunk matrices: whole chunks of the rule's rows)
    MK_CHECK(R % mkp::DN_GATE_ROWS == 0, op, ": A asks for whole chunks of ", mkp::DN_GATE_ROWS, " rows; q has ", R,
             " rows");
    check_tensor(*A, op, "A", BF, {1, R, mk::DN_HV, mkp::DN_GATE_ROWS});
  }
  c10::cuda::CUDAGuard guard(proj.device());
  ok(mkp::dn_prep(ptr<const uint16_t>(proj), ptr<const int64_t>(table), layer, ptr<const uint16_t>(conv_w),
                  ptr<const uint16_t>(a_log), ptr<const uint16_t>(dt_bias), ptr<uint16_t>(q), ptr<uint16_t>(k), ptr<uint16_t>(v),
                  ptr<float>(g), ptr<float>(beta), ptr<float>(h0), A ? ptr<uint16_t>(*A) : nullptr, static_cast<int>(g_chunk),
                  T, R, stream_of(proj)), op);
}

void prefill_dn_out_norm(const Tensor& o, const Tensor& proj, const Tensor& w, const Tensor& final_state,
                         const Tensor& table, int64_t layer, const Tensor& out, double eps) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_dn_out_norm";
  const int T = rows_of(proj, mk::DN_WIN, op, "proj");
  check_tensor(proj, op, "proj", BF, {T, mk::DN_WIN});
  const int R = o.dim() == 4 ? static_cast<int>(o.size(1)) : T;  // (the rule's rows: T, or more as padding; the first T read)
  MK_CHECK(R >= T, op, ": o has ", R, " rows, fewer than proj's ", T);
  check_tensor(o, op, "o", BF, {1, R, mk::DN_HV, mk::DN_DV});
  check_tensor(w, op, "norm weight", BF, {mk::DN_DV});
  check_tensor(final_state, op, "final_state", F32, {1, mk::DN_HV, mk::DN_DV, mk::DN_DK});
  check_tensor(table, op, "state_table", I64, {mkp::ST_N});
  check_tensor(out, op, "out", BF, {T, mk::DN_VAL});
  MK_CHECK(layer >= 0 && layer < mk::NDN, op, ": DeltaNet layer ", layer, " outside [0, ", mk::NDN, ")");
  c10::cuda::CUDAGuard guard(proj.device());
  ok(mkp::dn_out_norm(ptr<const uint16_t>(o), ptr<const uint16_t>(proj), ptr<const uint16_t>(w), ptr<const float>(final_state),
                      ptr<const int64_t>(table), layer, ptr<uint16_t>(out), T, static_cast<float>(eps), stream_of(proj)), op);
}

void prefill_silu_mul(const Tensor& gate_up, const Tensor& out, const c10::optional<Tensor>& x, double eps) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_silu_mul";
  const int T = rows_of(gate_up, 2 * mk::INTER, op, "gate_up");
  check_tensor(gate_up, op, "gate_up", BF, {T, 2 * mk::INTER});
  check_tensor(out, op, "out", BF, {T, mk::INTER});
  if (x) check_tensor(*x, op, "x", BF, {T, mk::D});
  MK_CHECK(!x || eps > 0, op, ": x (the folded norm's input) needs the norm's eps > 0, got ", eps);
  c10::cuda::CUDAGuard guard(gate_up.device());
  ok(mkp::silu_mul(ptr<const uint16_t>(gate_up), x ? ptr<const uint16_t>(*x) : nullptr, ptr<uint16_t>(out), T,
                   static_cast<float>(eps), stream_of(gate_up)), op);
}

void prefill_attn_prep(const Tensor& proj, const Tensor& q_w, const Tensor& k_w, const Tensor& table, int64_t layer,
                       int64_t max_seq, const Tensor& qbuf, const Tensor& kv, double eps, const c10::optional<Tensor>& x) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_attn_prep";
  const int T = rows_of(proj, mk::FA_QKV, op, "proj");
  check_tensor(proj, op, "proj", BF, {T, mk::FA_QKV});
  check_tensor(q_w, op, "q_norm", BF, {mk::FA_HD});
  check_tensor(k_w, op, "k_norm", BF, {mk::FA_HD});
  check_tensor(table, op, "state_table", I64, {mkp::ST_N});
  check_tensor(qbuf, op, "qbuf", BF, {T, mk::FA_HQ, mk::FA_HD});
  check_tensor(kv, op, "kv", BF, {2, max_seq, mk::FA_HKV, mk::FA_HD});
  MK_CHECK(layer >= 0 && layer < mk::NFA, op, ": attention layer ", layer, " outside [0, ", mk::NFA, ")");
  MK_CHECK(T <= max_seq, op, ": ", T, " tokens do not fit max_seq ", max_seq);  // (start + T: the host's bind())
  if (x) check_tensor(*x, op, "x", BF, {T, mk::D});
  MK_CHECK(!x || eps > 0, op, ": x (the folded norm's input) needs the norm's eps > 0, got ", eps);
  c10::cuda::CUDAGuard guard(proj.device());
  ok(mkp::attn_prep(ptr<uint16_t>(proj), ptr<const uint16_t>(q_w), ptr<const uint16_t>(k_w), ptr<const int64_t>(table),
                    layer, max_seq, ptr<uint16_t>(qbuf), ptr<uint16_t>(kv), x ? ptr<const uint16_t>(*x) : nullptr, T,
                    static_cast<float>(eps), stream_of(proj)),
     op);
}

void prefill_kv_prefix(const Tensor& table, int64_t layer, int64_t max_seq, const Tensor& kv) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_kv_prefix";
  check_tensor(table, op, "state_table", I64, {mkp::ST_N});
  check_tensor(kv, op, "kv", BF, {2, max_seq, mk::FA_HKV, mk::FA_HD});
  MK_CHECK(layer >= 0 && layer < mk::NFA, op, ": attention layer ", layer, " outside [0, ", mk::NFA, ")");
  c10::cuda::CUDAGuard guard(kv.device());
  ok(mkp::kv_prefix(ptr<const int64_t>(table), layer, max_seq, ptr<uint16_t>(kv), stream_of(kv)), op);
}

void prefill_attn_gate(const Tensor& o, const Tensor& proj, const Tensor& table, const Tensor& out) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_attn_gate";
  const int T = rows_of(proj, mk::FA_QKV, op, "proj");
  MK_CHECK(o.is_cuda() && o.scalar_type() == BF && o.dim() == 3 && o.size(0) == T && o.size(1) == mk::FA_HQ &&
                  o.size(2) == mk::FA_HD && o.stride(2) == 1,
              op, ": o must be a CUDA bfloat16 [T, ", mk::FA_HQ, ", ", mk::FA_HD, "] tensor with unit last stride (got ",
              o.sizes(), ")");
  check_tensor(proj, op, "proj", BF, {T, mk::FA_QKV});
  check_tensor(out, op, "out", BF, {T, mk::FA_OIN});
  c10::cuda::CUDAGuard guard(proj.device());
  check_tensor(table, op, "state_table", I64, {mkp::ST_N});
  ok(mkp::attn_gate(reinterpret_cast<const uint16_t*>(o.data_ptr()), o.stride(1), o.stride(0), ptr<const uint16_t>(proj),
                    ptr<const int64_t>(table), ptr<uint16_t>(out), T, stream_of(proj)), op);
}

// out [M][N] = x [M][K] . w[N][K]^T + beta out with a cuBLASLt algorithm (algo: its 8 words, as gemm_lt_candidates gave
// them, on the CPU) and a workspace (CUDA bytes; at most what the candidates were asked to need)
void prefill_gemm_lt(const Tensor& x, const Tensor& w, const Tensor& out, double beta, const Tensor& algo,
                     const Tensor& workspace) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_gemm_lt";
  MK_CHECK(x.dim() == 2 && w.dim() == 2 && out.dim() == 2, op, ": x [M, K], w [N, K] and out [M, N] expected, got ",
           x.sizes(), ", ", w.sizes(), " and ", out.sizes());
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  MK_CHECK(w.size(1) == K && out.size(0) == M && out.size(1) == N, op, ": x ", x.sizes(), " . w ", w.sizes(),
           "^T does not give out's ", out.sizes());
  for (const Tensor* t : {&x, &w, &out}) {
    MK_CHECK(t->scalar_type() == BF, op, ": x, w and out must be bf16 (got ", t->scalar_type(), ")");
    MK_CHECK(t->device() == out.device() && out.is_cuda(), op, ": x, w and out must be on one CUDA device");
  }
  MK_CHECK(K > 0, op, ": K = 0 (x ", x.sizes(), ")");
  MK_CHECK(x.stride(1) == 1 && out.stride(1) == 1 && w.is_contiguous() && x.stride(0) >= K && out.stride(0) >= N, op,
           ": x and out need rows of unit stride, w contiguous (strides ", x.strides(), ", ", out.strides(), ", ",
           w.strides(), ")");
  const auto span = [](const Tensor& t) {  // [first, last) byte of a 2-d view
    const char* p = static_cast<const char*>(t.data_ptr());
    return std::make_pair(p, p + ((t.size(0) - 1) * t.stride(0) + t.size(1)) * t.element_size());
  };
  for (const Tensor* t : {&x, &w}) {
    const auto [a0, a1] = span(*t);
    const auto [o0, o1] = span(out);
    MK_CHECK(a1 <= o0 || o1 <= a0 || t->numel() == 0 || out.numel() == 0, op, ": out overlaps ",
             t == &x ? "x" : "w", " (the product would read what it writes)");
  }
  MK_CHECK(algo.device().is_cpu() && algo.scalar_type() == I64 && algo.is_contiguous() && algo.numel() == 8, op,
           ": algo must be the 8 int64 words of a gemm_lt_candidates entry, on the CPU (got ", algo.scalar_type(), " ",
           algo.sizes(), " on ", algo.device(), ")");
  MK_CHECK(workspace.device() == out.device() && workspace.scalar_type() == torch::kUInt8 && workspace.is_contiguous(), op,
           ": workspace must be contiguous uint8 on out's device");
  if (M == 0 || N == 0) return;
  mkl::Algo a;
  std::memcpy(a.data, algo.data_ptr<int64_t>(), sizeof a.data);
  c10::cuda::CUDAGuard guard(out.device());
  const std::string e = mkl::run({M, N, K, x.stride(0), out.stride(0)}, a, x.data_ptr(), w.data_ptr(), out.data_ptr(),
                                 static_cast<float>(beta), workspace.numel() ? workspace.data_ptr() : nullptr,
                                 static_cast<size_t>(workspace.numel()), stream_of(out));
  MK_CHECK(e.empty(), op, ": ", e);
}

// up to `count` of cuBLASLt's heuristic algorithms (8 words each) for out [M][N] = x [M][K] . w[N][K]^T with rows lda
// / ldc apart, needing at most workspace_bytes, for x, w and out aligned to align_* bytes: its best first; [] where
// cuBLASLt offers none
std::vector<std::vector<int64_t>> gemm_lt_candidates(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldc,
                                                     int64_t count, int64_t workspace_bytes, int64_t align_x,
                                                     int64_t align_w, int64_t align_out) {
  const char* op = "gemm_lt_candidates";
  MK_CHECK(M > 0 && N > 0 && K > 0 && lda >= K && ldc >= N && count > 0 && workspace_bytes >= 0, op,
           ": M, N, K > 0, lda >= K, ldc >= N, count > 0, workspace_bytes >= 0 expected (got M ", M, ", N ", N, ", K ", K,
           ", lda ", lda, ", ldc ", ldc, ", count ", count, ", workspace_bytes ", workspace_bytes, ")");
  for (const int64_t a : {align_x, align_w, align_out})
    MK_CHECK(a >= 1 && a <= 256 && (a & (a - 1)) == 0, op, ": alignments are powers of two up to 256 (got ", a, ")");
  std::string error;
  const std::vector<mkl::Algo> found = mkl::candidates(
      {M, N, K, lda, ldc}, static_cast<int>(count), static_cast<size_t>(workspace_bytes), static_cast<uint32_t>(align_x),
      static_cast<uint32_t>(align_w), static_cast<uint32_t>(align_out), error);
  MK_CHECK(error.empty(), op, ": ", error);
  std::vector<std::vector<int64_t>> out;
  for (const mkl::Algo& a : found) out.emplace_back(reinterpret_cast<const int64_t*>(a.data), reinterpret_cast<const int64_t*>(a.data) + 8);
  return out;
}

void prefill_attn_merge_gate(const Tensor& o_ctx, const Tensor& lse_ctx, const Tensor& o_new, const Tensor& lse_new,
                             const Tensor& proj, const Tensor& table, const Tensor& out) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_attn_merge_gate";
  const int T = rows_of(proj, mk::FA_QKV, op, "proj");
  MK_CHECK(lse_ctx.is_cuda() && lse_ctx.scalar_type() == F32 && lse_ctx.dim() == 3 && lse_ctx.size(1) == mk::FA_HQ &&
                  lse_ctx.size(2) == T,
              op, ": lse_ctx must be a CUDA float32 [S, ", mk::FA_HQ, ", T] tensor (got ", lse_ctx.sizes(), ")");
  const int S = static_cast<int>(lse_ctx.size(0));
  check_tensor(o_ctx, op, "o_ctx", BF, {S * T, mk::FA_HQ, mk::FA_HD});
  check_tensor(o_new, op, "o_new", BF, {T, mk::FA_HQ, mk::FA_HD});
  MK_CHECK(lse_new.is_cuda() && lse_new.scalar_type() == F32 && lse_new.dim() == 2 && lse_new.size(0) == mk::FA_HQ &&
                  lse_new.size(1) == T,
              op, ": lse_new must be a CUDA float32 [", mk::FA_HQ, ", T] tensor (got ", lse_new.sizes(), ")");
  check_tensor(proj, op, "proj", BF, {T, mk::FA_QKV});
  check_tensor(out, op, "out", BF, {T, mk::FA_OIN});
  check_tensor(table, op, "state_table", I64, {mkp::ST_N});
  c10::cuda::CUDAGuard guard(proj.device());
  ok(mkp::attn_merge_gate(ptr<const uint16_t>(o_ctx), lse_ctx.data_ptr<float>(), lse_ctx.stride(0), lse_ctx.stride(1),
                          lse_ctx.stride(2), S, ptr<const uint16_t>(o_new), lse_new.data_ptr<float>(), lse_new.stride(0),
                          lse_new.stride(1), ptr<const uint16_t>(proj), ptr<const int64_t>(table), ptr<uint16_t>(out), T,
                          stream_of(proj)), op);
}

void prefill_attn_last_row(const Tensor& qbuf, const Tensor& kv, const Tensor& proj, const Tensor& table, const Tensor& part,
                           const Tensor& count, const Tensor& out, int64_t keys_per_block) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_attn_last_row";
  const int T = rows_of(proj, mk::FA_QKV, op, "proj");
  check_tensor(proj, op, "proj", BF, {T, mk::FA_QKV});
  check_tensor(qbuf, op, "qbuf", BF, {T, mk::FA_HQ, mk::FA_HD});
  MK_CHECK(kv.dim() == 4 && kv.size(0) == 2, op, ": kv is not a [2, max_seq, ", mk::FA_HKV, ", ", mk::FA_HD, "] buffer (",
           kv.sizes(), ")");
  const int64_t max_seq = kv.size(1);
  check_tensor(kv, op, "kv", BF, {2, max_seq, mk::FA_HKV, mk::FA_HD});
  constexpr int64_t part_w = mkp::LAST_ROW_PART_HEAD + mk::FA_HD;  // a partial: max, sum, 2 unused, o (ALR_PART)
  MK_CHECK(part.dim() == 4 && part.size(1) >= 1, op, ": part is not a [", mk::FA_HKV, ", splits, ", mk::FA_GROUP, ", ",
           part_w, "] buffer (", part.sizes(), ")");
  const int64_t splits = part.size(1);
  MK_CHECK(splits <= mkp::LAST_ROW_MAX_SPLITS, op, ": part holds ", splits, " splits; at most ", mkp::LAST_ROW_MAX_SPLITS);
  check_tensor(part, op, "part", F32, {mk::FA_HKV, splits, mk::FA_GROUP, part_w});
  check_tensor(count, op, "count", I32, {mk::FA_HKV});
  check_tensor(table, op, "state_table", I64, {mkp::ST_N});
  check_tensor(out, op, "out", BF, {T, mk::FA_OIN});
  MK_CHECK(keys_per_block >= 1 && splits * keys_per_block + max_seq < (int64_t{1} << 31), op, ": keys_per_block ",
           keys_per_block, " must be >= 1 (and splits x keys_per_block + max_seq below 2^31)");
  c10::cuda::CUDAGuard guard(proj.device());
  ok(mkp::attn_last_row(ptr<const uint16_t>(qbuf), ptr<const uint16_t>(kv), static_cast<int>(max_seq), ptr<const uint16_t>(proj),
                        ptr<const int64_t>(table), ptr<float>(part), ptr<int>(count), ptr<uint16_t>(out),
                        static_cast<int>(splits), static_cast<int>(keys_per_block), stream_of(proj)),
     op);
}

void prefill_gemv_add_row(const Tensor& x, const Tensor& w, const Tensor& res) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_gemv_add_row";
  MK_CHECK(w.dim() == 2 && (w.size(1) == mk::FA_OIN || w.size(1) == mk::INTER), op, ": w has shape ", w.sizes(),
           "; expected [", mk::D, ", K] with K = ", mk::FA_OIN, " (an out-projection) or ", mk::INTER, " (down)");
  const int64_t K = w.size(1);
  check_tensor(w, op, "w", BF, {mk::D, K});
  check_tensor(x, op, "x", BF, {1, K});
  check_tensor(res, op, "res", BF, {1, mk::D});
  c10::cuda::CUDAGuard guard(x.device());
  ok(mkp::gemv_add_row(ptr<const uint16_t>(x), ptr<const uint16_t>(w), ptr<uint16_t>(res), static_cast<int>(K), stream_of(x)), op);
}

void prefill_gate_up_swiglu_row(const Tensor& x, const Tensor& w, const Tensor& act, double eps) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_gate_up_swiglu_row";
  check_tensor(x, op, "x", BF, {1, mk::D});
  check_tensor(w, op, "w", BF, {2 * mk::INTER, mk::D});
  check_tensor(act, op, "act", BF, {1, mk::INTER});
  MK_CHECK(eps > 0, op, ": the folded norm's eps must be > 0, got ", eps);
  c10::cuda::CUDAGuard guard(x.device());
  ok(mkp::gate_up_swiglu_row(ptr<const uint16_t>(x), ptr<const uint16_t>(w), ptr<uint16_t>(act), static_cast<float>(eps),
                             stream_of(x)), op);
}

void prefill_lm_head(const Tensor& rows, const Tensor& table, const Tensor& w, const Tensor& logits) {
  const char* op = MK_STR(MK_OPS_NAMESPACE) ".prefill_lm_head";
  const int T = rows_of(rows, mk::D, op, "rows");
  check_tensor(rows, op, "rows", BF, {T, mk::D});
  check_tensor(table, op, "state_table", I64, {mkp::ST_N});
  check_tensor(w, op, "w", BF, {mk::VOCAB, mk::D});
  check_tensor(logits, op, "logits", F32, {mk::VOCAB});
  c10::cuda::CUDAGuard guard(rows.device());
  ok(mkp::lm_head(ptr<const uint16_t>(rows), ptr<const int64_t>(table), ptr<const uint16_t>(w), ptr<float>(logits), mk::VOCAB,
                  stream_of(rows)), op);
}

// ---- every number of shapes.cuh, for the Python side ------------------------------------------------
template <class T>
py::object number(T v) {
  if constexpr (std::is_enum_v<T>) return py::int_(static_cast<int>(v));
  else return py::cast(v);
}

py::dict constants() {
  using namespace mk;
  py::dict d;
#define MK_EXPORT(name) d[#name] = number(name)
  MK_EXPORT(D); MK_EXPORT(INTER); MK_EXPORT(VOCAB); MK_EXPORT(NLAYER);
  MK_EXPORT(TIED); MK_EXPORT(DN_HK); MK_EXPORT(DN_HV); MK_EXPORT(DN_GROUP); MK_EXPORT(DN_DK); MK_EXPORT(DN_DV); MK_EXPORT(CONV_K); MK_EXPORT(FA_HQ); MK_EXPORT(FA_HKV);
  MK_EXPORT(FA_HD); MK_EXPORT(FA_ROT); MK_EXPORT(RMS_EPS); MK_EXPORT(NFA); MK_EXPORT(NDN);
  MK_EXPORT(DN_KEY); MK_EXPORT(DN_VAL); MK_EXPORT(DN_CONV); MK_EXPORT(DN_WIN_Z); MK_EXPORT(DN_WIN_B); MK_EXPORT(DN_WIN_A);
  MK_EXPORT(DN_WIN); MK_EXPORT(FA_GROUP); MK_EXPORT(FA_WIN_K); MK_EXPORT(FA_WIN_V); MK_EXPORT(FA_QKV); MK_EXPORT(FA_OIN);
  MK_EXPORT(THREADS); MK_EXPORT(NWARPS); MK_EXPORT(PHASES_PER_LAYER); MK_EXPORT(NPHASES); MK_EXPORT(NBARRIERS);
  MK_EXPORT(DN_VSLICES); MK_EXPORT(DN_UNITS); MK_EXPORT(ATT_MAX_SPLIT); MK_EXPORT(ATT_PART); MK_EXPORT(OUT_MERGE_MAX);
  MK_EXPORT(MAX_GRID); MK_EXPORT(MAX_BATCH); MK_EXPORT(MAX_STOP_IDS); MK_EXPORT(STEP_BARRIERS); MK_EXPORT(ZAB_W); MK_EXPORT(APART_W); MK_EXPORT(RING_SLOT); MK_EXPORT(RING_MIN_SLOTS); MK_EXPORT(RING_MAX_SLOTS);
  MK_EXPORT(PIECE); MK_EXPORT(D_PIECES); MK_EXPORT(BATCH_SHAPES); MK_EXPORT(LM_I8); MK_EXPORT(LM_CAND_CAP);
  MK_EXPORT(SCHEDULE_RING); MK_EXPORT(SCHEDULE_REGISTER); MK_EXPORT(SCHEDULE_STREAM_ONLY);
  MK_EXPORT(SL_IN_NORM); MK_EXPORT(SL_POST_NORM); MK_EXPORT(SL_WIN); MK_EXPORT(SL_CONV_W); MK_EXPORT(SL_A_LOG);
  MK_EXPORT(SL_DT_BIAS); MK_EXPORT(SL_GNORM); MK_EXPORT(SL_Q_NORM); MK_EXPORT(SL_K_NORM); MK_EXPORT(SL_OUT);
  MK_EXPORT(SL_GATE_UP); MK_EXPORT(SL_DOWN); MK_EXPORT(NSLOT);
  MK_EXPORT(WS_HIDDEN); MK_EXPORT(WS_ZAB); MK_EXPORT(WS_OBUF); MK_EXPORT(WS_QKV); MK_EXPORT(WS_ATTN); MK_EXPORT(WS_ACT);
  MK_EXPORT(WS_APART); MK_EXPORT(WS_AMAX_VAL); MK_EXPORT(WS_AMAX_IDX); MK_EXPORT(WS_BYTES);
  MK_EXPORT(SYNC_BAR); MK_EXPORT(SYNC_EPOCH); MK_EXPORT(SYNC_LAST); MK_EXPORT(SYNC_ATT); MK_EXPORT(SYNC_WORDS);
  MK_EXPORT(UNIT_STAMPS); MK_EXPORT(DN_STAMPS); MK_EXPORT(DN_STAMPS_AT); MK_EXPORT(NTIMES);
  MK_EXPORT(FAULT_WORDS); MK_EXPORT(FAULT_NONE); MK_EXPORT(FAULT_TOKEN); MK_EXPORT(FAULT_POSITION);
#undef MK_EXPORT
  py::list kinds;
  for (int l = 0; l < NLAYER; ++l) kinds.append(is_full_attention(l) ? "full_attention" : "linear_attention");
  d["LAYER_TYPES"] = kinds;
  d["NAMESPACE"] = MK_STR(MK_OPS_NAMESPACE);
  d["PREFILL_STATE_SLOTS"] = static_cast<int>(mkp::ST_N);
  d["PREFILL_STATE_START"] = static_cast<int>(mkp::ST_START);
  d["PREFILL_STATE_VALID"] = static_cast<int>(mkp::ST_VALID);
  d["PREFILL_STATE_REFUSED"] = static_cast<int>(mkp::ST_REFUSED);
  d["PREFILL_BIND_USED"] = static_cast<int>(mkp::BIND_USED);
  d["PREFILL_BIND_CU_Q"] = static_cast<int>(mkp::BIND_CU_Q);
  d["PREFILL_BIND_CU_NEW"] = static_cast<int>(mkp::BIND_CU_NEW);
  d["PREFILL_BIND_USED_PIECES"] = static_cast<int>(mkp::BIND_USED_PIECES);
  d["PREFILL_BIND_RANGE_WORDS"] = static_cast<int>(mkp::BIND_RANGE_WORDS);
  d["PREFILL_BIND_HOST_WORDS"] = static_cast<int>(mkp::BIND_HOST_WORDS);
  d["PREFILL_LAST_ROW_MAX_SPLITS"] = mkp::LAST_ROW_MAX_SPLITS;
  d["PREFILL_LAST_ROW_PART_HEAD"] = mkp::LAST_ROW_PART_HEAD;
  d["PREFILL_WY_ROWS"] = mkp::DN_GATE_ROWS;  // (dn_prep's chunk matrices A: a chunk's rows)
  return d;
}

}  // namespace

MK_TORCH_LIBRARY(MK_OPS_NAMESPACE, m) {
  m.def(
      "decode(Tensor layer_table, Tensor embed, Tensor lm_head, Tensor lm_q, Tensor lm_qs, Tensor final_norm, Tensor(a!) dn_state, Tensor(b!) conv_ring, "
      "Tensor(c!) k_cache, Tensor(d!) v_cache, Tensor rope, Tensor(e!) workspace, Tensor(f!) sync, Tensor token, "
      "Tensor(g!) next_token, Tensor(k!) fault, Tensor(h!) logits, Tensor(i!) trace, Tensor(j!) times, Tensor(l!) stream, "
      "int[] pos, int positions_per_split, int steps, int[] stop_ids, float temperature, int seed, int grid, int schedule, "
      "int ring_slots, int stop_after) -> ()");
  m.def("prefill_bind(Tensor ids, Tensor(a!) words, Tensor(b!)? id_range, int[] table, int T, int pieces, int piece, "
        "int max_seq) -> ()");
  m.def("prefill_add_rms_norm(Tensor? x, Tensor? ids, Tensor embed, Tensor(a!) residual, Tensor w, Tensor(b!) out, "
        "float eps) -> ()");
  m.def("prefill_dn_prep(Tensor proj, Tensor state_table, int layer, Tensor conv_w, Tensor a_log, "
        "Tensor dt_bias, Tensor(a!) q, Tensor(b!) k, Tensor(c!) v, Tensor(d!) g, Tensor(e!) beta, Tensor(f!) h0, "
        "int g_chunk, Tensor(g!)? A=None) -> ()");
  m.def("prefill_dn_out_norm(Tensor o, Tensor proj, Tensor w, Tensor final_state, Tensor state_table, int layer, "
        "Tensor(a!) out, float eps) -> ()");
  m.def("prefill_silu_mul(Tensor gate_up, Tensor(a!) out, Tensor? x=None, float eps=0.) -> ()");
  m.def("prefill_attn_prep(Tensor(c!) proj, Tensor q_w, Tensor k_w, Tensor state_table, int layer, int max_seq, "
        "Tensor(a!) qbuf, Tensor(b!) kv, float eps, Tensor? x=None) -> ()");
  m.def("prefill_kv_prefix(Tensor state_table, int layer, int max_seq, Tensor(a!) kv) -> ()");
  m.def("prefill_attn_gate(Tensor o, Tensor proj, Tensor state_table, Tensor(a!) out) -> ()");
  m.def("prefill_gemm_lt(Tensor x, Tensor w, Tensor(a!) out, float beta, Tensor algo, Tensor(b!) workspace) -> ()");
  m.def("prefill_attn_merge_gate(Tensor o_ctx, Tensor lse_ctx, Tensor o_new, Tensor lse_new, Tensor proj, "
        "Tensor state_table, Tensor(a!) out) -> ()");
  m.def("prefill_attn_last_row(Tensor qbuf, Tensor kv, Tensor proj, Tensor state_table, Tensor(a!) part, "
        "Tensor(b!) count, Tensor(c!) out, int keys_per_block) -> ()");
  m.def("prefill_gemv_add_row(Tensor x, Tensor w, Tensor(a!) res) -> ()");
  m.def("prefill_gate_up_swiglu_row(Tensor x, Tensor w, Tensor(a!) act, float eps) -> ()");
  m.def("prefill_lm_head(Tensor rows, Tensor state_table, Tensor w, Tensor(a!) logits) -> ()");
}

MK_TORCH_LIBRARY_IMPL(MK_OPS_NAMESPACE, CUDA, m) {
  m.impl("decode", &decode);
  m.impl("prefill_bind", &prefill_bind);
  m.impl("prefill_add_rms_norm", &prefill_add_rms_norm);
  m.impl("prefill_dn_prep", &prefill_dn_prep);
  m.impl("prefill_dn_out_norm", &prefill_dn_out_norm);
  m.impl("prefill_silu_mul", &prefill_silu_mul);
  m.impl("prefill_attn_prep", &prefill_attn_prep);
  m.impl("prefill_kv_prefix", &prefill_kv_prefix);
  m.impl("prefill_attn_gate", &prefill_attn_gate);
  m.impl("prefill_gemm_lt", &prefill_gemm_lt);
  m.impl("prefill_attn_merge_gate", &prefill_attn_merge_gate);
  m.impl("prefill_attn_last_row", &prefill_attn_last_row);
  m.impl("prefill_gemv_add_row", &prefill_gemv_add_row);
  m.impl("prefill_gate_up_swiglu_row", &prefill_gate_up_swiglu_row);
  m.impl("prefill_lm_head", &prefill_lm_head);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "Qwen3.5 megakernel tier (one build per shape): the ops are torch.ops.<constants()['NAMESPACE']>.*";
  m.def("configure", &configure_py, "set the kernels' shared-memory limits on a device (once) -> what fits there");
  m.def("constants", &constants, "every number of csrc/shapes.cuh");
  m.def("launch_prefill_graph", &launch_prefill_graph,
        "the bind launch, then an instantiated prefill graph (exec, ids, words, host_range, table, T, pieces, piece, "
        "max_seq, vocab, seq) -> the ids' [min, max] where host_range is given, else []");
  m.def("gemm_lt_candidates", &gemm_lt_candidates,
        "cuBLASLt's heuristic algorithms (8 int64 words each, its best first) for out[M][N] = x[M][K] . w[N][K]^T "
        "(M, N, K, lda, ldc, count, workspace_bytes, align_x, align_w, align_out)");
}
