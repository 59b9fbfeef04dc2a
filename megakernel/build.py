"""Building the decode megakernel.

`load()` builds the torch extension just in time with `torch.utils.cpp_extension.load`
and ninja into `~/.cache/qwen35-megakernel/<source hash>-<arch>` (or
`$QWEN35_MEGAKERNEL_CACHE/...`), once per source change and model shape (a config other than
the 0.8B adds its -DMK_* defines, megakernel/family.py, and its shape tag to the folder's name); `compile_check(arch)` runs plain
`nvcc -c` of every .cu with the real flags (no GPU needed), which is what
`python -m megakernel build --arch sm_90a` and the CPU tests do.

The build cache cannot wedge (`cached_build`): one process builds a folder at a time, under an
OS lock (`flock` on `<folder>.lock`) that dies with its holder, so a killed build leaves no held
lock; `complete.json` is written into the folder only after a build succeeded, so a folder without
it (a build killed by Ctrl-C, the OOM killer or a timeout, or one that failed) is cleared and built
again, with a line on stderr; torch's own `lock` file, which a killed build leaves behind and
torch waits on forever, is removed under our lock.

Arch: `TORCH_CUDA_ARCH_LIST` when set (e.g. "9.0a", "8.6"), else the GPU's compute
capability, with Hopper built as sm_90a (`-gencode arch=compute_90a,code=sm_90a`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Callable, TypeVar

CSRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc")
CU_SOURCES = ("megakernel.cu", "prefill.cu")
CPP_SOURCES = ("binding.cpp", "gemm_lt.cpp")
HEADERS = tuple(sorted(f for f in os.listdir(CSRC) if f.endswith((".cuh", ".h"))))
SUPPORTED_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")
# The batch-1 kernels: the ring kernel (the default) spills at most a few bytes; the register
# kernel (the fallback where the ring does not fit) is at its 128-register cap (512 threads, one
# block per SM): ptxas keeps a few thread-invariant offsets (the attention merge's, the first
# DeltaNet unit's) in local memory, 44-48 B stored once per launch and reloaded ~24 times per
# token (nvcc 13.0, 2026-11-23); 52 / 68 B on sm_90a since the attention core's __expf (session 20,
# NOTES v22: it made the ring kernels faster; the register kernel does not run on the H100). The
# batched ring kernels (B = 2..8, issue 19) spill at most ~24 B since v16 (NOTES: their 200-364 B of
# spills cost B = 8 10%), so one bound holds for every kernel (B = 8's one-step kernel: 68 / 40 B with session 34's
# batch int8 argmax, 0 / 0 since session 35 kept its lists to the final bound).
MAX_SPILL_BYTES = 72
# The many-token kernels (a launch of many steps, MANY) spill more since the attention core by
# groups (session 16, NOTES v19): 44-164 B at B = 1..8 on sm_90a (nvcc 13.0), reloaded in the argmax
# between two steps and before the DeltaNet core's barrier; measured with them on the H100 (call 8):
# one launch of 128 steps +0.2% at B = 1, -1.8% at B = 8 (B = 1: 68 B since the int8 argmax, session 34, and its
# one-step ring kernel 20 → 12 B; B = 4-8 80-168 B since session 36's state through the ring, not timed in a many-token
# launch). sm_80 196 B, sm_86 / sm_89 244 B (not
# measured: no such GPU here). Their own bound keeps them from growing unseen.
MAX_SPILL_BYTES_MANY = 256
# Sources whose kernels may not spill at any size or arch: the prefill's (none did at the 0.8B, 2B, 4B and 9B on sm_80,
# sm_86, sm_89 and sm_90a, session 48, nvcc 13.0; a spill there is a slowdown no CPU test would time: a dn_prep variant
# spilled 76 B at the 4B / 9B unseen, NOTES "Prefill" v26)
NO_SPILL_SOURCES = ("prefill.cu",)
_KERNEL = re.compile(r"mk_decode_kernelILb[01]ELi(\d+)ELb([01])E")
MARKER = "complete.json"  # written into a build folder only once its build succeeded
NVCC_FLAGS = ["-O3", "-std=c++17", "-lineinfo", "-Xptxas=--warn-on-spills"]
# what torch.utils.cpp_extension adds to every nvcc call: the compile check uses the same
TORCH_LIKE_FLAGS = ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
                    "--expt-relaxed-constexpr"]


class BuildError(RuntimeError):
    """The megakernel cannot be built here (no nvcc, unsupported arch, compile error)."""


def nvcc_path() -> str | None:
    """nvcc of $CUDA_HOME (or $CUDA_PATH) when it has one, else the one on PATH; None without."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and os.path.isfile(os.path.join(home, "bin", "nvcc")):
        return os.path.join(home, "bin", "nvcc")
    return shutil.which("nvcc")


def cuda_include_dirs() -> list[str]:
    """The CUDA toolkit's include folders, as nvcc itself reports them (nvcc may be a wrapper
    script outside the toolkit); [] without nvcc."""
    nvcc = nvcc_path()
    if nvcc is None:
        return []
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "empty.cu")
        open(src, "w").close()
        proc = subprocess.run([nvcc, "--dryrun", "-c", src, "-o", os.path.join(tmp, "empty.o")],
                              capture_output=True, text=True)
    text = proc.stdout + proc.stderr
    return [d for line in text.splitlines() if "INCLUDES=" in line for d in re.findall(r'"?-I([^" ]+)', line)]


def normalize_arch(arch: str) -> str:
    """'sm_90a', '90a', '9.0a', 'compute_90a' → 'sm_90a'; unknown → BuildError."""
    a = arch.strip().lower().replace("+ptx", "")
    a = a.removeprefix("sm_").removeprefix("compute_")
    if "." in a:
        major, minor = a.split(".", 1)
        a = major + minor
    name = "sm_" + a
    if name not in SUPPORTED_ARCHS:
        raise BuildError(f"arch {arch!r} is not supported; expected one of {list(SUPPORTED_ARCHS)}")
    return name


def gencode(arch: str) -> str:
    """nvcc's -gencode flag that builds real code for `arch`."""
    num = normalize_arch(arch)[3:]
    return f"-gencode=arch=compute_{num},code=sm_{num}"


def archs_for_device(device=None) -> list[str]:
    """TORCH_CUDA_ARCH_LIST if set, else the GPU's capability (Hopper → sm_90a)."""
    env = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if env:
        items = [x for x in re.split(r"[;\s,]+", env) if x]
        archs = []
        for item in items:
            a = normalize_arch(item)
            if a == "sm_90":  # the kernel wants the Hopper-specific target when it can have it
                a = "sm_90a"
            archs.append(a)
        return sorted(set(archs))
    import torch

    if not torch.cuda.is_available():
        raise BuildError("no CUDA GPU is visible and TORCH_CUDA_ARCH_LIST is not set: cannot tell which arch "
                         f"to build the megakernel for; expected a GPU of one of {list(SUPPORTED_ARCHS)}")
    major, minor = torch.cuda.get_device_capability(device)
    arch = "sm_90a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"
    if arch not in SUPPORTED_ARCHS:
        raise BuildError(f"the GPU's compute capability {major}.{minor} ({arch}) is not supported by the megakernel; "
                         f"expected one of {list(SUPPORTED_ARCHS)}")
    return [arch]


def source_hash(extra: str = "") -> str:
    """16 hex digits of the sources, the headers, the nvcc flags, `extra` (a shape's defines) and the
    folder they are in: a new cache folder when any changes. (torch's build file names the sources by
    path, so two checkouts with the same sources sharing one folder rebuilt each other in turn: an A/B
    of two trees alternating, docs/results/2026-11-26-h100-s24 call 4.)"""
    h = hashlib.sha256(os.path.realpath(CSRC).encode() + b"\0")
    for name in sorted(CU_SOURCES + CPP_SOURCES + HEADERS):
        with open(os.path.join(CSRC, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read())
    h.update(" ".join(NVCC_FLAGS).encode() + extra.encode())
    return h.hexdigest()[:16]


def _shape(config) -> tuple[list[str], str]:
    """(the build's -D flags, its shape tag: '' for the 0.8B) of `config` (None: the 0.8B)."""
    if config is None:
        return [], ""
    from .family import nvcc_defines, shape_tag

    return nvcc_defines(config), shape_tag(config)


def cache_dir(archs: list[str], config=None) -> str:
    """The build folder for `archs` and `config`'s shape: <hash>-<archs>[-<shape tag>] in
    $QWEN35_MEGAKERNEL_CACHE (default ~/.cache/qwen35-megakernel)."""
    root = os.environ.get("QWEN35_MEGAKERNEL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "qwen35-megakernel")
    defines, tag = _shape(config)
    return os.path.join(root, f"{source_hash(' '.join(defines))}-{'+'.join(archs)}" + (f"-{tag}" if tag else ""))


def nvcc_version() -> str:
    """nvcc's version ('V13.0.88'), or its last line of `--version` when that has no V<number>."""
    proc = subprocess.run([nvcc_path(), "--version"], capture_output=True, text=True)
    found = re.findall(r"\bV\d+(?:\.\d+)+", proc.stdout)
    return found[-1] if found else (proc.stdout.strip().splitlines() or ["unknown"])[-1]


def build_key(archs: list[str], config=None) -> dict:
    """What a build for `archs` (and `config`'s shape) is made from; a folder's marker must match all of it to be reused."""
    import torch

    defines, _ = _shape(config)
    return {"source_hash": source_hash(" ".join(defines)), "archs": list(archs), "defines": defines,
            "torch": torch.__version__, "nvcc": nvcc_version()}


def _say(message: str) -> None:
    """One progress line on stderr."""
    print(f"megakernel: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def build_lock(build_dir: str):
    """Holds an exclusive flock on `<build_dir>.lock` (beside the folder, so that the folder can be
    cleared under it) until the block ends. The OS drops the lock when its holder dies, so a killed
    build never leaves it held; a process that has to wait says so on stderr."""
    import fcntl  # POSIX, like the CUDA toolchain the megakernel is built with

    os.makedirs(os.path.dirname(os.path.abspath(build_dir)), exist_ok=True)
    with open(build_dir + ".lock", "a") as f:  # closing the file releases the lock
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _say(f"waiting for another process that is building in {build_dir}")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _read_marker(build_dir: str) -> dict | None:
    """The folder's complete.json, or None when it has none (or a torn one)."""
    try:
        with open(os.path.join(build_dir, MARKER)) as f:
            marker = json.load(f)
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def _finished(build_dir: str, key: dict) -> bool:
    """Whether build_dir holds a finished build of `key`."""
    marker = _read_marker(build_dir)
    return marker is not None and all(marker.get(k) == v for k, v in key.items())


def _clear(build_dir: str, key: dict) -> None:
    """Empties build_dir, saying on stderr why when it held something. The folder is first renamed
    aside, so that a compiler orphaned by a killed build (whose working folder moves with it) cannot
    write into the new build."""
    if not os.path.isdir(build_dir):
        return
    if os.listdir(build_dir):
        marker = _read_marker(build_dir)
        if marker is None:
            _say(f"the build in {build_dir} was interrupted or failed (no {MARKER}): clearing it and rebuilding")
        else:
            changed = ", ".join(f"{k} {marker.get(k)} -> {v}" for k, v in key.items() if marker.get(k) != v)
            _say(f"the build in {build_dir} was made with other tools ({changed}): clearing it and rebuilding")
    aside = tempfile.mkdtemp(prefix=os.path.basename(build_dir) + ".cleared-", dir=os.path.dirname(build_dir))
    os.rename(build_dir, os.path.join(aside, "build"))
    shutil.rmtree(aside, ignore_errors=True)


def _remove_torch_lock(build_dir: str) -> None:
    """Removes the `lock` file torch's cpp_extension left in build_dir when a process was killed inside it
    (torch would wait for it forever). Called under build_lock, so no one else is building there."""
    lock = os.path.join(build_dir, "lock")
    if os.path.exists(lock):
        _say(f"removing the lock file a killed build left in {build_dir}")
        os.remove(lock)


def _write_marker(build_dir: str, key: dict) -> None:
    """Writes complete.json (the key and the time) atomically: it is there whole or not at all."""
    tmp = os.path.join(build_dir, MARKER + ".tmp")
    with open(tmp, "w") as f:
        json.dump({**key, "finished": time.strftime("%Y-%m-%d %H:%M:%S")}, f, indent=1)
    os.replace(tmp, os.path.join(build_dir, MARKER))


T = TypeVar("T")


def cached_build(build_dir: str, key: dict, build: Callable[[], T]) -> T:
    """Runs build() (which builds into build_dir what is missing there, like ninja, and loads it)
    one process at a time (build_lock). A folder without a finished build of `key` is cleared first,
    with a line on stderr when it held a killed one, and gets its marker once build() returned;
    a finished one is handed to build() as it is, less a stale torch lock."""
    with build_lock(build_dir):
        fresh = not _finished(build_dir, key)
        if fresh:
            _clear(build_dir, key)
            os.makedirs(build_dir)
            _say(f"building for {'+'.join(key['archs'])} in {build_dir} (about a minute, once per source change)...")
        else:
            _remove_torch_lock(build_dir)
        start = time.monotonic()
        result = build()
        if fresh:
            _write_marker(build_dir, key)
            _say(f"built in {time.monotonic() - start:.0f} s")
        return result


def _torch_build(archs: list[str], build_dir: str, verbose: bool, config=None):
    """torch.utils.cpp_extension.load of the extension for `archs` (and `config`'s shape) in build_dir
    (ninja builds what is missing or out of date, then the module is imported)."""
    from torch.utils import cpp_extension

    defines, tag = _shape(config)
    name = f"qwen35_megakernel_{source_hash(' '.join(defines))[:10]}_{'_'.join(a[3:] for a in archs)}" + (f"_{tag}" if tag else "")
    # torch skips the build of a name it has seen in this process, so a retry after a failed or
    # interrupted build would import from the folder cached_build cleared: let ninja decide instead
    cpp_extension.JIT_EXTENSION_VERSIONER.entries.pop(name, None)
    try:
        return cpp_extension.load(
            name=name,
            sources=[os.path.join(CSRC, s) for s in CPP_SOURCES + CU_SOURCES],
            extra_cflags=["-O3", *defines],
            extra_cuda_cflags=NVCC_FLAGS + defines + [gencode(a) for a in archs],
            extra_include_paths=[CSRC],
            build_directory=build_dir,
            verbose=verbose,
        )
    except Exception as e:  # compiler errors come as RuntimeError / CalledProcessError
        raise BuildError(f"building the megakernel for {archs} in {build_dir} failed: {e}") from e


_loaded = {}


def load(device=None, verbose: bool = False, config=None):
    """The compiled extension for `device`'s arch and `config`'s shape (None: the 0.8B), built on first
    use, then cached (see cached_build)."""
    if nvcc_path() is None:
        raise BuildError("nvcc was not found (set CUDA_HOME or put nvcc on PATH): the megakernel is built "
                         "just in time with the CUDA toolkit")
    archs = archs_for_device(device)
    key = (tuple(archs), _shape(config)[1])
    if key not in _loaded:
        build_dir = cache_dir(archs, config)
        build = functools.partial(_torch_build, archs, build_dir, verbose, config)
        _loaded[key] = cached_build(build_dir, build_key(archs, config), build)
    return _loaded[key]


def _spills_by_function(ptxas_report: str) -> list[tuple[str, int, int]]:
    """(function, spill store bytes, spill load bytes) for each function of a ptxas -v report, in order (the
    warning line that repeats a spilling function's numbers not counted again)."""
    out, name = [], "?"
    for line in ptxas_report.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$]+)'?", line)
        if m:
            name = m.group(1)
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and "Registers are spilled" not in line:
            out.append((name, int(m.group(1)), int(m.group(2))))
    return out


def _spills_by_kernel(ptxas_report: str) -> list[tuple[int, bool, int, int]]:
    """(batch the kernel is compiled for (1 for every function but a decode kernel), whether it is
    a many-token kernel, spill store bytes, spill load bytes) for each function of a ptxas -v
    report, in order."""
    out = []
    for name, st, ld in _spills_by_function(ptxas_report):
        m = _KERNEL.search(name)
        out.append((int(m.group(1)) if m else 1, bool(m) and m.group(2) == "1", st, ld))
    return out


def _spilling_functions(ptxas_report: str) -> list[tuple[str, int, int]]:
    """(function, spill store bytes, spill load bytes) for each function of a ptxas -v report that spills."""
    return [f for f in _spills_by_function(ptxas_report) if f[1] or f[2]]


def compile_check(arch: str, out_dir: str | None = None, verbose: bool = False, config=None) -> str:
    """nvcc -c every .cu for `arch` (and `config`'s shape; None: the 0.8B) with the real flags (no GPU
    needed). Returns ptxas' resource report; raises BuildError on a compile error, a warning, or (the
    0.8B, whose spills were measured) a spill over the bounds."""
    nvcc = nvcc_path()
    if nvcc is None:
        raise BuildError("nvcc was not found (set CUDA_HOME or put nvcc on PATH)")
    arch = normalize_arch(arch)
    defines, tag = _shape(config)
    out_dir = out_dir or cache_dir([arch], config) + "-check"  # beside the build folder: not a build left unfinished
    os.makedirs(out_dir, exist_ok=True)
    reports = []
    for src in CU_SOURCES:
        obj = os.path.join(out_dir, os.path.splitext(src)[0] + f".{arch}.o")
        cmd = [nvcc, "-c", os.path.join(CSRC, src), "-o", obj, *NVCC_FLAGS, *TORCH_LIKE_FLAGS, *defines,
               "-Xptxas=-v", "-Xcompiler=-fPIC", gencode(arch), f"-I{CSRC}"]
        if verbose:
            print(" ".join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        text = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise BuildError(f"nvcc failed for {src} ({arch}):\n{text}")
        spills = _spills_by_kernel(text)
        problems = [line for line in text.splitlines()
                    if re.search(r"warning", line, re.I) and "Registers are spilled" not in line]
        over = [(batch, "many" if many else "one step", st, ld) for batch, many, st, ld in spills
                if max(st, ld) > (MAX_SPILL_BYTES_MANY if many else MAX_SPILL_BYTES) and not tag]
        if over:
            problems.append(f"register spills over the bound ({MAX_SPILL_BYTES} B, many-token kernels "
                            f"{MAX_SPILL_BYTES_MANY} B) (batch, kernel, stores, loads): " + str(over))
        if src in NO_SPILL_SOURCES:  # (every size: none of these kernels spilled when the rule was made)
            spilling = _spilling_functions(text)
            if spilling:
                problems.append(f"{src}'s kernels spill registers at this size (function, stores, loads): {spilling}; "
                                "none did at any size or arch when this rule was made (NOTES \"Prefill\" v26)")
        if problems:
            raise BuildError(f"{src} ({arch}) compiled with warnings:\n" + "\n".join(problems) + "\n\n" + text)
        reports.append(f"{src} [{arch}]\n" + "\n".join(line for line in text.splitlines() if "ptxas info" in line or "bytes stack" in line))
    return "\n".join(reports)
