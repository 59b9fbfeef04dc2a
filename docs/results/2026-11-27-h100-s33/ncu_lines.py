"""Summarize ncu's `--page source --csv --print-source cuda,sass` export (session 33): warp-state samples by source
file and by source line, each with its top stall reasons. Usage: python ncu_lines.py source.csv.gz [top_lines]"""
import csv
import gzip
import sys
from collections import Counter, defaultdict

path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40
by_file, by_line, reasons_of = Counter(), Counter(), defaultdict(Counter)
text_of, file_reasons = {}, defaultdict(Counter)
rows = csv.reader(gzip.open(path, "rt") if path.endswith(".gz") else open(path))
fname, header = None, None
for row in rows:
    if not row:
        continue
    if row[0] == "File Path":
        fname, header = row[1].split("/")[-1], None
        continue
    if row[0] == "Function Name":
        continue
    if row[0] == "Line No":
        header = row
        stall_cols = [(i, h) for i, h in enumerate(header) if h.startswith("stall_") and "Not Issued" not in h]
        continue
    if header is None or not row[0]:  # SASS rows (no line number): their samples are in the source row above
        continue
    n = int(row[4]) if row[4].isdigit() else 0
    if n == 0:
        continue
    key = (fname, int(row[0]))
    by_file[fname] += n
    by_line[key] += n
    text_of[key] = row[1].strip()[:90]
    for i, h in stall_cols:
        v = int(row[i]) if row[i].isdigit() else 0
        if v:
            reasons_of[key][h[6:]] += v
            file_reasons[fname][h[6:]] += v
total = sum(by_file.values())
print(f"{total} samples")
for f, n in by_file.most_common():
    rs = ", ".join(f"{r} {100 * v / n:.0f}%" for r, v in file_reasons[f].most_common(3))
    print(f"  {100 * n / total:5.1f}%  {f:28s} {rs}")
print()
for key, n in by_line.most_common(top):
    rs = ", ".join(f"{r} {100 * v / n:.0f}%" for r, v in reasons_of[key].most_common(2))
    print(f"  {100 * n / total:5.1f}%  {key[0]}:{key[1]:<5d} {text_of[key]:90s} [{rs}]")
