"""Which Qwen3.5 configs the megakernel builds for, and the build's shape (issue 22).

The kernels (csrc/shapes.cuh) are compiled per shape: `kernel_defines(config)` turns a config
into the `-DMK_*` flags of its build (none for the 0.8B, whose numbers are the sources'
defaults), `ops_namespace(config)` names its torch ops (`qwen35_megakernel` for the 0.8B, a
namespace per shape otherwise, so several sizes load side by side in one process), and
`config_refusal(config)` says, naming the field and the constraint, why a config cannot be
built. The constraints are what the kernels' work maps assume (megakernel/NOTES.md, "Issue 22");
`CONSTRAINTS` lists them (`python -m megakernel build --config NAME` prints them with a refusal).

Of the family: 0.8B, 2B, 4B and 9B build; 27B (hidden_size 5120, 6 q heads per kv head) is
refused. Batched decode (B > 1) is compiled for the 0.8B widths only
(shapes.cuh BATCH_SHAPES); other sizes decode one sequence per launch.
"""

from __future__ import annotations

import hashlib

from reference import ModelConfig

# the fields every build shares (csrc/shapes.cuh constants, not defines): (field, value, what needs it)
FIXED = (
    ("linear_key_head_dim", 128, "a lane owns 4 k of a DeltaNet state row"),
    ("linear_value_head_dim", 128, "a DeltaNet unit's 16 v rows over 16 warps, the gated norm's 4 values a lane"),
    ("linear_conv_kernel_dim", 4, "the conv ring's column arithmetic (& 3)"),
    ("head_dim", 256, "the attention core's 8 dims a lane and 16-position ring chunks"),
    ("rotary_dim", 64, "the RoPE table's 32 cos / sin values a position"),
    ("rms_norm_eps", 1e-6, "compiled in as RMS_EPS"),
    ("linear_num_key_heads", 16, "the prefill's q / k passes of 2048 channels"),
)
CONSTRAINTS = (
    "hidden_size a multiple of 256 from 1024 to 4096 (a K = hidden_size row within a lane's 16 registers of weights)",
    "intermediate_size and linear_num_value_heads x 128 multiples of 512, each down / out-projection row in at "
    "most 16 pieces of <= 4096 columns",
    "linear_num_value_heads a multiple of 16 and of linear_num_key_heads",
    "num_attention_heads = 4 x num_key_value_heads (a unit's 4 q heads); num_attention_heads x 256 = "
    "linear_num_value_heads x 128 (one out-projection width) and a multiple of 2048",
    "layer_types: at most 64 layers, at least one of each kind, the first linear_attention (its in-projection "
    "starts a step from the embedding row)",
    "vocab_size x 1024 < 2^32",
) + tuple(f"{f} = {v} ({why})" for f, v, why in FIXED)

DEFAULT_NAMESPACE = "qwen35_megakernel"


def full_mask(c: ModelConfig) -> int:
    """layer_types as csrc/shapes.cuh's FULL_MASK: bit l set where layer l is full attention."""
    return sum(1 << i for i, kind in enumerate(c.layer_types) if kind == "full_attention")


def _row_parts(k: int) -> int:
    """csrc/shapes.cuh row_parts: pieces of a K-wide out-projection / down row."""
    p = 2
    while k // p > 16 * 256:
        p *= 2
    return p


def config_problems(c: ModelConfig) -> list[str]:
    """Every field of `c` the kernels cannot take, each with the constraint it breaks ([] = buildable)."""
    bad = []
    for field, value, why in FIXED:
        got = getattr(c, field)
        if (abs(got - value) > 1e-12) if isinstance(value, float) else got != value:
            bad.append(f"{field}={got!r}: must be {value!r} ({why})")
    if c.hidden_size % 256 or not 1024 <= c.hidden_size <= 4096:
        bad.append(f"hidden_size={c.hidden_size}: must be a multiple of 256 from 1024 to 4096 (a K = hidden_size row "
                   "within a lane's 16 registers of weights)")
    hv, hk = c.linear_num_value_heads, c.linear_num_key_heads
    if hv % 16 or hv % max(hk, 1):
        bad.append(f"linear_num_value_heads={hv}: must be a multiple of 16 (warps) and of linear_num_key_heads={hk}")
    for field, k in (("intermediate_size", c.intermediate_size), ("linear_num_value_heads x 128", hv * 128)):
        p = _row_parts(k)
        if k % (256 * p) or p > 16:
            bad.append(f"{field}={k}: must split into <= 16 pieces of whole 256-column steps, each <= 4096 columns "
                       f"(the down / out-projection rows; a multiple of 512 up to 8192, of 1024 up to 16384)")
    if c.num_attention_heads != 4 * c.num_key_value_heads:
        bad.append(f"num_attention_heads={c.num_attention_heads}: must be 4 x num_key_value_heads="
                   f"{c.num_key_value_heads} (an attention unit's 4 q heads)")
    oin = c.num_attention_heads * c.head_dim
    if oin != hv * 128 or oin % 2048:
        bad.append(f"num_attention_heads x head_dim={oin}: must equal linear_num_value_heads x 128={hv * 128} and be "
                   "a multiple of 2048 (one out-projection width; the merged attention load)")
    kinds = set(c.layer_types)
    if c.num_layers > 64 or kinds != {"linear_attention", "full_attention"} or c.layer_types[0] != "linear_attention":
        bad.append(f"layer_types ({c.num_layers} layers, kinds {sorted(kinds)}, the first {c.layer_types[0]}): must be at "
                   "most 64 layers with at least one linear_attention and one full_attention layer, the first a "
                   "linear_attention one (the pattern is a 64-bit mask; the DeltaNet in-projection starts a step from "
                   "the embedding row)")
    if c.vocab_size * 1024 >= 1 << 32:
        bad.append(f"vocab_size={c.vocab_size}: vocab_size x 1024 must be < 2^32 (the blocks' 32-bit row products)")
    return bad


def config_refusal(c: ModelConfig) -> str | None:
    """Why the megakernel cannot be built for `c` (every field that breaks a constraint), or None."""
    bad = config_problems(c)
    if not bad:
        return None
    return f"the megakernel cannot be built for config {c.name!r}: " + "; ".join(bad)


def _is_default(c: ModelConfig) -> bool:
    return kernel_defines(c, _check=False) == DEFAULT_DEFINES


def kernel_defines(c: ModelConfig, _check: bool = True) -> dict[str, int]:
    """The -DMK_* values of `c`'s build (csrc/shapes.cuh)."""
    if _check and config_refusal(c):
        raise ValueError(config_refusal(c))
    return {"MK_D": c.hidden_size, "MK_INTER": c.intermediate_size, "MK_VOCAB": c.vocab_size, "MK_NLAYER": c.num_layers,
            "MK_DN_HK": c.linear_num_key_heads, "MK_DN_HV": c.linear_num_value_heads, "MK_FA_HQ": c.num_attention_heads,
            "MK_FA_HKV": c.num_key_value_heads, "MK_TIED": int(bool(c.tie_word_embeddings)),
            "MK_FULL_MASK": full_mask(c)}


DEFAULT_DEFINES = kernel_defines(ModelConfig.qwen3_5_0_8b(), _check=False)


def shape_tag(c: ModelConfig) -> str:
    """'' for the 0.8B (the sources' defaults), else 8 hex digits of its defines."""
    if _is_default(c):
        return ""
    text = ",".join(f"{k}={v}" for k, v in sorted(kernel_defines(c).items()))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def ops_namespace(c: ModelConfig) -> str:
    """The torch ops' namespace of `c`'s build."""
    tag = shape_tag(c)
    return DEFAULT_NAMESPACE if not tag else f"{DEFAULT_NAMESPACE}_{tag}"


def nvcc_defines(c: ModelConfig) -> list[str]:
    """The -D flags of `c`'s build ([] for the 0.8B)."""
    if _is_default(c):
        return []
    return ([f"-D{k}={v}" for k, v in kernel_defines(c).items() if k != "MK_FULL_MASK"]
            + [f"-DMK_FULL_MASK={full_mask(c):#x}ull", f"-DMK_OPS_NAMESPACE={ops_namespace(c)}"])
