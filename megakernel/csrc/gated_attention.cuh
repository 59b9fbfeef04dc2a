// The gated full-attention layer's three phases (reference: model.py's full-attention branch;
// reference/ops.py qk_norm_rope and gated_attention).
//   in-proj   every block: xs[b] = norm(hidden[b]) per batch row b; its rows of the packed
//             [q+gate (per head) | k | v] projection into the workspace (qkv[b])
//   core      gated_attention: unit (batch row b, kv head g, split s) covers positions [p0, p1) of
//             0..pos[b] for q heads 4g .. 4g+3 (each row split by its own context length);
//             units u, u+G, ... of block u. All threads: q/k RMSNorm and partial
//             RoPE (thread t: q elements t and t + 512, k[t] for t < 256); the unit of the last split
//             writes the new k, v to the cache at pos. Warp w: q heads 2(w/8), 2(w/8)+1 over positions
//             p0 + (w % 8) + 8 i with an online softmax (lane: 8 dims), reading the past K/V rows of
//             the block's first unit from the ring (the producer streamed them during the in-proj:
//             schedule.cuh att_kv_slice), any other unit's from global memory; the 8 position slots of a head
//             pair are merged in shared memory, thread t then owns head t/128, dims 2(t%128), +1.
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

static_assert(THREADS * 4 == FA_OIN, "the out-proj's merged load: four attention outputs per thread");
static_assert(AT_ENTRIES == 4, "the attention warp merge: position slots 4-7 hand over to slots 0-3");

template <int NB, class Loader>
__device__ __forceinline__ void fa_in_proj(const Args& a, int l, uint8_t* sm, uint4 (&wv)[16], Loader& ld, const uint4 params) {
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  block_rmsnorm<NB>([&](int b) { return a.hidden + b * D; }, false, params.x, xs, reinterpret_cast<float*>(sm + SM_RED));
  const int r0 = part(FA_QKV, blockIdx.x, gridDim.x);
  uint16_t* out = a.qkv + r0;
  matvec_rows<NB>(ld, part(FA_QKV, blockIdx.x + 1, gridDim.x) - r0, xs, wv, [&](int i, int b, float v) { out[b * FA_QKV + i] = bits(v); });
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

// the gate: bf16(bf16(o) * bf16(sigmoid(gate))), as bf16 bits
__device__ __forceinline__ uint16_t gated(float o, float gate) { return bits(bfr(o) * bfr(sigmoidf_(gate))); }

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
// merge of its head's partials; thread t makes outputs 4t .. 4t+3 (q head t / 64) of xs (row b's)
__device__ __forceinline__ void load_attn_merged(const Args& a, int b, int ns, uint16_t* xs) {
  const int t = threadIdx.x, h = t >> 6, d = (t & 63) * 4;
  const uint2 gw = __ldcg(reinterpret_cast<const uint2*>(a.qkv + b * FA_QKV + h * 2 * FA_HD + FA_HD + d));
  const Merge<4> r = merge_splits<4, OUT_MERGE_MAX>(partial(a, b, h / FA_GROUP, 0, h % FA_GROUP), ns, d);
  const float gate[4] = {lo(gw.x), hi(gw.x), lo(gw.y), hi(gw.y)};
  uint16_t o[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) o[k] = gated(r.A[k] / r.L, gate[k]);
  reinterpret_cast<uint2*>(xs)[t] = make_uint2(o[0] | ((uint32_t)o[1] << 16), o[2] | ((uint32_t)o[3] << 16));
  sync_warps();
}
__device__ __forceinline__ bool out_proj_merges(int ns) { return ns > 1 && ns <= OUT_MERGE_MAX; }

// a warp's online-softmax state for q heads 2hg, 2hg+1 (lane: dims 8 lane ..) into merge entry e
__device__ __forceinline__ void att_put(float* wm, float* wl, float* wacc, int e, int hg, int lane, const float (&m)[2],
                                        const float (&lsum)[2], const float (&acc)[2][8]) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int i = e * 4 + 2 * hg + hh;
    if (lane == 0) { wm[i] = m[hh]; wl[i] = lsum[hh]; }
    float4* dst = reinterpret_cast<float4*>(wacc + i * FA_HD + lane * 8);
    dst[0] = make_float4(acc[hh][0], acc[hh][1], acc[hh][2], acc[hh][3]);
    dst[1] = make_float4(acc[hh][4], acc[hh][5], acc[hh][6], acc[hh][7]);
  }
}

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

// one position's K and V rows (lane: dims 8 lane .. 8 lane + 7) into the warp's online softmax of
// q heads 2 hg, 2 hg + 1 (q in shared memory)
__device__ __forceinline__ void att_score(const float* qf, int hg, int lane, const uint4 kv, const uint4 vv, float (&m)[2],
                                          float (&lsum)[2], float (&acc)[2][8]) {
  float sc[2];
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const float* qh = qf + (2 * hg + hh) * FA_HD + lane * 8;
    const float4 qa = reinterpret_cast<const float4*>(qh)[0];
    const float4 qb = reinterpret_cast<const float4*>(qh)[1];
    float dd = 0.f;
    dd = fmaf(qa.x, lo(kv.x), dd); dd = fmaf(qa.y, hi(kv.x), dd); dd = fmaf(qa.z, lo(kv.y), dd); dd = fmaf(qa.w, hi(kv.y), dd);
    dd = fmaf(qb.x, lo(kv.z), dd); dd = fmaf(qb.y, hi(kv.z), dd); dd = fmaf(qb.z, lo(kv.w), dd); dd = fmaf(qb.w, hi(kv.w), dd);
    sc[hh] = dd;
  }
#pragma unroll
  for (int o = 16; o; o >>= 1) {
    sc[0] += __shfl_xor_sync(0xffffffffu, sc[0], o);
    sc[1] += __shfl_xor_sync(0xffffffffu, sc[1], o);
  }
  float vx[8];
  unpack8(vv, vx);
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const float scv = sc[hh] * (1.f / 16.f);  // 256^-1/2
    const float mn = fmaxf(m[hh], scv);
    const float corr = expf(m[hh] - mn);
    const float pw = expf(scv - mn);
    lsum[hh] = lsum[hh] * corr + pw;
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[hh][i] = fmaf(pw, vx[i], acc[hh][i] * corr);
    m[hh] = mn;
  }
}

// RING: the block's first unit takes its past K/V rows from the ring (att_kv_slice: chunk c holds
// positions p0 + 16 c .. p0 + 16 c + 15), ATT_ITEM_CHUNKS chunks between two releases; each warp
// scores the same positions in the same order as from global memory (the bits do not change)
constexpr int ATT_ITEM_CHUNKS = 4;
static_assert(ATT_ITEM_CHUNKS <= RING_MIN_SLOTS && ATT_RING_ROWS % 8 == 0, "the attention core's ring items");

template <bool RING, int NB>
__device__ void gated_attention(const Args& a, int l, int step, uint8_t* sm, const uint4 params, Stream& st) {
  float* qf = reinterpret_cast<float*>(sm + SM_AT_Q);
  float* kf = reinterpret_cast<float*>(sm + SM_AT_K);
  uint16_t* kb = reinterpret_cast<uint16_t*>(sm + SM_AT_KB);
  uint16_t* vb = reinterpret_cast<uint16_t*>(sm + SM_AT_VB);
  float* wm = reinterpret_cast<float*>(sm + SM_AT_M);
  float* wl = reinterpret_cast<float*>(sm + SM_AT_L);
  float* wacc = reinterpret_cast<float*>(sm + SM_AT_ACC);
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
    const uint16_t* qkv = a.qkv + b * FA_QKV;
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
    const uint32_t gates = __ldcg(reinterpret_cast<const unsigned*>(qkv + (4 * g + (t >> 7)) * 2 * FA_HD + FA_HD + (t & 127) * 2));
    // -- q (4 heads) and k: zero-centred RMSNorm per head over 256 dims --
    const float q0 = ld_x1(qkv + (4 * g + (t >> 8)) * 2 * FA_HD + d);
    const float q1 = ld_x1(qkv + (4 * g + 2 + (t >> 8)) * 2 * FA_HD + d);
    const float kr = t < FA_HD ? ld_x1(qkv + FA_WIN_K + g * FA_HD + t) : 0.f;
    if (t >= FA_HD) vb[t - FA_HD] = bits(ld_x1(qkv + FA_WIN_V + g * FA_HD + (t - FA_HD)));
    const float s0 = warp_sum(q0 * q0), s1 = warp_sum(q1 * q1), s2 = warp_sum(kr * kr);
    if (lane == 0) { red[warp * 3] = s0; red[warp * 3 + 1] = s1; red[warp * 3 + 2] = s2; }
    sync_warps();
    float t0 = 0.f, t1 = 0.f, tk = 0.f;
    const int wb = (t >> 8) * 8;  // warps 0-7 hold heads 0/2 (and k), warps 8-15 heads 1/3
#pragma unroll
    for (int i = 0; i < 8; ++i) { t0 += red[(wb + i) * 3]; t1 += red[(wb + i) * 3 + 1]; tk += red[i * 3 + 2]; }
    const float wq = 1.f + __uint_as_float(params.x);
    const float n0 = bfr((q0 * rsqrtf(t0 / FA_HD + RMS_EPS)) * wq);
    const float n1 = bfr((q1 * rsqrtf(t1 / FA_HD + RMS_EPS)) * wq);
    const float nk = t < FA_HD ? bfr((kr * rsqrtf(tk / FA_HD + RMS_EPS)) * (1.f + __uint_as_float(params.y))) : 0.f;
    qf[t] = n0;  // qf[hh*256 + d] with hh = t>>8 (0/1)
    qf[t + 512] = n1;
    if (t < FA_HD) kf[t] = nk;
    sync_warps();
    // -- partial RoPE (NeoX halves) on dims 0..63, in bf16 as transformers does --
    float r0 = n0, r1 = n1, rk = nk;
    if (d < FA_ROT) {
      const int pd = d < FA_ROT / 2 ? d + FA_ROT / 2 : d - FA_ROT / 2;
      const float sg = d < FA_ROT / 2 ? -1.f : 1.f;
      const int hb = t & ~(FA_HD - 1);
      r0 = bfr(bfr(n0 * rc) + bfr(sg * qf[hb + pd] * rs));
      r1 = bfr(bfr(n1 * rc) + bfr(sg * qf[512 + hb + pd] * rs));
      if (t < FA_HD) rk = bfr(bfr(nk * rc) + bfr(sg * kf[pd] * rs));
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
    const size_t cache_row = (size_t)b * NFA * FA_HKV * a.max_seq * FA_HD;  // row b's caches
    if (s == ns - 1) {
      const size_t off = cache_row + ((size_t)(li * FA_HKV + g) * a.max_seq + pos) * FA_HD;
      if (t < FA_HD) a.k_cache[off + t] = kb[t];
      else a.v_cache[off + t - FA_HD] = vb[t - FA_HD];
    }
    // -- scores and online softmax: warps 0-7 take q heads 0, 1, warps 8-15 heads 2, 3; warp w
    // covers positions p0 + (w % 8) + 8 i (two heads per warp keeps the loop within the registers) --
    const int hg = warp >> 3, slot8 = warp & 7;
    float m[2], lsum[2], acc[2][8];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      m[hh] = -INFINITY;
      lsum[hh] = 0.f;
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[hh][i] = 0.f;
    }
    const uint16_t* kc = a.k_cache + cache_row + (size_t)(li * FA_HKV + g) * a.max_seq * FA_HD;
    const uint16_t* vc = a.v_cache + cache_row + (size_t)(li * FA_HKV + g) * a.max_seq * FA_HD;
    if (RING && u == (int)blockIdx.x) {  // past positions from the ring, then pos from shared memory
      // (att_kv_slice's rows and chunk count, which the producer copies: computed here from p0, p1)
      const int rows = p1 - p0 - (s == ns - 1 ? 1 : 0), nch = (rows + ATT_RING_ROWS - 1) / ATT_RING_ROWS;
      for (int c0 = 0; c0 < nch; c0 += ATT_ITEM_CHUNKS) {
        const int k = min(ATT_ITEM_CHUNKS, nch - c0);
        for (int c = 0; c < k; ++c) {
          const uint32_t ch = chunk_wait(st, c);
#pragma unroll
          for (int j = slot8; j < ATT_RING_ROWS; j += 8)
            if ((c0 + c) * ATT_RING_ROWS + j < rows) {
              const uint32_t kr = ch + (j * FA_HD + lane * 8) * 2;
              att_score(qf, hg, lane, lds128(kr), lds128(kr + RING_SLOT / 2), m, lsum, acc);
            }
        }
        chunks_done(st, k);
      }
      if (s == ns - 1 && (pos - p0) % 8 == slot8)
        att_score(qf, hg, lane, reinterpret_cast<const uint4*>(kb)[lane], reinterpret_cast<const uint4*>(vb)[lane], m, lsum, acc);
    } else {
      for (int p = p0 + slot8; p < p1; p += 8) {
        if (p == pos)
          att_score(qf, hg, lane, reinterpret_cast<const uint4*>(kb)[lane], reinterpret_cast<const uint4*>(vb)[lane], m, lsum, acc);
        else
          att_score(qf, hg, lane, ld_x16(kc + (size_t)p * FA_HD + lane * 8), ld_x16(vc + (size_t)p * FA_HD + lane * 8), m, lsum, acc);
      }
    }
    if (stamp) stamps[1] = globaltimer();  // warp 0 has scored its positions
    // -- the 8 position slots of each head pair: slots 4-7 hand their state to slots 0-3 through
    // the AT_ENTRIES entries of shared memory; slot w < 4 merges its own state with entry w and
    // rewrites the entry (m, l by lane 0: after every lane's read) --
    if (slot8 >= 4) att_put(wm, wl, wacc, slot8 - 4, hg, lane, m, lsum, acc);
    sync_warps();
    if (slot8 < 4) {
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int i = slot8 * 4 + 2 * hg + hh;
        const float pm = wm[i];
        Merge<8> r(fmaxf(m[hh], pm));
        r.add(m[hh], lsum[hh], acc[hh]);
        float pv[8];
        const float4 p0v = reinterpret_cast<const float4*>(wacc + i * FA_HD + lane * 8)[0];
        const float4 p1v = reinterpret_cast<const float4*>(wacc + i * FA_HD + lane * 8)[1];
        pv[0] = p0v.x; pv[1] = p0v.y; pv[2] = p0v.z; pv[3] = p0v.w; pv[4] = p1v.x; pv[5] = p1v.y; pv[6] = p1v.z; pv[7] = p1v.w;
        r.add(pm, wl[i], pv);
        m[hh] = r.M;
        lsum[hh] = r.L;
#pragma unroll
        for (int k = 0; k < 8; ++k) acc[hh][k] = r.A[k];
      }
      __syncwarp();
      att_put(wm, wl, wacc, slot8, hg, lane, m, lsum, acc);
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
        attn[(4 * g + hh) * FA_HD + dd] = gated(r.A[0] / r.L, lo(gates));
        attn[(4 * g + hh) * FA_HD + dd + 1] = gated(r.A[1] / r.L, hi(gates));
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
        attn[(4 * g + hh) * FA_HD + dd] = gated(r.A[0] / r.L, lo(gates));
        attn[(4 * g + hh) * FA_HD + dd + 1] = gated(r.A[1] / r.L, hi(gates));
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
    matvec_half_rows<FA_OIN, NB, true>(ld, part(D, blockIdx.x, gridDim.x), part(D, blockIdx.x + 1, gridDim.x), a.attn, a.hidden,
                                       reinterpret_cast<float*>(sm + SM_RED), nullptr, 0, wv);
    return;
  }
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  const int ns = row_splits(a, 0, step);
  if (out_proj_merges(ns)) load_attn_merged(a, 0, ns, xs);
  else load_vec(a.attn, xs, FA_OIN);
  matvec_half_rows<FA_OIN, 1>(ld, part(D, blockIdx.x, gridDim.x), part(D, blockIdx.x + 1, gridDim.x), xs, a.hidden,
                              reinterpret_cast<float*>(sm + SM_RED), nullptr, 0, wv);
}

}  // namespace
}  // namespace mk
