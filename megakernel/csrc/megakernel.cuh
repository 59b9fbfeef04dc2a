// Qwen3.5-0.8B decode megakernel: the shapes it is compiled for and its launch interface.
// Plain C++ (no CUDA types beyond cudaStream_t), so the torch binding includes it with g++.
#pragma once
#include <cstdint>
#include <cuda_runtime.h>

namespace mk {

// ---- model shapes (compile-time constants: the kernel serves qwen3.5-0.8b only) ----
constexpr int D = 1024;           // hidden size
constexpr int INTER = 3584;       // MLP intermediate size
constexpr int VOCAB = 248320;     // tied embedding / lm_head rows
constexpr int NLAYER = 24;        // (L, L, L, F) x 6
constexpr int NDN = 18, NFA = 6;
constexpr int DN_H = 16, DN_DK = 128, DN_DV = 128;
constexpr int DN_KEY = DN_H * DN_DK;                 // 2048
constexpr int DN_VAL = DN_H * DN_DV;                 // 2048
constexpr int DN_CONV = 2 * DN_KEY + DN_VAL;         // 6144 conv channels [q | k | v]
constexpr int DN_WIN = DN_CONV + DN_VAL + 2 * DN_H;  // packed in-projection rows [qkv | z | b | a] = 8224
constexpr int FA_HQ = 8, FA_HKV = 2, FA_HD = 256, FA_ROT = 64;
constexpr int FA_QKV = 2 * FA_HQ * FA_HD + 2 * FA_HKV * FA_HD;  // packed [q+gate 4096 | k 512 | v 512] = 5120
constexpr int FA_OIN = FA_HQ * FA_HD;                           // 2048

// ---- launch geometry and schedule ----
constexpr int THREADS = 512, NWARPS = 16;
constexpr int PHASES_PER_LAYER = 5;                  // in-proj | mixer core | out-proj | gate/up | down
constexpr int NPHASES = NLAYER * PHASES_PER_LAYER + 1;  // + final norm / lm_head / argmax
constexpr int NBARRIERS = NLAYER * PHASES_PER_LAYER;     // a grid barrier after every layer phase
constexpr int DN_VSLICES = 8;                        // a DeltaNet head's 128 v rows split over 8 units
constexpr int DN_UNITS = DN_H * DN_VSLICES;          // 128 recurrence units
constexpr int ATT_MAX_SPLIT = 64;                    // split-K units per kv head (attention)
constexpr int ATT_PART = FA_HD + 4;                  // one partial: m, l, 2 pad, acc[256]
constexpr int UNIT_STAMPS = 4;                       // timing mode: block 0's first attention unit, per layer
constexpr int NTIMES = NPHASES + 3 + NFA * UNIT_STAMPS;  // globaltimer stamps (see kernel)
constexpr int LM_ROWS_PER_IT = NWARPS * 4;           // lm_head rows a block covers per loop iteration

// layer table: NSLOT device pointers per layer (unused slots are 0)
enum : int {
  SL_IN_NORM = 0, SL_POST_NORM = 1, SL_WIN = 2,     // WIN: DN [8224,1024] or FA [5120,1024]
  SL_CONV_W = 3, SL_A_LOG = 4, SL_DT_BIAS = 5, SL_GNORM = 6,  // DeltaNet only
  SL_Q_NORM = 3, SL_K_NORM = 4,                      // attention only (reuse slots 3, 4)
  SL_OUT = 7, SL_GATE_UP = 8, SL_DOWN = 9, NSLOT = 10
};

// sync words: each on its own 128-byte line (32 uint32), then one publish word per block
constexpr int MAX_GRID = 1024;  // blocks the per-block publish words cover
enum : int {
  SYNC_BAR = 0,                      // grid barrier arrival counter
  SYNC_GEN = 32,                     // MKF_GEN_BAR: the last arriver writes the barrier's target here
  SYNC_ATT = 64,                     // [FA_HKV] split-K merge counters, one line each
  SYNC_LM = 32 * (2 + FA_HKV),       // lm_head argmax counter
  SYNC_PUB = 32 * (3 + FA_HKV),      // [MAX_GRID] MKF_DN_FLAGS / MKF_FA_FLAGS: block b's last finished in-proj
  SYNC_WORDS = SYNC_PUB + MAX_GRID
};

// schedule variants (Args::flags)
enum : int {
  MKF_EARLY = 1,       // each warp loads its weights of phase q+1 into registers before barrier q
  MKF_PF_END = 2,      // L2 prefetch issued after a phase's compute (else at its start)
  MKF_PF_SPREAD = 4,   // bulk prefetch pieces spread over all warps (else warp 0)
  MKF_PF_LINES = 8,    // per-128-byte-line prefetch.global.L2 over all threads (else bulk)
  MKF_LM_PF = 16,      // lm_head: prefetch pf_dist loop iterations ahead
  MKF_LIGHT_BAR = 32,  // grid barrier by release/acquire alone (no membar.gl before and after)
  MKF_GEN_BAR = 64,    // barrier exit: arrivals by atom.acq_rel, the last arriver stores the target into a
                       // generation word on its own line, blocks poll that word (not the contended counter)
  MKF_DN_FLAGS = 128,  // DeltaNet in-proj -> core: no grid wait; each block publishes "in-proj done" and a
                       // core unit (head h) waits only for the blocks owning its q/k/v/b/a rows
  MKF_FA_FLAGS = 256,  // the same for attention in-proj -> attention (unit waits for its kv head's rows)
  MKF_RING = 512,      // v6: every block streams its weight slices through a ring of shared-memory slots,
                       // filled by a 17th (producer) warp, running ahead of the phases and through the barriers
  MKF_RING_TMA = 1024, // the layers' chunks by TMA bulk copies too (else cp.async by the producer's lanes;
                       // the lm_head's are bulk copies on sm_90 either way): measured slower, the bulk
                       // requests queue ahead of the grid barrier's L2 round trips
  MKF_EVICT_FIRST = 2048,  // the ring's copies mark the weights' L2 lines evict-first (the state, K/V cache
                           // and activations keep their lines)
  MKF_STREAM_ONLY = 4096,  // measurement: the compute warps only take each chunk and release it (no compute, no
                           // barrier waits, nothing written but the input id as the output): the weight stream alone
  MKF_TWO_PRODUCERS = 8192,  // the ring is filled by two producer warps (even / odd chunks), not one
  MKF_LEAN_MERGE = 16384,    // attention split-K: the units count with one atom.acq_rel after a block barrier (no
                             // per-thread fences before the count, none before the last unit's merge)
  MKF_OUT_MERGE = 32768,     // attention split-K with 1 < ns <= OUT_MERGE_MAX: no count, no last-unit merge; every
                             // block merges the partials (and applies the gate) as it loads the out-proj's input
};
constexpr int OUT_MERGE_MAX = 8;    // MKF_OUT_MERGE: most split-K partials the out-proj merges itself
constexpr int RING_MIN_SLOTS = 8;   // a matrix phase's item reads up to 8 slots at once
constexpr int RING_MAX_SLOTS = 16;
constexpr int RING_MAX_PRODUCERS = 2;  // producer warps after the 16 compute warps

struct Args {
  // weights
  const uint64_t* layers;   // [NLAYER][NSLOT] device pointers (bf16 tensors)
  const uint16_t* embed;    // [VOCAB][D] bf16 (also the lm_head)
  const uint16_t* final_norm;
  // per-sequence state
  float* dn_state;          // [NDN][DN_H][128 v][128 k] fp32
  uint16_t* conv_ring;      // [NDN][4][DN_CONV] bf16: pre-conv inputs, column = position % 4
  uint16_t* k_cache;        // [NFA][FA_HKV][max_seq][FA_HD] bf16 (k after norm + RoPE)
  uint16_t* v_cache;
  const uint16_t* rope;     // [max_seq][2][32] bf16: cos, sin of position * inv_freq (torch computes it)
  // scratch (per tier)
  uint16_t* hidden;         // [D] residual stream, bf16
  uint16_t* zab;            // [DN_VAL + 2*DN_H]: z | b | a
  uint16_t* obuf;           // [DN_VAL] DeltaNet core output (bf16)
  uint16_t* qkv;            // [FA_QKV] attention projections
  uint16_t* attn;           // [FA_OIN] gated attention output (MKF_OUT_MERGE with 2-8 splits: not written, the out-proj merges the partials)
  uint16_t* act;            // [INTER] silu(gate) * up
  float* apart;             // [FA_HKV][ATT_MAX_SPLIT][4][ATT_PART] attention partials
  float* amax_val;          // [grid] per-block best logit
  int* amax_idx;            // [grid]
  unsigned* sync;           // [SYNC_WORDS], zeroed once at init, never by the host per token
  // per call
  const int64_t* token;     // [1] input token id (device)
  int64_t* out_token;       // [1] greedy next id (device)
  float* logits;            // [VOCAB] fp32 or null
  float* trace;             // [NLAYER + 2][D] fp32 or null: embed, layers.0..23, norm
  unsigned long long* times;  // [NTIMES + grid * (NBARRIERS + RING_MAX_PRODUCERS)] globaltimer stamps or null, then every
                              // block's barrier arrivals, then (MKF_RING) ns each producer waited for a free slot in the layers
  int max_seq;
  int pos;                  // position of this token (= tokens already in the cache)
  int nsplit;               // attention split-K units per kv head, 1..ATT_MAX_SPLIT, <= pos + 1
  unsigned bar_base;        // barrier counter value at launch start (epoch)
  int pf_dist;              // register schedules: L2 prefetch distance in phases (0 = off); the ring ignores it
  int stop_after;           // debug: last phase to run (-1 = all)
  int flags;                // MKF_* bits (schedule variants, for measurement)
  int ring_slots;           // MKF_RING: slots of the weight ring (configure() picks the most that fit)
  int ring_inflight;        // MKF_RING: most chunks the producer keeps in flight in the layers (0: up to ring_slots)
};

int smem_bytes();                 // the register schedules
int ring_smem_bytes(int slots);   // MKF_RING with that many slots
// Sets the kernels' shared-memory limits; returns how many blocks fit on one SM and the ring's
// slot count (0: the ring does not fit this GPU's shared memory, MKF_RING is refused).
cudaError_t configure(int device, int* blocks_per_sm, int* num_sms, int* ring_slots);
cudaError_t launch(const Args& a, int grid, cudaStream_t stream);

}  // namespace mk
