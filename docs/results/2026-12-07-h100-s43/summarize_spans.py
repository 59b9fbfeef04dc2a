"""summary.md from a results folder's call_span.py runs (callN/span_N_SIDE): one line a run, then the means by tree
(medians of 60 calls each; µs). Usage: python3 summarize_spans.py [FOLDER] (default: this script's folder, session 43's)."""
import glob
import json
import os
import re
import statistics
import sys

HERE = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
SESSION = re.search(r"-s(\d+)$", os.path.abspath(HERE).rstrip("/"))[1]
CALLS = sorted({int(re.search(r"call(\d+)", p)[1]) for p in glob.glob(f"{HERE}/call*/span_*_*/call_span.json")})
runs = []
for path in glob.glob(f"{HERE}/call*/span_*_*/call_span.json"):
    call, name = path.split("/")[-3:-1]
    n, side = re.match(r"span_(\d+)_(\w+)", name).groups()
    runs.append((int(n), call, side, json.load(open(path))["rows"]))
runs.sort()
keys = ["span_us", "prelude_us", "graph_us", "wall_us"]
out = [f"# Session {SESSION}: a pp520 call's whole time by tree (`call_span.py`, H100, call(s) {', '.join(map(str, CALLS))})", "",
       "Each line one run in its call's order: 60 calls into new states, median (min) µs. span: an event before the call to",
       "one after it; prelude: that first event to one recorded just before the graph's launch call (torch's replay in",
       "trees before s43-graph-launch, launch_prefill_graph in the others); graph: from there to the end; wall: the host's clock.", ""]
for where in ("gpu ids", "cpu ids"):
    out += [f"## {where}", "", "| run | call | tree | span | prelude | graph | wall |", "| ---: | --- | --- | ---: | ---: | ---: | ---: |"]
    for n, call, side, rows in runs:
        r = rows[where]
        out.append(f"| {n} | {call} | {side} | " + " | ".join(f"{r[k][0]:.1f} ({r[k][1]:.1f})" for k in keys) + " |")
    out += ["", "| tree | runs | span | prelude | graph | wall |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for side in dict.fromkeys(s for _, _, s, _ in runs):
        rs = [rows[where] for _, _, s, rows in runs if s == side]
        out.append(f"| {side} | {len(rs)} | " + " | ".join(f"{statistics.mean(r[k][0] for r in rs):.1f}" for k in keys) + " |")
    out.append("")
open(f"{HERE}/summary.md", "w").write("\n".join(out))
print("\n".join(out))
