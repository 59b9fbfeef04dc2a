"""What the compare commands share: model arguments, loading, tier selection, errors."""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import os
import subprocess
import sys

import torch

from reference import ModelConfig, hazard_weights, load_checkpoint, random_weights
from reference.weights import num_parameters

from .tiers import TIERS, tier_class, unavailable_reason


class UsageError(Exception):
    """A problem with what the user asked for: printed as one line, exit status 2."""


def add_model_arguments(parser: argparse.ArgumentParser, default_config="qwen3.5-0.8b"):
    parser.add_argument("--config", choices=list(ModelConfig.built_in()), default=default_config,
                        help="built-in config with seeded random weights (default: %(default)s)")
    parser.add_argument("--checkpoint", metavar="DIR_OR_HUB_ID",
                        help="a Hugging Face folder of safetensors (or hub id) instead of random weights")
    parser.add_argument("--weights", choices=["plain", "hazard"], default="plain",
                        help="plain: the weights as drawn or loaded; hazard: a few embedding channels 32x larger and "
                             "DeltaNet decays at both extremes, numerical stress random weights lack "
                             "(reference.hazard_weights) (default: %(default)s)")
    add_nonfinite_argument(parser)
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights and prompt")
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    parser.add_argument("--tiers", default=None,
                        help=f"comma-separated tiers among {','.join(TIERS)} (default: all this machine can run)")


def add_nonfinite_argument(parser: argparse.ArgumentParser):
    """--allow-nonfinite-weights: load a --checkpoint whose weights hold NaN or Inf."""
    parser.add_argument("--allow-nonfinite-weights", action="store_true",
                        help="load a --checkpoint even if a weight holds NaN or Inf (by default an error)")


def pick_device(name):
    if name is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"--device {name}: no CUDA GPU is visible on this machine; expected --device cpu")
    return torch.device(name)


def load_model(args):
    """→ (config, weights) from --checkpoint, or the built-in --config with seeded random weights;
    with --weights hazard, made numerically harder (reference.hazard_weights)."""
    if args.checkpoint:
        config, weights = load_checkpoint(args.checkpoint, dtype=torch.bfloat16, allow_nonfinite=args.allow_nonfinite_weights)
    else:
        config = ModelConfig.named(args.config)
        n = num_parameters(config)
        if n > 1e9:  # (one CPU thread draws ~80-100 M values a second: say so before a minute of silence)
            print(f"drawing {n / 1e9:.1f} G seeded random weights for {config.name} on the CPU (roughly {n / 8e7:.0f} s)...",
                  file=sys.stderr, flush=True)
        weights = random_weights(config, seed=args.seed, dtype=torch.bfloat16)
    if getattr(args, "weights", "plain") == "hazard":
        weights = hazard_weights(weights)
    return config, weights


def tier_reason(name: str, device, config=None) -> str | None:
    """Why tier `name` cannot run on `device` here, or (given a config) cannot run that model; None if it can."""
    reason = unavailable_reason(name, device)
    if reason is None and config is not None:
        reason = tier_class(name).config_unsupported_reason(config)
    return reason


def select_tiers(requested, device, always=(), config=None):
    """→ (tiers to run, {tier: reason} skipped). Tiers named explicitly that cannot run
    (here, or the model `config` describes) are an error; by default the ones that cannot
    run are listed as skipped."""
    if requested:
        names = [t.strip() for t in requested.split(",") if t.strip()]
        unknown = [t for t in names if t not in TIERS]
        if unknown:
            raise UsageError(f"unknown tier(s) {unknown}; expected some of {list(TIERS)}")
        for t in names:
            reason = tier_reason(t, device, config)
            if reason is not None:
                raise UsageError(f"tier {t!r} cannot run on {device}: {reason}")
        return list(dict.fromkeys(list(always) + names)), {}
    run, skipped = [], {}
    for t in TIERS:
        reason = tier_reason(t, device, config)
        if reason is None:
            run.append(t)
        else:
            skipped[t] = reason
    return run, skipped


def environment() -> dict:
    """Device and versions for result headers."""
    info = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "torch": torch.__version__, "python": sys.version.split()[0], "commit": git_commit()}
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = None
    # the packages whose kernels the prefill's delta rule may run (megakernel/prefill_delta_rule.py): read
    # from their installed metadata, without importing them
    for key, dist in (("fla", "flash-linear-attention"), ("flash_qla", "flash-qla"), ("flashinfer", "flashinfer-python")):
        try:
            info[key] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            info[key] = None
    if torch.cuda.is_available():
        info["device"] = torch.cuda.get_device_name()
        info["cuda"] = torch.version.cuda
    else:
        info["device"] = "cpu"
        info["cuda"] = None
    return info


def git_commit() -> str:
    """WORKBENCH_COMMIT when set (the GPU machine gets a copy of the tree whose .git, if any,
    is not the commit being run), else `git rev-parse` here, "-dirty" with local changes."""
    if os.environ.get("WORKBENCH_COMMIT"):
        return os.environ["WORKBENCH_COMMIT"]
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=5)
        if out.returncode != 0 or not out.stdout.strip():
            return "unknown"
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
