#!/usr/bin/env bash
# Session 39, call 3, NOT RUN (refused: too little device time left to start a machine): call 2 cut to what ~280 s of device time allows (call 2 never found a machine): main (new) and
# s39-dn-butterfly (bf, .ab_bf, 5563f60) at B = 8 alternating, nothing else (the bits and tests stay call 2's).
# Setup as call2.sh's.
set -u
source docs/results/device_call.sh --site
build_trees new bf
n=0
for side in new bf bf new; do n=$((n + 1)); tg_bench $n $side 8 185; done
true
