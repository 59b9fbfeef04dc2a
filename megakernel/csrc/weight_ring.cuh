// The weight ring (the ring schedule, the default where it fits): every block streams its weight
// slices, phase after phase, through S slots of RING_SLOT bytes in shared memory, ahead of the
// phases and on through the grid barriers.
//
// Who owns what
//   producer warp (the 17th, threads THREADS..THREADS+31): copies the block's stream chunk after
//          chunk into the ring as soon as a slot is free: cp.async by its 32 lanes (16 B each) in
//          the layers, one TMA bulk copy per chunk for the lm_head on sm_90 (no grid barrier waits
//          behind those). Every copy marks its L2 lines evict-first, so the recurrent state, the
//          K/V cache and the activations stay in L2 from token to token (NOTES.md, v9; a batch's
//          state, 18.9 MB a row, does not fit there: from 4 rows on it is one of the copies).
//   compute warps (the 16 others): wait for a chunk's slot (chunk_wait), read the weights from
//          shared memory, and release the item's chunks after a block barrier (chunks_done).
// Each slot has two mbarriers: "full" (32 arrivals: each producer lane once its copies have
// landed, or the bulk copy's bytes) and "empty" (one arrival: the compute warps released it).
// A block's stream is the order of phase_slice(), step after step of the launch: chunk n of the
// launch is chunk i of phase q of step `step` (a many-token launch: the next step's first phases
// stream while this step's lm_head and argmax run); a
// chunk is whole pieces of one matrix's rows (shapes.cuh PIECE, row_parts; at the 0.8B 8 rows of
// K = 1024, 4 of K = 2048, 2 of K = 3584, or 4 gate rows in the first half of the slot with the same
// 4 up rows in the second), or a core's inputs (an attention unit's past K/V rows, a batch's DeltaNet
// unit's 32 fp32 state rows: schedule.cuh att_kv_slice, dn_state_slice). Chunk n lives in slot
// n mod S, fill n / S of that slot; neither side divides: the producer steps its slot and fill
// parity along with n, the compute warps count the chunks they consumed mod 2S.
#pragma once
#include "schedule.cuh"
#include "grid_sync.cuh"
#include "step_check.cuh"

namespace mk {
namespace {
namespace ring {

constexpr bool HAS_TMA =
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    true;
#else
    false;
#endif
// TMA (sm_90): the issuing lane announces the slot's bytes on its barrier, then copies
__device__ __forceinline__ void arrive_expect_bytes(uint32_t bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar, uint64_t pol) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
               ::"r"(dst), "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(bar), "l"(pol) : "memory");
#endif
}

// the L2 policy of every weight copy: its lines are the first to evict
__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}
// cp.async (sm_80+): one warp copies `bytes` (a multiple of 16), 16 bytes per lane and step
__device__ __forceinline__ void warp_copy(uint32_t dst, const void* src, uint32_t bytes, int lane, uint64_t pol) {
  const char* s = static_cast<const char*>(src);
  for (uint32_t off = 16u * lane; off < bytes; off += 16u * 32u)
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;"
                 ::"r"(dst + off), "l"(__cvta_generic_to_global(s + off)), "l"(pol) : "memory");
}
// every cp.async copy of this thread has landed
__device__ __forceinline__ void wait_all_copies() { asm volatile("cp.async.wait_all;" ::: "memory"); }
// each lane's arrival on the slot's barrier once all of its earlier cp.async copies have landed
__device__ __forceinline__ void lane_arrive_on_copies(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}

}  // namespace ring

__device__ __forceinline__ int nchunks(const PhaseSlice& p) { return (p.rows + p.rpc - 1) / p.rpc; }

// a position in the block's stream: chunk i of phase q (slice p) of step `step`; n = how many chunks
// came before it, counted up to S + 1 only (all the producer asks of n is n == S, n >= S: a count
// over a whole many-token launch would pass 2^31, e.g. the 9B's at 1 block after ~2,100 steps)
struct Cursor {
  int n, step, q, i;
  PhaseSlice p;
};
// move past phases with no chunks left (after the lm_head: the next step's first phase); false at
// the end of the launch's stream (MANY: a many-token launch's kernel, else one step)
template <int NB, bool MANY>
__device__ __forceinline__ bool cursor_valid(const Args& a, Cursor& c) {
  const int steps = MANY ? a.steps : 1;
  while (c.step < steps && c.i >= nchunks(c.p)) {
    if (++c.q == NPHASES) {
      c.q = 0;
      ++c.step;
    }
    c.p = phase_slice<NB>(a, c.q, c.step);
    c.i = 0;
  }
  return c.step < steps;
}

struct Stream {
  uint32_t slots, full, empty;  // shared addresses: slot 0, its "full" and its "empty" mbarrier (sm_ring's layout)
  int S;                        // slots
  int cons;                     // chunks consumed and released, mod 2S (every compute thread keeps the same count):
                                // the next one's slot is cons mod S, the parity of its fill cons >= S
};

// every thread of the block (compute, producer and poller warps), once (ring_at: sm_ring(batch))
__device__ void stream_start(const Args& a, Stream& s, uint8_t* sm, int ring_at) {
  s.S = a.ring_slots;
  s.full = ring::smem_addr(sm + ring_at);
  s.empty = s.full + 8 * RING_MAX_SLOTS;
  s.slots = s.full + RING_BARS;
  s.cons = 0;
  if (threadIdx.x == 0) {
    reinterpret_cast<int*>(sm + SM_MISC)[MISC_ENDED] = 0;
    ring::bar_init(ring::smem_addr(sm + SM_POLL_ARRIVED), 1);  // the grid barrier's pollers (grid_sync.cuh)
    ring::bar_init(ring::smem_addr(sm + SM_POLL_OPEN), 1);
    *reinterpret_cast<unsigned long long*>(sm + SM_POLL_BARRIER) = 0ull;  // (barrier numbers start at 1)
    *reinterpret_cast<unsigned*>(sm + SM_POLL_OPENED) = 0u;
    *reinterpret_cast<int*>(sm + SM_POLL_END) = 0;
  }
  if (threadIdx.x < s.S) {
    ring::bar_init(s.full + 8 * threadIdx.x, 32);  // every producer lane arrives once per fill
    ring::bar_init(s.empty + 8 * threadIdx.x, 1);
  }
  ring::fence_bar_init();
  __syncthreads();  // (all RING_THREADS threads, the last time: the producer and pollers leave the block barrier here)
}

// the slot after `slot`; flips the fill parity where the ring wraps around
__device__ __forceinline__ int next_slot(int slot, int S, unsigned& fill) {
  if (++slot < S) return slot;
  fill ^= 1u;
  return 0;
}

// The producer warp's whole launch. TIMED (timing mode, one step a launch): how long the producer
// waited for a free slot, per block and per phase of the chunk that held the slot (the phase whose
// chunks the compute warps had not yet released: the stream stalled before or during that phase).
// Lane j keeps the phase of slot j's chunk; the awaited phases only grow within a step, so each
// phase's sum is stored once, when the next phase's wait begins (and the last at the end). A launch the compute warps refuse (step_check.cuh) releases no slot:
// the producer checks the same inputs before its first wait and stops there. A many-token launch
// the compute warps end early (every row produced a stop id) leaves the next step's chunks
// unreleased: the producer, waiting for a slot, sees MISC_ENDED and stops (its copies landed).
template <bool TIMED, int NB, bool MANY>
__device__ void produce(const Args& a, const Stream& s, const StepInputs<NB>& in, const uint8_t* sm) {
  const int lane = threadIdx.x & 31, S = s.S;
  const uint64_t pol = ring::evict_first_policy();
  const volatile int* ended = reinterpret_cast<const volatile int*>(sm + SM_MISC) + MISC_ENDED;
  static_assert(RING_MAX_SLOTS <= 32, "timing mode: lane j keeps slot j's phase");
  static_assert(!(TIMED && MANY), "timing mode: one-step launches only (a step's awaited phases only grow)");
  unsigned long long* const full_at = TIMED ? a.times + times_full(gridDim.x) + (size_t)blockIdx.x * NPHASES : nullptr;
  unsigned long long full_ns = 0;  // (TIMED) the wait for slots that held phase full_q's chunks
  int full_q = -1, slot_q = -1;    // (TIMED) slot_q: the phase of the chunk in slot `lane`
  Cursor c{0, 0, 0, 0, phase_slice<NB>(a, 0, 0)};
  int slot = 0;       // chunk n's slot, n mod S
  unsigned fill = 0;  // how often that slot was filled before chunk n, mod 2: (n / S) mod 2
  for (; cursor_valid<NB, MANY>(a, c); c.n += c.n <= S, ++c.i, slot = next_slot(slot, S, fill)) {
    const bool lm = is_lm_head(c.q);
    if (c.n >= S) {  // wait until chunk n - S has been released
      if (c.n == S && step_refused(a, in)) return ring::wait_all_copies();
      const unsigned long long t0 = TIMED ? globaltimer() : 0;
      while (!ring::bar_try(s.empty + 8 * slot, fill ^ 1u))
        if (MANY && *ended) return ring::wait_all_copies();
      if (TIMED) {
        const int held = __shfl_sync(~0u, slot_q, slot);
        if (held != full_q) {
          if (lane == 0 && full_q >= 0) full_at[full_q] = full_ns;
          full_q = held;
          full_ns = 0;
        }
        full_ns += globaltimer() - t0;
      }
    }
    if (TIMED && lane == slot) slot_q = c.q;
    const int r = c.i * c.p.rpc;
    const uint32_t dst = s.slots + slot * RING_SLOT, bar = s.full + 8 * slot;
    const uint32_t bytes = (uint32_t)min(c.p.rpc, c.p.rows - r) * c.p.k * 2;
    const uint16_t* src = c.p.w + (size_t)r * c.p.k;
    if (lm && ring::HAS_TMA) {
      if (lane == 0) {
        ring::arrive_expect_bytes(bar, bytes);
        ring::bulk_copy(dst, src, bytes, bar, pol);
      } else {
        ring::bar_arrive(bar);
      }
    } else {
      ring::warp_copy(dst, src, bytes, lane, pol);
      if (c.p.w2) ring::warp_copy(dst + RING_SLOT / 2, c.p.w2 + (size_t)r * c.p.k, bytes, lane, pol);
      ring::lane_arrive_on_copies(bar);
    }
  }
  if (TIMED && lane == 0 && full_q >= 0) full_at[full_q] = full_ns;
}

// the slot of the k-th unreleased chunk (k < 8 <= S) and whether that slot's fill is an odd one
__device__ __forceinline__ int ring_slot(const Stream& s, int k, bool& odd) {
  int n = s.cons + k;
  if (n >= 2 * s.S) n -= 2 * s.S;
  odd = n >= s.S;
  return odd ? n - s.S : n;
}
// chunk c of the current item (counted from the first unreleased chunk): wait until it has
// landed; -> its shared address
__device__ __forceinline__ uint32_t chunk_wait(const Stream& s, int c) {
  bool odd;
  const int slot = ring_slot(s, c, odd);
  ring::bar_wait(s.full + 8 * slot, odd);
  return s.slots + slot * RING_SLOT;
}
// every compute thread, after its last read of the item's n <= 8 chunks: release them to the
// producer (thread i releases the item's chunk i)
__device__ __forceinline__ void chunks_done(Stream& s, int n) {
  sync_warps();
  if ((int)threadIdx.x < n) {
    bool odd;
    ring::bar_arrive(s.empty + 8 * ring_slot(s, threadIdx.x, odd));
  }
  s.cons += n;
  if (s.cons >= 2 * s.S) s.cons -= 2 * s.S;
}

// SCHEDULE_STREAM_ONLY (measurement), the compute warps' whole launch: take every phase's chunks
// as soon as they land and release them (8 at a time); arrive at every grid barrier without
// waiting; hand the input ids back as the output. -> the grid barriers the launch counted.
template <int NB>
__device__ int consume_stream_only(const Args& a, Stream& s) {
  const int warp = threadIdx.x >> 5;
  int barriers = 0;
  for (int q = 0; q < NPHASES; ++q) {
    if (a.stop_after >= 0 && q > a.stop_after) break;
    const int n = nchunks(phase_slice<NB>(a, q, 0));
    for (int c = 0; c < n; c += 8) {
      const int k = min(8, n - c);
      if (warp < k) chunk_wait(s, warp);
      chunks_done(s, k);
    }
    if (q < NBARRIERS) {
      barrier_arrive<false>(a.sync, nullptr, barriers);  // (no pollers to tell)
      ++barriers;
    }
  }
  if (blockIdx.x == 0 && (int)threadIdx.x < a.batch) a.out_token[threadIdx.x] = a.token[threadIdx.x];
  return barriers;
}

}  // namespace
}  // namespace mk
