"""Session 18, call 6: does an error raised inside a C++ op reach Python on the device machine? (call 5:
qwen35_megakernel.prefill_dn_out_norm given a wrong shape ended its process with SIGSEGV instead of a
RuntimeError.) A two-op extension built with load_inline the way megakernel/build.py builds ours:
    python op_error_probe.py torch_op   (TORCH_LIBRARY op, like ours)  |  pybind  (a pybind function)
    python op_error_probe.py megakernel (our op with a wrong shape, as the test does)"""
import sys

import torch

which = sys.argv[1]
if which == "megakernel":
    import megakernel.ops as o

    o.load(torch.device("cuda"))
    bf = dict(dtype=torch.bfloat16, device="cuda")
    call = lambda: o.op("prefill_silu_mul")(torch.zeros(4, 100, **bf), torch.zeros(4, 3584, **bf))  # noqa: E731
else:
    from torch.utils.cpp_extension import load_inline

    src = r"""
#include <torch/extension.h>
void fail_op(const at::Tensor& t) { TORCH_CHECK(t.dim() == 99, "probe: shape ", t.sizes(), "; expected ", c10::IntArrayRef{1, 2, 3}); }
void fail_py(const at::Tensor& t) { TORCH_CHECK(t.dim() == 99, "probe: pybind, shape ", t.sizes()); }
TORCH_LIBRARY(probe_ns, m) { m.def("fail_op(Tensor t) -> ()"); }
TORCH_LIBRARY_IMPL(probe_ns, CUDA, m) { m.impl("fail_op", &fail_op); }
"""
    mod = load_inline("probe_ext", cpp_sources=src, functions=["fail_py"], extra_cflags=["-O3"], verbose=False)
    x = torch.zeros(1, device="cuda")
    call = (lambda: mod.fail_py(x)) if which == "pybind" else (lambda: torch.ops.probe_ns.fail_op(x))
try:
    call()
    print("NO ERROR")
except RuntimeError as e:
    print("RAISED", str(e).splitlines()[0])
