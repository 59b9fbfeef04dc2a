"""summary_prefill.md from calls 3-4's `compare prefill` outputs (run from the repository root:
python docs/results/2026-12-06-h100-s40/summarize_prefill.py > docs/results/2026-12-06-h100-s40/summary_prefill.md)."""
import glob
import os
import re
import statistics as st

D = "docs/results/2026-12-06-h100-s40"
rows = []
for call, pat in (("call3", "prefill_*_*.txt"), ("call4", "prefill4k_*_*.txt")):
    for f in sorted(glob.glob(f"{D}/{call}/{pat}")):
        side = os.path.basename(f).rsplit("_", 1)[1][:-4]
        run = os.path.basename(f).split("_")[1]
        for line in open(f):
            m = re.match(r"^(pp\d+): ([\d,]+) tok/s \(([\d.]+) ms.*?ours \(prefill.cu\) (\d+) µs/(\d+), GEMM \(cuBLAS\) (\d+) "
                         r"µs/\d+, delta rule (\d+) µs/\d+, attention \(SDPA\) (\d+) µs/\d+.*?not in kernels (\d+) µs", line)
            if m:
                pp, tok, ms, ours, n_ours, gemm, dr, att, outside = m.groups()
                other = re.search(r"other (\d+) µs", line)
                kern = int(ours) + int(gemm) + int(dr) + int(att) + (int(other.group(1)) if other else 0)
                rows.append((pp, call, int(run), side, int(tok.replace(",", "")), float(ms), int(ours), int(n_ours), int(gemm),
                             int(dr), kern, int(outside)))
print("# Session 40: the prefill's folded norms (fold) against main (new), `compare prefill` (H100, calls 3-4)\n")
print("Each line one `compare prefill` run (5 repetitions, median; its kernels from one profiled graph replay); written by")
print("`summarize_prefill.py` from the runs' `.txt` files. Call 3's first run (new) ran past its 100 s limit compiling")
print("FlashQLA's 4,096-row kernels: no pp4096 line.\n")
print("| prompt | call | run | tree | tok/s | ms | ours µs (launches) | GEMM µs | delta rule µs | kernels µs | not in kernels µs |")
print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in sorted(rows, key=lambda r: (r[0] != "pp520", r[1], r[2])):
    pp, call, run, side, tok, ms, ours, n, gemm, dr, kern, out = r
    print(f"| {pp} | {call} | {run} | {side} | {tok:,} | {ms:.3f} | {ours} ({n}) | {gemm:,} | {dr:,} | {kern:,} | {out} |")
print("\nMeans by tree:\n")
print("| prompt | tree | runs | tok/s | kernels µs | ours µs | not in kernels µs |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for pp in ("pp520", "pp4096"):
    means = {}
    for side in ("new", "fold"):
        sel = [r for r in rows if r[0] == pp and r[3] == side]
        means[side] = st.mean(r[4] for r in sel)
        print(f"| {pp} | {side} | {len(sel)} | {means[side]:,.0f} | {st.mean(r[10] for r in sel):,.1f} | "
              f"{st.mean(r[6] for r in sel):,.1f} | {st.mean(r[11] for r in sel):,.0f} |")
    print(f"| {pp} | fold / new | | {100 * (means['fold'] / means['new'] - 1):+.2f}% | | | |")
