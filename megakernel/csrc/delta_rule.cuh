// The Gated DeltaNet layer's three phases (reference: model.py's linear-attention branch;
// reference/ops.py causal_conv1d_step, delta_rule_inputs, gated_rms_norm; delta_rule.py
// gated_delta_rule_recurrent, whose one-token step the core phase is).
//   in-proj   every block: xs[b] = norm(hidden[b]) for each batch row b (a batch: unscaled, each dot times the row's
//             1 / rms: device_common.cuh block_rmsnorm UNSCALED); its rows of the packed [qkv | z | b | a]
//             projection: qkv into row b's conv ring column pos[b] % 4, z | b | a into the workspace (zab[b])
//   core      gated_delta_rule_recurrent: batch 1: unit u = (head h, v-slice j), units b, b+G, ...
//             of block b (dn_core_one). Threads 0-271 own one conv channel each (q and k of head h,
//             the unit's 16 v): conv + SiLU; then warp w owns state row v = 16 j + w (lane: k =
//             4 lane .. 4 lane + 3): S = alpha S + k beta (v - alpha S.k), o = S.q.
//             A batch: unit u = (row b, head h), all 128 v rows, and the head's gated RMSNorm
//             (dn_core_heads)
//   out-proj  every block: batch 1: the gated RMSNorm of all DN_HV heads (warp w: heads w, w + 16,
//             ...; lane: 4 values), then its rows of out_proj with the residual add; a batch: its rows of
//             out_proj (the tensor-core tiles read the normed heads from global memory)
#pragma once
#include "matvec.cuh"

namespace mk {
namespace {

static_assert(DN_HV % NWARPS == 0, "batch 1's gated norm: warp w takes value heads w, w + 16, ...");
static_assert(NWARPS == DN_DV / DN_VSLICES, "recurrence: one warp per v row of a unit");
static_assert(DN_DK == 32 * 4, "recurrence: a lane owns 4 k of a state row");

template <int NB, class Loader>
__device__ __forceinline__ void dn_in_proj(const Args& a, int l, int step, uint8_t* sm, uint4 (&wv)[16], Loader& ld,
                                           const uint4 params) {
  float* xs = reinterpret_cast<float*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  if (l == 0) {  // the embedding rows of the step's input ids are the residual streams entering layer 0
    block_rmsnorm<NB, (NB > 1)>([&](int b) { return a.embed + (size_t)step_token(a, sm, step, b) * D; }, params, xs, red);
    if (blockIdx.x == 0) {
      if (a.times && threadIdx.x == 0) a.times[NPHASES + 2] = globaltimer();
#pragma unroll
      for (int b = 0; b < NB; ++b) {
        const uint16_t* e = a.embed + (size_t)step_token(a, sm, step, b) * D;
        for (int i = threadIdx.x; i < D; i += THREADS) {
          const float v = ld_w1(e + i);
          a.hidden[b * D + i] = v;
          if (a.trace) a.trace[(size_t)b * (NLAYER + 2) * D + i] = v;
        }
      }
    }
  } else {
    block_rmsnorm<NB, (NB > 1)>([&](int b) { return a.hidden + b * D; }, params, xs, red);  // (a batch: unscaled)
  }
  // row b's conv ring column pos[b] % 4 of this layer (batch 1: computed once, before the rows)
  const auto conv_col = [&](int b) {
    return a.conv_ring + (size_t)b * CONV_ROW + (size_t)(dn_index(l) * CONV_K + (row_pos(a, b, step) & 3)) * DN_CONV;
  };
  uint16_t* const conv0 = conv_col(0);
  const int r0 = part(DN_WIN, blockIdx.x, gridDim.x);
  matvec_rows<NB>(ld, part(DN_WIN, blockIdx.x + 1, gridDim.x) - r0, xs, red, wv, [&](int i, int b, float v) {
    const int r = r0 + i;
    if (r < DN_CONV) (NB == 1 ? conv0 : conv_col(b))[r] = bits(v);  // (the conv ring is state: bf16)
    else a.zab[b * ZAB_W + r - DN_CONV] = v;
  });
}

// the conv channel of thread t < 2 DN_DK + 16 in unit (value head h, j): q, k of its key head
// h / DN_GROUP, the unit's 16 v of head h
__device__ __forceinline__ int dn_channel(int t, int h, int j) {
  const int kh = h / DN_GROUP;
  return t < DN_DK ? kh * DN_DK + t : t < 2 * DN_DK ? DN_KEY + kh * DN_DK + (t - DN_DK) : 2 * DN_KEY + h * DN_DV + j * 16 + (t - 2 * DN_DK);
}
// timing mode: thread 0 of block 0 stamps step k of its first unit of DeltaNet layer l (shapes.cuh DN_STAMPS_AT), after
// a block barrier; everything it needs is recomputed here, so no register is held for it across the core. STAMPS: the
// one-step launches of the ring schedule (the kernels with a timing mode the anatomy reads); elsewhere compiled out,
// which keeps the many-token and register-schedule kernels' registers and spills as they were. Hopper only: at
// sm_86 / sm_89 even one stamp took the B = 8 kernel's spills from 16 / 24 to 80 / 60 B (over build.py's bound),
// where at sm_90a every kernel's registers and spills stay as they were
template <bool STAMPS>
__device__ __forceinline__ void dn_stamp(const Args& a, int l, int u, int k) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (STAMPS) {
    if (a.times && blockIdx.x == 0 && threadIdx.x == 0 && u == 0) a.times[DN_STAMPS_AT + dn_index(l) * DN_STAMPS + k] = globaltimer();
  }
#endif
}

// The core's inputs that this launch's in-proj does not write, as float bits, so they can be loaded
// before the barrier that precedes the core (the first unit) or while the previous unit runs:
// in[0] = this warp's state row (lane: 4 k); in[1] = dt_bias[h], A_log[h]; for a channel thread
// in[2] = its 4 conv taps, in[3] = its inputs at positions pos-3 .. pos-1 of the unit's row.
__device__ __forceinline__ void core_inputs(const Args& a, int l, int step, int u, uint4 (&in)[4]) {
  const int t = threadIdx.x;
  const DnUnit n = dn_unit(u);
  in[0] = __ldcg(reinterpret_cast<const uint4*>(dn_state_row(a, l, n, n.j * 16 + (t >> 5))) + (t & 31));
  in[1] = make_uint4(__float_as_uint(ld_w1(lw<uint16_t>(a, l, SL_DT_BIAS) + n.h)), __float_as_uint(ld_w1(lw<uint16_t>(a, l, SL_A_LOG) + n.h)), 0, 0);
  if (t < 2 * DN_DK + 16) {
    const int c = dn_channel(t, n.h, n.j), pos = row_pos(a, n.b, step);
    const uint2 w = __ldg(reinterpret_cast<const uint2*>(lw<uint16_t>(a, l, SL_CONV_W) + c * CONV_K));
    in[2] = make_uint4(w.x << 16, w.x & 0xffff0000u, w.y << 16, w.y & 0xffff0000u);
    const uint16_t* ring = a.conv_ring + (size_t)n.b * CONV_ROW + (size_t)dn_index(l) * CONV_K * DN_CONV + c;
    in[3] = make_uint4(__float_as_uint(ld_x1(ring + (size_t)((pos - 3) & 3) * DN_CONV)),
                       __float_as_uint(ld_x1(ring + (size_t)((pos - 2) & 3) * DN_CONV)),
                       __float_as_uint(ld_x1(ring + (size_t)((pos - 1) & 3) * DN_CONV)), 0);
  }
}

// Batch 1: unit u = (head h, v-slice j); in[] of the block's first unit arrive in wv[0..3], loaded
// before the barrier (core_inputs)
template <bool STAMPS>
__device__ __forceinline__ void dn_core_one(const Args& a, int l, int step, uint8_t* sm, const uint4 (&wv)[16]) {
  float* qs = reinterpret_cast<float*>(sm + SM_DN_Q);
  float* ks = reinterpret_cast<float*>(sm + SM_DN_K);
  float* vs = reinterpret_cast<float*>(sm + SM_DN_V);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  for (int u = blockIdx.x; u < DN_UNITS; u += gridDim.x) {
    const DnUnit n = dn_unit(u);
    const int h = n.h, j = n.j, v = j * 16 + warp, pos = row_pos(a, n.b, step);
    const uint16_t* ring = a.conv_ring + (size_t)n.b * CONV_ROW + (size_t)dn_index(l) * CONV_K * DN_CONV;
    const float* zab = a.zab + n.b * ZAB_W;
    uint4 in[4];
    if (u == (int)blockIdx.x) {
#pragma unroll
      for (int i = 0; i < 4; ++i) in[i] = wv[i];
    } else {
      core_inputs(a, l, step, u, in);
    }
    const float4 s = make_float4(__uint_as_float(in[0].x), __uint_as_float(in[0].y), __uint_as_float(in[0].z), __uint_as_float(in[0].w));
    const float a_raw = __ldcg(zab + DN_VAL + DN_HV + h), b_raw = __ldcg(zab + DN_VAL + h);
    const float dt = __uint_as_float(in[1].x), alog = __uint_as_float(in[1].y);
    float y = 0.f;
    if (t < 2 * DN_DK + 16) {  // conv (tap i multiplies position pos-3+i; tap 3 is this token) + SiLU
      const int c = dn_channel(t, h, j);
      const float taps[4] = {__uint_as_float(in[2].x), __uint_as_float(in[2].y), __uint_as_float(in[2].z), __uint_as_float(in[2].w)};
      const float past[3] = {__uint_as_float(in[3].x), __uint_as_float(in[3].y), __uint_as_float(in[3].z)};
      float acc = 0.f;
#pragma unroll
      for (int i = 0; i < 3; ++i) acc = fmaf(taps[i], past[i], acc);
      acc = fmaf(taps[3], ld_x1(ring + (size_t)(pos & 3) * DN_CONV + c), acc);
      y = siluf_(acc);
      if (t < DN_DK) qs[t] = y;
      else if (t < 2 * DN_DK) ks[t - DN_DK] = y;
      else vs[t - 2 * DN_DK] = y;
    }
    const float ss = warp_sum(y * y);
    if (lane == 0 && warp < 8) red[warp] = ss;
    sync_warps();
    dn_stamp<STAMPS>(a, l, u, 0);  // convolved, the norms' sums in
    const float rq = rsqrtf(red[0] + red[1] + red[2] + red[3] + RMS_EPS) * rsqrtf((float)DN_DK);
    const float rk = rsqrtf(red[4] + red[5] + red[6] + red[7] + RMS_EPS);
    // gates: g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b)
    const float av = a_raw + dt;
    const float sp = av > 20.f ? av : log1pf(expf(av));
    const float alpha = expf(-expf(alog) * sp);
    const float beta = sigmoidf_(b_raw);
    const float4 q4 = reinterpret_cast<const float4*>(qs)[lane];
    const float4 k4 = reinterpret_cast<const float4*>(ks)[lane];
    const float kx = k4.x * rk, ky = k4.y * rk, kz = k4.z * rk, kw = k4.w * rk;
    const float qx = q4.x * rq, qy = q4.y * rq, qz = q4.z * rq, qw = q4.w * rq;
    float4 sd = make_float4(alpha * s.x, alpha * s.y, alpha * s.z, alpha * s.w);
    const float sk = warp_sum(sd.x * kx + sd.y * ky + sd.z * kz + sd.w * kw);
    const float du = beta * (vs[warp] - sk);
    sd.x = fmaf(kx, du, sd.x); sd.y = fmaf(ky, du, sd.y); sd.z = fmaf(kz, du, sd.z); sd.w = fmaf(kw, du, sd.w);
    const float o = warp_sum(sd.x * qx + sd.y * qy + sd.z * qz + sd.w * qw);
    __stcg(reinterpret_cast<float4*>(dn_state_row(a, l, n, v)) + lane, sd);
    if (lane == 0) obuf_of<1>(a)[h * DN_DV + v] = o;
    sync_warps();  // shared memory reused by the next unit
    dn_stamp<STAMPS>(a, l, u, 1);
    dn_stamp<STAMPS>(a, l, u, 2);  // (batch 1: no gated norm in the core)
  }
}


// A batch: unit u = (batch row b, head h) = (u / DN_HV, u % DN_HV), all 128 v rows of the head
// (16 NB units: at B = 8 one each for 128 of the 132 blocks), so the head's conv, q/k norms and
// gates are computed once, not once per v-slice, and the head's gated RMSNorm is done here: obuf
// holds the out-projection's input (dn_out_proj reads it straight from global memory). Each row's
// arithmetic is dn_core_one's and the out-projection's norm's, in the same order, so a row's bits do
// not depend on the other rows or on NB.
//   thread t < DN_HEAD_CH: conv channel t of the head (q | k | the head's 128 v): conv + SiLU;
//     the sum of its three past taps came before the barrier (head_inputs);
//   thread GATE_THREAD (a warp with no channel): the head's gates alpha, beta;
//   warp w: state rows v = 8 w .. 8 w + 7 (lane: k = 4 lane .. 4 lane + 3), eight independent
//     recurrences; lane 0 puts each row's output o in shared memory. From DN_STATE_RING_MIN_BATCH rows on
//     the block's first unit's rows come from the weight ring (schedule.cuh dn_state_slice: the producer
//     copies them from HBM during the in-proj; read first, the 4 slots released at the conv's barrier),
//     so the core's start no longer waits for 64 KB a block through L2 (NOTES v34: a B = 8 unit 6.3 ->
//     4.1 µs); a later unit's (grids of fewer than NB * DN_HV blocks), and a smaller batch's, from global
//     memory, prefetched into L2 at the gate/up before (prefetch_core_state_l2);
//   warp 0 then: the gated RMSNorm of the head (lane: v = 4 lane .. 4 lane + 3) into obuf.
// Shared memory: SM_DN_Q, _K, _V (contiguous: channel t's output at SM_DN_Q + 4 t), SM_DN_O, SM_DN_GATES, SM_DN_Z;
// red[0..7] the q and k channels' sums of squares (warps 0-3: q, 4-7: k).
constexpr int DN_HEAD_CH = 2 * DN_DK + DN_DV;               // 384 conv channels of a head
constexpr int DN_ROWS_PER_WARP = DN_DV / NWARPS;            // 8 state rows
constexpr int GATE_THREAD = DN_HEAD_CH;                     // the first thread with no channel
static_assert(DN_HEAD_CH % 32 == 0 && GATE_THREAD < THREADS && DN_ROWS_PER_WARP == 8, "dn_core_heads' thread map");
static_assert(SM_DN_K == SM_DN_Q + 4 * DN_DK && SM_DN_V == SM_DN_K + 4 * DN_DK, "dn_core_heads: q | k | v contiguous");
static_assert(DN_DV == 32 * 4, "the gated norm: a lane owns 4 v of the head");
static_assert(DN_STATE_ROWS_PER_CHUNK % DN_ROWS_PER_WARP == 0 && DN_DV / DN_STATE_ROWS_PER_CHUNK <= 8,
              "dn_core_heads: a warp's rows in one ring chunk, a unit's chunks one item");

// conv channel t < DN_HEAD_CH of head h: q, k of head h, then its 128 v
__device__ __forceinline__ int dn_head_channel(int t, int h) {
  return t < 2 * DN_DK ? dn_channel(t, h, 0) : 2 * DN_KEY + h * DN_DV + (t - 2 * DN_DK);
}

// A batch unit's conv and gate inputs that this launch's in-proj does not write (loaded before the
// barrier that precedes the core, by prepare_phase for the block's first unit): in = {this thread's
// channel's past three taps summed (taps 0-2 times positions pos-3 .. pos-1, in that order), tap 3,
// dt_bias[h], A_log[h]}. (The state rows are read at the core's start: held in registers across the
// barrier they made every batch kernel spill, and the phase before the core waited for them: NOTES v16.)
__device__ __forceinline__ void head_inputs(const Args& a, int l, int step, int u, uint4& in) {
  const int t = threadIdx.x, b = u / DN_HV, h = u % DN_HV;
  float past = 0.f, tap3 = 0.f;
  if (t < DN_HEAD_CH) {
    const int c = dn_head_channel(t, h), pos = row_pos(a, b, step);
    const uint2 w = __ldg(reinterpret_cast<const uint2*>(lw<uint16_t>(a, l, SL_CONV_W) + c * CONV_K));
    const uint16_t* ring = a.conv_ring + (size_t)b * CONV_ROW + (size_t)dn_index(l) * CONV_K * DN_CONV + c;
    past = fmaf(lo(w.x), ld_x1(ring + (size_t)((pos - 3) & 3) * DN_CONV), past);
    past = fmaf(hi(w.x), ld_x1(ring + (size_t)((pos - 2) & 3) * DN_CONV), past);
    past = fmaf(lo(w.y), ld_x1(ring + (size_t)((pos - 1) & 3) * DN_CONV), past);
    tap3 = hi(w.y);
  }
  in = make_uint4(__float_as_uint(past), __float_as_uint(tap3), __float_as_uint(ld_w1(lw<uint16_t>(a, l, SL_DT_BIAS) + h)),
                  __float_as_uint(ld_w1(lw<uint16_t>(a, l, SL_A_LOG) + h)));
}

// The state of the block's (row, head) units of DeltaNet layer l from unit u0 on (below DN_STATE_RING_MIN_BATCH rows
// every unit, from it on those after the block's first: grids of fewer than NB * DN_HV blocks) pulled into L2 (one bulk prefetch of a unit's 64 KB by one thread, no registers held), so that the core's loads of it
// hit L2 instead of waiting for HBM after its barrier. Issued (megakernel.cu run_phase) as the gate/up phase of the layer
// before begins: there the ring fills and its producer waits, so the HBM has room for it; issued in a barrier's wait
// instead, the burst slowed the phase's last blocks more than it saved (NOTES v24: B = 8's DeltaNet cores -42 µs a
// step, the gate/ups +15, tg128 +1.7%; since v34 larger batches take the state through the ring instead).
template <int NB>
__device__ __forceinline__ void prefetch_core_state_l2(const Args& a, int l, int u0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  for (int u = u0; u < NB * DN_HV; u += gridDim.x)
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(dn_state_row(a, l, DnUnit{u / DN_HV, u % DN_HV, 0}, 0)),
                 "r"(DN_DV * DN_DK * 4) : "memory");
#endif
}

template <int NB, bool STAMPS>
__device__ __forceinline__ void dn_core_heads(const Args& a, int l, int step, uint8_t* sm, uint4 (&wv)[16], Stream& st) {
  float* qs = reinterpret_cast<float*>(sm + SM_DN_Q);  // q | k | v of the head, in the channels' order
  float* os = reinterpret_cast<float*>(sm + SM_DN_O);
  float* gates = reinterpret_cast<float*>(sm + SM_DN_GATES);
  float4* zs = reinterpret_cast<float4*>(sm + SM_DN_Z);  // [lane]: warp 0's z (the gated norm's)
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  for (int u = blockIdx.x; u < NB * DN_HV; u += gridDim.x) {
    const int b = u / DN_HV, h = u % DN_HV;
    // this warp's state rows (lane: 4 k): the block's first unit's from the ring (schedule.cuh dn_state_slice: rows 8 w ..
    // 8 w + 7 in chunk 8 w / DN_STATE_ROWS_PER_CHUNK, copied during the in-proj), a later unit's (grids of fewer than
    // NB * DN_HV blocks) from global memory, in flight during the conv and the norms
    const bool first = u == (int)blockIdx.x, ring_rows = NB >= DN_STATE_RING_MIN_BATCH && first;
    if (!first) head_inputs(a, l, step, u, wv[0]);  // (the first unit's came before the barrier)
    uint4 rows[DN_ROWS_PER_WARP];
    if (ring_rows) {
      constexpr int W_PER_CHUNK = DN_STATE_ROWS_PER_CHUNK / DN_ROWS_PER_WARP;
      const uint32_t ch = chunk_wait(st, warp / W_PER_CHUNK) + ((warp % W_PER_CHUNK) * DN_ROWS_PER_WARP * DN_DK + 4 * lane) * 4;
#pragma unroll
      for (int i = 0; i < DN_ROWS_PER_WARP; ++i) rows[i] = lds128(ch + i * DN_DK * 4);
    } else {
#pragma unroll
      for (int i = 0; i < DN_ROWS_PER_WARP; ++i)
        rows[i] = __ldcg(reinterpret_cast<const uint4*>(dn_state_row(a, l, DnUnit{b, h, 0}, warp * DN_ROWS_PER_WARP + i)) + lane);
    }
    const float* zab = a.zab + b * ZAB_W;
    // issued first, used last: warp 0's z (kept in shared memory from the first block barrier on) and
    // gated-norm weights of its 4 v
    float4 zv = make_float4(0.f, 0.f, 0.f, 0.f);
    uint2 gw = make_uint2(0, 0);
    if (warp == 0) {
      zv = __ldcg(reinterpret_cast<const float4*>(zab + h * DN_DV + lane * 4));
      gw = __ldg(reinterpret_cast<const uint2*>(lw<uint16_t>(a, l, SL_GNORM) + lane * 4));
    }
    float y = 0.f;
    if (t < DN_HEAD_CH) {  // conv (tap 3 multiplies this token, written by the in-proj) + SiLU
      const uint16_t* ring = a.conv_ring + (size_t)b * CONV_ROW + (size_t)dn_index(l) * CONV_K * DN_CONV;
      const float acc = fmaf(__uint_as_float(wv[0].y), ld_x1(ring + (size_t)(row_pos(a, b, step) & 3) * DN_CONV + dn_head_channel(t, h)),
                             __uint_as_float(wv[0].x));
      y = siluf_(acc);
      qs[t] = y;
    } else if (t == GATE_THREAD) {  // gates: g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b)
      const float av = __ldcg(zab + DN_VAL + DN_HV + h) + __uint_as_float(wv[0].z);
      const float sp = av > 20.f ? av : log1pf(expf(av));
      gates[0] = expf(-expf(__uint_as_float(wv[0].w)) * sp);
      gates[1] = sigmoidf_(__ldcg(zab + DN_VAL + h));
    }
    const float ss = warp_sum(y * y);
    if (lane == 0 && warp < 8) red[warp] = ss;
    if constexpr (NB >= DN_STATE_RING_MIN_BATCH) chunks_done(st, ring_rows ? DN_DV / DN_STATE_ROWS_PER_CHUNK : 0);  // (a block barrier: every row read, its slots released)
    else sync_warps();
    dn_stamp<STAMPS>(a, l, u, 0);  // convolved, the norms' sums in
    if (warp == 0) zs[lane] = zv;
    const float rq = rsqrtf(red[0] + red[1] + red[2] + red[3] + RMS_EPS) * rsqrtf((float)DN_DK);
    const float rk = rsqrtf(red[4] + red[5] + red[6] + red[7] + RMS_EPS);
    const float alpha = gates[0], beta = gates[1];
    const float4 q4 = reinterpret_cast<const float4*>(qs)[lane];
    const float4 k4 = reinterpret_cast<const float4*>(qs + DN_DK)[lane];
    const float* vs = qs + 2 * DN_DK;
    const float kx = k4.x * rk, ky = k4.y * rk, kz = k4.z * rk, kw = k4.w * rk;
    const float qx = q4.x * rq, qy = q4.y * rq, qz = q4.z * rq, qw = q4.w * rq;
#pragma unroll
    for (int i = 0; i < DN_ROWS_PER_WARP; ++i) {  // S = alpha S + k beta (v - alpha S.k), o = S.q
      const int v = warp * DN_ROWS_PER_WARP + i;
      const uint4 r = rows[i];
      float4 sd = make_float4(alpha * __uint_as_float(r.x), alpha * __uint_as_float(r.y), alpha * __uint_as_float(r.z),
                              alpha * __uint_as_float(r.w));
      const float sk = warp_sum(sd.x * kx + sd.y * ky + sd.z * kz + sd.w * kw);
      const float du = beta * (vs[v] - sk);
      sd.x = fmaf(kx, du, sd.x); sd.y = fmaf(ky, du, sd.y); sd.z = fmaf(kz, du, sd.z); sd.w = fmaf(kw, du, sd.w);
      const float o = warp_sum(sd.x * qx + sd.y * qy + sd.z * qz + sd.w * qw);
      __stcg(reinterpret_cast<float4*>(dn_state_row(a, l, DnUnit{b, h, 0}, v)) + lane, sd);
      if (lane == 0) os[v] = o;
    }
    sync_warps();
    dn_stamp<STAMPS>(a, l, u, 1);  // every state row updated, o in shared memory
    // the gated RMSNorm of the head: dn_out_proj's batch-1 arithmetic, written out again on purpose
    // (moved into one function shared with dn_out_proj, ptxas rescheduled every batch kernel: ~75
    // instructions at B = 8, not measured; the kernels here are the ones measured in NOTES v16)
    if (warp == 0) {
      const float4 o4 = reinterpret_cast<const float4*>(os)[lane];
      const float o[4] = {o4.x, o4.y, o4.z, o4.w};
      const float4 z4 = zs[lane];
      const float z[4] = {z4.x, z4.y, z4.z, z4.w};
      const float w[4] = {lo(gw.x), hi(gw.x), lo(gw.y), hi(gw.y)};
      const float ss2 = warp_sum(o[0] * o[0] + o[1] * o[1] + o[2] * o[2] + o[3] * o[3]);
      const float r = rsqrtf(ss2 / (float)DN_DV + RMS_EPS);
      float y4[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) y4[i] = (w[i] * (o[i] * r)) * siluf_(z[i]);
      *reinterpret_cast<uint2*>(obuf_of<NB>(a) + b * DN_VAL + h * DN_DV + lane * 4) = make_uint2(pack_bf16(y4[0], y4[1]), pack_bf16(y4[2], y4[3]));
    }
    sync_warps();  // shared memory reused by the next unit
    dn_stamp<STAMPS>(a, l, u, 2);  // the head's gated norm stored
  }
}

template <int NB, bool STAMPS>
__device__ __forceinline__ void gated_delta_rule_recurrent(const Args& a, int l, int step, uint8_t* sm, uint4 (&wv)[16], Stream& st) {
  if constexpr (NB == 1) dn_core_one<STAMPS>(a, l, step, sm, wv);
  else dn_core_heads<NB, STAMPS>(a, l, step, sm, wv, st);
}

template <int NB, class Loader>
__device__ __forceinline__ void dn_out_proj(const Args& a, uint8_t* sm, uint4 (&wv)[16], Loader& ld, const uint4 params) {
  if constexpr (NB > 1) {  // a batch: the core normed the heads; each warp reads its piece of obuf from global memory
    matvec_row_parts<DN_VAL, NB>(ld, part(D, blockIdx.x, gridDim.x), part(D, blockIdx.x + 1, gridDim.x), obuf_of<NB>(a), a.hidden,
                                       reinterpret_cast<float*>(sm + SM_RED), nullptr, 0, wv);
    return;
  }
  uint16_t* xs = reinterpret_cast<uint16_t*>(sm + SM_XS);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const float w[4] = {lo(params.x), hi(params.x), lo(params.y), hi(params.y)};
#pragma unroll
  for (int i = 0; i < DN_HV / NWARPS; ++i) {  // warp w: value heads w, w + 16, ... (lane: 4 v)
    const int base = (warp + i * NWARPS) * DN_DV + lane * 4;
    const float4 ov = __ldcg(reinterpret_cast<const float4*>(obuf_of<1>(a) + base));
    const float4 zv = __ldcg(reinterpret_cast<const float4*>(a.zab + base));
    const float o[4] = {ov.x, ov.y, ov.z, ov.w};
    const float z[4] = {zv.x, zv.y, zv.z, zv.w};
    const float ss = warp_sum(o[0] * o[0] + o[1] * o[1] + o[2] * o[2] + o[3] * o[3]);
    const float r = rsqrtf(ss / (float)DN_DV + RMS_EPS);
    float y[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) y[i] = (w[i] * (o[i] * r)) * siluf_(z[i]);
    *reinterpret_cast<uint2*>(xs + base) = make_uint2(pack_bf16(y[0], y[1]), pack_bf16(y[2], y[3]));  // (rounded once: the out-projection's input)
  }
  sync_warps();
  matvec_row_parts<DN_VAL, 1>(ld, part(D, blockIdx.x, gridDim.x), part(D, blockIdx.x + 1, gridDim.x), xs, a.hidden,
                              reinterpret_cast<float*>(sm + SM_RED), nullptr, 0, wv);
}

}  // namespace
}  // namespace mk
