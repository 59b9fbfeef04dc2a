"""Session 52 (CPU, no GPU): the host's time in a pp520 graph-path prefill call (megakernel tier) before the graph's
launch, and the whole call, with the CUDA parts mocked (CPU tensors; the extension's launch_prefill_graph only notes
the clock). The fold sources are laid out as the tree's tier lays them out: 60 tensors of their own, or (trees with
megakernel.tier.ARENA_ALIGN) 60 views of one buffer. Run in each tree:
    PYTHONPATH=<tree> python host_prelude_cpu.py OUT_JSON TAG [CALLS]
"""
import collections
import json
import statistics
import sys
import time
import types

import torch

import megakernel.tier as mt
from megakernel.prefill import FastPrefill, PrefillPlan
from megakernel.tier import MegakernelState, MegakernelTier
from reference import ModelConfig


def main(out_json, tag, calls=20000):
    cfg = ModelConfig.qwen3_5_0_8b()
    T = 520
    tier = MegakernelTier.__new__(MegakernelTier)
    tier.config, tier.device, tier.debug_poison = cfg, torch.device("cpu"), False
    marks = []
    tier.ext = types.SimpleNamespace(launch_prefill_graph=lambda *a: marks.append(time.perf_counter()) or [])
    arena = torch.zeros(4 * 4 * cfg.num_layers) if hasattr(mt, "ARENA_ALIGN") else None
    used = 0

    def weight():
        nonlocal used
        if arena is None:
            return torch.zeros(4)
        used += 4
        return arena[used - 4:used]
    tier.prefill_weights = [{"gate_up": weight(), "post_norm": weight(), "win": weight(), "in_norm": weight()}
                            for _ in cfg.layer_types]
    fp = FastPrefill.__new__(FastPrefill)
    fp.tier, fp.use_graph, fp.delta_rule, fp.plans = tier, True, "flash-qla", collections.OrderedDict()
    fp._folded, fp._fold_sources, fp._fold_versions = None, [], []
    tier.fast_prefill = fp
    plan = PrefillPlan.__new__(PrefillPlan)
    plan.tier, plan.T, plan.max_seq, plan.fresh, plan.pieces, plan.piece = tier, T, T, True, 1, T
    plan.words, plan.launch_range = torch.zeros(8, dtype=torch.int64), torch.zeros(3, dtype=torch.int64)
    plan.graph, plan.graph_exec, plan.launches, plan.uses, plan.folded = object(), 1, 0, 5, [{}]
    plan.logits, plan.valid = torch.zeros(cfg.vocab_size), T
    fp.plans[(T, T, True, "flash-qla")] = plan
    ids = torch.randint(0, cfg.vocab_size, (1, T))  # (device ids' path: the plan's launch checks their range)

    def state():
        z = torch.zeros(1)
        return MegakernelState(tier="megakernel", config=cfg, batch_size=1, max_seq_len=T, dn_state=z, conv_ring=z,
                               k_cache=z, v_cache=z, rope=z, fault=None)
    tier.prefill(ids, state())  # (the fold made once)
    rows = []
    for _ in range(3):
        states = [state() for _ in range(calls)]
        pre, whole = [], []
        for s in states:
            t0 = time.perf_counter()
            tier.prefill(ids, s)
            t1 = time.perf_counter()
            pre.append(marks[-1] - t0)
            whole.append(t1 - t0)
        rows.append({"pre_launch_us": statistics.median(pre) * 1e6, "call_us": statistics.median(whole) * 1e6})
        print(f"{tag}: before the launch {rows[-1]['pre_launch_us']:.2f} µs, the whole call {rows[-1]['call_us']:.2f} "
              f"(medians of {calls}); fold sources checked: {len(fp._fold_sources)}")
    json.dump({"tag": tag, "calls": calls, "fold_sources": len(fp._fold_sources), "runs": rows,
               "torch": torch.__version__, "python": sys.version.split()[0]}, open(out_json, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:]))
