"""Session 50 (CPU, no GPU): the megakernel tier's prefill call path on the host, with the CUDA parts mocked (CPU tensors, an ext whose
launch_prefill_graph returns at once): the Python a pp520 call runs before and around the graph's launch.
    PYTHONPATH=<tree> python host_path_cpu.py [CALLS]   (output: host_path_cpu.txt, this machine: 2 cores, Python 3.11)
"""
import cProfile, pstats, statistics, sys, time, types
import torch
from reference import ModelConfig
from megakernel.tier import MegakernelTier, MegakernelState
from megakernel.prefill import FastPrefill, PrefillPlan

cfg = ModelConfig.qwen3_5_0_8b()
T = 520
tier = MegakernelTier.__new__(MegakernelTier)
tier.config, tier.device, tier.debug_poison = cfg, torch.device("cpu"), False
calls = []
tier.ext = types.SimpleNamespace(launch_prefill_graph=lambda *a: calls.append(1) or [])
fp = FastPrefill.__new__(FastPrefill)
fp.tier, fp.use_graph, fp.delta_rule = tier, True, "flash-qla"
import collections
fp.plans = collections.OrderedDict()
# folded weights: the real count of source tensors
n_src = sum(1 + (kind != "linear_attention") for kind in cfg.layer_types) * 2
fp._fold_sources = [torch.zeros(4) for _ in range(n_src)]
fp._folded = [{}]
fp._fold_versions = [t._version for t in fp._fold_sources]
tier.fast_prefill = fp
plan = PrefillPlan.__new__(PrefillPlan)
plan.tier, plan.T, plan.max_seq, plan.fresh, plan.pieces, plan.piece = tier, T, T, True, 1, T
plan.words, plan.launch_range = torch.zeros(8, dtype=torch.int64), torch.zeros(3, dtype=torch.int64)
plan.graph, plan.graph_exec, plan.launches, plan.uses, plan.folded = object(), 1, 0, 5, [{}]
plan.logits = torch.zeros(cfg.vocab_size)
plan.valid = T
fp.plans[(T, T, True, "flash-qla")] = plan
ids = torch.randint(0, cfg.vocab_size, (1, T))
ids_dev = ids.clone()  # (the device ids' path: the interface leaves the range to the plan)

def state():
    z = torch.zeros(1)
    return MegakernelState(tier="megakernel", config=cfg, batch_size=1, max_seq_len=T, dn_state=z, conv_ring=z,
                           k_cache=z, v_cache=z, rope=z, fault=None)

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
states = [state() for _ in range(N)]
ts = []
for s in states:
    t0 = time.perf_counter()
    tier.prefill(ids, s)
    ts.append(time.perf_counter() - t0)
print(f"tier.prefill, the graph's path, CUDA mocked: median {statistics.median(ts) * 1e6:.2f} µs (min {min(ts) * 1e6:.2f})")
states = [state() for _ in range(N)]
pr = cProfile.Profile()
pr.enable()
for s in states:
    tier.prefill(ids, s)
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(25)
