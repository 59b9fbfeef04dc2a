"""A prefill A/B from `compare bench --pp ... --json` runs in the order the call ran them: per row, each run's
median tok/s, the sides' means and the change. Usage: python3 summarize_bench_pp.py CALL_DIR base_name new_name
(the JSON files are bench_pp_<i>_<side>.json)."""
import glob
import json
import re
import statistics
import sys

folder, base, new = sys.argv[1:4]
runs = {}  # (test, side) -> [median tok/s in run order]
order = []
for path in sorted(glob.glob(f"{folder}/bench_pp_*_*.json"), key=lambda p: int(re.search(r"bench_pp_(\d+)_", p)[1])):
    i, side = re.search(r"bench_pp_(\d+)_(\w+)\.json", path).groups()
    order.append(f"{i} {side}")
    for r in json.load(open(path))["results"]:
        runs.setdefault((r["test"], side), []).append(r["tok_s"]["median"])
print(f"runs in order: {', '.join(order)}\n")
print(f"| row | {base} (each run) | {new} (each run) | {base} mean | {new} mean | change |")
print("| --- | --- | --- | ---: | ---: | ---: |")
for test in dict.fromkeys(t for t, _ in runs):
    a, b = runs.get((test, base), []), runs.get((test, new), [])
    if not a or not b:
        continue
    ma, mb = statistics.mean(a), statistics.mean(b)
    print(f"| {test} | {' / '.join(f'{x:,.0f}' for x in a)} | {' / '.join(f'{x:,.0f}' for x in b)} | {ma:,.0f} | {mb:,.0f} | "
          f"{100 * (mb / ma - 1):+.2f}% |")
