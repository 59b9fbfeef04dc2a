// The one place the megakernel's numbers are written: the model shapes it is compiled for (the
// Qwen3.5-0.8B's unless the build defines another size's, megakernel/family.py), the layer pattern,
// the launch geometry, and every buffer the kernels index (the state, the decode workspace, the sync
// words, the timing stamps, the layer pointer table).
//
// Decode (megakernel.cu) and prefill (prefill.cu) include it; the torch binding exports every
// constant (`ext.constants()`), and megakernel/tier.py and prefill.py read them from there
// instead of restating them. Plain C++ (host and device), no CUDA types.
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define MK_HOST_DEVICE __host__ __device__
#else
#define MK_HOST_DEVICE
#endif

namespace mk {

// ---- the model: shared/qwen3_5_0_8b_config.json, or the family member the build defines ----------
// One build per shape: megakernel/family.py turns a config into the MK_* defines below (and says
// which configs the kernels cannot take, naming the field); without them the build is the 0.8B's.
#ifndef MK_D
#define MK_D 1024
#define MK_INTER 3584
#define MK_VOCAB 248320
#define MK_NLAYER 24
#define MK_DN_HK 16
#define MK_DN_HV 16
#define MK_FA_HQ 8
#define MK_FA_HKV 2
#define MK_TIED 1
#define MK_FULL_MASK 0x888888ull  // layers 3, 7, ..., 23
#endif
constexpr int D = MK_D;                  // hidden_size
constexpr int INTER = MK_INTER;          // intermediate_size (MLP)
constexpr int VOCAB = MK_VOCAB;          // vocab_size: embedding and lm_head rows
constexpr bool TIED = MK_TIED;           // tie_word_embeddings: the lm_head is the embedding (else its own matrix)
constexpr int NLAYER = MK_NLAYER;        // num_hidden_layers
constexpr unsigned long long FULL_MASK = MK_FULL_MASK;  // layer_types: bit l set where layer l is full attention
constexpr int DN_HK = MK_DN_HK;          // linear_num_key_heads (q and k)
constexpr int DN_HV = MK_DN_HV;          // linear_num_value_heads (v, the state, the gates): value head h reads key head h / DN_GROUP
constexpr int DN_GROUP = DN_HV / DN_HK;  // value heads per key head
constexpr int DN_DK = 128, DN_DV = 128;  // linear_key_head_dim, linear_value_head_dim
constexpr int CONV_K = 4;                // linear_conv_kernel_dim
constexpr int FA_HQ = MK_FA_HQ, FA_HKV = MK_FA_HKV;  // num_attention_heads, num_key_value_heads
constexpr int FA_HD = 256;               // head_dim
constexpr int FA_ROT = 64;               // head_dim * partial_rotary_factor (0.25)
constexpr float RMS_EPS = 1e-6f;         // rms_norm_eps
static_assert(NLAYER >= 2 && NLAYER <= 64 && (NLAYER == 64 || FULL_MASK >> NLAYER == 0) && DN_HV % DN_HK == 0,
              "the layer pattern: 64 layers at most; value heads per key head");

// the layer pattern: layer l is full attention where bit l of FULL_MASK is set, else Gated DeltaNet;
// each kind numbers its own layers (the state's first index). The family's pattern (every 4th layer,
// the 0.8B's) keeps its arithmetic (shifts); any other pattern counts the mask's bits.
MK_HOST_DEVICE constexpr int popcount64(unsigned long long x) {
  int n = 0;
  for (; x; x &= x - 1) ++n;
  return n;
}
MK_HOST_DEVICE constexpr unsigned long long every_fourth(int n) {  // bits 3, 7, ... below n
  unsigned long long m = 0;
  for (int l = 3; l < n; l += 4) m |= 1ull << l;
  return m;
}
constexpr bool PERIODIC = NLAYER % 4 == 0 && FULL_MASK == every_fourth(NLAYER);
constexpr int NFA = popcount64(FULL_MASK);  // 6 (0.8B)
constexpr int NDN = NLAYER - NFA;           // 18
static_assert(NFA >= 1 && NDN >= 1 && !(FULL_MASK & 1),
              "the layer pattern: at least one layer of each kind, layer 0 a DeltaNet one (dn_in_proj starts a step from the embedding row)");
// (unsigned: l >= 0, and the divisions by the power of two are shifts)
MK_HOST_DEVICE inline bool is_full_attention(int l) {
  if constexpr (PERIODIC) return (unsigned)l % 4 == 3;
  else return (FULL_MASK >> l) & 1;
}
MK_HOST_DEVICE inline int fa_index(int l) {  // attention layers before l
  if constexpr (PERIODIC) {
    return (int)((unsigned)l / 4);
  } else {
    const unsigned long long below = FULL_MASK & ((1ull << l) - 1);
#ifdef __CUDA_ARCH__
    return __popcll(below);
#else
    return popcount64(below);
#endif
  }
}
MK_HOST_DEVICE inline int dn_index(int l) { return l - fa_index(l); }  // DeltaNet layers before l

// ---- derived widths and the packed in-projections ---------------------------------------
constexpr int DN_KEY = DN_HK * DN_DK;                // 2048 (0.8B)
constexpr int DN_VAL = DN_HV * DN_DV;                // 2048
constexpr int DN_CONV = 2 * DN_KEY + DN_VAL;         // 6144 conv channels [q | k | v]
constexpr int DN_WIN_Z = DN_CONV;                    // DeltaNet in-projection rows [qkv | z | b | a]
constexpr int DN_WIN_B = DN_WIN_Z + DN_VAL;
constexpr int DN_WIN_A = DN_WIN_B + DN_HV;
constexpr int DN_WIN = DN_WIN_A + DN_HV;             // 8224
constexpr int DN_STATE_FLOATS = DN_HV * DN_DV * DN_DK;  // one layer's recurrent state
constexpr int DN_ROW_FLOATS = NDN * DN_STATE_FLOATS;   // one row's dn_state
constexpr int CONV_ROW = NDN * CONV_K * DN_CONV;       // one row's conv_ring (elements)
constexpr int FA_GROUP = FA_HQ / FA_HKV;             // q heads per kv head (4)
constexpr int FA_WIN_K = 2 * FA_HQ * FA_HD;          // attention in-projection rows [q+gate (per head) | k | v]
constexpr int FA_WIN_V = FA_WIN_K + FA_HKV * FA_HD;
constexpr int FA_QKV = FA_WIN_V + FA_HKV * FA_HD;    // 5120
constexpr int FA_OIN = FA_HQ * FA_HD;                // 2048 attention outputs (the out-projection's input)

// ---- the decode state (megakernel/tier.py allocates it; prefill reads and writes it in place) ----
// A state holds B sequences (rows, 1 <= B <= MAX_BATCH), each at its own position; the row is
// the outermost index, so row r of every tensor is one contiguous block (a prefill into row r
// sees a batch-1 state there).
//   dn_state  fp32 [B][NDN][DN_HV][DN_DV][DN_DK]   (k contiguous: S transposed against reference.ModelState)
//   conv_ring bf16 [B][NDN][CONV_K][DN_CONV]      pre-conv inputs, column = position % CONV_K
//   k_cache, v_cache bf16 [B][NFA][FA_HKV][max_seq][FA_HD]   (k after norm and RoPE)
//   rope      bf16 [max_seq][2][FA_ROT / 2]       cos, sin of position * inv_freq (torch computes them; shared by the rows)
// The batch kernels (matvec_mma.cuh's tiles, delta_rule.cuh's dn_core_heads) are written for the
// 0.8B's widths; every other shape decodes one sequence per launch.
constexpr bool BATCH_SHAPES = D == 1024 && INTER == 3584 && DN_HV == 16 && FA_HQ * FA_HD == 2048;
constexpr int MAX_BATCH = BATCH_SHAPES ? 8 : 1;      // sequences one decode launch takes
static_assert(CONV_K == 4, "the conv ring's column arithmetic (& 3) assumes 4 taps");

// ---- launch geometry and the decode schedule ----------------------------------------------
constexpr int THREADS = 512, NWARPS = 16;            // compute warps of a decode block
constexpr int BAR_POLLERS = 3;  // the ring schedule's poller warps (grid_sync.cuh): with the producer 20 warps, 5 a
                                // sub-partition as the 17 were (the same 96-register cap)
constexpr int RING_THREADS = THREADS + 32 + 32 * BAR_POLLERS;  // a ring-schedule block: compute, producer, pollers
constexpr int PHASES_PER_LAYER = 5;                  // in-proj | mixer core | out-proj | gate/up | down
constexpr int NPHASES = NLAYER * PHASES_PER_LAYER + 1;  // + final norm / lm_head / argmax
constexpr int NBARRIERS = NLAYER * PHASES_PER_LAYER;    // a grid barrier after every layer phase
constexpr int DN_VSLICES = 8;                        // a DeltaNet head's 128 v rows over 8 units
constexpr int DN_UNITS = DN_HV * DN_VSLICES;         // 128 recurrence units (0.8B)
constexpr int ATT_MAX_SPLIT = 64;                    // attention split-K units per kv head
constexpr int ATT_PART = FA_HD + 4;                  // one partial: m, l, 2 pad, acc[256]
constexpr int OUT_MERGE_MAX = 8;                     // 2..8 splits: the out-projection merges the partials
constexpr int MAX_GRID = 1024;                       // blocks (the argmax areas; part()'s 32-bit products)
constexpr int MAX_STOP_IDS = 8;                      // stop ids a many-token launch takes (Args::stop_ids)
constexpr int STEP_BARRIERS = NBARRIERS + 1;         // grid barriers per step of a many-token launch (+ the argmax's)
static_assert((long long)VOCAB * MAX_GRID < (1ll << 32), "part(): 32-bit products");

// attention split-K units per kv head for a token at position pos (context pos + 1): one per
// `per_split` positions, at most ATT_MAX_SPLIT (the kernel computes it for every step; the tier's
// Python attention_splits is the same formula, for predictions and tests)
MK_HOST_DEVICE constexpr int attention_splits(int pos, int per_split) {
  return (pos + per_split) / per_split < ATT_MAX_SPLIT ? (pos + per_split) / per_split : ATT_MAX_SPLIT;
}

// The matrix phases cut rows into pieces that the 0.8B's work items take whole:
//   K = D (in-projections, gate/up, lm_head): a row is D_PIECES pieces of PIECE columns, a warp takes
//     WARP_PIECES of them, a ring chunk CHUNK_PIECES (gate/up: half the chunk gate pieces, half up). At
//     D = 1024, 2048, 4096 a piece is 1024 columns and a warp takes 4 (4, 2 or 1 whole rows), two
//     warps a chunk; at any other D (a multiple of 256 up to 4096, e.g. the 4B's 2560: ROW_PIECES) a
//     piece is a whole row and a warp takes one, 4 (or 2) warps a chunk (a gate/up unit then spans two warps);
//   K = DN_VAL, INTER (out-projections, down): a row is row_parts(K) >= 2 pieces, each at most 16 x
//     256 columns (a lane's 16 registers of weights), a chunk parts_per_chunk(K) of them.
// Consecutive rows' pieces are consecutive in memory, so a chunk stays one contiguous copy.
constexpr bool ROW_PIECES = !(D % 1024 == 0 && 4 % (D / 1024) == 0);
constexpr int PIECE = ROW_PIECES ? D : 1024;
constexpr int D_PIECES = D / PIECE;
constexpr int PIECE_STEPS = PIECE / 256;       // a lane's 16-byte parts of a piece
constexpr int WARP_PIECES = ROW_PIECES ? 1 : 4;
// K = D pieces a ring chunk holds: two warps' (8 pieces of 1024, 16 KB), or whole rows: 4 where 4 rows
// take at most 20 KB (D <= 2560), else 2 (the slot grows to fit them: RING_SLOT; with 2 rows of 5 KB in a
// 16 KB slot the 4B's ring was 62% full, NOTES v22)
constexpr int CHUNK_PIECES = !ROW_PIECES ? 2 * WARP_PIECES : 8 * D <= 20480 ? 4 : 2;
constexpr int WARPS_PER_CHUNK = CHUNK_PIECES / WARP_PIECES;
constexpr int GATE_UP_PER_CHUNK = CHUNK_PIECES / 2;  // gate/up pieces a chunk: gate ones in its first half, their up ones in the second
// The greedy argmax's lm_head read from an int8 copy of its rows (lm_head.cuh lm_head_bounded; batch 1, the 0.8B's
// D = 1024 only): a ring piece (PIECE bf16, 2 KB) carries two int8 rows, a warp's item of 4 pieces 8 rows.
constexpr bool LM_I8 = !ROW_PIECES && D == 1024 && WARP_PIECES == 4;
constexpr int LM_CAND_CAP = 32;  // a warp's candidate rows (lm_head_bounded); more: the warp's rows all exactly
constexpr int LM_BATCH_CAP = 64;  // a batch row's candidate rows in a block (lm_head_bounded_batch); more: all its rows exactly

// the weight ring (the default schedule): slots of RING_SLOT bytes in shared memory: 16 KB (the 0.8B: 8
// rows of K = 1024, 4 of K = 2048, 2 of K = 3584; 16 positions of an attention core's K and V rows), or a
// K = D chunk of whole rows where that is more (the 4B: 4 rows of 5 KB, 20 KB)
constexpr int RING_SLOT = 2 * CHUNK_PIECES * PIECE > 16384 ? 2 * CHUNK_PIECES * PIECE : 16384;
constexpr int RING_MIN_SLOTS = 8;
MK_HOST_DEVICE constexpr int row_parts(int k) {
  int p = 2;
  while (k / p > 16 * 256) p *= 2;
  return p;
}
// pieces a ring chunk holds: the most that fit, rounded down to a power of two, so that a work item's
// 16 pieces (one a warp) are whole chunks (a chunk of 10 pieces, e.g. K = 1536, would straddle two items:
// the first item's release would free pieces the second still reads; session 19, call 4)
MK_HOST_DEVICE constexpr int parts_per_chunk(int k) {
  const int fit = RING_SLOT / (2 * (k / row_parts(k)));
  int p = 1;
  while (2 * p <= fit && 2 * p <= 16) p *= 2;
  return p;
}
static_assert(D % 256 == 0 && PIECE_STEPS * WARP_PIECES <= 16 && WARP_PIECES % D_PIECES == 0,
              "hidden_size: a multiple of 256 up to 4096 (a warp's pieces are whole rows within 16 registers a lane)");
static_assert(DN_VAL % (256 * row_parts(DN_VAL)) == 0 && INTER % (256 * row_parts(INTER)) == 0,
              "out-projection and down rows: pieces of whole 256-column steps");
static_assert(row_parts(INTER) <= 16 && RING_SLOT >= 2 * (INTER / row_parts(INTER)) && RING_SLOT >= 2 * (DN_VAL / row_parts(DN_VAL)),
              "a piece within a ring slot");
static_assert(16 % parts_per_chunk(INTER) == 0 && 16 % parts_per_chunk(DN_VAL) == 0, "a work item's 16 pieces are whole chunks");                    // a matrix phase's item reads up to 8 slots at once
constexpr int RING_MAX_SLOTS = 16;

// the schedules (Args::schedule; configure() says which fit this GPU)
enum Schedule : int {
  SCHEDULE_RING = 0,         // weights streamed through the shared-memory ring by a producer warp
  SCHEDULE_REGISTER = 1,     // each warp loads its rows into registers (where the ring does not fit)
  SCHEDULE_STREAM_ONLY = 2,  // measurement: the ring's weight stream alone, nothing computed
};

// ---- the layer table: NSLOT device pointers per layer (0: unused) ----------------------------
enum LayerSlot : int {
  SL_IN_NORM = 0, SL_POST_NORM = 1, SL_WIN = 2,                // WIN: DeltaNet [DN_WIN][D], attention [FA_QKV][D]
  SL_CONV_W = 3, SL_A_LOG = 4, SL_DT_BIAS = 5, SL_GNORM = 6,  // DeltaNet only
  SL_Q_NORM = 3, SL_K_NORM = 4,                                // attention only (slots 3, 4 again)
  SL_OUT = 7, SL_GATE_UP = 8, SL_DOWN = 9,                     // GATE_UP: [2 * INTER][D], gate rows first
  NSLOT = 10
};

// ---- the decode workspace: one byte buffer of these areas (bytes, 128-aligned), each [MAX_BATCH]
// rows of the width below (row b of an area at b * its width). The activations between two phases
// are fp32 (issue 20 part 5: no bf16 rounding inside a step but where the state stores values, the
// conv ring and the K/V cache, the logits, and the inputs of the out-projections and of down, which
// every block reads whole: rounded once, by their writer; fp32 there cost B = 1 0.8% and B = 8 13%,
// NOTES v23). The DeltaNet core's output obuf is fp32 at batch 1 (o: each block norms it for its
// out-projection), with a batch the normed input (bf16) ---------------------------------------------
constexpr int align128(int n) { return (n + 127) & ~127; }
constexpr int ZAB_W = DN_VAL + 2 * DN_HV;                                  // z | b | a
constexpr int APART_W = FA_HKV * ATT_MAX_SPLIT * FA_GROUP * ATT_PART;     // attention split partials
// obuf: one fp32 row (batch 1) or MAX_BATCH bf16 rows
constexpr int OBUF_BYTES = align128(4 * DN_VAL > 2 * DN_VAL * MAX_BATCH ? 4 * DN_VAL : 2 * DN_VAL * MAX_BATCH);
constexpr int WS_HIDDEN = 0;                                              // fp32 [D] residual stream
constexpr int WS_ZAB = WS_HIDDEN + align128(4 * D * MAX_BATCH);           // fp32 [ZAB_W]: z | b | a
constexpr int WS_OBUF = WS_ZAB + align128(4 * ZAB_W * MAX_BATCH);         // [DN_VAL] DeltaNet core output (batch 1: fp32 o; a batch: bf16, gated-normed)
constexpr int WS_QKV = WS_OBUF + OBUF_BYTES;                              // fp32 [FA_QKV] attention projections
constexpr int WS_ATTN = WS_QKV + align128(4 * FA_QKV * MAX_BATCH);        // bf16 [FA_OIN] gated attention output
constexpr int WS_ACT = WS_ATTN + align128(2 * FA_OIN * MAX_BATCH);        // bf16 [INTER] silu(gate) * up
constexpr int WS_APART = WS_ACT + align128(2 * INTER * MAX_BATCH);        // fp32 [APART_W] = [FA_HKV][ATT_MAX_SPLIT][FA_GROUP][ATT_PART]
constexpr int WS_AMAX_VAL = WS_APART + align128(4 * APART_W * MAX_BATCH); // fp32 [MAX_GRID] each block's best logit
constexpr int WS_AMAX_IDX = WS_AMAX_VAL + align128(4 * MAX_GRID * MAX_BATCH);  // int32 [MAX_GRID] its index
constexpr int WS_BYTES = WS_AMAX_IDX + align128(4 * MAX_GRID * MAX_BATCH);

// ---- sync words (uint32, zeroed once by the tier, never cleared per token), each on its own line ----
enum SyncWord : int {
  SYNC_BAR = 0,     // grid barrier arrivals (only grows)
  SYNC_EPOCH = 32,  // the arrival count when the launch starts: the last block of a launch sets it
  SYNC_LAST = 64,   // blocks done with the launch (the last one reduces the argmax, sets the epoch, clears it)
  SYNC_ATT = 96,    // [MAX_BATCH][FA_HKV] attention split-K counters, one line each
  SYNC_WORDS = SYNC_ATT + 32 * FA_HKV * MAX_BATCH
};

// ---- the state's fault words (int64 [FAULT_WORDS], reference/interface.py FAULT_*): what the first
// step the device refused found; written by block 0 of the refusing launch, cleared by the host ----
constexpr int FAULT_WORDS = 4;                       // [kind, offending value, position, batch row]
enum FaultKind : int { FAULT_NONE = 0, FAULT_TOKEN = 1, FAULT_POSITION = 2 };

// ---- timing mode (Args::times, uint64 globaltimer ns) --------------------------------------
//   [0]                    block 0 starts
//   [1 + q]                block 0 leaves the barrier after phase q (q < NBARRIERS)
//   [NPHASES]              the argmax is written
//   [NPHASES + 1]          the final norm is done (lm_head starts)
//   [NPHASES + 2]          the embedding row is normed (layer 0's in-proj starts)
//   [NPHASES + 3 + UNIT_STAMPS * i + k]   attention layer i, block 0's first unit (row 0), step k
//   [DN_STAMPS_AT + DN_STAMPS * i + k]    DeltaNet layer i, block 0's first unit (row 0, head 0), step k:
//                                         0 its inputs convolved and the q, k norms summed (a block barrier
//                                         passed), 1 its state rows updated and its outputs in shared memory
//                                         or obuf, 2 the unit done (a batch: its heads' gated norm stored);
//                                         the ring schedule's one-step launches on Hopper only (delta_rule.cuh
//                                         dn_stamp; elsewhere 0)
//   then [grid][NBARRIERS] every block's arrival at every barrier, then [grid][NPHASES] ns each block's
//   producer waited for a free ring slot held by phase q's chunk (the lm_head's last), then [grid][NBARRIERS] when every block's
//   arrival had been made (its release's fence passed and the count raised: minus the arrival, what
//   the fence waited for the SM's writes and in-flight copies, NOTES v30)
constexpr int UNIT_STAMPS = 4;
constexpr int DN_STAMPS = 3;
constexpr int DN_STAMPS_AT = NPHASES + 3 + NFA * UNIT_STAMPS;
constexpr int NTIMES = DN_STAMPS_AT + NDN * DN_STAMPS;
constexpr int times_full(int grid) { return NTIMES + grid * NBARRIERS; }         // [grid][NPHASES] ring full
constexpr int times_made(int grid) { return times_full(grid) + grid * NPHASES; }  // [grid][NBARRIERS] arrivals made
constexpr int times_words(int grid) { return times_made(grid) + grid * NBARRIERS; }

}  // namespace mk
