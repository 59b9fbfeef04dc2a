#!/usr/bin/env bash
# Session 45, call 1 (issue 21). Trees: new = main; tr = branch s45-trims (latency trims in three of our prefill
# kernels, the same arithmetic: silu_mul's gate/up loads issued before the folded norm's block reduction; dn_out_norm's
# table words and first state vector loaded with the norm's inputs, the state copy stored after the norm; dn_prep's
# four input rows loaded at once, global loads, no table word before them but for the first three tokens).
# Predicted (per-kernel sums, `compare prefill` breakdown at 520 rows): silu_mul 98 -> 75-90 µs (24 layers: one L2 round
# trip of ~0.3-1 µs a layer), dn_out_norm 58 -> 45-55 (18), dn_prep 157 -> 140-157 (18): ours -15 to -50 µs.
# tl = branch s45-tail (on tr): a fresh prompt's last layer for its last row by M = 1 kernels of ours where the norms
# are folded: attn_last_row (the row's attention split over the keys in 17 x 2 blocks at 520 rows, merged and gated by
# the last block of each kv head) for cuDNN's one-row SDPA + its reduction + attn_gate (s27: 8.0 + 2.4 + 2.4 µs);
# gemv_add_row for the out-projection's and down's M = 1 cuBLAS GEMMs (7.2 and 6.5 + 1.6 µs for 4 and 7 MB of
# weights); gate_up_swiglu_row for the gate/up's (7.2 µs, 15 MB) + silu_mul. Predicted the graph -15 to -25 µs
# (attention ~4 against ~13, the three products ~11-13 against ~23, two launches fewer).
# Then host_profile.py (where a call's host time goes: cProfile of 100 calls) and session 44's ncu of our kernels and FlashQLA's at 520 rows (next_call.sh's loop, --cache-control none) on new.
# Setup: for b in tr:s45-trims tl:s45-tail; do n=${b%%:*}; rm -rf .ab_$n && mkdir .ab_$n && git archive ${b#*:} |
#   tar -x -C .ab_$n && rm -rf .ab_$n/docs && git rev-parse --short ${b#*:} > .ab_$n/COMMIT; done;
#   git rev-parse --short HEAD > COMMIT
#   carry [".whl", ".qla", "COMMIT", ".ab_tr", ".ab_tl"]; run as END=575 bash docs/results/2026-12-07-h100-s45/call1.sh
set -u
source docs/results/device_call.sh --site
build_trees new tr tl
in_tree new 150 python3 -m compare prefill --pp 520 --reference-pp 0 --out "$OUT/r/warmup_new" > "$OUT/r/warmup_new.txt" 2>&1
echo "warm-up: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/warmup_new.txt" | cut -c1-220; pack
n=0
for side in tr new tl tr new tl; do
  n=$((n + 1))
  [ $((END - SECONDS)) -ge 45 ] || { echo "prefill $n $side: skipped"; continue; }
  in_tree $side 40 python3 -m compare prefill --pp 520 --reference-pp 0 --out "$OUT/r/prefill_${n}_$side" > "$OUT/r/prefill_${n}_$side.txt" 2>&1
  echo "prefill $n $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill_${n}_$side.txt" | cut -c1-200; pack
done
gpu_tests tl tl 200 "attn_last_row or gemv_add_row or gate_up_swiglu or dn_prep or silu or (every_layer_of_the_prompt and (520 or 65 or 2)) or graph_replay or untraced or vocabulary or continuing or decode_steps"
gpu_tests tl_opcheck tl 60 "opcheck_every_op" tests/test_megakernel.py
if [ $((END - SECONDS)) -ge 60 ]; then
  mkdir -p "$OUT/r/host" && in_tree new 50 python3 docs/results/2026-12-07-h100-s45/host_profile.py "$OUT/r/host" > "$OUT/r/host.txt" 2>&1
  echo "host profile: exit $? ${SECONDS}s"; head -3 "$OUT/r/host.txt"; pack
else echo "host profile: skipped"; fi
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for k in dn_prep_kernel silu_mul_kernel dn_out_norm_kernel fused_chunk_gdr_fwd kkt_solve; do
  [ $((END - SECONDS)) -lt 60 ] && { echo "ncu $k: skipped"; continue; }
  in_tree new 55 "$NCU" --clock-control none --cache-control none -k regex:"$k" --launch-count 1 --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
      python3 docs/results/2026-12-07-h100-s44/prefill_once.py 520 1 > "$OUT/r/ncu_$k.txt" 2>&1
  echo "ncu $k: exit $? ${SECONDS}s"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Achieved Occupancy|Waves Per SM|Registers Per|Stall Long|Warp Cycles Per Issued" "$OUT/r/ncu_$k.txt" | cut -c1-120
  pack
done
true
