#!/usr/bin/env bash
# Session 30 call 8 (issue 20): the poller-warp barrier (kept after call 7) under compute-sanitizer: synccheck and
# memcheck of the ring schedule at batch 1 (sanitize-run: two steps, one of them refused on the device). Predicted:
# clean (the pollers' two mbarriers a block are counted in synccheck's tracking).
set -u
source docs/results/device_call.sh --site
timeout 120 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1
echo "build: exit $? ${SECONDS}s"; pack
timeout $((250 - SECONDS)) python3 -m pytest -q -m gpu -p no:cacheprovider \
    "tests/test_megakernel.py::test_compute_sanitizer_clean[synccheck-ring-1]" \
    "tests/test_megakernel.py::test_compute_sanitizer_clean[memcheck-ring-1]" > "$OUT/r/sanitizers.txt" 2>&1
echo "sanitizers: exit $? ${SECONDS}s"; tail -4 "$OUT/r/sanitizers.txt" | cut -c1-200; pack
true
