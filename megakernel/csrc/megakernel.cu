// Qwen3.5 decode megakernel (compiled per model size, shapes.cuh; the 0.8B's numbers below): one
// persistent launch runs a decode step (of each of the batch's 1..8 rows, every weight read once for
// all of them): the embedding rows, the 18 Gated DeltaNet and 6 gated attention layers, the final norm, the lm_head and the greedy argmax (and writes the
// logits, the per-layer hidden states and globaltimer stamps when asked) -- or many steps, each
// fed the last one's argmax on the device, until a.steps or until every row produced a stop id
// (each step's ids written to a host-mapped stream as the step ends).
// This file holds the phase loop, configure() and launch(); the design in two pages:
// megakernel/DESIGN.md; the measurements that chose it: megakernel/NOTES.md.
//
// Who owns what
//   grid    one block per SM, all resident (cooperative launch); block b owns a contiguous slice
//           of every matrix's rows (schedule.cuh phase_slice) and units b, b+G, ... of each core.
//   phase   schedule.cuh: 5 per layer and the lm_head; a grid barrier (grid_sync.cuh) after every
//           layer phase (and, between the steps of a many-token launch, after the lm_head: every
//           block then reduces the argmax itself, lm_head.cuh). Every block recomputes the RMSNorm
//           of the D-wide hidden state itself.
//   block   16 compute warps (512 threads); in the ring schedule a 17th warp, the producer, streams
//           the block's weights into shared memory ahead of the phases (weight_ring.cuh), and
//           BAR_POLLERS more warps poll the grid barrier's counter for the compute warps (grid_sync.cuh).
//   warp    matrix phases: matvec.cuh (a batch: matvec_mma.cuh); the DeltaNet core: delta_rule.cuh; the attention core:
//           gated_attention.cuh; the lm_head and argmax: lm_head.cuh.
// Between a barrier's arrive and its wait every warp loads what the next phase starts with and no
// block writes in this phase (prepare_phase): the ring schedule the core's state row, conv taps and
// past inputs and the phase's norm / RoPE parameters; the register schedule its first weights. (The
// ring's producer runs on through the barriers: it also copies an attention core's past K/V rows and a batch's
// DeltaNet state rows, schedule.cuh att_kv_slice, dn_state_slice, while the in-projection before it still runs.)
#include "megakernel.cuh"

#include "delta_rule.cuh"
#include "gated_attention.cuh"
#include "lm_head.cuh"
#include "mlp.cuh"
#include "step_check.cuh"

namespace mk {
namespace {

// Before the barrier that precedes phase q (or at the launch's start for q = 0): wv[0..3] = the
// inputs of the block's first DeltaNet unit when q is a DeltaNet core (a batch: wv[0], delta_rule.cuh
// head_inputs); the ring schedule also wv[4] = phase_params(q); the register
// schedule each warp's first item of q's weights.
template <bool RING, int NB>
__device__ __forceinline__ void prepare_phase(const Args& a, int q, int step, uint4 (&wv)[16]) {
  if (q >= NPHASES) return;
  const int kind = phase_kind(q), l = phase_layer(q);
  const int dn_units = NB == 1 ? DN_UNITS : NB * DN_HV;
  const bool dn_core = !is_lm_head(q) && kind == PH_CORE && !is_full_attention(l) && (int)blockIdx.x < dn_units;
  if (dn_core && NB == 1) {
    uint4 in[4];
    core_inputs(a, l, step, blockIdx.x, in);
#pragma unroll
    for (int i = 0; i < 4; ++i) wv[i] = in[i];
  } else if (dn_core) {  // a batch: the block's first (row, head) unit (delta_rule.cuh dn_core_heads)
    head_inputs(a, l, step, blockIdx.x, wv[0]);
  }
  if constexpr (RING) wv[4] = phase_params(a, q, step);
  else if (is_lm_head(q) || kind != PH_CORE) issue_first_item(is_lm_head(q) ? PH_IN_PROJ : kind, phase_slice<NB>(a, q, step), wv);
}

// where phase q's weights come from in this schedule (matvec.cuh)
template <bool RING>
struct LoaderOf;
template <>
struct LoaderOf<true> {
  __device__ __forceinline__ static RingLoader make(const Args&, int, int, Stream& st) { return RingLoader{st}; }
};
template <>
struct LoaderOf<false> {
  __device__ __forceinline__ static RegisterLoader make(const Args& a, int q, int step, Stream&) {
    return RegisterLoader{phase_slice<1>(a, q, step), true};  // (the register schedule: batch 1 only)
  }
};

// phase q of a layer, at step `step` of the launch
template <bool RING, int NB, bool MANY>
__device__ __forceinline__ void run_phase(const Args& a, int q, int step, uint8_t* sm, uint4 (&wv)[16], Stream& st,
                                          const uint4 params) {
  const int l = phase_layer(q);
  if constexpr (NB > 1) {  // a batch: the next DeltaNet core's state into L2 as the gate/up before it begins (from
                           // DN_STATE_RING_MIN_BATCH rows on only units after the block's first: its first comes through the ring)
    if (threadIdx.x == 0) {
      const int u0 = blockIdx.x + (NB >= DN_STATE_RING_MIN_BATCH ? gridDim.x : 0);
      if (q == 0 && !is_full_attention(0)) prefetch_core_state_l2<NB>(a, 0, u0);  // (layer 0's as its in-proj begins)
      if (phase_kind(q) == PH_GATE_UP && l + 1 < NLAYER && !is_full_attention(l + 1)) prefetch_core_state_l2<NB>(a, l + 1, u0);
    }
  }
  if (phase_kind(q) == PH_CORE) {
    if (is_full_attention(l)) gated_attention<RING, NB>(a, l, step, sm, params, st);
    else gated_delta_rule_recurrent<NB, RING && !MANY>(a, l, step, sm, wv, st);
    return;
  }
  auto ld = LoaderOf<RING>::make(a, q, step, st);
  switch (phase_kind(q)) {
    case PH_IN_PROJ:
      if (is_full_attention(l)) fa_in_proj<NB>(a, l, sm, wv, ld, params);
      else dn_in_proj<NB>(a, l, step, sm, wv, ld, params);
      break;
    case PH_OUT_PROJ:
      if (is_full_attention(l)) fa_out_proj<NB>(a, step, sm, wv, ld);
      else dn_out_proj<NB>(a, sm, wv, ld, params);
      break;
    case PH_GATE_UP: mlp_gate_up<NB>(a, sm, wv, ld, params); break;
    default: mlp_down<NB>(a, l, sm, wv, ld); break;
  }
}

// The compute warps' whole launch (RING: the ring schedule, also the stream-only measurement; else the
// register schedule). Every way out of it returns to the kernel, which then stops the ring's pollers.
template <bool RING, int NB, bool MANY>
__device__ __forceinline__ void decode_warps(const Args& a, uint8_t* sm, const unsigned epoch, const StepInputs<NB>& in,
                                             Stream& st) {
  const int t = threadIdx.x;
  const bool bar_warp = (t >> 5) == BAR_THREAD / 32;
  uint4 wv[16];  // this warp's weights of its first item (register schedule) or the next phase's inputs (ring)
  if constexpr (RING) {
    if (a.schedule == SCHEDULE_STREAM_ONLY) {
      if (step_refused(a, in)) return record_refused_step(a, in);
      keep_epoch(epoch, sm);
      last_block_done(a.sync, sm, consume_stream_only<NB>(a, st));
      return;
    }
  }
  prepare_phase<RING, NB>(a, 0, 0, wv);
  if (step_refused(a, in)) return record_refused_step(a, in);  // (the producer stops at its first wait)
  keep_epoch(epoch, sm);
  if (t == 0) reinterpret_cast<int*>(sm + SM_MISC)[MISC_STOPPED] = 0;  // (read after the first step's block barriers)
  int step = 0;  // of the launch (grid barriers passed before its phase q: step * STEP_BARRIERS + q)
  for (int q = 0;; ++q) {  // (one loop over the steps' phases, not a loop of steps: the nested loop spilled)
    if (!MANY && a.stop_after >= 0 && q > a.stop_after) {  // debug (one-step launches): stop early (q <= NBARRIERS barriers passed)
      last_block_done(a.sync, sm, q);
      return;
    }
    const uint4 params = RING ? wv[4] : phase_params(a, q, step);  // (the ring schedule loaded them before the barrier)
    if (is_lm_head(q)) {
      auto ld = LoaderOf<RING>::make(a, q, step, st);
      lm_head<NB, MANY>(a, step, sm, wv, ld, params);
      const int k = step * STEP_BARRIERS + NBARRIERS;
      if (!MANY || step == a.steps - 1) return argmax_last_block<NB>(a, sm, step, k);
      // a many-token launch between two steps: one more grid barrier, then every block the argmax
      barrier_arrive<RING>(a.sync, sm, k);
      if (RING || !bar_warp) prepare_phase<RING, NB>(a, 0, step + 1, wv);
      barrier_wait<RING>(a.sync, sm, k);
      if (!RING && bar_warp) prepare_phase<RING, NB>(a, 0, step + 1, wv);
      if (argmax_every_block<NB>(a, sm, step)) {  // every row has produced a stop id: the launch ends after this step
        if (t == 0) reinterpret_cast<volatile int*>(sm + SM_MISC)[MISC_ENDED] = 1;  // (the producer stops)
        last_block_done(a.sync, sm, k + 1);
        return;
      }
      ++step;
      q = -1;
      continue;
    }
    run_phase<RING, NB, MANY>(a, q, step, sm, wv, st, params);
    const bool stamps = !MANY && a.times && t == BAR_THREAD;
    if (stamps) a.times[NTIMES + blockIdx.x * NBARRIERS + q] = globaltimer();  // arrival
    const int k = step * STEP_BARRIERS + q;
    barrier_arrive<RING>(a.sync, sm, k);
    if (stamps) a.times[times_made(gridDim.x) + blockIdx.x * NBARRIERS + q] = globaltimer();  // arrival made
    // the next phase's loads stream while the block waits (the register schedule's polling warp
    // issues its own after the wait, so its polls are not queued behind them; the ring schedule's
    // pollers are warps of their own)
    if (RING || !bar_warp) prepare_phase<RING, NB>(a, q + 1, step, wv);
    barrier_wait<RING>(a.sync, sm, k);
    if (!RING && bar_warp) prepare_phase<RING, NB>(a, q + 1, step, wv);
    // (block 0's exit stamp: in the ring schedule thread 0's own wake-up on OPEN, in the register schedule the
    // block's release at bar.sync; exit latencies measured before the pollers are not the same quantity)
    if (!MANY && a.times && blockIdx.x == 0 && t == 0) a.times[q + 1] = globaltimer();
  }
}

// RING: the ring schedule (RING_THREADS threads: 16 compute warps, the producer, BAR_POLLERS
// pollers), also the stream-only measurement; else the register schedule (THREADS threads). NB: the
// batch's rows (a.batch), one kernel per value: every weight read once per launch and applied to
// every row. MANY: a many-token launch (the ring schedule: a.steps >= 1), else one step (its own
// kernel, so the one-step kernels keep their registers: step 0 is a constant there).
// (__grid_constant__: the phases index a.pos by row without a local copy of Args.)
template <bool RING, int NB, bool MANY>
__global__ void __launch_bounds__(RING ? RING_THREADS : THREADS, 1) mk_decode_kernel(const __grid_constant__ Args a) {
  extern __shared__ __align__(128) uint8_t sm[];
  const int t = threadIdx.x;
  const unsigned epoch = load_epoch(a.sync);     // (in flight while the block sets up)
  const StepInputs<NB> in = step_inputs<NB>(a);  // (the same; checked before the step's first write)
  Stream st;
  if (a.times && blockIdx.x == 0 && t == 0) a.times[0] = globaltimer();
  if constexpr (RING) {
    stream_start(a, st, sm, sm_ring(NB));
    if (t >= THREADS + 32) {  // (the stream-only schedule arrives at the barriers and never waits: no pollers)
      if (a.schedule != SCHEDULE_STREAM_ONLY) poll_barriers(a.sync, sm);
      return;
    }
    if (t >= THREADS) {
      if constexpr (!MANY) {  // (a many-token launch has no timing mode: the tier and the binding refuse one)
        if (a.times) {
          produce<true, NB, MANY>(a, st, in, sm);
          return;
        }
      }
      produce<false, NB, MANY>(a, st, in, sm);
      return;
    }
  }
  decode_warps<RING, NB, MANY>(a, sm, epoch, in, st);
  if constexpr (RING) end_polls(sm);
}

// The register schedule decodes batch 1 only (its warps hold 16 pieces of weights in registers: with
// a batch's sums beside them it would spill); the ring schedule any batch 1..MAX_BATCH (MAX_BATCH = 1
// where the shapes are not the batch kernels', shapes.cuh BATCH_SHAPES: only batch 1 is compiled).
// (many: the ring's many-token kernel of that batch)
template <bool MANY, int NB = MAX_BATCH>
const void* ring_kernel(int batch) {
  if constexpr (NB > 1) {
    if (batch < NB) return ring_kernel<MANY, NB - 1>(batch);
  }
  return reinterpret_cast<const void*>(mk_decode_kernel<true, NB, MANY>);
}
const void* kernel_fn(bool ring, int batch, bool many) {
  if (!ring) return reinterpret_cast<const void*>(mk_decode_kernel<false, 1, false>);
  return many ? ring_kernel<true>(batch) : ring_kernel<false>(batch);
}

}  // namespace

int smem_bytes(int batch) { return sm_end(batch); }
int ring_smem_bytes(int batch, int slots) { return sm_ring(batch) + RING_BARS + slots * RING_SLOT; }

cudaError_t configure(int device, Config* out) {
  Config c{};
  cudaError_t e = cudaDeviceGetAttribute(&c.num_sms, cudaDevAttrMultiProcessorCount, device);
  int optin = 0;
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (e != cudaSuccess) return e;
  for (int nb = 1; nb <= MAX_BATCH; ++nb) {
    const int i = nb - 1;
    int n = 0;
    if (nb == 1) {  // the register schedule: batch 1 only
      e = cudaFuncSetAttribute(kernel_fn(false, nb, false), cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes(nb));
      if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel_fn(false, nb, false), THREADS, smem_bytes(nb));
      if (e != cudaSuccess) return e;
      c.blocks_per_sm = n;
      c.smem_bytes[i] = smem_bytes(nb);
    }
    // the ring: as many slots as the block's shared-memory limit allows (at most RING_MAX_SLOTS)
    int slots = (optin - sm_ring(nb) - RING_BARS) / RING_SLOT;
    slots = slots > RING_MAX_SLOTS ? RING_MAX_SLOTS : slots;
    if (slots >= RING_MIN_SLOTS) {
      int n_many = 0;  // (the one-step and the many-token kernel of the batch: the same block)
      for (bool many : {false, true}) {
        e = cudaFuncSetAttribute(kernel_fn(true, nb, many), cudaFuncAttributeMaxDynamicSharedMemorySize, ring_smem_bytes(nb, slots));
        if (e == cudaSuccess)
          e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(many ? &n_many : &n, kernel_fn(true, nb, many), RING_THREADS,
                                                            ring_smem_bytes(nb, slots));
        if (e != cudaSuccess) return e;
      }
      if (n >= 1 && n_many >= 1) {
        c.ring_slots[i] = slots;
        c.ring_smem_bytes[i] = ring_smem_bytes(nb, slots);
      }
    }
  }
  *out = c;
  return cudaSuccess;
}

cudaError_t launch(const Args& a, int grid, cudaStream_t stream) {
  const bool ring = a.schedule != SCHEDULE_REGISTER;
  if (grid < 1 || grid > MAX_GRID || a.batch < 1 || a.batch > (ring ? MAX_BATCH : 1)) return cudaErrorInvalidValue;
  if (ring && (a.ring_slots < RING_MIN_SLOTS || a.ring_slots > RING_MAX_SLOTS)) return cudaErrorInvalidValue;
  if (a.positions_per_split < 1 || a.n_stop_ids < 0 || a.n_stop_ids > MAX_STOP_IDS) return cudaErrorInvalidValue;
  // many steps: the ring schedule, no logits, trace, stamps or early stop (one step's worth of each)
  const bool many = a.steps > 1 || a.temperature > 0.f;  // (sampling runs in the many-token kernel, at any steps)
  if (a.steps < 1 || !(a.temperature >= 0.f) || (many && (a.logits || a.trace || a.times || a.stop_after >= 0 || a.schedule != SCHEDULE_RING)))
    return cudaErrorInvalidValue;
  Args copy = a;
  void* params[] = {&copy};
  return cudaLaunchCooperativeKernel(kernel_fn(ring, a.batch, many), dim3(grid), dim3(ring ? RING_THREADS : THREADS), params,
                                     ring ? ring_smem_bytes(a.batch, a.ring_slots) : smem_bytes(a.batch), stream);
}

}  // namespace mk
