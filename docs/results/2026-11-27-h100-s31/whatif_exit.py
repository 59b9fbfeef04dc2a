"""Session 31 (issue 20): a what-if tree for the grid barrier's exit (a diagnostic, never for main): a copy of the
sources whose arrival is `red.relaxed` instead of `red.release`, so a block's arrival no longer waits for its own
earlier writes to be performed before it counts. Readers may then see an older value of what a block wrote this phase:
the logits are not to be trusted; the timing bounds what any exit without the release's fence (flags carried in the
data, NCCL's LL protocol) could give.
    python whatif_exit.py TREE
"""
import sys

tree = sys.argv[1]
p = f"{tree}/megakernel/csrc/grid_sync.cuh"
s = open(p).read()
old = 'asm volatile("red.release.gpu.global.add.u32 [%0], %1;"'
assert s.count(old) == 1
s = s.replace(old, 'asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;"  /* WHAT-IF (s31): no release */')
open(p, "w").write(s)
print(f"{tree}: what-if relaxed arrival")
