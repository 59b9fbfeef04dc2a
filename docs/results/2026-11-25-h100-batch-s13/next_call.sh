#!/usr/bin/env bash
# What the thirteenth session wrote for the GPU and could not run (its device time was spent), in one
# device call (~8 min; from the repo root, .whl carried):
#   - the new GPU tests: the Triton tier's per-part times from a profiled graph replay, the batch
#     anatomy, the megakernel on hazard weights (3- and 1,100-token prompts), and the batch tests
#     once more on the final tree;
#   - compare bench --layers (the Triton tier's parts now from its graph) with its roofline PNG;
#   - python -m megakernel anatomy --batch 8 (where B = 8's step waits: per phase first / median /
#     last arrival, the ring's full time);
#   - compare bench --batch 1,2,4,8 of triton and megakernel (issue 19's same-run ratio, --vs triton);
#   - compare bench --stream: tg128 with every token read on the host as it is produced (how
#     generate now streams greedy text) against tg128 without (issue 20's first bar: >= 95%);
#   - compare bench --pp 256,520 --depth 16384: pp rows against their compute floor, and the time to
#     first token of a 256-token turn on top of a 16k conversation (issue 21's new row).
# Results into $OUT/r, packed as $OUT/results.tgz after every stage (only a few files come back).
set -u
OUT=${OUT:-gpu-results}; mkdir -p "$OUT/r"; ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=$ROOT:/tmp/site PYTHONUNBUFFERED=1 QWEN35_MEGAKERNEL_CACHE=/tmp/qwen35-megakernel
pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/r/device.txt"
timeout 300 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build.log" 2>&1 || tail -5 "$OUT/r/build.log"
timeout 240 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_triton_gpu.py tests/test_batch_gpu.py \
    tests/test_megakernel.py -k "graph_replay or anatomy or megakernel_batch or hazard" > "$OUT/r/gpu_tests.log" 2>&1
echo "gpu tests: exit $?"; grep -E "passed|failed|FAILED|Error" "$OUT/r/gpu_tests.log" | tail -8; pack
timeout 120 python3 -m megakernel anatomy --batch 8 --context 64 > "$OUT/r/anatomy_b8.txt" 2>&1
echo "anatomy B=8: exit $?"; cat "$OUT/r/anatomy_b8.txt"; pack
timeout 200 python3 -m compare bench --tiers triton,megakernel --batch 1,2,4,8 --pp 0 --depth 0 --repeats 3 --no-progress \
    --json "$OUT/r/bench_batch.json" > "$OUT/r/bench_batch.md" 2>&1
echo "batch bench: exit $?"; grep -E "^\||over" "$OUT/r/bench_batch.md"; pack
timeout 150 python3 -m compare bench --tiers triton,megakernel --pp 0 --depth 0 --stream --repeats 5 --no-progress \
    --json "$OUT/r/bench_stream.json" > "$OUT/r/bench_stream.md" 2>&1
echo "stream bench: exit $?"; grep -E "^\|" "$OUT/r/bench_stream.md"; pack
timeout 200 python3 -m compare bench --tiers triton,megakernel --pp 256,520 --tg 0 --depth 16384 --repeats 3 --no-progress \
    --json "$OUT/r/bench_pp.json" > "$OUT/r/bench_pp.md" 2>&1
echo "pp bench: exit $?"; grep -E "^\||floor" "$OUT/r/bench_pp.md"; pack
timeout 240 python3 -m compare bench --layers --tiers triton,megakernel --repeats 3 --layer-steps 5 --no-progress \
    --json "$OUT/r/bench_layers.json" --png "$OUT/r/bench_layers.png" > "$OUT/r/bench_layers.md" 2>&1
echo "bench --layers: exit $?"; tail -40 "$OUT/r/bench_layers.md"; pack
