#!/usr/bin/env bash
# Session 40, call 4 (issue 21): call 3's prefill A/B again with pp4096 first (call 3's first run, new, ran past its 100 s
# compiling FlashQLA's 4,096-row kernels, so pp4096 had one new run): fold new new fold, compare prefill --pp 4096,520.
# Trees as call 3's (carry [".whl", ".qla", "COMMIT", ".ab_fold", ".ab_att2"]).
source docs/results/device_call.sh --site; i=0; for side in fold new new fold; do i=$((i+1)); [ $SECONDS -gt 200 ] && break; in_tree $side 60 python3 -m compare prefill --pp 4096,520 --reference-pp 0 --out "$OUT/r/prefill4k_${i}_$side" > "$OUT/r/prefill4k_${i}_$side.txt" 2>&1; echo "p $i $side: exit $? ${SECONDS}s"; grep -E "^pp" "$OUT/r/prefill4k_${i}_$side.txt" | cut -c1-250; pack; done
