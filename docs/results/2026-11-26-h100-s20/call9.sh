#!/usr/bin/env bash
# Session 20, call 9 (issues 20, 22). The working tree (COMMIT, 22ed85f + the spill bound): call 8's __expf in
# the attention core, kept (d32768 +0.7%, tg128 +0.3%, b8 +0.6%, same call). Its bits differ from before at
# every size (the core is shared), so the family's GPU tests run again: tiny-megakernel, 2B, 4B, 9B (every layer
# at 16 and 300 tokens, 128 teacher-forced steps, poison, repeatability, schedules x grids, many tokens).
# Prediction: all pass (__expf's relative error ~1e-6 against bf16 bounds of ~1e-2).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"
WORKBENCH_COMMIT=$(cat COMMIT) OUT=$OUT/r FAMILY_LIMIT=480 bash tests/gpu/run_all.sh family > "$OUT/r/family_stage.log" 2>&1
echo "family stage: exit $?"; tail -n 6 "$OUT/r/family_tests.log" | cut -c1-300
tar -C "$OUT" -czf "$OUT/results.tgz" r
