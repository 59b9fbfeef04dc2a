"""Session 32 (issue 20, a diagnostic, never for main): session 31's what-if (`../2026-11-27-h100-s31/whatif_exit.py`:
the grid barrier's arrival red.relaxed instead of red.release) for some phase kinds only, to find which barriers'
release fences the +2.5% (batch 1) / +4.5% (B = 8) of s31 call 10 comes from. Readers may see older values of what a
block wrote in those phases: the logits are not to be trusted; the timing bounds what flags carried in those phases'
data (NCCL's LL protocol) could give.
    python whatif_phase.py TREE KINDS     (KINDS: phase kinds, schedule.cuh PhaseKind: 0 in-proj, 1 core,
                                           2 out-proj, 3 gate/up, 4 down; e.g. 2,4)
"""
import sys

tree, kinds = sys.argv[1], [int(k) for k in sys.argv[2].split(",")]
p = f"{tree}/megakernel/csrc/grid_sync.cuh"
s = open(p).read()
old = "    red_add_release(sync + SYNC_BAR, 1u);\n"
assert s.count(old) == 1
test = " || ".join(f"kind == {k}" for k in kinds)
new = (f"    {{ /* WHAT-IF (s32): relaxed arrivals after phase kinds {kinds} */\n"
       "      const int q = k % STEP_BARRIERS, kind = q % PHASES_PER_LAYER;\n"
       f"      if (q < NBARRIERS && ({test}))\n"
       '        asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(__cvta_generic_to_global(sync + SYNC_BAR)), "r"(1u) : "memory");\n'
       "      else\n"
       "        red_add_release(sync + SYNC_BAR, 1u);\n"
       "    }\n")
s = s.replace(old, new)
open(p, "w").write(s)
print(f"{tree}: what-if relaxed arrivals after phase kinds {kinds}")
