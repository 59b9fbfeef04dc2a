// Prefill kernels of the megakernel tier: the memory-bound steps between the tensor-core
// parts (cuBLAS GEMMs, fla's chunked delta rule, torch's flash attention), each fused into
// one pass over its [T, ...] activations. Plain C++ interface so the binding includes it with g++.
//
// The state is reached through a device table (StateSlot): its 5 pointers, the prefill's first
// position and its valid tokens, not baked-in arguments, so one captured CUDA graph of T rows serves
// every state of the same max_seq, every start > 0 and every prompt of `valid` <= T tokens (the rows
// past `valid` are padding: no-ops for the state, nothing written to the cache, their outputs 0;
// a fresh prompt's graph, SDPA over its own keys, serves start 0 and valid = T):
//   [dn_state fp32 [18][16][128 v][128 k], conv_ring bf16 [18][4][6144],
//    k_cache bf16 [6][2][max_seq][256], v_cache (same), rope bf16 [max_seq][2][32], start, valid, refused]
#pragma once
#include <cstdint>
#include <cuda_runtime.h>

namespace mkp {

// ST_REFUSED: 1 where bind found an id outside the vocabulary in device ids whose range the host reads only after
// the replay's launch (prefill.py FastPrefill): the ids were taken as 0 (nothing reads past the embedding), and the
// kernels that write the state (attn_prep's cache rows, dn_out_norm's state and conv ring) write nothing, so a
// refused prompt leaves the state as it was. The host passes 0.
enum StateSlot : int {
  ST_DN = 0, ST_CONV = 1, ST_K = 2, ST_V = 3, ST_ROPE = 4, ST_START = 5, ST_VALID = 6, ST_REFUSED = 7, ST_N = 8
};

// All activation pointers are bf16 bits (uint16_t) unless named fp32. T = tokens of this prefill.

// A plan's per-prompt words (int64) [ids (T rows: the prompt's n, then 0) | the table (ST_N) | int32s at
// these indices: flash's `used` keys (start + n), cu_q (0, n), cu_new (start, start + n), and after earlier
// tokens in `pieces` > 1 pieces of `piece` positions the earlier keys each piece holds (used_pieces) | the
// ids' smallest and largest (BIND_RANGE_WORDS)], written in stream order before the kernels that read them:
// by one launch (bind) from the prompt's device ids and the host's table values, or, for ids on the CPU, by
// a copy of the ids and that launch (binding.cpp prefill_bind before an eager run; launch_prefill_graph before
// it launches a captured graph).
enum BindWord : int { BIND_USED = 0, BIND_CU_Q = 2, BIND_CU_NEW = 4, BIND_USED_PIECES = 6 };
constexpr int BIND_RANGE_WORDS = 2;  // the words' last two: min, max of the ids (written where range_at >= 0;
                                     // ids outside [0, vocab) then also set the table's ST_REFUSED)
constexpr int BIND_THREADS = 256;    // a bind block's threads (block 0 writes the table, the pieces and the range)
struct BindArgs {
  int64_t table[ST_N];  // ST_START and ST_VALID: the start and n
  int T, pieces, piece, max_seq;
  int64_t range_at;     // the word of the ids' min (max after it); -1: not asked (the host has them)
  int64_t* host_range;  // where range_at >= 0: the min and max also into this pinned host memory (mapped: the
                        // kernel's own stores, no copy), then, after a system-scope fence, `seq` into its third word:
                        // the host polls that word, not an event (binding.cpp launch_prefill_graph)
  int64_t seq;
};
constexpr int BIND_HOST_WORDS = 3;  // host_range: min, max, seq
// ids: the prompt's n ids on the device (they may be words' own first n: bind then only pads and writes the rest)
cudaError_t bind(const int64_t* ids, int64_t* words, const BindArgs& a, cudaStream_t s);


// residual <- residual + x32 (the fp32 partials [splits][T][1024] of a split-K GEMM, summed, one rounding;
// null: residual as is, the GEMMs having added into it; ids non-null: residual <- embed[ids]),
// out <- rms_norm(residual) * (1 + w). rows [T][1024].
cudaError_t add_rms_norm(const float* x32, int splits, const int64_t* ids, const uint16_t* embed,
                         uint16_t* residual, const uint16_t* w, uint16_t* out, int T, float eps, cudaStream_t s);

// DeltaNet inputs: causal conv (3 earlier inputs from the ring) + SiLU of the in-projection's
// [q|k|v] columns, l2norm of q and k per head, g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b);
// a padding row's g and beta 0 (the delta rule leaves the state as it is there); g_chunk = DN_GATE_ROWS:
// g as its inclusive sum within chunks of 64 rows from row 0 (what FlashQLA's kernels read), 0: g itself.
// proj [T][8224] = [qkv 6144 | z 2048 | b 16 | a 16]; q, k, v [R][16][128]; g, beta fp32 [R][16], T <= R < T + 64: the
// rows past T padding (q, k, v 0, beta 0, g's step 0: summed, row T - 1's sum), so a rule given R rows, a whole number
// of its chunks, leaves the state as T rows would and never takes its path for a part chunk (NOTES "Prefill" v25).
// Also the layer's fp32 delta-rule state from its slot of the table's dn_state into h0 [1][16][128][128], the rule's
// initial state (one buffer, the layers in turn). With A (not null; R a whole number of 64-row chunks): also what
// FlashQLA's kkt_solve writes from k and beta, A [R][16][64] bf16: for each chunk and value head h, (I + L)^-1 with L the
// strictly lower part of diag(beta_h) K Kᵀ over the chunk's rows (K: key head h / DN_GROUP's k), so the rule needs no
// launch of its own for it (NOTES "Prefill" v26).
constexpr int DN_GATE_ROWS = 64;  // rows of one gate block of dn_prep: the chunk g may be summed over
cudaError_t dn_prep(const uint16_t* proj, const int64_t* table, int slot, const uint16_t* conv_w,
                    const uint16_t* a_log, const uint16_t* dt_bias, uint16_t* q, uint16_t* k, uint16_t* v,
                    float* g, float* beta, float* h0, uint16_t* A, int g_chunk, int T, int R, cudaStream_t s);

// out [T][2048] = rms_norm(o per head) * w * silu(z) (o [R][16][128], R >= T: its first T rows read); also stores the last 3 valid pre-conv inputs
// of proj into the conv ring (after dn_prep has read the old ones) and the layer's final delta-rule
// state `final_state` [16][128][128] fp32 into its slot of the table's dn_state.
cudaError_t dn_out_norm(const uint16_t* o, const uint16_t* proj, const uint16_t* w, const float* final_state,
                        const int64_t* table, int slot, uint16_t* out, int T, float eps, cudaStream_t s);


// out [T][3584] = silu(gu[:, :3584]) * gu[:, 3584:]; with x [T][D] (the post-attention norm folded into the
// gate/up weights), both halves of row t times 1 / rms(x[t]) first
cudaError_t silu_mul(const uint16_t* gu, const uint16_t* x, uint16_t* out, int T, float eps, cudaStream_t s);

// Attention inputs: per-head RMSNorm of q and k, partial RoPE at positions start + t, q into
// qbuf [T][8][256], k and v into the caches at start + t and into kv [2 (k|v)][max_seq][2][256]
// (token-major: flash attention's varlen layout); a padding row: q = 0, nothing else.
// proj [T][5120] = [8 x (q 256 | gate 256) | k 512 | v 512]. With x [T][D] (the input norm folded into the
// in-projection's weights), a valid row's q, k, v times 1 / rms(x[t]) first, and its gates so rewritten in proj.
cudaError_t attn_prep(uint16_t* proj, const uint16_t* q_w, const uint16_t* k_w, const int64_t* table,
                      int slot, int max_seq, uint16_t* qbuf, uint16_t* kv, const uint16_t* x, int T, float eps,
                      cudaStream_t s);

// the cache's first `start` positions into kv (a prefill that continues a sequence; none at start 0):
// a fixed grid that loops over what the table's start asks for, so a graph serves any start
cudaError_t kv_prefix(const int64_t* table, int slot, int max_seq, uint16_t* kv, cudaStream_t s);

// out [T][2048] = o * sigmoid(gate); o [T][8][256] (flash attention's output) with strides (head, token) in
// elements; a padding row's out 0 (o is not read there)
cudaError_t attn_gate(const uint16_t* o, long long o_stride_h, long long o_stride_t, const uint16_t* proj,
                      const int64_t* table, uint16_t* out, int T, cudaStream_t s);

// out [T][2048] = (sum_s w_s o_s) * sigmoid(gate): attention done in pieces (the earlier keys in S
// pieces, o_ctx [S][T][8][256], then the new keys, o_new [T][8][256]) merged by their log-sum-exps,
// w_s = softmax over the pieces of lse (+inf, a piece with no key, counts as -inf); lse_ctx [S][8][T]
// and lse_new [8][T] fp32 with the strides given (in elements); the gate from proj as attn_gate's;
// a padding row's out 0
cudaError_t attn_merge_gate(const uint16_t* o_ctx, const float* lse_ctx, long long ls_s, long long ls_h, long long ls_t,
                            int S, const uint16_t* o_new, const float* lse_new, long long ln_h, long long ln_t,
                            const uint16_t* proj, const int64_t* table, uint16_t* out, int T, cudaStream_t s);

// A fresh prompt's last layer for its last valid row t alone (csrc/prefill.cu says who owns what):
constexpr int LAST_ROW_MAX_SPLITS = 64;  // attn_last_row's splits a kv head at most (its merge: a thread a split and head)
constexpr int LAST_ROW_PART_HEAD = 4;    // floats of a partial before its o: max, sum, 2 unused (o 16-byte aligned)
// out[t] [FA_OIN] = attention of q row t (qbuf [T][8][256]) over the keys and values kv [2][max_seq][2][256] at
// positions [0, start + t], times sigmoid(gate) as attn_gate; `splits` x FA_HKV blocks, each taking chunks of
// keys_per_block keys (s, s + splits, ...; splits <= LAST_ROW_MAX_SPLITS); part fp32 [FA_HKV][splits][FA_GROUP][LAST_ROW_PART_HEAD + FA_HD] their partials; count
// int32 [FA_HKV] zeros (the last block of a kv head merges, then sets its counter back to 0)
cudaError_t attn_last_row(const uint16_t* qbuf, const uint16_t* kv, int max_seq, const uint16_t* proj, const int64_t* table,
                          float* part, int* count, uint16_t* out, int splits, int keys_per_block, cudaStream_t s);
// res [D] <- bf16(res + W [D][K] . x [K]) (an out-projection's or down's M = 1 product, beta = 1), K = FA_OIN or INTER
cudaError_t gemv_add_row(const uint16_t* x, const uint16_t* w, uint16_t* res, int K, cudaStream_t s);
// act [INTER] <- silu_mul's SwiGLU of the folded gate/up's M = 1 product: W [2 INTER][D] (the post-attention norm's
// (1 + w) in it), x [D] the residual row, its 1 / rms applied to both halves
cudaError_t gate_up_swiglu_row(const uint16_t* x, const uint16_t* w, uint16_t* act, float eps, cudaStream_t s);

// logits fp32 [vocab] = bf16(W [vocab][1024] . x [1024]), x the last valid row of rows [T][1024]
cudaError_t lm_head(const uint16_t* rows, const int64_t* table, const uint16_t* w, float* logits, int vocab,
                    cudaStream_t s);

}  // namespace mkp
