// The last phase: final norm, the lm_head (the tied embedding's VOCAB rows) and the greedy argmax
// (reference: ops.rms_norm, ops.lm_head, then torch.argmax: ties go to the lowest index).
//   every block   xs[b] = norm(hidden[b]) per batch row b; its vocabulary rows (matvec_rows; the greedy argmax
//                 with no logits asked for: lm_head_bounded(_batch), from their int8 copy); the
//                 logits (bf16-rounded, fp32 out) when asked; each warp's best (value, index) (at
//                 batch 1 of its rows; with a batch, warps 2b and 2b+1 see all of row b's), then the
//                 block's (thread b: row b), in the workspace's amax areas
//   the argmax    warp b reduces row b's G block results: at a launch's last step in the last block
//                 to finish (grid_sync.cuh last_block_done: no grid barrier), at the other steps of a
//                 many-token launch in every block after one more grid barrier (each block feeds the
//                 ids to its own next step). Block 0 (or the last block) writes them out: out_token,
//                 and the host-mapped stream as each step ends.
#pragma once
#include <cfloat>
#include <type_traits>
#include "matvec.cuh"

namespace mk {
namespace {

__device__ __forceinline__ bool better(float v, int i, float bv, int bi) { return v > bv || (v == bv && i < bi); }

// ---- sampling (reference/sampling.py, the same function): key_i = logit_i * (1 / T) + g_i, the
// Gumbel noise g_i = -log(-log(u_i)) from a hash of (seed, position, row, i); the argmax of the keys
// is a draw from softmax(logit / T) ----
__device__ __forceinline__ uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  return h ^ (h >> 16);
}
constexpr float GUMBEL_MAX = 16.7f;  // above every g (u <= 1 - 2^-24: g <= ~16.64)
__device__ __forceinline__ float sampling_key(float logit, float inv_t, uint32_t row_key, int i) {
  const float u = ((float)(fmix32(row_key ^ (uint32_t)i) >> 9) + 0.5f) * (1.f / 8388608.f);  // 2^-23
  return __fadd_rn(__fmul_rn(logit, inv_t), -logf(-logf(u)));
}

// ---- batch 1's greedy argmax from the int8 rows (LM_I8, schedule.cuh lm_bounded) ----
// Row r's logit from its int8 row, scale_r (q_r . x), is within err_r |x|_2 of the logit its bf16 row gives as the
// bf16 pass sums it (the tier's lm_bound.quantize: the rounding's error norm, and the fp32 sums' rounding). So a row
// whose upper bound, rounded to bf16, is below the block's best lower bound, rounded, can neither be the argmax nor
// tie it (the logits are bf16: ties go to the lowest index). Pass 1 streams the int8 rows (half the bytes) and keeps
// each warp's rows that might (at most LM_CAND_CAP); pass 2 computes those rows' logits from their bf16 rows in global
// memory with the bf16 pass's own dot_regs on the same lanes (the same bits), so the argmax is the bf16 pass's.
//   warp w: pieces i + 4 w .. + 3 of each item (rows 2 i + 8 w .. + 7; matvec_rows' item of 4 bf16 rows); lane l
//     holds bytes 16 (32 c + l) .. + 15 of each 2 KB piece: c = 0, 1 the first row's k = 512 c + 16 l .. + 15, c = 2,
//     3 the second row's same k, so a lane reads its 16 x of c & 1 once for the item's 8 rows;
//   lane 0 of warp w: its candidate rows in SM_LM_CAND; pass 2 takes them 4 at a time (a warp with more than
//     LM_CAND_CAP takes all its rows exactly: correct, slower; not seen on the built-in weights).
// the bounds' constants (megakernel/lm_bound.py): |x|_2 rounded up by LM_NORM_UP (argmax's 1 + 2^-12); |x|_2^2 below
// LM_SMALL (SMALL: squares in fp32's subnormal range) or not finite: every row exactly; LM_ABS_SLACK (ABS_SLACK) added
// to every bound (the sums' products below fp32's normal range)
constexpr float LM_NORM_UP = 1.f + 1.f / 4096, LM_SMALL = 0x1p-96f, LM_ABS_SLACK = 0x1p-120f;
// int8 to fp32: prmt puts byte q + 128 under 0x4B00_0000 (the float 2^23 + q + 128, exactly), one fadd takes 2^23 + 128 off.
__device__ __forceinline__ float q_of(uint32_t w, int j) {  // byte j of w (q + 128) -> q, exactly
  return __int_as_float((int)__byte_perm(w, 0x4B000000u, 0x7440u + j)) - 8388736.f;
}
__device__ __forceinline__ float dot16_u8(const uint4 w, const float (&x)[16], float acc) {
  const uint32_t ws[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc = fmaf(q_of(ws[i], j), x[4 * i + j], acc);
  return acc;
}
// this lane's 16 x of step c: k = 512 (c & 1) + 16 lane .. + 15 (xs_slot keeps each aligned 4 together and in order)
__device__ __forceinline__ void lane_x16(const float* xs, int c, int lane, float (&x)[16]) {
  const int k0 = 512 * (c & 1) + 16 * lane;
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const float4 v = *reinterpret_cast<const float4*>(xs + xs_slot(k0 + 4 * m));
    x[4 * m] = v.x; x[4 * m + 1] = v.y; x[4 * m + 2] = v.z; x[4 * m + 3] = v.w;
  }
}
// rows[r] (of the block's slice from r0) for each r with bit r of `valid` set, exactly as the bf16 pass (matvec_rows)
// computes them, into the warp's best (every lane the same; a row not valid is loaded, not used). (NCH: PIECE_STEPS
// where the build has the pass; 1 elsewhere, where this never runs and a wider row's dot_regs would not compile)
constexpr int LM_NCH = LM_I8 ? PIECE_STEPS : 1;
__device__ __forceinline__ void lm_exact_rows(const Args& a, int r0, const int (&rows)[4], unsigned valid, const float* xs,
                                              uint4 (&wv)[16], float& best, int& besti) {
  if (!valid) return;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const uint16_t* w = a.lm_head + (size_t)(r0 + rows[r]) * D;
#pragma unroll
    for (int c = 0; c < LM_NCH; ++c) wv[r * LM_NCH + c] = ld_w(w + (c * 32 + lane) * 8);
  }
  float acc[4];
  dot_regs<LM_NCH, 4, 1, 1>(wv, xs, lane, acc);
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const float v = bfr(acc[r]);
    if ((valid >> r & 1u) && better(v, r0 + rows[r], best, besti)) { best = v; besti = r0 + rows[r]; }
  }
}
template <class Loader>
__device__ __forceinline__ void lm_head_bounded(const Args& a, Loader& ld, int r0, int n, const float* xs, uint4 (&wv)[16],
                                                uint8_t* sm, float& best, int& besti) {
  static_assert(!LM_I8 || (PIECE_STEPS == 4 && WARP_PIECES == 4 && D_PIECES == 1), "lm_head_bounded: the 0.8B's pieces");
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  uint2* cand = reinterpret_cast<uint2*>(sm + SM_LM_CAND) + warp * LM_CAND_CAP;  // {row in the slice, its upper bound's bits}
  float* lows = reinterpret_cast<float*>(sm + SM_RED) + NWARPS;                   // each warp's best lower bound
  float x[16];
  float ss = 0.f;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    lane_x16(xs, h, lane, x);
#pragma unroll
    for (int j = 0; j < 16; ++j) ss = fmaf(x[j], x[j], ss);
  }
  ss = warp_sum(ss);                       // |x|_2^2 (every lane's 32 x: all of x)
  const float xn = sqrtf(ss) * LM_NORM_UP;  // |x|_2, rounded up
  const int np = (n + 1) / 2;  // pieces: rows 2 p, 2 p + 1 of the slice
  float low = -INFINITY;       // the warp's best lower bound so far (every lane the same)
  // its candidates so far; x not finite or so small that its squares are subnormal (|x|_2 would come out low): no
  // bound holds, every row exactly
  int nc = xn <= FLT_MAX && ss >= LM_SMALL ? 0 : LM_CAND_CAP + 1;
  for (int i0 = 0; i0 < np; i0 += NWARPS * WARP_PIECES) {
    const int i = i0 + warp * WARP_PIECES;
    if (i < np) {
      float2 qs = make_float2(0.f, 0.f);  // lane m < 8: row 2 i + m's scale and err (in flight while the chunk lands)
      if (lane < 8 && 2 * i + lane < n) qs = __ldg(a.lm_qs + r0 + 2 * i + lane);
      ld.rows4(i, wv);
      float acc[8];
#pragma unroll
      for (int m = 0; m < 8; ++m) acc[m] = 0.f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        lane_x16(xs, h, lane, x);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          acc[2 * r] = dot16_u8(wv[r * 4 + h], x, acc[2 * r]);
          acc[2 * r + 1] = dot16_u8(wv[r * 4 + 2 + h], x, acc[2 * r + 1]);
        }
      }
#pragma unroll
      for (int m = 0; m < 8; ++m) {
        const float dot = warp_sum(acc[m]);
        const float sc = __shfl_sync(~0u, qs.x, m), e = fmaf(__shfl_sync(~0u, qs.y, m), xn, LM_ABS_SLACK);
        if (2 * i + m < n) {
          const float s = sc * dot, up = s + e;
          low = fmaxf(low, s - e);  // (NaN: kept out; a row with a NaN bound is never a candidate)
          if (bfr(up) >= bfr(low)) {
            if (lane == 0 && nc < LM_CAND_CAP) cand[nc] = make_uint2(2 * i + m, __float_as_uint(up));
            ++nc;
          }
        }
      }
    }
    ld.release((min(NWARPS * WARP_PIECES, np - i0) + CHUNK_PIECES - 1) / CHUNK_PIECES);
  }
  if (lane == 0) lows[warp] = low;
  sync_warps();
  float lb = lows[0];
#pragma unroll
  for (int w = 1; w < NWARPS; ++w) lb = fmaxf(lb, lows[w]);
  const float lbr = bfr(lb);
  if (nc <= LM_CAND_CAP) {  // the candidates whose upper bound reaches the block's best lower bound, 4 at a time
    for (int e0 = 0; e0 < nc; e0 += 4) {
      int rows[4];
      unsigned valid = 0;
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const uint2 cd = cand[e0 + r < nc ? e0 + r : e0];
        rows[r] = (int)cd.x;
        if (e0 + r < nc && bfr(__uint_as_float(cd.y)) >= lbr) valid |= 1u << r;
      }
      lm_exact_rows(a, r0, rows, valid, xs, wv, best, besti);
    }
  } else {  // every row of the warp's pieces
    for (int i = warp * WARP_PIECES; i < np; i += NWARPS * WARP_PIECES)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        int rows[4];
        unsigned valid = 0;
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int row = 2 * i + 4 * h + r;
          rows[r] = row < n ? row : 0;
          if (row < n) valid |= 1u << r;
        }
        lm_exact_rows(a, r0, rows, valid, xs, wv, best, besti);
      }
  }
}

// ---- a batch's greedy argmax from the int8 rows (NB >= 2; the same selection as lm_head_bounded, per batch row) ----
// Pass 1 on the tensor cores: an item is 8 ring chunks = 128 int8 rows (16 a chunk, two a 2 KB piece); warp w: chunk
// w / 2 as one 16-row tile, k half w % 2 (512 k: 16 blocks of 32); lane 4 g + t: the tile's rows g and g + 8, 8 bytes
// at k0 + 8 t of each 32 (turned into bf16 pairs exactly: |q| <= 127) against batch row g's hi and lo planes (the
// bf16 pass's mma sequence). Thread 64 b + j: batch row b's rows j and j + 64 of the item: the two halves' sum, the
// bounds, its candidates (a shared list a batch row, LM_BATCH_CAP; the lower bounds' max a batch row in shared
// memory, raised after each item); then warp b keeps in batch row b's list only the rows whose upper bound reaches its
// final best lower bound (after bf16 rounding, as each row was listed). Pass 2: the candidates 64 at a time, 4 tiles of 16 rows, each tile's rows read
// from global memory by 4 warps (k quarters) in the bf16 pass's (mma_rows) lanes and mma order, the quarters summed in
// its order: the bf16 pass's logits, bit for bit; thread 64 b + (e % 64) takes entry e when it is batch row b's.
__device__ __forceinline__ uint32_t lds64_lo(uint32_t addr, uint32_t& hi) {
  uint32_t lo;
  asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];" : "=r"(lo), "=r"(hi) : "r"(addr) : "memory");
  return lo;
}
// tile_dot's K = D mma sequence (matvec_mma.cuh: hi, lo planes) on weights given as registers. (Written out again:
// tile_dot calling this changed ptxas' allocation of every batch kernel, B = 3-5's one-step kernels then spilling,
// s34; pass 2's bits depend on the two staying the same sequence.)
__device__ __forceinline__ void mma_split(float (&c)[4], const uint4 wl, const uint4 wh, const uint16_t* x) {
  const uint4 zero = make_uint4(0, 0, 0, 0);
  const uint4 xh = x ? *reinterpret_cast<const uint4*>(x) : zero;
  const uint4 xl = x ? *reinterpret_cast<const uint4*>(x + D) : zero;
  mma_bf16(c, wl.x, wh.x, wl.y, wh.y, xh.x, xh.y);
  mma_bf16(c, wl.x, wh.x, wl.y, wh.y, xl.x, xl.y);
  mma_bf16(c, wl.z, wh.z, wl.w, wh.w, xh.z, xh.w);
  mma_bf16(c, wl.z, wh.z, wl.w, wh.w, xl.z, xl.w);
}
__device__ __forceinline__ uint4 q8_to_bf16(uint32_t w0, uint32_t w1) {
  return make_uint4(pack_bf16(q_of(w0, 0), q_of(w0, 1)), pack_bf16(q_of(w0, 2), q_of(w0, 3)),
                    pack_bf16(q_of(w1, 0), q_of(w1, 1)), pack_bf16(q_of(w1, 2), q_of(w1, 3)));
}
__device__ __forceinline__ int ordered(float f) {  // a float's order as an int's (atomicMax)
  const int k = __float_as_int(f);
  return k >= 0 ? k : k ^ 0x7fffffff;
}
__device__ __forceinline__ float unordered(int k) { return __int_as_float(k >= 0 ? k : k ^ 0x7fffffff); }

template <int NB>
__device__ __forceinline__ void lm_head_bounded_batch(const Args& a, Stream& s, int r0, int n, const float* xs, uint8_t* sm,
                                                      float& best, int& besti) {
  static_assert(!LM_I8 || (NB <= 8 && NWARPS == 16 && RING_SLOT == 16384), "lm_head_bounded_batch: 16 int8 rows a chunk");
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31, g = lane >> 2, tq = lane & 3;
  float* part = batch_partials<NB>();
  int* low_key = reinterpret_cast<int*>(sm + sm_lm_batch(NB));  // [8] each batch row's best lower bound (ordered)
  int* count = low_key + 8;                                       // [8] its candidates
  float* norm = reinterpret_cast<float*>(count + 8);              // [8] |x_b|_2, rounded up
  uint2* list = reinterpret_cast<uint2*>(norm + 8);               // [8][LM_BATCH_CAP] {row, upper bound's bits} (.y: pass 1 and the compaction only)
  if (warp < NB) {  // batch row `warp`'s |x|_2 (x = hi + lo, what the mma multiplies)
    const uint16_t* xp = xs_planes(xs, warp);
    float ss = 0.f;
    for (int k = lane; k < D; k += 32) {
      const float v = f16b(xp[k]) + f16b(xp[D + k]);
      ss = fmaf(v, v, ss);
    }
    ss = warp_sum(ss);
    if (lane == 0) {
      const bool ok = ss >= LM_SMALL && ss <= FLT_MAX;  // (else: every row of this batch row exactly)
      norm[warp] = sqrtf(ss) * LM_NORM_UP;
      low_key[warp] = ordered(-INFINITY);
      count[warp] = ok ? 0 : LM_BATCH_CAP + 1;
    }
  }
  sync_warps();
  const int b = t >> 6, j = t & 63;  // the epilogue's batch row and item rows j, j + 64
  const float xn = b < NB ? norm[b] : 0.f;
  const int np = (n + 1) / 2;
  {
    const int tile = warp >> 1, k0 = (warp & 1) * (D / 2) + 8 * tq;
    const uint16_t* x = g < NB ? xs_planes(xs, g) + k0 : nullptr;
    for (int i0 = 0; i0 < np; i0 += 8 * CHUNK_PIECES) {
      const int pieces = min(8 * CHUNK_PIECES, np - i0);
      float c[4] = {0.f, 0.f, 0.f, 0.f};
      if (tile * CHUNK_PIECES < pieces) {
        const uint32_t ch = chunk_wait(s, tile);
        // tile rows g, g + 8: pieces g / 2, g / 2 + 4, halves g % 2 (a piece: 2 KB, two rows)
        const uint32_t wlo = ch + (g >> 1) * 2048 + (g & 1) * 1024 + k0, whi = wlo + 4 * 2048;
#pragma unroll 4
        for (int kb = 0; kb < D / 2 / 32; ++kb) {
          uint32_t l1, h1;
          const uint32_t l0 = lds64_lo(wlo + kb * 32, l1), h0 = lds64_lo(whi + kb * 32, h1);
          mma_split(c, q8_to_bf16(l0, l1), q8_to_bf16(h0, h1), x ? x + kb * 32 : nullptr);
        }
      }
      put_partial(part, c);
      chunks_done(s, (pieces + CHUNK_PIECES - 1) / CHUNK_PIECES);
      // the item's rows' bounds; the batch row's best lower bound raised by them first (its 64 threads' max); then the
      // rows whose upper bound reaches it (a filter against a thread's own rows alone kept every first row)
      float sv[2], e[2], low = -INFINITY;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int R = j + 64 * h, row = 2 * i0 + R, tl = R >> 4, tr = R & 15;
        sv[h] = -INFINITY;
        e[h] = 0.f;
        if (b < NB && row < n) {
          const float dot = part[(2 * tl) * PART_TILE + b * 16 + tr] + part[(2 * tl + 1) * PART_TILE + b * 16 + tr];
          const float2 qs = __ldg(a.lm_qs + r0 + row);
          sv[h] = qs.x * dot;
          e[h] = fmaf(qs.y, xn, LM_ABS_SLACK);
          low = fmaxf(low, sv[h] - e[h]);
        }
      }
#pragma unroll
      for (int o = 16; o; o >>= 1) low = fmaxf(low, __shfl_xor_sync(~0u, low, o));
      if (b < NB && lane == 0) atomicMax(low_key + b, ordered(low));
      sync_warps();  // (the lower bounds in; part read: the next item's)
      if (b < NB) {
        const float lr = bfr(unordered(low_key[b]));
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = 2 * i0 + j + 64 * h;
          const float up = sv[h] + e[h];
          if (row < n && bfr(up) >= lr) {  // (NaN: never)
            const int at = atomicAdd(count + b, 1);
            if (at < LM_BATCH_CAP) list[b * LM_BATCH_CAP + at] = make_uint2(row, __float_as_uint(up));
          }
        }
      }
    }
    sync_warps();  // (the lists in)
  }
  // each batch row's list kept to the rows whose upper bound reaches its final best lower bound (a row listed
  // against an earlier, lower one cannot win): warp b compacts batch row b's, in order, 32 entries a round
  if (warp < NB && count[warp] <= LM_BATCH_CAP) {
    const int c = count[warp];
    const float lr = bfr(unordered(low_key[warp]));
    uint2* mine = list + warp * LM_BATCH_CAP;
    int kept = 0;
    for (int e0 = 0; e0 < c; e0 += 32) {
      const int e = e0 + lane;
      const uint2 cd = e < c ? mine[e] : make_uint2(0u, 0u);
      const bool keep = e < c && bfr(__uint_as_float(cd.y)) >= lr;  // (NaN: never)
      const unsigned m = __ballot_sync(~0u, keep);
      __syncwarp();  // (every entry of the round read before any is moved: a kept entry moves to kept + its rank <= e)
      if (keep) mine[kept + __popc(m & ((1u << lane) - 1u))].x = cd.x;
      kept += __popc(m);
    }
    if (lane == 0) count[warp] = kept;
  }
  sync_warps();  // (the kept lists in)
  // pass 2: entry e of batch row bb: its list's entry e (or, past LM_BATCH_CAP, row e of the slice)
  int total = 0, my_start = 0, my_end = 0;  // (my_: this thread's batch row b's entries)
#pragma unroll
  for (int bb = 0; bb < NB; ++bb) {
    const int c = count[bb];
    if (bb == b) my_start = total;
    total += c > LM_BATCH_CAP ? n : c;
    if (bb == b) my_end = total;
  }
  const int tile = warp >> 2, k0 = (warp & 3) * (D / 4) + 8 * tq;
  const uint16_t* x = g < NB ? xs_planes(xs, g) + k0 : nullptr;
  for (int e0 = 0; e0 < total; e0 += 64) {
    // this lane's tile rows g, g + 8: entries e0 + 16 tile + g (+ 8) -> their rows
    int rows2[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int e = e0 + 16 * tile + g + 8 * h;
      int row = 0;
      if (e < total) {
        int k = e;  // the entry within its batch row's
        for (int bb = 0; bb < NB; ++bb) {
          const int c = count[bb], m = c > LM_BATCH_CAP ? n : c;
          if (k < m) {
            row = c > LM_BATCH_CAP ? k : (int)list[bb * LM_BATCH_CAP + k].x;
            break;
          }
          k -= m;
        }
      }
      rows2[h] = row;
    }
    float c[4] = {0.f, 0.f, 0.f, 0.f};
    const uint16_t* wl = a.lm_head + (size_t)(r0 + rows2[0]) * D + k0;
    const uint16_t* wh = a.lm_head + (size_t)(r0 + rows2[1]) * D + k0;
#pragma unroll
    for (int k4 = 0; k4 < 8; k4 += 4) {  // (tile_dot's groups of 4 blocks; the mmas in its order)
      uint4 lo[4], hi[4];
#pragma unroll
      for (int kb = 0; kb < 4; ++kb) { lo[kb] = ld_w(wl + (k4 + kb) * 32); hi[kb] = ld_w(wh + (k4 + kb) * 32); }
#pragma unroll
      for (int kb = 0; kb < 4; ++kb) mma_split(c, lo[kb], hi[kb], x ? x + (k4 + kb) * 32 : nullptr);
    }
    put_partial(part, c);
    sync_warps();
    const int e = e0 + j;
    if (b < NB && e >= my_start && e < my_end) {
      const int k = e - my_start;
      const int row = count[b] > LM_BATCH_CAP ? k : (int)list[b * LM_BATCH_CAP + k].x;
      const float v = bfr(quarter_sum(part + (j >> 4) * 4 * PART_TILE + b * 16 + (j & 15)));
      if (better(v, r0 + row, best, besti)) { best = v; besti = r0 + row; }
    }
    sync_warps();  // (part: the next round's)
  }
}

// (MANY: a many-token launch's kernel, which writes no trace, stamps or logits: compiled out there)
template <int NB, bool MANY, class Loader>
__device__ __forceinline__ void lm_head(const Args& a, int step, uint8_t* sm, uint4 (&wv)[16], Loader& ld, const uint4 params) {
  float* xs = reinterpret_cast<float*>(sm + SM_XS);
  float* red = reinterpret_cast<float*>(sm + SM_RED);
  int* misc = reinterpret_cast<int*>(sm + SM_MISC);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const int G = gridDim.x, blk = blockIdx.x;
  block_rmsnorm<NB>([&](int b) { return a.hidden + b * D; }, params, xs, red);
  if (!MANY && blk == 0) {
    if (a.trace)
      for (int i = t; i < NB * D; i += THREADS) {  // (a batch's: hi + lo, block_rmsnorm's planes)
        const int b = i / D, k = i % D;
        float v;
        if constexpr (NB == 1) v = xs[xs_slot(k)];
        else v = f16b(xs_planes(xs, b)[k]) + f16b(xs_planes(xs, b)[D + k]);
        a.trace[(size_t)b * (NLAYER + 2) * D + (size_t)(NLAYER + 1) * D + k] = v;
      }
    if (a.times && t == 0) a.times[NPHASES + 1] = globaltimer();
  }
  const int r0 = part(VOCAB, blk, G), n = part(VOCAB, blk + 1, G) - r0;
  // this thread's best of the rows it sees: at batch 1 lane 0 of each warp sees the warp's rows; with
  // a batch thread b * 64 + k sees rows k, k + 64, ... of batch row b, warps 2b, 2b+1 all of them
  float best = -INFINITY;
  int besti = 0x7fffffff;
  // the rows' pass: SAMPLE (a many-token launch at temperature > 0) keeps the best key, else the best
  // logit; two instantiations, so the argmax's pass carries no per-row test of the temperature
  const auto pass = [&](auto sample) {
    constexpr bool SAMPLE = decltype(sample)::value;
    const float inv_t = SAMPLE ? 1.f / a.temperature : 0.f;
    matvec_rows<NB>(ld, n, xs, nullptr, wv, [&](int i, int b, float dot) {
      float v = bfr(dot);  // logits are bf16 in the model dtype
      if (!MANY && a.logits) a.logits[(size_t)b * VOCAB + r0 + i] = v;
      if constexpr (SAMPLE) {
        if (__fadd_rn(__fmul_rn(v, inv_t), GUMBEL_MAX) < best) return;  // its key cannot win: no noise needed
        const uint32_t row_key = fmix32(fmix32(fmix32(a.seed) ^ (uint32_t)row_pos(a, b, step)) ^ (uint32_t)b);
        v = sampling_key(v, inv_t, row_key, r0 + i);
      }
      if (better(v, r0 + i, best, besti)) { best = v; besti = r0 + i; }
    });
  };
  if (MANY && a.temperature > 0.f) {
    if constexpr (MANY) pass(std::true_type{});
  } else if (lm_bounded(a)) {
    if constexpr (LM_I8 && std::is_same_v<Loader, RingLoader>) {
      if constexpr (NB == 1) lm_head_bounded(a, ld, r0, n, xs, wv, sm, best, besti);
      else if constexpr (LM_I8_BATCH) lm_head_bounded_batch<NB>(a, ld.s, r0, n, xs, sm, best, besti);
    }
  } else {
    pass(std::false_type{});
  }
  if constexpr (NB > 1) {
#pragma unroll
    for (int o = 16; o; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, best, o);
      const int oi = __shfl_xor_sync(0xffffffffu, besti, o);
      if (better(ov, oi, best, besti)) { best = ov; besti = oi; }
    }
  }
  constexpr int PARTS = NB == 1 ? NWARPS : 2;  // the warp results of a batch row
  if (lane == 0) {
    const int i = NB == 1 ? warp : (warp >> 1) * NWARPS + (warp & 1);
    red[i] = best;
    misc[i] = besti;
  }
  sync_warps();
  if (t < NB) {  // thread b: batch row b's best of the block
    float bv = red[t * NWARPS];
    int bi = misc[t * NWARPS];
    for (int w = 1; w < PARTS; ++w)
      if (better(red[t * NWARPS + w], misc[t * NWARPS + w], bv, bi)) { bv = red[t * NWARPS + w]; bi = misc[t * NWARPS + w]; }
    a.amax_val[t * MAX_GRID + blk] = bv;
    a.amax_idx[t * MAX_GRID + blk] = bi;
  }
}

// warp b: row b's argmax over the G blocks' results (every lane gets it)
__device__ __forceinline__ int row_argmax(const Args& a, int b) {
  const int lane = threadIdx.x & 31;
  float bv = -INFINITY;
  int bi = 0x7fffffff;
  for (int i = lane; i < (int)gridDim.x; i += 32) {
    const float v = __ldcg(a.amax_val + b * MAX_GRID + i);
    const int ix = __ldcg(a.amax_idx + b * MAX_GRID + i);
    if (better(v, ix, bv, bi)) { bv = v; bi = ix; }
  }
#pragma unroll
  for (int o = 16; o; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (better(ov, oi, bv, bi)) { bv = ov; bi = oi; }
  }
  return bi;
}

// row b's id of step `step` out: the device buffer, and the host-mapped stream (a relaxed store at
// system scope: nothing waits for it; the host polls the word until it is no longer -1)
__device__ __forceinline__ void put_token(const Args& a, int step, int b, int id) {
  a.out_token[(size_t)step * a.batch + b] = id;
  if (a.stream) asm volatile("st.relaxed.sys.global.b64 [%0], %1;" ::"l"(a.stream + (size_t)step * a.batch + b), "l"((int64_t)id) : "memory");
}

// the launch's last step (`barriers`: grid barriers the launch passed): the last block to finish
// reduces every row's argmax and writes it out
template <int NB>
__device__ __forceinline__ void argmax_last_block(const Args& a, uint8_t* sm, int step, int barriers) {
  const int warp = threadIdx.x >> 5;
  if (last_block_done(a.sync, sm, barriers) && warp < NB) {
    const int id = row_argmax(a, warp);
    if ((threadIdx.x & 31) == 0) {
      put_token(a, step, warp, id);
      if (a.times && warp == 0) a.times[NPHASES] = globaltimer();  // (null in a many-token launch)
    }
  }
}

// a many-token launch's other steps, after the grid barrier that follows the lm_head: every block
// reduces every row's argmax into its step_token slots (the next step's input ids; block 0 writes
// them out); lane 0 of warp b adds row b to the rows that have produced a stop id (misc[MISC_STOPPED])
// -> whether every row has. A row whose logits were all NaN has no argmax (the id stays 0x7fffffff):
// the launch ends after this step as if every row had stopped (that id is never fed to the next
// step's embedding; the host sees it, and a launch fed it refuses it: step_check.cuh)
template <int NB>
__device__ __forceinline__ bool argmax_every_block(const Args& a, uint8_t* sm, int step) {
  int* misc = reinterpret_cast<int*>(sm + SM_MISC);
  const int warp = threadIdx.x >> 5;
  if (warp < NB) {
    const int id = row_argmax(a, warp);
    if ((threadIdx.x & 31) == 0) {
      misc[MISC_TOKENS + warp] = id;
      if (blockIdx.x == 0) put_token(a, step, warp, id);
      bool stop = false;
      for (int i = 0; i < a.n_stop_ids; ++i) stop |= id == a.stop_ids[i];
      const unsigned rows = (unsigned)id >= (unsigned)VOCAB ? (1u << NB) - 1 : stop ? 1u << warp : 0u;
      if (rows) atomicOr(reinterpret_cast<unsigned*>(misc + MISC_STOPPED), rows);
    }
  }
  sync_warps();
  return misc[MISC_STOPPED] == (1 << NB) - 1;
}

}  // namespace
}  // namespace mk
