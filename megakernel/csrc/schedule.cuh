// The schedule: one decode step is a fixed list of NPHASES phases, five per layer and the lm_head
// last. This file says what each phase is and which weights each block reads in it; the phases'
// code lives in matvec.cuh, delta_rule.cuh, gated_attention.cuh, mlp.cuh and lm_head.cuh, and the
// loop that runs them in megakernel.cu.
//
//   phase q = 5 l + 0   in-proj    every block: norm(hidden), its rows of the packed in-projection
//           = 5 l + 1   core       DeltaNet: 128 recurrence units (no matrix; a batch: the block's first
//                                  (row, head) unit's fp32 state streamed through the ring like a
//                                  matrix's, dn_state_slice); attention: 2 x row_splits split-K units,
//                                  the block's first unit's past K/V rows streamed through the ring
//                                  (att_kv_slice)
//           = 5 l + 2   out-proj   every block: its rows of the out-projection, + the residual
//           = 5 l + 3   gate/up    every block: norm(hidden), its units of silu(gate) * up
//           = 5 l + 4   down       every block: its rows of the down projection, + the residual
//           = NPHASES-1 lm_head    every block: its vocabulary rows (the greedy argmax: their int8 copy), its best logit;
//                                  the last block the argmax
// A grid barrier follows every layer phase (grid_sync.cuh).
#pragma once
#include "device_common.cuh"

namespace mk {
namespace {

enum PhaseKind : int { PH_IN_PROJ = 0, PH_CORE = 1, PH_OUT_PROJ = 2, PH_GATE_UP = 3, PH_DOWN = 4 };
__device__ __forceinline__ bool is_lm_head(int q) { return q == NPHASES - 1; }
__device__ __forceinline__ int phase_layer(int q) { return q / PHASES_PER_LAYER; }
__device__ __forceinline__ int phase_kind(int q) { return q % PHASES_PER_LAYER; }

// The block's slice of the matrix a phase reads, as both schedules fetch it: whole rows, in order
// (the ring's producer copies them chunk by chunk, the register schedule's warps load them
// straight into registers), or a core's inputs (an attention unit's past K/V rows, a batch's DeltaNet unit's
// state rows). rows = 0: the phase reads nothing through the ring (a DeltaNet core below DN_STATE_RING_MIN_BATCH
// rows, a core's block with no unit) or the launch stops before it.
// A matrix's rows are cut into pieces (shapes.cuh PIECE, row_parts): the slice counts pieces.
struct PhaseSlice {
  const uint16_t* w;   // the block's first row
  const uint16_t* w2;  // gate/up: the first up row (a chunk's second half); an attention core: the first V row; else null
  int rows;            // pieces in the slice (gate/up: of the gate rows, each with its up piece; attention: positions)
  int rpc;             // pieces per ring chunk (CHUNK_PIECES, parts_per_chunk; gate/up: GATE_UP_PER_CHUNK in each half-slot)
  int k;               // piece length (an attention core: a K or V row; a DeltaNet state slice: a chunk's 32 rows)
};

// attention unit u of a step: batch row b (rows in order, row b has FA_HKV * row_splits(b) units), kv
// head g, split s; its positions [p0, p1) of the row's context 0..pos[b]
struct AttUnit {
  int b, g, s;
};
// the block's first attention unit at step `step` of the launch, for any batch (the core's own
// att_unit<NB> gives the same map); false: the block has none
__device__ __forceinline__ bool first_att_unit(const Args& a, int step, AttUnit& un) {
  int u = blockIdx.x;
  for (int b = 0; b < a.batch; ++b) {
    const int ns = row_splits(a, b, step), n = FA_HKV * ns;
    if (u < n) {
      un = AttUnit{b, u / ns, u % ns};
      return true;
    }
    u -= n;
  }
  return false;
}
// The past K/V rows of a unit as a ring slice: positions [p0, p1) less the row's own position pos
// (always p1 - 1 of the last split: this launch writes it, the unit takes it from shared memory),
// ATT_RING_ROWS positions a chunk, the K rows in the slot's first half and the same positions' V
// rows in its second. No block writes these rows in this launch, so the producer may copy them
// before the core's barrier, during the in-proj.
constexpr int ATT_RING_ROWS = 16;  // positions a chunk (K in the slot's first 8 KB, V from its middle on)
__device__ __forceinline__ PhaseSlice att_kv_slice(const Args& a, int l, const AttUnit& un, int step) {
  const int pos = row_pos(a, un.b, step), ns = row_splits(a, un.b, step);
  const int p0 = part(pos + 1, un.s, ns), p1 = part(pos + 1, un.s + 1, ns) - (un.s == ns - 1 ? 1 : 0);
  const size_t head = (size_t)un.b * NFA * FA_HKV * a.max_seq * FA_HD + ((size_t)(fa_index(l) * FA_HKV + un.g) * a.max_seq + p0) * FA_HD;
  return {a.k_cache + head, a.v_cache + head, p1 - p0, ATT_RING_ROWS, FA_HD};
}

// A batch's DeltaNet core (unit u = (row u / DN_HV, head u % DN_HV), the block's first unit u = blockIdx.x):
// the head's DN_DV state rows of DN_DK floats as a ring slice, DN_STATE_ROWS_PER_CHUNK rows a chunk (one piece). Only
// this layer's core writes them, after its barrier, so the producer copies them during the in-proj before it, and the
// core reads them from shared memory instead of through L2 after its barrier (delta_rule.cuh dn_core_heads). In a
// many-token launch the block that copies a unit's state is the block that stores it (unit u runs on block u), and
// between a step's store and the next step's copy of the same rows lie more than S released chunks: the copy waits for
// a release the storing threads made after their stores (a block barrier, the mbarrier's release and acquire).
// From DN_STATE_RING_MIN_BATCH rows on (64+ unit blocks); a smaller batch's units are on a few blocks only, whose streams
// the 4 chunks a layer would hold back against every other block's (B = 2: -2%, s36 call 3): their cores load the state
// through L2, prefetched there (delta_rule.cuh prefetch_core_state_l2).
constexpr int DN_STATE_RING_MIN_BATCH = 4;
constexpr int DN_STATE_ROWS_PER_CHUNK = RING_SLOT / (DN_DK * 4);
static_assert(MAX_BATCH < DN_STATE_RING_MIN_BATCH || (DN_STATE_ROWS_PER_CHUNK * DN_DK * 4 == RING_SLOT && DN_DV % DN_STATE_ROWS_PER_CHUNK == 0),
              "dn_state_slice: whole state rows a chunk, whole chunks a head (the sizes with batch kernels)");

// unit u of a launch: batch row u / DN_UNITS, head h, v-slice j
struct DnUnit {
  int b, h, j;
};
__device__ __forceinline__ DnUnit dn_unit(int u) {
  const int b = u / DN_UNITS, hu = u - b * DN_UNITS;
  return DnUnit{b, hu / DN_VSLICES, hu % DN_VSLICES};
}
__device__ __forceinline__ float* dn_state_row(const Args& a, int l, DnUnit n, int v) {  // row v of head h's state
  return a.dn_state + (size_t)n.b * DN_ROW_FLOATS + ((size_t)(dn_index(l) * DN_HV + n.h) * DN_DV + v) * DN_DK;
}

template <int NB>
__device__ __forceinline__ PhaseSlice dn_state_slice(const Args& a, int l) {
  const int u = blockIdx.x;
  if (u >= NB * DN_HV) return {nullptr, nullptr, 0, 1, D};
  return {reinterpret_cast<const uint16_t*>(dn_state_row(a, l, DnUnit{u / DN_HV, u % DN_HV, 0}, 0)), nullptr, DN_DV / DN_STATE_ROWS_PER_CHUNK, 1,
          RING_SLOT / 2};
}

// Whether this launch's lm_head reads the int8 rows (lm_head.cuh lm_head_bounded, _batch): the ring schedule's greedy
// argmax with no logits asked for, where the tier passed them. The same for every block, warp and the producer.
// A batch's int8 pass is compiled for Hopper only: at sm_86 / sm_89 it took B = 8's one-step kernel's spills past
// build.py's bound (104 / 72 B; sm_90a then 68 / 40, since session 35 0 / 0), and no such GPU measured it.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
constexpr bool LM_I8_BATCH = false;
#else
constexpr bool LM_I8_BATCH = LM_I8;
#endif
__device__ __forceinline__ bool lm_bounded(const Args& a) {
  return LM_I8 && (a.batch == 1 || LM_I8_BATCH) && a.lm_q != nullptr && a.schedule == SCHEDULE_RING && a.logits == nullptr &&
         !(a.temperature > 0.f);
}

// (step: of the launch; only an attention core's slice depends on it. NB: the kernel's batch; below
// DN_STATE_RING_MIN_BATCH rows the DeltaNet cores read no ring chunks)
template <int NB>
__device__ PhaseSlice phase_slice(const Args& a, int q, int step) {
  const int G = gridDim.x, b = blockIdx.x;
  if (q >= NPHASES || (a.stop_after >= 0 && q > a.stop_after)) return {nullptr, nullptr, 0, 1, D};
  if (is_lm_head(q)) {
    const int r0 = part(VOCAB, b, G), n = part(VOCAB, b + 1, G) - r0;
    if (lm_bounded(a))  // int8 rows r0 .. r0 + n - 1, two a piece (an odd n's last piece also holds row r0 + n: not used)
      return {a.lm_q + (size_t)r0 * (D / 2), nullptr, (n + 1) / 2, CHUNK_PIECES, PIECE};
    return {a.lm_head + (size_t)r0 * D, nullptr, n * D_PIECES, CHUNK_PIECES, PIECE};
  }
  const int l = phase_layer(q), r0 = part(D, b, G), r1 = part(D, b + 1, G);
  switch (phase_kind(q)) {
    case PH_IN_PROJ: {
      const int R = is_full_attention(l) ? FA_QKV : DN_WIN, i0 = part(R, b, G);
      return {lw<uint16_t>(a, l, SL_WIN) + (size_t)i0 * D, nullptr, (part(R, b + 1, G) - i0) * D_PIECES, CHUNK_PIECES, PIECE};
    }
    case PH_OUT_PROJ:
      return {lw<uint16_t>(a, l, SL_OUT) + (size_t)r0 * DN_VAL, nullptr, (r1 - r0) * row_parts(DN_VAL), parts_per_chunk(DN_VAL),
              DN_VAL / row_parts(DN_VAL)};
    case PH_GATE_UP: {
      const int u0 = part(INTER, b, G);
      const uint16_t* gu = lw<uint16_t>(a, l, SL_GATE_UP);
      return {gu + (size_t)u0 * D, gu + (size_t)(INTER + u0) * D, (part(INTER, b + 1, G) - u0) * D_PIECES, GATE_UP_PER_CHUNK, PIECE};
    }
    case PH_DOWN:
      return {lw<uint16_t>(a, l, SL_DOWN) + (size_t)r0 * INTER, nullptr, (r1 - r0) * row_parts(INTER), parts_per_chunk(INTER),
              INTER / row_parts(INTER)};
    default: {  // a core: the DeltaNet's reads no matrix (a batch: its first unit's state); an attention core's first unit its past K/V
      AttUnit un;
      if (is_full_attention(l)) {
        if (first_att_unit(a, step, un)) return att_kv_slice(a, l, un, step);
      } else if constexpr (NB >= DN_STATE_RING_MIN_BATCH) {
        return dn_state_slice<NB>(a, l);
      }
      return {nullptr, nullptr, 0, 1, D};
    }
  }
}
static_assert(DN_VAL == FA_OIN, "phase_slice: both kinds of out-projection have rows of DN_VAL");
static_assert(CHUNK_PIECES * 2 * PIECE <= RING_SLOT, "a K = D chunk: CHUNK_PIECES pieces (gate/up: half gate, half up)");
static_assert(ATT_RING_ROWS * FA_HD * 2 * 2 <= RING_SLOT, "att_kv_slice: K and V rows of 16 positions, each in half a slot");

// The small parameters phase q starts with, as this thread's float / bf16-pair bits: the norm
// weight pairs of an in-proj, gate/up or the lm_head; the gated norm's 4 weights of a DeltaNet
// out-proj; q-norm, k-norm weight and RoPE cos, sin of an attention core. (The ring schedule loads
// them before the barrier that precedes q; the register schedule, out of registers, at q's start.)
__device__ __forceinline__ uint4 phase_params(const Args& a, int q, int step) {
  const int t = threadIdx.x;
  if (q >= NPHASES) return make_uint4(0, 0, 0, 0);
  if (is_lm_head(q)) return norm_pairs(a.final_norm);
  const int l = phase_layer(q);
  switch (phase_kind(q)) {
    case PH_IN_PROJ: return norm_pairs(lw<uint16_t>(a, l, SL_IN_NORM));
    case PH_GATE_UP: return norm_pairs(lw<uint16_t>(a, l, SL_POST_NORM));
    case PH_OUT_PROJ:
      if (is_full_attention(l)) return make_uint4(0, 0, 0, 0);
      {
        const uint2 gn = __ldg(reinterpret_cast<const uint2*>(lw<uint16_t>(a, l, SL_GNORM) + (t & 31) * 4));
        return make_uint4(gn.x, gn.y, 0, 0);
      }
    case PH_CORE:
      if (is_full_attention(l)) {
        const int d = t & (FA_HD - 1), i = d & (FA_ROT / 2 - 1);
        const uint16_t* rope = a.rope + (size_t)row_pos(a, 0, step) * FA_ROT;  // (batch row 0's; a batch loads each row's in the unit)
        return make_uint4(__float_as_uint(ld_w1(lw<uint16_t>(a, l, SL_Q_NORM) + d)),
                          __float_as_uint(t < FA_HD ? ld_w1(lw<uint16_t>(a, l, SL_K_NORM) + t) : 0.f),
                          __float_as_uint(d < FA_ROT ? ld_w1(rope + i) : 0.f),
                          __float_as_uint(d < FA_ROT ? ld_w1(rope + FA_ROT / 2 + i) : 0.f));
      }
      return make_uint4(0, 0, 0, 0);
    default: return make_uint4(0, 0, 0, 0);
  }
}

}  // namespace
}  // namespace mk
