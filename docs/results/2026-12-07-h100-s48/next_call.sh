#!/usr/bin/env bash
# Prepared in session 48, NOT RUN (the session's device time went to failed starts; issue 21). Tree new = branch
# s48-wy-mma (on s48-kkt-prep, tag s48-wy-blocks-slower): call 2 found the WY blocks (FlashQLA's kkt_solve folded into
# dn_prep) correct and slower — dn_prep 10.5 -> 18.4 µs at 520 rows against kkt_solve's ~6.8, estimated from their
# instruction count (the block products and the staging on the CUDA cores, beside issue-bound token blocks). This branch
# does the two levels of block products on the tensor cores (mma.sync m16n8k8 tf32: 4 + 8 tiles a level, one a warp,
# where each thread ran 2-4 outputs x 16-32 FMAs and 32-64 shared loads), keeps 3 staging loads in flight a thread (was 1:
# each load was followed by its store in the SASS; now 3 LDG.E.128.CONSTANT before 3 STS.128) and the fp32 matrix's row
# stride at 68 (the tf32 fragments' loads 4-way conflicts at 65). Its CPU emulation of the fragment maps (tf32 rounding included): 2e-4 to 4.5e-4 of the largest element from
# float64's inverse, zeros above and ones on the diagonal, rows of I where beta = 0; compiled for every family shape and
# sm_80 / sm_86 without a spill at 48 registers (sm_90a) / 64.
# What the SASS (cuobjdump from pip's nvidia-cuda-cuobjdump) says of the WY block's critical path, estimated: staging 2
# round trips, the 4 k rows one after another (~250 instructions a row a warp: now the longest part), K Kᵀ ~0.5k cycles,
# forward substitution ~1-2k, the combinations ~0.5k (were ~6k on the CUDA cores).
# Predicted: dn_prep with A 18.4 -> 13-15 µs at 520 rows; dn_prep + rule 36.2 -> 33-34 µs a layer (kkt_solve's way);
# pp520 +1 to +3% against the same tree with A off (wy_ab.py); if dn_prep with A stays above ~16 µs, not worth it.
# Setup: git checkout --detach s48-wy-mma in the repository root (the branch holds this script and the two benches),
# COMMIT file; carry [".whl", ".qla", "COMMIT"]. Run as END=585 bash docs/results/2026-12-07-h100-s48/next_call.sh
set -u
source docs/results/device_call.sh --site
D=docs/results/2026-12-07-h100-s48
build_trees new
in_tree new 200 python3 $ROOT/$D/wy_bench.py $OUT/r 520,4096 > $OUT/r/wy_bench.txt 2>&1
echo "wy bench: exit $? ${SECONDS}s"; grep "^{" $OUT/r/wy_bench.txt | cut -c1-300; tail -2 $OUT/r/wy_bench.txt | cut -c1-300; pack
in_tree new 150 python3 $ROOT/$D/wy_ab.py $OUT/r 520,4096 40 > $OUT/r/wy_ab.txt 2>&1
echo "wy ab: exit $? ${SECONDS}s"; grep "^{" $OUT/r/wy_ab.txt | cut -c1-400; pack
gpu_tests wy new 60 "dn_prep_given_A or dn_prep_writes"
gpu_tests layers new 180 "(every_layer_of_the_prompt and (65 or 520 or 4097)) or each_delta_rule_prefills or graph_replay or untraced"
gpu_tests sanitizers new 150 "sanitizer"
true
