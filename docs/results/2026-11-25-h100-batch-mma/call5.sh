#!/usr/bin/env bash
# Device call 5 (2026-11-25, session 12): the final tree: batch checks and tg per B, memcheck at
# B = 8, then the B = 1 A/B against c217de7 (.ab_old: the batch-1 kernel before this session).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=$ROOT:/tmp/site PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
(cd .ab_old && PYTHONPATH=$ROOT/.ab_old:/tmp/site python3 -c "import megakernel.build as b; b.load()") > "$OUT/r/build_base.log" 2>&1 &
timeout 130 python3 tests/gpu/batch_check.py --tiers megakernel --check-steps 6 --json "$OUT/r/batch.json" > "$OUT/r/batch.log" 2>&1
echo "batch check: exit $?"; grep -E "phases B=8|^check|^tg" "$OUT/r/batch.log" | sed -E "s/'positions'[^]]*], //"
timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_megakernel.py -k "memcheck-ring-8" > "$OUT/r/sanitize.log" 2>&1
echo "memcheck B=8: exit $?"; tail -1 "$OUT/r/sanitize.log"
wait
OUT=$OUT/r AB_ROUNDS=2 timeout 230 bash tests/gpu/run_all.sh ab | grep -E "same|differ|bits|^tg|^pp|exit" | tail -12
tar -C "$OUT" -czf "$OUT/results.tgz" r && rm -rf "$OUT/r"
