"""`python -m megakernel build --arch sm_90a`: compile-check the kernel with the local nvcc
(no GPU needed). `python -m megakernel sanitize-run`: a short decode (or prefill) run for compute-sanitizer."""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m megakernel")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="nvcc -c every .cu with the real flags for one or more archs (no GPU needed)")
    b.add_argument("--arch", action="append", default=None,
                   help="sm_80, sm_86, sm_89, sm_90a (repeatable; default sm_90a)")
    b.add_argument("--verbose", action="store_true")
    s = sub.add_parser("sanitize-run", help="a short decode run on the GPU, meant to run under compute-sanitizer")
    s.add_argument("--steps", type=int, default=2)
    s.add_argument("--flags", type=int, default=None, help="schedule flags (MKF_* bits; default: the tier's)")
    s.add_argument("--grid", type=int, default=None, help="blocks per launch (default: one per SM)")
    s.add_argument("--prefill", type=int, default=0, metavar="N",
                   help="run the fast prefill of N + N tokens and one decode step instead")
    args = parser.parse_args(argv)

    if args.command == "build":
        from .build import BuildError, compile_check

        status = 0
        for arch in args.arch or ["sm_90a"]:
            try:
                print(compile_check(arch, verbose=args.verbose))
            except BuildError as e:
                print(f"error: {e}", file=sys.stderr)
                status = 1
        return status
    if args.command == "sanitize-run":
        from .sanitize import sanitize_prefill, sanitize_run

        if args.prefill:
            return sanitize_prefill(args.prefill)
        return sanitize_run(steps=args.steps, flags=args.flags, grid=args.grid)
    return 2


if __name__ == "__main__":
    sys.exit(main())
