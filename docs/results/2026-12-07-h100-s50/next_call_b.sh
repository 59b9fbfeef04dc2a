#!/usr/bin/env bash
# Prepared in session 50, NOT RUN: after next_call.sh, on the same warm machine (its builds kept), the faster variant's
# (SIDE: rows or split) every-layer tests, graph replay, untraced, each delta rule, then its sanitizers (memcheck,
# synccheck at 70 / 300 rows); then `compare bench --pp 4096,32768` new SIDE (2 repeats) and ncu of its two dn_prep
# kernels at 520 rows (each alone: duration, SMs active, occupancy, warp stalls) if time is left.
# Predicted: all pass; pp4096 / pp32768 +0-2% (dn_prep is a smaller share of a long prompt); under ncu dn_wy_kernel
# ~4-5 µs, latency-bound (its substitution's barriers), dn_prep_kernel (rows) ~3-4 µs, one wave.
# Run as SIDE=rows END=<s> bash docs/results/2026-12-07-h100-s50/next_call_b.sh (carry as next_call.sh).
set -u
source docs/results/device_call.sh --site
END=${END:-560}
SIDE=${SIDE:-rows}
build_trees new $SIDE
gpu_tests layers $SIDE 150 "(every_layer_of_the_prompt and (65 or 520)) or each_delta_rule_prefills or graph_replay or untraced"
gpu_tests sanitizers $SIDE 130 "sanitizer"
for side in new $SIDE; do bench_pp $side 4096,32768 2 90 95; done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for k in dn_wy_kernel dn_prep_kernel; do
  [ $((END - SECONDS)) -lt 60 ] && { echo "ncu $k: skipped"; continue; }
  in_tree $SIDE 55 "$NCU" --clock-control none -k regex:"$k" --launch-count 1 --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section WarpStateStats python3 $ROOT/docs/results/2026-12-07-h100-s44/prefill_once.py 520 1 \
      > "$OUT/r/ncu_$k.txt" 2>&1
  echo "ncu $k: exit $? ${SECONDS}s"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Waves Per SM|Registers Per|Stall|Warp Cycles Per Issued" "$OUT/r/ncu_$k.txt" | cut -c1-120
  pack
done
true
