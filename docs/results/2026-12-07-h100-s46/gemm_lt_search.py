"""cuBLASLt's algorithms for the prefill's GEMM shapes, each timed: the heuristic's list (up to 64) and an
enumeration (every algorithm id x tile x stages x split-K {1, 2, 3, 4} the library accepts for the shape),
against torch's own call (torch.mm, or addmm_ with beta = 1 for the out-projections and downs) in the same
harness: a CUDA graph of R calls over R copies of the weights (none in L2; the activations are in L2, as in
the prefill), median over replays, µs a call.

  python3 gemm_lt_search.py --rows 520 --json out.json [--budget 40]

cuBLASLt is reached through ctypes in the library torch loaded (no headers needed); its enum values are
cublasLt.h's (12.x / 13.x). An experiment beside the results, not tier code."""
import argparse
import ctypes as C
import glob
import json
import os
import statistics
import sys
import time

import torch

R = 24  # calls a graph, each on its own weight copy
_MM = torch.mm  # (torch's own, also where a caller routes torch.mm elsewhere: lt_prefill_ab.py)
COMPUTE_32F, R_32F, R_16BF = 68, 0, 14
DESC_TRANSA, DESC_TRANSB = 3, 4
PREF_MAX_WORKSPACE = 1
CFG_ID, CFG_TILE, CFG_SPLITK, CFG_RED, CFG_SWIZ, CFG_CUSTOM, CFG_STAGES, CFG_INNER, CFG_CLUSTER = range(9)
CAP_SPLITK, CAP_RED_MASK, CAP_SWIZ, CAP_TILES, CAP_CUSTOM_MAX, CAP_STAGES = 0, 1, 2, 6, 7, 13
WORKSPACE = 64 << 20


class Algo(C.Structure):
    _fields_ = [("data", C.c_uint64 * 8)]


class Heur(C.Structure):
    _fields_ = [("algo", Algo), ("workspaceSize", C.c_size_t), ("state", C.c_int), ("wavesCount", C.c_float),
                ("reserved", C.c_int * 4)]


def load_lt():
    a = torch.ones(64, 64, device="cuda", dtype=torch.bfloat16)
    torch.nn.functional.linear(a, a, a[0])  # (addmm with a bias: cuBLASLt)
    torch.cuda.synchronize()
    paths = sorted({ln.split()[-1] for ln in open("/proc/self/maps") if "libcublasLt" in ln})
    if not paths:
        import nvidia  # the pip wheels' folder
        paths = sorted(glob.glob(os.path.join(os.path.dirname(nvidia.__path__[0] + "/"), "**", "libcublasLt.so*"),
                                 recursive=True))
    if not paths:
        sys.exit("libcublasLt not found in this process or the nvidia wheels")
    lib = C.CDLL(paths[0])
    lib.cublasLtGetVersion.restype = C.c_size_t
    return lib, paths[0]


def ok(status, what):
    if status != 0:
        raise RuntimeError(f"{what}: cublasStatus {status}")


class Shape:
    """Y[M, N] (+)= X[M, K] W[N, K]^T in cuBLASLt's column-major terms: D (N x M) = op(W) (N x K) . X^T (K x M)."""

    def __init__(self, lt, handle, name, M, N, K, beta):
        self.lt, self.h, self.name, self.M, self.N, self.K, self.beta = lt, handle, name, M, N, K, beta
        g = torch.Generator(device="cuda").manual_seed(0)
        self.x = (torch.randn(M, K, device="cuda", generator=g) * 0.5).bfloat16()
        self.w = [(torch.randn(N, K, device="cuda", generator=g) * 0.03).bfloat16() for _ in range(R)]
        self.y = (torch.randn(M, N, device="cuda", generator=g)).bfloat16()
        self.ws = torch.empty(WORKSPACE, dtype=torch.uint8, device="cuda")
        self.desc = C.c_void_p()
        ok(lt.cublasLtMatmulDescCreate(C.byref(self.desc), COMPUTE_32F, R_32F), "desc")
        for attr, val in ((DESC_TRANSA, 1), (DESC_TRANSB, 0)):
            v = C.c_int32(val)
            ok(lt.cublasLtMatmulDescSetAttribute(self.desc, attr, C.byref(v), C.c_size_t(4)), "desc attr")
        self.a, self.b, self.c = C.c_void_p(), C.c_void_p(), C.c_void_p()
        ok(lt.cublasLtMatrixLayoutCreate(C.byref(self.a), R_16BF, C.c_uint64(K), C.c_uint64(N), C.c_int64(K)), "A")
        ok(lt.cublasLtMatrixLayoutCreate(C.byref(self.b), R_16BF, C.c_uint64(K), C.c_uint64(M), C.c_int64(K)), "B")
        ok(lt.cublasLtMatrixLayoutCreate(C.byref(self.c), R_16BF, C.c_uint64(N), C.c_uint64(M), C.c_int64(N)), "C")
        self.alpha, self.beta_c = C.c_float(1.0), C.c_float(float(beta))

    def heuristic(self, n=64):
        pref = C.c_void_p()
        ok(self.lt.cublasLtMatmulPreferenceCreate(C.byref(pref)), "pref")
        ws = C.c_uint64(WORKSPACE)
        ok(self.lt.cublasLtMatmulPreferenceSetAttribute(pref, PREF_MAX_WORKSPACE, C.byref(ws), C.c_size_t(8)), "pref ws")
        res, cnt = (Heur * n)(), C.c_int(0)
        ok(self.lt.cublasLtMatmulAlgoGetHeuristic(self.h, self.desc, self.a, self.b, self.c, self.c, pref, n, res,
                                                  C.byref(cnt)), "heuristic")
        return [Algo.from_buffer_copy(res[i].algo) for i in range(cnt.value) if res[i].state == 0]

    def check(self, algo):
        r = Heur()
        s = self.lt.cublasLtMatmulAlgoCheck(self.h, self.desc, self.a, self.b, self.c, self.c, C.byref(algo),
                                            C.byref(r))
        return s == 0 and r.workspaceSize <= WORKSPACE

    def call(self, algo, w, y=None):
        y = self.y if y is None else y
        s = self.lt.cublasLtMatmul(self.h, self.desc, C.byref(self.alpha), C.c_void_p(w.data_ptr()), self.a,
                                   C.c_void_p(self.x.data_ptr()), self.b, C.byref(self.beta_c),
                                   C.c_void_p(y.data_ptr()), self.c, C.c_void_p(y.data_ptr()), self.c, C.byref(algo),
                                   C.c_void_p(self.ws.data_ptr()), C.c_size_t(WORKSPACE),
                                   C.c_void_p(torch.cuda.current_stream().cuda_stream))
        if s != 0:
            raise RuntimeError(f"cublasLtMatmul: status {s}")

    def torch_call(self, w, y=None):
        y = self.y if y is None else y
        if self.beta:
            y.addmm_(self.x, w.t())
        else:
            _MM(self.x, w.t(), out=y)

    def time(self, one, replays=7):
        """µs a call: the median of `replays` replays of a graph of R calls (one(w) each)."""
        one(self.w[0])  # (any lazy setup outside the capture)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for w in self.w:
                one(w)
        g.replay()
        torch.cuda.synchronize()
        ts = []
        for _ in range(replays):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            g.replay()
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1) * 1e3 / R)
        del g
        return statistics.median(ts)

    def error(self, one):
        """The largest |difference| against the fp32 product (+ beta y), over that product's largest |value|."""
        y0 = self.y.clone()
        ref = self.x.float() @ self.w[0].float().t() + (y0.float() if self.beta else 0)
        y = y0.clone()
        one(self.w[0], y)
        torch.cuda.synchronize()
        return ((y.float() - ref).abs().max() / ref.abs().max()).item()


def config(lt, algo):
    out = {}
    for name, attr, ct in (("id", CFG_ID, C.c_int32), ("tile", CFG_TILE, C.c_uint32), ("splitk", CFG_SPLITK, C.c_uint32),
                           ("red", CFG_RED, C.c_uint32), ("swizzle", CFG_SWIZ, C.c_uint32),
                           ("custom", CFG_CUSTOM, C.c_uint32), ("stages", CFG_STAGES, C.c_uint32),
                           ("inner", CFG_INNER, C.c_uint16), ("cluster", CFG_CLUSTER, C.c_uint16)):
        v, w = ct(0), C.c_size_t(0)
        if lt.cublasLtMatmulAlgoConfigGetAttribute(C.byref(algo), attr, C.byref(v), C.c_size_t(C.sizeof(v)), C.byref(w)) == 0:
            out[name] = int(v.value)
    return out


def cap_list(lt, algo, attr):
    w = C.c_size_t(0)
    if lt.cublasLtMatmulAlgoCapGetAttribute(C.byref(algo), attr, None, C.c_size_t(0), C.byref(w)) != 0 or w.value == 0:
        return [0]
    buf = (C.c_uint32 * (w.value // 4))()
    lt.cublasLtMatmulAlgoCapGetAttribute(C.byref(algo), attr, buf, C.c_size_t(w.value), C.byref(w))
    return list(buf)


def cap_int(lt, algo, attr):
    v, w = C.c_int32(0), C.c_size_t(0)
    lt.cublasLtMatmulAlgoCapGetAttribute(C.byref(algo), attr, C.byref(v), C.c_size_t(4), C.byref(w))
    return v.value


def enumerate_algos(lt, handle, shape, budget_s):
    """Every (id, tile, stages, split-K, no custom option, no swizzle) that AlgoCheck accepts for the shape."""
    ids, n = (C.c_int * 256)(), C.c_int(0)
    ok(lt.cublasLtMatmulAlgoGetIds(handle, COMPUTE_32F, R_32F, R_16BF, R_16BF, R_16BF, R_16BF, 256, ids, C.byref(n)),
       "ids")
    t0, found = time.time(), []
    for i in range(n.value):
        base = Algo()
        if lt.cublasLtMatmulAlgoInit(handle, COMPUTE_32F, R_32F, R_16BF, R_16BF, R_16BF, R_16BF, ids[i],
                                     C.byref(base)) != 0:
            continue
        splits = [1, 2, 3, 4] if cap_int(lt, base, CAP_SPLITK) else [1]
        for tile in cap_list(lt, base, CAP_TILES):
            for stages in cap_list(lt, base, CAP_STAGES):
                for sk in splits:
                    if time.time() - t0 > budget_s:
                        return found, n.value
                    a = Algo.from_buffer_copy(base)
                    for attr, val in ((CFG_TILE, tile), (CFG_STAGES, stages), (CFG_SPLITK, sk)):
                        v = C.c_uint32(val)
                        lt.cublasLtMatmulAlgoConfigSetAttribute(C.byref(a), attr, C.byref(v), C.c_size_t(4))
                    if sk > 1:  # (the reduction in the compute type, out of place: what split-K needs here)
                        v = C.c_uint32(2)
                        lt.cublasLtMatmulAlgoConfigSetAttribute(C.byref(a), CFG_RED, C.byref(v), C.c_size_t(4))
                    if shape.check(a):
                        found.append(a)
    return found, n.value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="520")
    ap.add_argument("--json", required=True)
    ap.add_argument("--budget", type=float, default=40.0, help="seconds of enumeration + timing a shape")
    ap.add_argument("--shapes", default="out,down,gate_up,dn_in,attn_in")
    args = ap.parse_args()
    lt, path = load_lt()
    handle = C.c_void_p()
    ok(lt.cublasLtCreate(C.byref(handle)), "create")
    dims = {"out": (1024, 2048, 1), "down": (1024, 3584, 1), "gate_up": (7168, 1024, 0), "dn_in": (8224, 1024, 0),
            "attn_in": (5120, 1024, 0)}
    doc = {"lib": path, "version": lt.cublasLtGetVersion(), "device": torch.cuda.get_device_name(), "R": R,
           "shapes": []}
    print(f"{path} version {doc['version']} on {doc['device']}", flush=True)
    for M in map(int, args.rows.split(",")):
        for name in args.shapes.split(","):
            N, K, beta = dims[name]
            s = Shape(lt, handle, name, M, N, K, beta)
            t_start = time.time()
            base = [s.time(s.torch_call)]
            heur = s.heuristic()
            rows = []
            for rank, a in enumerate(heur):
                try:
                    rows.append({"from": f"heuristic {rank}", "us": s.time(lambda w, a=a: s.call(a, w)),
                                 "cfg": config(lt, a), "algo": list(a.data)})
                except RuntimeError as e:
                    rows.append({"from": f"heuristic {rank}", "error": str(e), "cfg": config(lt, a)})
            enum, n_ids = enumerate_algos(lt, handle, s, args.budget / 4)
            screened = 0
            for a in enum:
                if time.time() - t_start > args.budget:
                    break
                try:
                    rows.append({"from": "enumerated", "us": s.time(lambda w, a=a: s.call(a, w), replays=3),
                                 "cfg": config(lt, a), "algo": list(a.data)})
                    screened += 1
                except RuntimeError as e:
                    pass
            timed = sorted((r for r in rows if "us" in r), key=lambda r: r["us"])
            for r in timed[:6]:  # (the best again, with more replays, and their error)
                a = Algo((C.c_uint64 * 8)(*r["algo"]))
                r["us"] = s.time(lambda w, a=a: s.call(a, w))
                r["err"] = s.error(lambda w, y, a=a: s.call(a, w, y))
            base.append(s.time(s.torch_call))
            timed = sorted((r for r in rows if "us" in r), key=lambda r: r["us"])
            entry = {"name": name, "M": M, "N": N, "K": K, "beta": beta, "torch_us": base,
                     "torch_err": s.error(lambda w, y: s.torch_call(w, y)), "heuristic_n": len(heur),
                     "enumerated_ids": n_ids, "enumerated_valid": len(enum), "enumerated_timed": screened,
                     "best": timed[:6], "heuristic": [r for r in rows if r["from"].startswith("heuristic")]}
            doc["shapes"].append(entry)
            b = timed[0] if timed else None
            tb = statistics.mean(base)
            print(f"M={M} {name:8s} N={N} K={K} beta={beta}: torch {base[0]:.2f}/{base[1]:.2f} µs; heuristic {len(heur)}, "
                  f"enumerated {len(enum)} valid ({screened} timed) in {time.time() - t_start:.0f}s; best "
                  + (f"{b['us']:.2f} µs ({b['from']}, {b['cfg']}, err {b.get('err', 0):.1e}) = {tb / b['us']:.3f}x"
                     if b else "none"), flush=True)
            for r in timed[1:4]:
                print(f"      {r['us']:.2f} µs {r['from']} {r['cfg']}", flush=True)
            with open(args.json, "w") as f:
                json.dump(doc, f, indent=1)
            del s
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
