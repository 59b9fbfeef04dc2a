#!/usr/bin/env bash
# Session 29 call 2 (issue 21): where a pp520 prefill's host time goes before its graph starts, on main (2e09080 +
# results): prelude_profile.py (every step of the call's path stamped, GPU ids as `compare prefill` gives them and
# CPU ids as a tokenizer does; cProfile's own times; what one torch op costs on this host).
# Predicted (s24-s25's prelude_split.py): the GPU idle before the replay 160-310 µs at pp520, of it the interface's
# checks ~40-110 (GPU ids: aminmax, stack, tolist: one sync), FastPrefill ~30-70, bind 37-64, the launch 16-28.
set -u
source docs/results/device_call.sh --site
in_tree new 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"; tail -1 "$OUT/r/build.log"
in_tree new 300 python3 docs/results/2026-11-27-h100-s29/prelude_profile.py "$OUT/r" 520 > "$OUT/r/prelude_profile.txt" 2>&1
echo "profile: exit $? ${SECONDS}s"; cat "$OUT/r/prelude_profile.txt" | tail -60; head -45 "$OUT/r/prelude_cprofile.txt"; pack
true
