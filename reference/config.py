"""ModelConfig: the shapes and constants of a Qwen3.5 text model.

`ModelConfig.qwen3_5_0_8b()` is built in (no network), as are the family's other public
dense sizes (`ModelConfig.named("qwen3.5-2b" | "qwen3.5-4b" | "qwen3.5-9b" | "qwen3.5-27b")`,
from their published config.json: 9B and 27B have an lm_head of their own, the smaller ones
tie it to the embedding); `ModelConfig.tiny()` is the same architecture at toy width for
tests; `ModelConfig.from_hf(...)` reads a transformers `config.json` (text-only or the
multimodal one nesting `text_config`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass

LINEAR = "linear_attention"
FULL = "full_attention"


REQUIRED_INT_KEYS = (
    "vocab_size", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim",
)
OPTIONAL_INT_KEYS = ("num_hidden_layers", "head_dim", "max_position_embeddings", "full_attention_interval")
JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
              bool: "a boolean", type(None): "null"}


class ConfigError(ValueError):
    """A config that cannot describe a Qwen3.5 text model."""


def json_type(value) -> str:
    """What `value` is in JSON's words ("an array", "a string", …)."""
    return JSON_TYPES.get(type(value), type(value).__name__)


def parse_json_object(data: bytes, what: str, error=ConfigError) -> dict:
    """The JSON object in `data`, read from `what` (a file, or the part of one that
    names it); raises `error` saying what is wrong when it is empty, not JSON, or JSON
    other than an object."""
    if not data.strip():
        raise error(f"{what} is empty; expected a JSON object")
    try:
        value = json.loads(data)
    except ValueError as e:  # JSONDecodeError, or bytes that are not text
        raise error(f"{what} is not valid JSON ({e}); expected a JSON object") from e
    if not isinstance(value, dict):
        raise error(f"{what} is {json_type(value)} in JSON, expected an object")
    return value


def read_json_object(path: str, error=ConfigError) -> dict:
    """The JSON object in the file at `path` (see parse_json_object)."""
    with open(path, "rb") as f:
        return parse_json_object(f.read(), path, error)


def is_count(value, least: int = 0) -> bool:
    """Whether `value` is an int (not a bool) of at least `least`."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


@dataclass(frozen=True)
class ModelConfig:
    name: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    layer_types: tuple[str, ...]
    # gated full attention
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rope_theta: float
    partial_rotary_factor: float
    # Gated DeltaNet
    linear_num_key_heads: int
    linear_num_value_heads: int
    linear_key_head_dim: int
    linear_value_head_dim: int
    linear_conv_kernel_dim: int
    rms_norm_eps: float = 1e-6
    initializer_range: float = 0.02
    max_position_embeddings: int = 262144
    eos_token_ids: tuple[int, ...] = ()
    tie_word_embeddings: bool = True  # the lm_head is the embedding (else `lm_head.weight` of its own)

    def __post_init__(self):
        problems = []
        for t in self.layer_types:
            if t not in (LINEAR, FULL):
                problems.append(f"layer type {t!r} (expected {LINEAR!r} or {FULL!r})")
        if self.num_attention_heads % self.num_key_value_heads:
            problems.append(
                f"num_attention_heads={self.num_attention_heads} is not a multiple of "
                f"num_key_value_heads={self.num_key_value_heads}"
            )
        if self.linear_num_value_heads % self.linear_num_key_heads:
            problems.append(
                f"linear_num_value_heads={self.linear_num_value_heads} is not a multiple of "
                f"linear_num_key_heads={self.linear_num_key_heads}"
            )
        if self.rotary_dim % 2 or self.rotary_dim > self.head_dim:
            problems.append(f"rotary_dim={self.rotary_dim} must be even and at most head_dim={self.head_dim}")
        if not isinstance(self.tie_word_embeddings, bool):
            problems.append(f"tie_word_embeddings={self.tie_word_embeddings!r} (expected true or false)")
        if problems:
            raise ConfigError("invalid ModelConfig: " + "; ".join(problems))

    # ---- derived sizes -------------------------------------------------------
    @property
    def num_layers(self) -> int:
        return len(self.layer_types)

    @property
    def linear_layers(self) -> tuple[int, ...]:
        return tuple(i for i, t in enumerate(self.layer_types) if t == LINEAR)

    @property
    def full_layers(self) -> tuple[int, ...]:
        return tuple(i for i, t in enumerate(self.layer_types) if t == FULL)

    @property
    def rotary_dim(self) -> int:
        return int(self.head_dim * self.partial_rotary_factor)

    @property
    def key_dim(self) -> int:  # DeltaNet q and k width
        return self.linear_num_key_heads * self.linear_key_head_dim

    @property
    def value_dim(self) -> int:  # DeltaNet v, z and core-output width
        return self.linear_num_value_heads * self.linear_value_head_dim

    @property
    def conv_dim(self) -> int:  # channels of the causal conv: [q | k | v]
        return 2 * self.key_dim + self.value_dim

    def layer_slot(self, layer: int) -> int:
        """Index of `layer` among the layers of its own type (into the state tensors)."""
        return sum(1 for t in self.layer_types[:layer] if t == self.layer_types[layer])

    # ---- constructors --------------------------------------------------------
    @classmethod
    def qwen3_5_0_8b(cls) -> "ModelConfig":
        return cls(
            name="qwen3.5-0.8b",
            vocab_size=248320,
            hidden_size=1024,
            intermediate_size=3584,
            layer_types=(LINEAR, LINEAR, LINEAR, FULL) * 6,
            num_attention_heads=8,
            num_key_value_heads=2,
            head_dim=256,
            rope_theta=1e7,
            partial_rotary_factor=0.25,
            linear_num_key_heads=16,
            linear_num_value_heads=16,
            linear_key_head_dim=128,
            linear_value_head_dim=128,
            linear_conv_kernel_dim=4,
            eos_token_ids=(248044,),
        )

    @classmethod
    def tiny(cls) -> "ModelConfig":
        """The real architecture at toy width: 4 layers (L, L, L, F), and more DeltaNet
        value heads than key heads so the head mapping of the larger models is exercised."""
        return cls(
            name="tiny",
            vocab_size=512,
            hidden_size=64,
            intermediate_size=128,
            layer_types=(LINEAR, LINEAR, LINEAR, FULL),
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=32,
            rope_theta=1e7,
            partial_rotary_factor=0.25,
            linear_num_key_heads=2,
            linear_num_value_heads=4,
            linear_key_head_dim=16,
            linear_value_head_dim=16,
            linear_conv_kernel_dim=4,
            max_position_embeddings=4096,
        )

    @classmethod
    def tiny_megakernel(cls) -> "ModelConfig":
        """The smallest model the megakernel builds (megakernel/family.py: its head widths and
        warp maps fix hidden 1024, head dims 128 / 256), for GPU tests of the kernels' logic in
        seconds: 5 layers in an irregular order (L, F, L, L, F), twice as many DeltaNet value heads
        as key heads, 16 q heads over 4 kv heads, an untied lm_head, a 4,096-token vocabulary."""
        return cls.qwen3_5_0_8b().replace(
            name="tiny-megakernel", vocab_size=4096, intermediate_size=1536,
            layer_types=(LINEAR, FULL, LINEAR, LINEAR, FULL), num_attention_heads=16, num_key_value_heads=4,
            linear_num_value_heads=32, tie_word_embeddings=False, eos_token_ids=())

    @classmethod
    def family_member(cls, name: str, hidden: int, inter: int, layers: int, heads: tuple[int, int],
                      linear_value_heads: int, tie: bool) -> "ModelConfig":
        """A public dense Qwen3.5 size: what its config.json says beyond what every size shares
        (vocab, head widths, the 3:1 layer pattern, RoPE, the DeltaNet key heads)."""
        return cls.qwen3_5_0_8b().replace(
            name=name, hidden_size=hidden, intermediate_size=inter,
            layer_types=(LINEAR, LINEAR, LINEAR, FULL) * (layers // 4), num_attention_heads=heads[0],
            num_key_value_heads=heads[1], linear_num_value_heads=linear_value_heads, tie_word_embeddings=tie)

    @classmethod
    def built_in(cls) -> dict:
        """Every built-in config's name → its constructor (`named` builds one)."""
        fm = cls.family_member
        return {"qwen3.5-0.8b": cls.qwen3_5_0_8b, "tiny": cls.tiny, "tiny-megakernel": cls.tiny_megakernel,
                # Qwen/Qwen3.5-{2B,4B,9B,27B} config.json (text_config, tie_word_embeddings)
                "qwen3.5-2b": lambda: fm("qwen3.5-2b", 2048, 6144, 24, (8, 2), 16, True),
                "qwen3.5-4b": lambda: fm("qwen3.5-4b", 2560, 9216, 32, (16, 4), 32, True),
                "qwen3.5-9b": lambda: fm("qwen3.5-9b", 4096, 12288, 32, (16, 4), 32, False),
                "qwen3.5-27b": lambda: fm("qwen3.5-27b", 5120, 17408, 64, (24, 4), 48, False)}

    @classmethod
    def named(cls, name: str) -> "ModelConfig":
        builders = cls.built_in()
        if name not in builders:
            raise ConfigError(f"unknown config {name!r}; expected one of {sorted(builders)}")
        return builders[name]()

    @classmethod
    def from_hf(cls, path_or_dict) -> "ModelConfig":
        """Read a transformers config: a dict, a config.json path or a folder holding one.
        Every problem is a ConfigError (naming the file, for a file)."""
        if isinstance(path_or_dict, dict):
            raw, where = path_or_dict, ""
        else:
            path = os.fspath(path_or_dict)
            if os.path.isdir(path):
                path = os.path.join(path, "config.json")
            if not os.path.isfile(path):
                raise ConfigError(f"{path} does not exist (expected the model's transformers config.json)")
            raw, where = read_json_object(path), f"{path}: "
        try:
            return cls._from_hf_dict(raw)
        except ConfigError as e:
            raise ConfigError(f"{where}{e}") from e
        except (TypeError, ValueError, AttributeError) as e:  # a value of a type no config has
            raise ConfigError(f"{where}a value has the wrong type ({type(e).__name__}: {e})") from e

    @classmethod
    def _from_hf_dict(cls, raw: dict) -> "ModelConfig":
        """The config a transformers config dict describes (text-only, or nesting text_config)."""
        text = raw.get("text_config", raw)
        if not isinstance(text, dict):
            raise ConfigError(f"text_config is {json_type(text)}, expected an object")
        missing = [k for k in REQUIRED_INT_KEYS if k not in text]
        if missing:
            raise ConfigError(
                f"config is not a Qwen3.5 text config (model_type={text.get('model_type')!r}); "
                f"missing keys: {missing}"
            )
        not_counts = [f"{k}={text[k]!r}" for k in REQUIRED_INT_KEYS + OPTIONAL_INT_KEYS
                      if text.get(k) is not None and not is_count(text[k], least=1)]
        if not_counts:
            raise ConfigError(f"expected positive integers, got {', '.join(not_counts)}")
        n_layers = text.get("num_hidden_layers")
        layer_types = text.get("layer_types")
        if layer_types is None and n_layers is None:
            raise ConfigError("neither layer_types nor num_hidden_layers is given; expected one of them")
        if layer_types is None:
            interval = text.get("full_attention_interval", 4)
            layer_types = [FULL if (i + 1) % interval == 0 else LINEAR for i in range(n_layers)]
        if n_layers is not None and len(layer_types) != n_layers:
            raise ConfigError(f"layer_types has {len(layer_types)} entries, num_hidden_layers is {n_layers}")
        rope = text.get("rope_parameters") or text.get("rope_scaling") or {}
        if rope.get("rope_type", "default") != "default":
            raise ConfigError(f"rope_type {rope.get('rope_type')!r} is not supported (expected 'default')")
        eos = text.get("eos_token_id", raw.get("eos_token_id"))
        eos = () if eos is None else tuple(eos) if isinstance(eos, (list, tuple)) else (eos,)
        tie = text.get("tie_word_embeddings", raw.get("tie_word_embeddings", True))
        if not isinstance(tie, bool):
            raise ConfigError(f"tie_word_embeddings is {json_type(tie)} in JSON, expected true or false")
        head_dim = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
        return cls(
            name=raw.get("_name_or_path") or text.get("model_type", "qwen3_5_text"),
            vocab_size=text["vocab_size"],
            hidden_size=text["hidden_size"],
            intermediate_size=text["intermediate_size"],
            layer_types=tuple(layer_types),
            num_attention_heads=text["num_attention_heads"],
            num_key_value_heads=text["num_key_value_heads"],
            head_dim=head_dim,
            rope_theta=float(rope.get("rope_theta", text.get("rope_theta", 1e7))),
            partial_rotary_factor=float(rope.get("partial_rotary_factor", text.get("partial_rotary_factor", 1.0))),
            linear_num_key_heads=text["linear_num_key_heads"],
            linear_num_value_heads=text["linear_num_value_heads"],
            linear_key_head_dim=text["linear_key_head_dim"],
            linear_value_head_dim=text["linear_value_head_dim"],
            linear_conv_kernel_dim=text["linear_conv_kernel_dim"],
            rms_norm_eps=text.get("rms_norm_eps", 1e-6),
            initializer_range=text.get("initializer_range", 0.02),
            max_position_embeddings=text.get("max_position_embeddings", 262144),
            eos_token_ids=eos,
            tie_word_embeddings=tie,
        )

    def to_hf_dict(self) -> dict:
        """The `Qwen3_5TextConfig` keyword arguments that describe this model."""
        return {
            "model_type": "qwen3_5_text",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_layers,
            "layer_types": list(self.layer_types),
            "full_attention_interval": 4,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "attn_output_gate": True,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "hidden_act": "silu",
            "linear_num_key_heads": self.linear_num_key_heads,
            "linear_num_value_heads": self.linear_num_value_heads,
            "linear_key_head_dim": self.linear_key_head_dim,
            "linear_value_head_dim": self.linear_value_head_dim,
            "linear_conv_kernel_dim": self.linear_conv_kernel_dim,
            "rms_norm_eps": self.rms_norm_eps,
            "initializer_range": self.initializer_range,
            "max_position_embeddings": self.max_position_embeddings,
            "tie_word_embeddings": self.tie_word_embeddings,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": self.rope_theta,
                "partial_rotary_factor": self.partial_rotary_factor,
                "mrope_section": [11, 11, 10],
                "mrope_interleaved": True,
            },
            "mlp_only_layers": [],
            "eos_token_id": list(self.eos_token_ids) or None,
        }

    def replace(self, **changes) -> "ModelConfig":
        return dataclasses.replace(self, **changes)
