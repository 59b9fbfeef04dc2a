#!/usr/bin/env bash
# Call 9 (main, the poller warps merged): a soak of 100,000 fed-back one-step launches across state resets (12 M grid
# barriers through the pollers: a hang ends it at --timeout), then issue 19's per-part time at B = 8 (and B = 1 beside
# it) from the kernel's clock (`python -m megakernel anatomy`).
# Predicted: no hang, no NaN, p50 ~0.66-0.67 ms a step (batch 1); at B = 8 the DeltaNet core ~140 µs a step, the
# lm_head ~178 (NOTES v24's breakdown), the barriers' exits shorter than before the pollers.
set -u
source docs/results/device_call.sh --site
in_tree new 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"; pack
in_tree new 200 python3 -m megakernel soak --steps 100000 --timeout 150 --json "$OUT/r/soak.json" > "$OUT/r/soak.txt" 2>&1
echo "soak: exit $? ${SECONDS}s"; tail -6 "$OUT/r/soak.txt"; pack
for b in 8 1; do
  in_tree new 120 python3 -m megakernel anatomy --batch $b --context 16 --steps 8 > "$OUT/r/anatomy_b$b.txt" 2>&1
  echo "anatomy b$b: exit $? ${SECONDS}s"; pack
done
head -40 "$OUT/r/anatomy_b8.txt"
true
