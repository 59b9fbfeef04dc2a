"""The external oracle: transformers' `Qwen3_5ForCausalLM` with the same weights,
behind the tier interface.

transformers binds fla's kernels at import time when fla is installed; this tier swaps
the pure-torch functions back in for the duration of each call (`use_fla=False`, the
default), so on any machine it runs the torch path that the spec was checked against.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass

import torch

from reference import Tier, TierState, record, without_tied_head

# functions transformers may have replaced by fla / causal_conv1d kernels
_KERNELIZED = ("torch_chunk_gated_delta_rule", "torch_recurrent_gated_delta_rule",
               "causal_conv1d_fn", "causal_conv1d_update")


@dataclass(eq=False)
class HFState(TierState):
    cache: object = None


@contextlib.contextmanager
def torch_path(module):
    saved = {n: getattr(module, n) for n in _KERNELIZED}
    try:
        for n, f in saved.items():
            setattr(module, n, getattr(f, "__wrapped__", f))
        yield
    finally:
        for n, f in saved.items():
            setattr(module, n, f)


class HFTier(Tier):
    name = "hf"
    state_class = HFState
    slow = True  # transformers' eager decode: `compare bench` caps its repeats and steps
    part_timing = "module hooks"

    @classmethod
    def unavailable_reason(cls, device):
        try:
            import transformers.models.qwen3_5.modeling_qwen3_5  # noqa: F401
        except ImportError as e:
            return f"transformers with Qwen3.5 support is not installed ({e})"
        return None

    def __init__(self, config, weights, device="cpu", dtype=torch.bfloat16, use_fla=False, attn_implementation="sdpa"):
        super().__init__(config, weights, device, dtype)
        from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
        from transformers.models.qwen3_5 import modeling_qwen3_5

        self._module = modeling_qwen3_5
        self.use_fla = use_fla
        hf_config = Qwen3_5TextConfig(**config.to_hf_dict())
        hf_config._attn_implementation = attn_implementation
        with torch.device("meta"):
            model = Qwen3_5ForCausalLM(hf_config)
        state = {k: v.to(dtype) for k, v in without_tied_head(config, weights).items()}
        if config.tie_word_embeddings:
            state["lm_head.weight"] = state["model.embed_tokens.weight"]
        model.load_state_dict(state, strict=True, assign=True)
        model.tie_weights()
        # the rotary buffers were made on meta: rebuild them, in fp32 as from_pretrained keeps them
        rotary = model.model.rotary_emb
        inv_freq, _ = rotary.compute_default_rope_parameters(hf_config)
        rotary.inv_freq, rotary.original_inv_freq = inv_freq, inv_freq.clone()
        self.model = model.to(device=self.device, dtype=dtype).eval()
        rotary.inv_freq = inv_freq.to(self.device)
        rotary.original_inv_freq = inv_freq.to(self.device)

    def _new_state(self, batch_size, max_seq_len):
        return HFState(tier=self.name, config=self.config, batch_size=batch_size, max_seq_len=max_seq_len)

    def _run(self, ids, state, trace, marks=None):
        hooks = []
        if marks is not None:  # decode_timed: a mark as each part's module ends
            inner = self.model.model
            modules = [("embed", inner.embed_tokens)] + [(f"layers.{i}", layer) for i, layer in enumerate(inner.layers)]
            modules += [("norm", inner.norm), ("lm_head", self.model.lm_head)]
            hooks.append(inner.embed_tokens.register_forward_pre_hook(lambda *_: marks.mark("start")))
            for name, module in modules:
                hooks.append(module.register_forward_hook(lambda *_, name=name: marks.mark(name)))
        if trace is not None:
            inner = self.model.model

            def save(name):
                def hook(_module, _inputs, output):
                    record(trace, name, output[0] if isinstance(output, tuple) else output)
                return hook

            hooks.append(inner.embed_tokens.register_forward_hook(save("embed")))
            for i, layer in enumerate(inner.layers):
                hooks.append(layer.register_forward_hook(save(f"layers.{i}")))
            hooks.append(inner.norm.register_forward_hook(save("norm")))
        try:
            ctx = contextlib.nullcontext() if self.use_fla else torch_path(self._module)
            with ctx, torch.inference_mode():
                out = self.model(input_ids=ids, past_key_values=state.cache, use_cache=True, logits_to_keep=1)
        finally:
            for h in hooks:
                h.remove()
        state.cache = out.past_key_values
        return out.logits[:, -1].float()

    def _prefill(self, input_ids, state, trace):
        return self._run(input_ids, state, trace)

    def _decode(self, token_ids, state, trace):
        return self._run(token_ids[:, None], state, trace)

    def _decode_timed(self, token_ids, state, marks):
        return self._run(token_ids[:, None], state, None, marks).argmax(-1)

    def clone_state(self, state):
        """An independent copy: transformers' cache object deep-copied."""
        self.check(state)
        return HFState(tier=state.tier, config=state.config, batch_size=state.batch_size,
                       max_seq_len=state.max_seq_len, positions=list(state.positions), cache=copy.deepcopy(state.cache))
