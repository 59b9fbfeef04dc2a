"""Session 30 (issue 20): the what-if trees of call 6 (diagnostics, never for main): a copy of the sources where a
batch-1 decode step's attention core (ATT) or DeltaNet core (DN) does no math, so that tg128 against main in the same
call bounds what any faster core could give. ATT: the core's unit still takes and releases its ring chunks (the
producer streamed its K/V rows) and writes its output (zeros; a partial of (m, l, acc) = (0, 1, 0)); no q/k norm, no
scoring, no cache write. DN: the core returns at once (obuf keeps the last values). The logits are garbage; the
timing is what counts.
    python whatif.py TREE att|dn|both
"""
import sys

tree, what = sys.argv[1], sys.argv[2]
if what in ("att", "both"):
    p = f"{tree}/megakernel/csrc/gated_attention.cuh"
    s = open(p).read()
    anchor = "    const int d = t & (FA_HD - 1);\n"
    assert s.count(anchor) == 1
    s = s.replace(anchor, anchor + """    {  // WHAT-IF (session 30 call 6): no core math
      const bool last_ = s == ns - 1;
      if (RING && u == (int)blockIdx.x) {
        const int rows = p1 - p0 - (last_ ? 1 : 0), nch = (rows + ATT_RING_ROWS - 1) / ATT_RING_ROWS;
        for (int c0 = 0; c0 < nch; c0 += ATT_ITEM_CHUNKS) {
          const int k = min(ATT_ITEM_CHUNKS, nch - c0);
          for (int c = 0; c < k; ++c) chunk_wait(st, c);
          chunks_done(st, k);
        }
      }
      const int hh = t >> 7, dd = (t & 127) * 2;
      if (ns == 1) {
        attn[(4 * g + hh) * FA_HD + dd] = 0;
        attn[(4 * g + hh) * FA_HD + dd + 1] = 0;
      } else {
        float* pp = partial(a, b, g, s, hh);
        if (dd == 0) { pp[0] = 0.f; pp[1] = 1.f; }
        pp[4 + dd] = 0.f;
        pp[4 + dd + 1] = 0.f;
      }
      sync_warps();
      continue;
    }
""")
    open(p, "w").write(s)
if what in ("dn", "both"):
    p = f"{tree}/megakernel/csrc/delta_rule.cuh"
    s = open(p).read()
    anchor = "  if constexpr (NB == 1) dn_core_one(a, l, step, sm, wv);\n"
    assert s.count(anchor) == 1
    s = s.replace(anchor, "  if constexpr (NB == 1) return;  // WHAT-IF (session 30 call 6): no core math\n" + anchor)
    open(p, "w").write(s)
print(f"{tree}: what-if {what}")
