// The gated full-attention layer's three phases (reference: model.py's full-attention branch;
// reference/ops.py qk_norm_rope and gated_attention).
//   in-proj   every block: xs[b] = norm(hidden[b]) per batch row b (a batch: unscaled, block_rmsnorm UNSCALED); its
//             rows of the packed [q+gate (per head) | k | v] projection into the workspace (qkv[b])
//   core      gated_attention: unit (batch row b, kv head g, split s) covers positions [p0, p1) of
//             0..pos[b] for q heads 4g .. 4g+3 (each row split by its own context length);
//             units u, u+G, ... of block u. All threads: q/k RMSNorm and partial
//             RoPE (thread t: q elements t and t + 512, k[t] for t < 256); the unit of the last split
//             writes the new k, v to the cache at pos. Warp w: q head w / 4 (q in registers, lane: 8
//             dims) over the past positions p0 + (w % 4) + 4 i, ATT_GROUP at a time (att_group: one
//             transposing butterfly of shuffles, one exp per lane, one correction a group), then the
//             new row (pos) from shared memory; the block's first unit reads its past K/V rows from
//             the ring (the producer streamed them during the in-proj: schedule.cuh att_kv_slice;
//             a whole chunk of past positions without the masks, att_group<false>: NOTES v25),
//             any other unit from global memory in the same groups. The 4 slots' states per head are
//             merged in shared memory, thread t then owns head t/128, dims 2(t%128), +1.
//             With one split the unit writes the gated output; at batch 1 with 2..OUT_MERGE_MAX splits
//             it writes its partial (m, l, acc) and the out-proj merges them; with more (and with any
//             split in a batch), the last unit of a kv head to finish merges the partials and writes
//             the gated output.
//   out-proj  every block: batch 1: xs = the gated attention output (merged from the partials where
//             the core left them: thread t makes outputs 4t .. 4t+3), then its rows of o_proj + the
//             residual; a batch: the tensor-core tiles read the gated output from global memory
// Every merge of partial softmax results is the same arithmetic (merge_add), in a fixed order, so
// any grid size and any schedule give the same bits.
#pragma once
#include "matvec.cuh"

namespace mk {
namespace {

static_assert(FA_OIN % (THREADS * 4) == 0, "the out-proj's merged load: four attention outputs per thread and pass");
static_assert(AT_ENTRIES == 4, "the attention warp merge: an entry per position slot");

template <int NB, class Loader>
__device__ __forceinline__ void fa_in_proj(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16], Loader& ld, const uint4 params) {
  float* xs = reinterpret_cast<float*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  block_rmsnorm<NB, (NB > 1)>([&](int b) { return a.hidden + b * D; }, params, xs, red);  // (a batch: unscaled)
  const int r0 = part(FA_QKV, blockIdx.x, gridDim.x);
  float* out = a.qkv + r0;
  matvec_rows<NB>(ld, part(FA_QKV, blockIdx.x + 1, gridDim.x) - r0, xs, red, wv, [&](int i, int b, float v) { out[b * FA_QKV + i] = v; });
}

// ---- the one merge of partial softmax results -----------------------------------------------
// n partials (m_i, l_i, acc_i) of one head: M = max m_i, then in order i = 0 .. n-1,
// (L, A) += exp(m_i - M) (l_i, acc_i); partials of no positions (m_i = -inf) add nothing.
template <int NACC>
struct Merge {
  float M, L, A[NACC];
  __device__ __forceinline__ explicit Merge(float max_m) : M(max_m), L(0.f) {
#pragma unroll
    for (int k = 0; k < NACC; ++k) A[k] = 0.f;
  }
  __device__ __forceinline__ void add(float m, float l, const float (&acc)[NACC]) {
    if (m == -INFINITY) return;
    const float e = expf(m - M);
    L = fmaf(l, e, L);
#pragma unroll
    for (int k = 0; k < NACC; ++k) A[k] = fmaf(acc[k], e, A[k]);
  }
};

// the gate: o * sigmoid(gate) (fp32; the out-projection's input is it rounded once to bf16)
__device__ __forceinline__ float gated(float o, float gate) { return o * sigmoidf_(gate); }

// partials in the workspace: batch row b's [FA_HKV][ATT_MAX_SPLIT][FA_GROUP][ATT_PART] = (m, l, 2 pad, acc[FA_HD])
__device__ __forceinline__ float* partial(const Args& a, int b, int g, int s, int hh) {
  return a.apart + (size_t)b * APART_W + ((size_t)(g * ATT_MAX_SPLIT + s) * FA_GROUP + hh) * ATT_PART;
}
constexpr int PARTIAL_STRIDE = FA_GROUP * ATT_PART;  // floats from split s to split s + 1

// a partial's acc[d .. d+NACC-1] (d a multiple of NACC: one vector load)
template <int NACC>
__device__ __forceinline__ void load_acc(const float* pp, int d, float (&acc)[NACC]) {
  static_assert(NACC == 2 || NACC == 4, "float2 or float4");
  if constexpr (NACC == 4) {
    const float4 v = __ldcg(reinterpret_cast<const float4*>(pp + 4 + d));
    acc[0] = v.x, acc[1] = v.y, acc[2] = v.z, acc[3] = v.w;
  } else {
    const float2 v = __ldcg(reinterpret_cast<const float2*>(pp + 4 + d));
    acc[0] = v.x, acc[1] = v.y;
  }
}

// q head h's ns split partials merged, dims d .. d+NACC-1 (ns <= MAX: the m's stay in registers)
template <int NACC, int MAX>
__device__ __forceinline__ Merge<NACC> merge_splits(const float* base, int ns, int d) {
  constexpr int GROUP = 4;  // partials whose loads are in flight together
  float pm[MAX];
  float M = -INFINITY;
#pragma unroll
  for (int si = 0; si < MAX; ++si) {
    pm[si] = si < ns ? __ldcg(base + (size_t)si * PARTIAL_STRIDE) : -INFINITY;
    M = fmaxf(M, pm[si]);
  }
  Merge<NACC> r(M);
#pragma unroll
  for (int s0 = 0; s0 < MAX; s0 += GROUP) {
    if (s0 >= ns) break;
    float pl[GROUP], pa[GROUP][NACC];
#pragma unroll
    for (int i = 0; i < GROUP; ++i) {
      const float* pp = base + (size_t)(s0 + i < ns ? s0 + i : s0) * PARTIAL_STRIDE;  // (past ns: loaded, not used)
      pl[i] = __ldcg(pp + 1);
      load_acc(pp, d, pa[i]);
    }
#pragma unroll
    for (int i = 0; i < GROUP; ++i)
      if (s0 + i < ns) r.add(pm[s0 + i], pl[i], pa[i]);
  }
  return r;
}

// the out-proj's input for batch row b with 2..OUT_MERGE_MAX splits: each attention output the gated
// merge of its head's partials (bf16, rounded once); thread t makes outputs 4i .. 4i+3 (q head i / 64) of
// xs (row b's) for i = t, t + THREADS, ... (one pass at the 0.8B's 8 heads)
__device__ __forceinline__ void load_attn_merged(const Args& a, int b, int ns, uint16_t* xs) {
#pragma unroll
  for (int pass = 0; pass < FA_OIN / (4 * THREADS); ++pass) {
    const int t = threadIdx.x + pass * THREADS, h = t >> 6, d = (t & 63) * 4;
    const float4 gw = __ldcg(reinterpret_cast<const float4*>(a.qkv + b * FA_QKV + h * 2 * FA_HD + FA_HD + d));
    const Merge<4> r = merge_splits<4, OUT_MERGE_MAX>(partial(a, b, h / FA_GROUP, 0, h % FA_GROUP), ns, d);
    reinterpret_cast<uint2*>(xs)[t] = make_uint2(pack_bf16(gated(r.A[0] / r.L, gw.x), gated(r.A[1] / r.L, gw.y)),
                                                 pack_bf16(gated(r.A[2] / r.L, gw.z), gated(r.A[3] / r.L, gw.w)));
  }
  sync_warps();
}
__device__ __forceinline__ bool out_proj_merges(int ns) { return ns > 1 && ns <= OUT_MERGE_MAX; }

// unit u of step `step` of a launch (schedule.cuh AttUnit)
template <int NB>
__device__ __forceinline__ AttUnit att_unit(const Args& a, int step, int u) {
  int b = 0;
#pragma unroll
  for (int i = 0; i < NB - 1; ++i)
    if (u >= FA_HKV * row_splits(a, b, step)) u -= FA_HKV * row_splits(a, b++, step);
  const int ns = row_splits(a, b, step);
  return AttUnit{b, u / ns, u % ns};
}
template <int NB>
__device__ __forceinline__ int att_units(const Args& a, int step) {
  int n = 0;
#pragma unroll
  for (int b = 0; b < NB; ++b) n += FA_HKV * row_splits(a, b, step);
  return n;
}

// ---- a warp's scores, ATT_GROUP positions at a time --------------------------------------------
// One q head (lane: dims 8 lane .. 8 lane + 7 of q, in registers) against the K and V rows of
// ATT_GROUP = 2 positions j (a masked one: any row, its score -inf, its V row zeroed). The 2 partial
// dots are summed over the warp by a transposing butterfly (level 16 keeps one value a lane and adds
// its partner's copy of it; 8, 4, 2, 1 sum it: 5 shuffles, not 2 x 5), after which lane L holds the
// score of position j = L >> 4; each lane takes the exp of its own score against the group's max (one
// shuffle), the 2 weights are broadcast, and the warp's online softmax state (m, l, acc) advances by
// the whole group with one correction. (Groups of 4 took 16 more registers and spilled in the
// many-token kernels: NOTES v19.)
constexpr int ATT_GROUP = 2;
constexpr float ATT_SCALE = 1.f / 16.f;  // 256^-1/2
// (row(j, k): position j's K row (k = 0) or V row (k = 1), this lane's 8 dims; MASKED = false: every
// position of the group is a past one, `valid` is not read and no score or V row is masked)
template <bool MASKED = true, class Row>
__device__ __forceinline__ void att_group(const float (&q)[8], Row&& row, unsigned valid, int lane, float& m, float& lsum,
                                          float (&acc)[8]) {
  static_assert(ATT_GROUP == 2, "the butterfly's levels: 16 transposes (2 values), 8, 4, 2, 1 sum");
  float v[ATT_GROUP];  // this lane's 8-dim part of position j's score
#pragma unroll
  for (int j = 0; j < ATT_GROUP; ++j) v[j] = dot8(row(j, 0), q, 0.f);
  const bool b4 = lane & 16;
  float y = (b4 ? v[1] : v[0]) + __shfl_xor_sync(0xffffffffu, b4 ? v[0] : v[1], 16);
#pragma unroll
  for (int off = 8; off; off >>= 1) y += __shfl_xor_sync(0xffffffffu, y, off);
  const int jl = lane >> 4;  // this lane's position
  const float sc = !MASKED || (valid >> jl) & 1 ? y * ATT_SCALE : -INFINITY;
  const float gm = fmaxf(sc, __shfl_xor_sync(0xffffffffu, sc, 16));
  const float mn = fmaxf(m, gm);
  const float base = mn == -INFINITY ? 0.f : mn;  // (no valid position so far: exps against 0 give 0, never NaN)
  const float pw = __expf(sc - base), corr = __expf(m - base);  // (ex2.approx of x log2 e: 2 instructions, not expf's ~8)
  m = mn;
  lsum *= corr;
#pragma unroll
  for (int i = 0; i < 8; ++i) acc[i] *= corr;
#pragma unroll
  for (int j = 0; j < ATT_GROUP; ++j) {  // position j's weight from its lanes; its V row
    uint4 vr = row(j, 1);
    if (MASKED && !((valid >> j) & 1)) vr = make_uint4(0u, 0u, 0u, 0u);  // (a masked row's weight is 0: its V must not be NaN)
    float vx[8];
    unpack8(vr, vx);
    const float pj = __shfl_sync(0xffffffffu, pw, j << 4);
    lsum += pj;
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] = fmaf(pj, vx[i], acc[i]);
  }
}

// RING: the block's first unit takes its past K/V rows from the ring (att_kv_slice: chunk c holds
// positions p0 + 16 c .. p0 + 16 c + 15), ATT_ITEM_CHUNKS chunks between two releases; each warp
// scores the same groups of positions in the same order as from global memory (the same bits)
constexpr int ATT_ITEM_CHUNKS = 4;
constexpr int ATT_SLOTS = NWARPS / FA_GROUP;  // position slots: warp w takes q head w / ATT_SLOTS, positions = w mod ATT_SLOTS
static_assert(ATT_ITEM_CHUNKS <= RING_MIN_SLOTS && ATT_RING_ROWS % (ATT_SLOTS * ATT_GROUP) == 0 && AT_ENTRIES == ATT_SLOTS,
              "the attention core's ring items; a warp's group: its rows of one chunk; an entry per slot");

template <bool RING, int NB>
__device__ void gated_attention(const Args& a, int l, int step, uint8_t* sm, const uint4 params, Stream& st) {
  float* qf = reinterpret_cast<float*>(sm + SM_AT_Q);
  float* kf = reinterpret_cast<float*>(sm + SM_AT_K);
  uint16_t* kb = reinterpret_cast<uint16_t*>(sm + SM_AT_KB);
  uint16_t* vb = reinterpret_cast<uint16_t*>(sm + SM_AT_VB);
  float* wm = reinterpret_cast<float*>(sm + SM_AT_M);
  float* wl = reinterpret_cast<float*>(sm + SM_AT_L);
  float* wacc = reinterpret_cast<float*>(sm + SM_AT_ACC);
  float2* gate_s = reinterpret_cast<float2*>(sm + SM_AT_GATE);  // [t]: thread t's gates (q head t / 128, dims 2 (t % 128), +1)
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  int* misc = reinterpret_cast<int*>(sm + SM_MISC);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const int li = fa_index(l), units = att_units<NB>(a, step);
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    const AttUnit un = att_unit<NB>(a, step, u);
    const int b = un.b, g = un.g, s = un.s, pos = row_pos(a, b, step), ctx = pos + 1, ns = row_splits(a, b, step);
    // the last unit of a kv head merges the partials: past OUT_MERGE_MAX splits, or any split with a
    // batch (whose out-projection reads its input straight from global memory)
    const bool counted = ns > (NB > 1 ? 1 : OUT_MERGE_MAX);
    const float* qkv = a.qkv + b * FA_QKV;
    uint16_t* attn = a.attn + b * FA_OIN;
    const int p0 = part(ctx, s, ns), p1 = part(ctx, s + 1, ns);
    const int d = t & (FA_HD - 1);
    // params: q-norm, k-norm weight, RoPE cos, sin (dims < FA_ROT) of this thread; with a batch the
    // unit loads its row's cos, sin here (the rows sit at different positions)
    float rc = __uint_as_float(params.z), rs = __uint_as_float(params.w);
    if constexpr (NB > 1) {
      const uint16_t* rope = a.rope + (size_t)pos * FA_ROT;
      const int i = d & (FA_ROT / 2 - 1);
      rc = d < FA_ROT ? ld_w1(rope + i) : 0.f;
      rs = d < FA_ROT ? ld_w1(rope + FA_ROT / 2 + i) : 0.f;
    }
    const float2 gate_in = __ldcg(reinterpret_cast<const float2*>(qkv + (4 * g + (t >> 7)) * 2 * FA_HD + FA_HD + (t & 127) * 2));
    // -- q (4 heads) and k: zero-centred RMSNorm per head over 256 dims --
    const float q0 = __ldcg(qkv + (4 * g + (t >> 8)) * 2 * FA_HD + d);
    const float q1 = __ldcg(qkv + (4 * g + 2 + (t >> 8)) * 2 * FA_HD + d);
    const float kr = t < FA_HD ? __ldcg(qkv + FA_WIN_K + g * FA_HD + t) : 0.f;
    if (t >= FA_HD) vb[t - FA_HD] = bits(__ldcg(qkv + FA_WIN_V + g * FA_HD + (t - FA_HD)));  // (the cache's bf16)
    const float s0 = warp_sum(q0 * q0), s1 = warp_sum(q1 * q1), s2 = warp_sum(kr * kr);
    if (lane == 0) { red[warp * 3] = s0; red[warp * 3 + 1] = s1; red[warp * 3 + 2] = s2; }
    sync_warps();
    gate_s[t] = gate_in;  // (read back by this thread at the end)
    float t0 = 0.f, t1 = 0.f, tk = 0.f;
    const int wb = (t >> 8) * 8;  // warps 0-7 hold heads 0/2 (and k), warps 8-15 heads 1/3
#pragma unroll
    for (int i = 0; i < 8; ++i) { t0 += red[(wb + i) * 3]; t1 += red[(wb + i) * 3 + 1]; tk += red[i * 3 + 2]; }
    const float wq = 1.f + __uint_as_float(params.x);
    const float n0 = (q0 * rsqrtf(t0 / FA_HD + RMS_EPS)) * wq;
    const float n1 = (q1 * rsqrtf(t1 / FA_HD + RMS_EPS)) * wq;
    const float nk = t < FA_HD ? (kr * rsqrtf(tk / FA_HD + RMS_EPS)) * (1.f + __uint_as_float(params.y)) : 0.f;
    qf[t] = n0;  // qf[hh*256 + d] with hh = t>>8 (0/1)
    qf[t + 512] = n1;
    if (t < FA_HD) kf[t] = nk;
    sync_warps();
    // -- partial RoPE (NeoX halves) on dims 0..63 (fp32; k rounded to bf16 once, as the cache stores it) --
    float r0 = n0, r1 = n1, rk = nk;
    if (d < FA_ROT) {
      const int pd = d < FA_ROT / 2 ? d + FA_ROT / 2 : d - FA_ROT / 2;
      const float sg = d < FA_ROT / 2 ? -1.f : 1.f;
      const int hb = t & ~(FA_HD - 1);
      r0 = n0 * rc + sg * qf[hb + pd] * rs;
      r1 = n1 * rc + sg * qf[512 + hb + pd] * rs;
      if (t < FA_HD) rk = nk * rc + sg * kf[pd] * rs;
    }
    sync_warps();
    qf[t] = r0;
    qf[t + 512] = r1;
    if (t < FA_HD) kb[t] = bits(rk);
    sync_warps();
    const bool stamp = a.times && blockIdx.x == 0 && t == 0 && u == 0;  // block 0's unit, timing mode
    unsigned long long* stamps = a.times + NPHASES + 3 + li * UNIT_STAMPS;
    if (stamp) stamps[0] = globaltimer();  // q, k normed and rotated
    // the new k, v go to the cache at pos (one unit per kv head); nobody reads row pos from the
    // cache in this launch (the unit holding pos takes it from shared memory)
    const bool last = s == ns - 1;
    const size_t cache_row = (size_t)b * NFA * FA_HKV * a.max_seq * FA_HD;  // row b's caches
    if (last) {
      const size_t off = cache_row + ((size_t)(li * FA_HKV + g) * a.max_seq + pos) * FA_HD;
      if (t < FA_HD) a.k_cache[off + t] = kb[t];
      else a.v_cache[off + t - FA_HD] = vb[t - FA_HD];
    }
    // -- scores and online softmax: warp w takes q head hq = w / 4 over the positions of slot
    // w mod 4, p0 + slot + 4 i, ATT_GROUP at a time --
    const int hq = warp / ATT_SLOTS, slot = warp % ATT_SLOTS;
    float q[8], m = -INFINITY, lsum = 0.f, acc[8];
    {
      const float4* qh = reinterpret_cast<const float4*>(qf + hq * FA_HD + lane * 8);
      const float4 qa = qh[0], qb = qh[1];
      q[0] = qa.x, q[1] = qa.y, q[2] = qa.z, q[3] = qa.w, q[4] = qb.x, q[5] = qb.y, q[6] = qb.z, q[7] = qb.w;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] = 0.f;
    if (RING && u == (int)blockIdx.x) {
      // the past rows from the ring (att_kv_slice's rows and chunks, which the producer copies:
      // computed here from p0, p1), index i in chunk i / ATT_RING_ROWS, row i mod ATT_RING_ROWS: a
      // warp's group is its slot's rows of one chunk
      const int rows = p1 - p0 - (last ? 1 : 0), nch = (rows + ATT_RING_ROWS - 1) / ATT_RING_ROWS;
      // group gi of a chunk (ch: its slot at this warp's slot row and lane's dims): position j's K or V row
      const auto ring_rows = [&](uint32_t ch, int gi) {
        const uint32_t k0 = ch + gi * ATT_GROUP * ATT_SLOTS * FA_HD * 2;
        return [=](int j, int kv) { return lds128(k0 + (j * ATT_SLOTS * FA_HD) * 2 + (kv ? RING_SLOT / 2 : 0)); };
      };
      for (int c0 = 0; c0 < nch; c0 += ATT_ITEM_CHUNKS) {
        const int k = min(ATT_ITEM_CHUNKS, nch - c0);
        for (int c = 0; c < k; ++c) {
          const uint32_t ch = chunk_wait(st, c) + (slot * FA_HD + lane * 8) * 2;  // row slot's K, lane's dims
          if ((c0 + c + 1) * ATT_RING_ROWS <= rows) {  // a whole chunk of past positions: no masks (the same bits;
                                                       // ~10 of a group's ~120 instructions: d32768 +1.4%, NOTES v25)
#pragma unroll
            for (int gi = 0; gi < ATT_RING_ROWS / (ATT_SLOTS * ATT_GROUP); ++gi)
              att_group<false>(q, ring_rows(ch, gi), 0u, lane, m, lsum, acc);
            continue;
          }
#pragma unroll
          for (int gi = 0; gi < ATT_RING_ROWS / (ATT_SLOTS * ATT_GROUP); ++gi) {
            const int i0 = (c0 + c) * ATT_RING_ROWS + slot + gi * ATT_GROUP * ATT_SLOTS;  // its index
            unsigned valid = 0;
#pragma unroll
            for (int j = 0; j < ATT_GROUP; ++j) valid |= (i0 + ATT_SLOTS * j < rows ? 1u : 0u) << j;
            att_group(q, ring_rows(ch, gi), valid, lane, m, lsum, acc);
          }
        }
        chunks_done(st, k);
      }
    } else {  // the past rows from global memory, in the same groups
      const size_t head = cache_row + (size_t)(li * FA_HKV + g) * a.max_seq * FA_HD + lane * 8;
      const int pe = p1 - (last ? 1 : 0);
      // (a position past pe: row pe - 1, masked.) Batch 1 comes here only on small grids: its rows are
      // loaded as the group reads them. A batch's units past a block's first come here at long
      // contexts: two groups' K and V rows are loaded before either is scored, one round trip per
      // four positions (the batch kernels have the registers)
      constexpr int LOADED = NB > 1 ? 2 : 1;  // groups whose rows are loaded together
      const auto row_at = [&](const uint16_t* cache, int i) { return ld_kv16(cache + head + (size_t)min(i, pe - 1) * FA_HD); };
      for (int p = p0 + slot; p < pe; p += ATT_SLOTS * ATT_GROUP * LOADED) {
        uint4 kr[LOADED * ATT_GROUP], vr[LOADED * ATT_GROUP];
        if constexpr (LOADED > 1) {
#pragma unroll
          for (int j = 0; j < LOADED * ATT_GROUP; ++j) {
            kr[j] = row_at(a.k_cache, p + ATT_SLOTS * j);
            vr[j] = row_at(a.v_cache, p + ATT_SLOTS * j);
          }
        }
#pragma unroll
        for (int gi = 0; gi < LOADED; ++gi) {
          const int pg = p + gi * ATT_SLOTS * ATT_GROUP;
          if (pg >= pe) break;
          unsigned valid = 0;
#pragma unroll
          for (int j = 0; j < ATT_GROUP; ++j) valid |= (pg + ATT_SLOTS * j < pe ? 1u : 0u) << j;
          att_group(q, [&](int j, int kv) {
            if constexpr (LOADED > 1) return kv ? vr[gi * ATT_GROUP + j] : kr[gi * ATT_GROUP + j];
            else return row_at(kv ? a.v_cache : a.k_cache, pg + ATT_SLOTS * j);
          }, valid, lane, m, lsum, acc);
        }
      }
    }
    if (last && (pos - p0) % ATT_SLOTS == slot) {  // the new row (pos) last, from shared memory: a group of one
      const uint32_t kn = ring::smem_addr(kb) + lane * 16;
      static_assert(SM_AT_VB == SM_AT_KB + 2 * FA_HD, "the new row's V after its K");
      att_group(q, [&](int, int kv) { return lds128(kn + (kv ? 2 * FA_HD : 0)); }, 1u, lane, m, lsum, acc);
    }
    if (stamp) stamps[1] = globaltimer();  // warp 0 has scored its positions
    // -- each warp's state into its entry (slot, head); thread t then merges head t / 128's entries --
    if (lane == 0) { wm[slot * 4 + hq] = m; wl[slot * 4 + hq] = lsum; }
    {
      float4* dst = reinterpret_cast<float4*>(wacc + (slot * 4 + hq) * FA_HD + lane * 8);
      dst[0] = make_float4(acc[0], acc[1], acc[2], acc[3]);
      dst[1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
    }
    sync_warps();
    {  // thread t: q head hh = t / 128 of the unit, dims dd, dd + 1: the 4 entries merged
      const int hh = t >> 7, dd = (t & 127) * 2;
      float M = -INFINITY;
#pragma unroll
      for (int w = 0; w < AT_ENTRIES; ++w) M = fmaxf(M, wm[w * 4 + hh]);
      Merge<2> r(M);
#pragma unroll
      for (int w = 0; w < AT_ENTRIES; ++w) {
        const float pa[2] = {wacc[(w * 4 + hh) * FA_HD + dd], wacc[(w * 4 + hh) * FA_HD + dd + 1]};
        r.add(wm[w * 4 + hh], wl[w * 4 + hh], pa);
      }
      if (ns == 1) {
        const float2 gates = gate_s[t];
        attn[(4 * g + hh) * FA_HD + dd] = bits(gated(r.A[0] / r.L, gates.x));
        attn[(4 * g + hh) * FA_HD + dd + 1] = bits(gated(r.A[1] / r.L, gates.y));
      } else {
        float* pp = partial(a, b, g, s, hh);
        if (dd == 0) { pp[0] = r.M; pp[1] = r.L; }
        pp[4 + dd] = r.A[0];
        pp[4 + dd + 1] = r.A[1];
      }
    }
    if (stamp) stamps[2] = globaltimer();  // the unit's output (or partial) stored
    if (counted) {
      // the count: a block barrier, then one release by the counting thread, whose acquire the
      // block barrier hands on to the merging threads
      sync_warps();
      unsigned* count = a.sync + SYNC_ATT + 32 * (b * FA_HKV + g);
      if (t == 0) misc[0] = atom_add_acq_rel(count, 1u) == (unsigned)(ns - 1);
      sync_warps();
      if (misc[0]) {  // the last unit of kv head g: merge the ns partials in order
        const int hh = t >> 7, dd = (t & 127) * 2;
        const float* base = partial(a, b, g, 0, hh);
        float M = -INFINITY;
        for (int si = 0; si < ns; ++si) M = fmaxf(M, __ldcg(base + (size_t)si * PARTIAL_STRIDE));
        Merge<2> r(M);
        for (int si = 0; si < ns; ++si) {
          const float* pp = base + (size_t)si * PARTIAL_STRIDE;
          float pa[2];
          load_acc(pp, dd, pa);
          r.add(__ldcg(pp), __ldcg(pp + 1), pa);
        }
        const float2 gates = gate_s[t];
        attn[(4 * g + hh) * FA_HD + dd] = bits(gated(r.A[0] / r.L, gates.x));
        attn[(4 * g + hh) * FA_HD + dd + 1] = bits(gated(r.A[1] / r.L, gates.y));
        if (t == 0) atomicExch(count, 0u);
      }
    }
    sync_warps();  // shared memory reused by the next unit
    if (stamp) stamps[3] = globaltimer();  // split-K merged (by the last unit of the kv head)
  }
}

template <int NB, class Loader>
__device__ __forceinline__ void fa_out_proj(const Args& a, int step, uint8_t* sm, uint4 (&wv)[16], Loader& ld) {
  if constexpr (NB > 1) {  // a batch: the core wrote the gated output; each warp reads its piece from global memory
    matvec_row_parts<FA_OIN, NB>(ld, part(D, blockIdx.x, gridDim.x), part(D, blockIdx.x + 1, gridDim.x), a.attn, a.hidden,
                                       reinterpret_cast<float*>(sm + SM_RED), nullptr, 0, wv);
    return;
  }
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  const int ns = row_splits(a, 0, step);
  if (out_proj_merges(ns)) load_attn_merged(a, 0, ns, xs);
  else load_vec(a.attn, xs, FA_OIN);
  matvec_row_parts<FA_OIN, 1>(ld, part(D, blockIdx.x, gridDim.x), part(D, blockIdx.x + 1, gridDim.x), xs, a.hidden,
                              reinterpret_cast<float*>(sm + SM_RED), nullptr, 0, wv);
}

}  // namespace
}  // namespace mk
