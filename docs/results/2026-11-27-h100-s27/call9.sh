#!/usr/bin/env bash
# Session 27 call 9 (a diagnostic for the next session; nothing kept): branch variant-att-stamps (two more stamps in
# block 0's attention unit: warp 0's first K/V chunk in the ring, every warp done scoring) in .ab_st; `python -m
# megakernel anatomy` at 16, 64 and 32,768 tokens of context. Question (NOTES v25): at a 16-token context warp 0
# scores its ~3 groups in 2.4 µs against ~0.3 µs of latency a group: is it waiting for the K/V chunk (the new
# "first K/V chunk in" stamp late), or for the other warps, or is the scoring itself that slow?
# The stamps move ptxas's allocation (the B = 3 one-step kernel spills 16 / 32 B, B = 1's 24 / 40 against 28 / 48):
# a diagnostic tree, not for main.
set -u
source docs/results/device_call.sh --site
in_tree st 200 python3 -c "import megakernel.build as b; b.load()" > "$OUT/r/build_st.log" 2>&1
echo "build: ${SECONDS}s"
for ctx in 16 64 32768; do
  in_tree st 120 python3 -m megakernel anatomy --context $ctx --steps 8 > "$OUT/r/anatomy_st_d$ctx.txt" 2>&1
  echo "anatomy d$ctx: exit $? ${SECONDS}s"; grep -v TileLang "$OUT/r/anatomy_st_d$ctx.txt" | grep -E "attention core|step|ring full" | cut -c1-220; pack
done
true
