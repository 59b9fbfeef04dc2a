#!/usr/bin/env bash
# Prepared in session 37, NOT YET RUN: the first call of the next session. Four trees: main (this checkout), swz
# (.ab_swz: branch s37-xs-swizzle, e563986: a batch's x planes swizzled so the K = D tiles' x loads are one pass, not
# two), rswz (.ab_rswz: branch s37-ring-swizzle, cfa879f: that, and the K = D weight chunks landing swizzled in the ring
# too: every lds128 of a K = D tile one pass), diag (.ab_diag: branch s37-kd-stamps, 31d6fbd: block 0's stamps inside a
# batch's in-proj and gate/up phases).
# Predicted: swz and rswz bits identical to main (the same values, only their shared-memory addresses move); tg128 b8
# swz +0 to +3%, rswz +1 to +6% (v35: a B = 8 K = D item ~2.5-3 µs, ~2.2 µs of it computed as two-pass bank time; 48
# such phases a step; the XORed addresses add 2.4-3.8% SASS lines), b4 smaller, batch 1 equal (its kernels' SASS
# identical); diag equal to main within 0.5% (then merge it); the winner's anatomy at B = 8.
# Run from main's checkout:
#   for s in swz:s37-xs-swizzle rswz:s37-ring-swizzle diag:s37-kd-stamps; do n=${s%%:*}; rm -rf .ab_$n && mkdir .ab_$n && git archive ${s#*:} \
#     | tar -x -C .ab_$n && rm -rf .ab_$n/docs && git rev-parse --short ${s#*:} > .ab_$n/COMMIT; done
#   git rev-parse --short HEAD > COMMIT   (carry .whl .qla COMMIT .ab_swz .ab_rswz .ab_diag)
set -u
source docs/results/device_call.sh --site
build_trees new swz rswz diag
for side in new swz rswz; do
  in_tree $side 90 python3 tests/gpu/ab_commits.py snapshot /tmp/snap_$side.pt > "$OUT/r/snapshot_$side.txt" 2>&1
  echo "snapshot $side: exit $? ${SECONDS}s"
done
for side in swz rswz; do
  python3 tests/gpu/ab_commits.py compare /tmp/snap_new.pt /tmp/snap_$side.pt > "$OUT/r/bits_$side.txt" 2>&1
  echo "bits $side: exit $?"; tail -3 "$OUT/r/bits_$side.txt" | cut -c1-200
done
pack
n=0
for side in new swz rswz diag rswz swz new diag; do n=$((n + 1)); tg_bench $n $side 1,8; done
if [ $((585 - SECONDS)) -gt 45 ]; then
  in_tree rswz 45 python3 -m megakernel anatomy --batch 8 --context 16 > "$OUT/r/anatomy_rswz_b8.txt" 2>&1
  echo "anatomy rswz: exit $? ${SECONDS}s"; pack
fi
true
