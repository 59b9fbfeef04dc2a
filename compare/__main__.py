"""`python -m compare {diff,bench,generate,ab,prefill,delta-rule}`: the workbench's commands.

Each subcommand lives in its own module exposing `add_arguments(parser)` and
`run(args) -> exit status`. Errors a user can fix (an unknown tier, a missing
checkpoint, a bad length) are printed as one line with a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "diff": ("compare.diff", "per-layer relative error of every tier against the fp32 reference (--batch B: a batch against each row alone)"),
    "bench": ("compare.bench", "llama-bench-style speed of every tier (pp, tg, tg at --batch B, per layer)"),
    "generate": ("compare.generate", "stream text (or token ids) from a checkpoint with one tier (--num-return-sequences N: N samples in one batch)"),
    "ab": ("compare.ab", "A/B timing of variants of one tier, interleaved in one process"),
    "prefill": ("compare.prefill", "where the megakernel tier's fast prefill spends its time"),
    "delta-rule": ("compare.delta_rule", "the prefill's chunked delta rule alone, one layer: fla against FlashQLA, and both against fp32"),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compare", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    modules = {}
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        modules[name] = module
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    from reference import CheckpointError, ConfigError, TierInputError, TierUnavailable, WeightsError

    from .common import UsageError

    try:
        return modules[args.command].run(args)
    except (UsageError, CheckpointError, ConfigError, TierInputError, TierUnavailable, WeightsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
