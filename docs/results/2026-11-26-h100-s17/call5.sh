#!/usr/bin/env bash
# Session 17, call 5: the working tree only (its COMMIT). The decode op's argument list from the tier
# (opcheck and torch.compile tests: session 16's new decode arguments had left the tests' own copy of
# the list behind); where a turn on a long conversation spends its time (`compare prefill --depth`,
# kernels by category); the Triton tier's pp rows at the same depth for the ratio.
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site QWEN35_MEGAKERNEL_CACHE=/tmp/mk-new WORKBENCH_COMMIT=$(cat COMMIT)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/r/device.txt"
timeout 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1; tail -n1 "$OUT/r/build.log"
timeout 200 python3 -m pytest -q -m gpu tests/test_megakernel.py -k "opcheck or torch_compile" > "$OUT/r/tests.txt" 2>&1
echo "tests: exit $?"; tail -n 2 "$OUT/r/tests.txt"; pack
timeout 200 python3 -m compare prefill --pp 256,520 --depth 16384 --reps 5 --out "$OUT/r/prefill_d16384" > "$OUT/r/prefill_d16384.txt" 2>&1
echo "prefill: exit $?"; cat "$OUT/r/prefill_d16384.txt" | tail -n 30; pack
timeout 200 python3 -m compare bench --tiers triton,megakernel --pp 256,520 --depth 16384 --tg 0 --repeats 3 --no-progress \
    --json "$OUT/r/bench_turn.json" > "$OUT/r/bench_turn.md" 2>&1
echo "bench: exit $?"; grep -E "^\| (triton|megakernel)" "$OUT/r/bench_turn.md" | cut -c1-100; pack
