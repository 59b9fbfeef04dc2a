"""The megakernel's own tools (each imports only `reference` and `megakernel`):

    python -m megakernel build --arch sm_90a      compile-check the kernels with the local nvcc (no GPU)
                                                  (--config qwen3.5-9b: another size's build, megakernel/family.py)
    python -m megakernel phases                   the kernel stopped after each phase vs the reference's intermediates
    python -m megakernel anatomy                  where a step's time goes, from the kernel's own clock
    python -m megakernel sanitize-run             a short decode (or prefill) run for compute-sanitizer
    python -m megakernel soak --steps 100000      a long fed-back decode across state resets: hangs, NaN, p50/p99

Every GPU tool takes `--config NAME` (a built-in config the kernels build, megakernel/family.py;
default the 0.8B), e.g. `python -m megakernel anatomy --config qwen3.5-9b`.
Speed (tok/s) comes from `python -m compare bench` and `python -m compare ab`.
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["phases"]:
        from .phases import main as phases

        return phases(argv[1:])
    if argv[:1] == ["soak"]:
        from .soak import main as soak

        return soak(argv[1:])
    if argv[:1] == ["anatomy"]:
        from .anatomy import main as anatomy

        return anatomy(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m megakernel", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="nvcc -c every .cu with the real flags for one or more archs (no GPU needed)")
    b.add_argument("--arch", action="append", default=None,
                   help="sm_80, sm_86, sm_89, sm_90a (repeatable; default sm_90a)")
    b.add_argument("--verbose", action="store_true")
    b.add_argument("--config", default=None, help="a built-in config name (default: the 0.8B, the sources' defaults)")
    sub.add_parser("phases", help="the kernel stopped after each phase vs the bf16 reference's intermediates (GPU)")
    sub.add_parser("anatomy", help="where a decode step's time goes, from the kernel's own clock (GPU)")
    sub.add_parser("soak", help="a long fed-back decode across state resets: hangs, NaN, per-token p50/p99 (GPU)")
    s = sub.add_parser("sanitize-run", help="a short decode run on the GPU, meant to run under compute-sanitizer")
    s.add_argument("--steps", type=int, default=2)
    s.add_argument("--schedule", choices=["ring", "register"], default=None, help="default: the tier's")
    s.add_argument("--grid", type=int, default=None, help="blocks per launch (default: one per SM)")
    s.add_argument("--batch", type=int, default=1, help="rows of the decoded state (the ring schedule: 1..8)")
    s.add_argument("--prefill", type=int, default=0, metavar="N",
                   help="run the fast prefill of N + N tokens and one decode step instead")
    s.add_argument("--config", default=None, help="a built-in config name (default: the 0.8B)")
    args = parser.parse_args(argv)

    config = None
    if args.config:
        from reference import ModelConfig

        from .family import config_refusal

        try:
            config = ModelConfig.named(args.config)
        except (KeyError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if config_refusal(config):
            from .family import CONSTRAINTS

            print(f"error: {config_refusal(config)}\nthe kernels build any config where:\n  "
                  + "\n  ".join(CONSTRAINTS), file=sys.stderr)
            return 2
    if args.command == "build":
        from .build import BuildError, compile_check

        status = 0
        for arch in args.arch or ["sm_90a"]:
            try:
                print(compile_check(arch, verbose=args.verbose, config=config))
            except BuildError as e:
                print(f"error: {e}", file=sys.stderr)
                status = 1
        return status
    if args.command == "sanitize-run":
        from .sanitize import sanitize_prefill, sanitize_run

        if args.prefill:
            return sanitize_prefill(args.prefill, config=config)
        return sanitize_run(steps=args.steps, schedule=args.schedule, grid=args.grid, batch=args.batch, config=config)
    return 2


if __name__ == "__main__":
    sys.exit(main())
