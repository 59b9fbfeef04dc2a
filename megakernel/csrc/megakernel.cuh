// The decode megakernel's launch interface: what one launch reads and writes (Args), how the
// host sets the kernels up (configure) and launches one decode step (launch). Shapes and
// buffer layouts: shapes.cuh. Plain C++ (no CUDA types beyond cudaStream_t), so the torch
// binding includes it with g++.
#pragma once
#include <cstdint>
#include <cuda_runtime.h>

#include "shapes.cuh"

namespace mk {

struct Args {
  // weights (read-only)
  const uint64_t* layers;     // [NLAYER][NSLOT] device pointers (bf16 tensors; LayerSlot)
  const uint16_t* embed;      // [VOCAB][D] bf16
  const uint16_t* final_norm; // [D]
  // the state of the batch's B sequences (shapes.cuh: [B][...], row b at b * the row's size)
  float* dn_state;
  uint16_t* conv_ring;
  uint16_t* k_cache;
  uint16_t* v_cache;
  const uint16_t* rope;
  int max_seq;                // positions the caches and the rope table hold
  // the workspace areas (shapes.cuh WS_*) and the sync words (SyncWord)
  float* hidden;
  float* zab;
  void* obuf;                 // fp32 at batch 1, bf16 with a batch (device_common.cuh obuf_of)
  float* qkv;
  uint16_t* attn;             // written only with 1 or more than OUT_MERGE_MAX splits
  uint16_t* act;
  float* apart;
  float* amax_val;
  int* amax_idx;
  unsigned* sync;
  // the launch's steps (one, or many: each step's input ids the previous step's argmax), for each of
  // the batch's rows b < batch
  const int64_t* token;       // [B] the first step's input ids
  int64_t* out_token;         // [steps][B] each step's greedy next ids (a refused launch: [0] = the input ids)
  int64_t* stream;            // [steps][B] the same ids in host-mapped memory as each step ends (the host
                              // set every word to -1 and polls), or null
  int64_t* fault;             // [FAULT_WORDS] the state's fault words (step_check.cuh)
  float* logits;              // [B][VOCAB] fp32, or null (one-step launches)
  float* trace;               // [B][NLAYER + 2][D] fp32 (embed, layers.0..23, norm), or null (one-step launches)
  unsigned long long* times;  // times_words(grid) globaltimer stamps (shapes.cuh), or null (one-step launches)
  int batch;                  // B: rows in the state, 1..MAX_BATCH (the kernel is compiled per B)
  int pos[MAX_BATCH];         // row b's position at the first step (= tokens already in its cache); step s: pos[b] + s
  int positions_per_split;    // attention split-K: one unit per this many positions (shapes.cuh attention_splits)
  int nsplit[MAX_BATCH];      // the first step's split-K units of row b: attention_splits(pos[b], positions_per_split)
  int steps;                  // steps the launch runs at most (1: the one-step entry)
  int stop_ids[MAX_STOP_IDS]; // the launch ends after the step where every row has produced one of these
  int n_stop_ids;             //   (a row that has keeps decoding with the batch until then)
  float temperature;          // > 0: each step's ids drawn (reference/sampling.py; the many-token kernel); 0: the argmax
  unsigned seed;              //   the draw's seed
  int stop_after;             // debug: the last phase to run (-1: all; one-step launches)
  int schedule;               // Schedule
  int ring_slots;             // the ring's slots (RING_MIN_SLOTS..the most configure() found room for)
  const uint16_t* lm_head;    // [VOCAB][D] bf16: the tier passes the embedding itself where the config ties them (shapes.cuh TIED)
  // the lm_head as int8 for the greedy argmax (LM_I8; lm_head.cuh lm_head_bounded, _batch), or null: the bf16 rows only
  const uint16_t* lm_q;       // [VOCAB + 1][D] uint8, q + 128 (q = round(w / scale) in [-127, 127]; the last row zeros), read as
                              //   pieces of PIECE bf16 (two rows each)
  const float2* lm_qs;        // [VOCAB] {scale, err}: |w . x - scale q . x| (as the kernel sums them in fp32) <= err |x|_2
};

// What configure() found: blocks_per_sm of the register kernel (each kernel wants 1); for batch
// B = b + 1, ring_slots[b] (0: the ring does not fit this GPU's shared memory at that batch) and
// the shared memory of each schedule (the matrix phases' input vectors grow with B; the register
// schedule decodes batch 1 only: smem_bytes[0]).
struct Config {
  int blocks_per_sm, num_sms, smem_bytes[MAX_BATCH], ring_slots[MAX_BATCH], ring_smem_bytes[MAX_BATCH];
};

int smem_bytes(int batch);                // the register schedule
int ring_smem_bytes(int batch, int slots);  // the ring schedule with that many slots
// Sets every kernel's shared-memory limits on `device` (once per process and device).
cudaError_t configure(int device, Config* out);
// a.steps decode steps of a.batch rows: a cooperative launch of `grid` blocks (all resident; grid <= MAX_GRID).
cudaError_t launch(const Args& a, int grid, cudaStream_t stream);

}  // namespace mk
