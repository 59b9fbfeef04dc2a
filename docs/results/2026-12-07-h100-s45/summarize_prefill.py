"""A call's `compare prefill` runs side by side (session 45): tok/s, each group's µs and each kernel that a group's top
four name, one column a run (OUT_DIR/prefill_<n>_<side>/prefill_bench.json, and warmup_<side>/ where present).
    python summarize_prefill.py CALL_DIR > CALL_DIR/summary_prefill.md
"""
import glob
import json
import re
import sys

d = sys.argv[1]
runs = {}
for f in sorted(glob.glob(f"{d}/prefill_*/prefill_bench.json")) + sorted(glob.glob(f"{d}/warmup_*/prefill_bench.json")):
    r = json.load(open(f))["fast"][0]
    cells = {"tok/s (median)": r["tok_s_median"]}
    for group, v in r["breakdown"].items():
        if isinstance(v, dict):
            cells[f"[{group}]"] = v["us"]
            for name, us in v.get("top", []):
                cells[re.sub(r"mkp::\(anonymous namespace\)::", "", name).split("(")[0][:48]] = us
    runs[f.split("/")[-2]] = cells
names = list(runs)
print(f"# `compare prefill --pp 520` runs of {d.rstrip('/').split('/')[-1]}, in call order (µs over the prompt's kernels; "
      "a kernel appears where its group's top four name it)\n")
print("| | " + " | ".join(names) + " |")
print("| --- |" + " ---: |" * len(names))
for key in ["tok/s (median)"] + sorted({k for c in runs.values() for k in c} - {"tok/s (median)"}):
    print(f"| {key} | " + " | ".join(f"{runs[n][key]:,.1f}" if key in runs[n] else "" for n in names) + " |")
