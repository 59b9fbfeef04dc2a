"""Session 28 (issue 21): FlashQLA's fused forward kernel with its value-column block (block_DV) forced to 16, 32, 64
at 256 / 520 / 1,024 rows, one layer at the 0.8B's shapes. FlashQLA 0.1.3 picks block_DV from the grid (16 value heads
x 1 sequence: 32, i.e. 64 blocks of 512 threads at any length below its split); its per-chunk chain is ~3 µs (27 µs a
layer at 520 rows, NOTES "Prefill" v14). Narrower blocks: more blocks (128 at 16), the same per-chunk work on K and
A (the DV-independent part), half of the rest. µs from a CUDA graph of 20 calls (compare.timing.graph_us); the output
against block_DV = 32's and against the fp32 chunked rule."""
import inspect

import torch

from compare.delta_rule import inputs, reference, relative_error
from compare.timing import graph_us
from megakernel import prefill_delta_rule as pdr
from reference import ModelConfig
import flash_qla.ops.gated_delta_rule.chunk.hopper.fused_fwd as ff
from flash_qla.ops.gated_delta_rule.chunk import CHUNK_SIZE, kkt_solve
from flash_qla.utils.index import prepare_varlen_metadata

src = inspect.getsource(ff.fused_gdr_fwd)
head, rest = src.split("    grid_size = real_batch_size * H\n", 1)
pick, tail = rest.split("    tilelang_fused_chunk_gdr_fwd_kernel = ", 1)
src = head.replace("def fused_gdr_fwd(", "def fused_gdr_fwd_bdv(block_DV, ") + "    tilelang_fused_chunk_gdr_fwd_kernel = " + tail
ns = dict(ff.__dict__)
exec(src, ns)
fwd = ns["fused_gdr_fwd_bdv"]

config, dev = ModelConfig.qwen3_5_0_8b(), torch.device("cuda")
HV, scale = config.linear_num_value_heads, config.linear_key_head_dim ** -0.5
for T in (256, 520, 1024):
    q, k, v, g, beta, h0 = inputs(config, T, "carried", "model", T, dev)
    o_ref, s_ref = reference(q, k, v, g, beta, h0, scale)
    gc = pdr.chunk_cumsum(g, CHUNK_SIZE)
    cu = torch.tensor([0, T], dtype=torch.int32, device=dev)
    prepare_varlen_metadata(cu, cu.cpu())
    A = kkt_solve(k=k, b=beta, cu_seqlens=cu, chunk_size=CHUNK_SIZE)
    base = None
    for bdv in (32, 16, 64, 128):
        try:
            def call():
                return fwd(bdv, q=q, k=k, v=v, a=A, g=gc, b=beta, scale=scale, initial_state=h0, output_final_state=True,
                           output_h=False, output_o=True, cu_seqlens=cu, state_v_first=True)
            o, _, final = call()
            torch.cuda.synchronize()
            us, how = graph_us(call, 20, 7)
            base = base or us
            print(f"T={T} block_DV={bdv:3d} ({HV * 128 // bdv} blocks): {us:6.1f} µs ({how}) x{base / us:.2f}; error o "
                  f"{relative_error(o, o_ref):.2e} state {relative_error(final, s_ref):.2e}", flush=True)
        except Exception as e:
            print(f"T={T} block_DV={bdv}: failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
    us, how = graph_us(lambda: kkt_solve(k=k, b=beta, cu_seqlens=cu, chunk_size=CHUNK_SIZE), 20, 7)
    print(f"T={T} kkt_solve: {us:.1f} µs ({how})", flush=True)
