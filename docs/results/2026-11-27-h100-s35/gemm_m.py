"""Session 35 (issue 21): how cuBLAS's time for the prefill's GEMMs depends on the rows M around 520.
Each shape is timed as a CUDA graph of 24 calls on 24 weight copies (as 24 layers: no weight reuse in L2),
median of 7 replays, µs a call. Also 520 rows as 512 + 8: two calls one after the other, and on two streams.
Writes a JSON and a Markdown table to the folder given."""
import json, os, sys
import torch

SHAPES = {"dn in-proj": (1024, 8224), "attn in-proj": (1024, 5120), "gate_up": (1024, 7168),
          "out": (2048, 1024), "down": (3584, 1024)}
LAYERS, REPS = 24, 7


def timed(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay(); torch.cuda.synchronize()
    ts = []
    for _ in range(REPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / LAYERS)
    return sorted(ts)[len(ts) // 2]


def main(out):
    torch.manual_seed(0)
    rows = {}
    for name, (K, N) in SHAPES.items():
        ws = [torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(LAYERS)]
        x = torch.randn(640, K, device="cuda", dtype=torch.bfloat16)
        y = torch.empty(640, N, device="cuda", dtype=torch.bfloat16)
        r = {}
        for M in (504, 512, 520, 528, 544, 576, 640):
            r[f"M={M}"] = timed(lambda: [torch.mm(x[:M], w.t(), out=y[:M]) for w in ws])
        r["512 + 8 in turn"] = timed(lambda: [(torch.mm(x[:512], w.t(), out=y[:512]), torch.mm(x[512:520], w.t(), out=y[512:520])) for w in ws])
        side = torch.cuda.Stream()

        def two_streams():
            for w in ws:
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    torch.mm(x[512:520], w.t(), out=y[512:520])
                torch.mm(x[:512], w.t(), out=y[:512])
                torch.cuda.current_stream().wait_stream(side)
        r["512 + 8 on two streams"] = timed(two_streams)
        # the bits of the 520 rows either way (a GEMM's rows do not depend on the other rows' count in cuBLAS? checked)
        torch.mm(x[:520], ws[0].t(), out=y[:520]); ref = y[:520].clone()
        torch.mm(x[:512], ws[0].t(), out=y[:512]); torch.mm(x[512:520], ws[0].t(), out=y[512:520])
        r["512 + 8 bits equal to 520"] = bool(torch.equal(ref, y[:520]))
        rows[name] = r
        print(name, {k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()}, flush=True)
    os.makedirs(out, exist_ok=True)
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, open(f"{out}/gemm_m.json", "w"), indent=1)
    cols = list(next(iter(rows.values())).keys())
    with open(f"{out}/gemm_m.md", "w") as f:
        f.write(f"cuBLAS (torch.mm) µs a call, graph of {LAYERS} calls on {LAYERS} weight copies, median of {REPS}; {torch.cuda.get_device_name()}\n\n")
        f.write("| GEMM (K, N) | " + " | ".join(cols) + " |\n|" + " --- |" * (len(cols) + 1) + "\n")
        for name, r in rows.items():
            f.write(f"| {name} {SHAPES[name]} | " + " | ".join(f"{r[c]:.2f}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |\n")


if __name__ == "__main__":
    main(sys.argv[1])
