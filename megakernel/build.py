"""Building the decode megakernel.

`load()` builds the torch extension just in time with `torch.utils.cpp_extension.load`
and ninja into `~/.cache/qwen35-megakernel/<source hash>-<arch>` (or
`$QWEN35_MEGAKERNEL_CACHE/...`), once per source change; `compile_check(arch)` runs plain
`nvcc -c` of every .cu with the real flags (no GPU needed), which is what
`python -m megakernel build --arch sm_90a` and the CPU tests do.

Arch: `TORCH_CUDA_ARCH_LIST` when set (e.g. "9.0a", "8.6"), else the GPU's compute
capability, with Hopper built as sm_90a (`-gencode arch=compute_90a,code=sm_90a`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile

CSRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc")
CU_SOURCES = ("megakernel.cu", "prefill.cu")
CPP_SOURCES = ("binding.cpp",)
HEADERS = tuple(sorted(f for f in os.listdir(CSRC) if f.endswith(".cuh")))
SUPPORTED_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")
# The ring kernel (the default) spills nothing. The register kernel (the fallback where the ring
# does not fit) is at its 128-register cap (512 threads, one block per SM): ptxas keeps a few
# thread-invariant offsets (the attention merge's, the first DeltaNet unit's) in local memory,
# 44-48 B stored once per launch and reloaded ~24 times per token (nvcc 13.0, 2026-11-23).
MAX_SPILL_BYTES = 64
NVCC_FLAGS = ["-O3", "-std=c++17", "-lineinfo", "-Xptxas=--warn-on-spills"]
# what torch.utils.cpp_extension adds to every nvcc call: the compile check uses the same
TORCH_LIKE_FLAGS = ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
                    "--expt-relaxed-constexpr"]


class BuildError(RuntimeError):
    """The megakernel cannot be built here (no nvcc, unsupported arch, compile error)."""


def nvcc_path() -> str | None:
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

    major, minor = torch.cuda.get_device_capability(device)
    if (major, minor) < (8, 0):
        raise BuildError(f"compute capability {major}.{minor} is not supported; the megakernel needs sm_80 or newer")
    return ["sm_90a" if (major, minor) == (9, 0) else normalize_arch(f"{major}{minor}")]


def source_hash(extra: str = "") -> str:
    h = hashlib.sha256()
    for name in sorted(CU_SOURCES + CPP_SOURCES + HEADERS):
        with open(os.path.join(CSRC, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read())
    h.update(" ".join(NVCC_FLAGS).encode() + extra.encode())
    return h.hexdigest()[:16]


def cache_dir(archs: list[str]) -> str:
    root = os.environ.get("QWEN35_MEGAKERNEL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "qwen35-megakernel")
    return os.path.join(root, f"{source_hash()}-{'+'.join(archs)}")


_loaded = {}


def load(device=None, verbose: bool = False):
    """The compiled extension for `device`'s arch (built on first use, then cached)."""
    if nvcc_path() is None:
        raise BuildError("nvcc was not found (set CUDA_HOME or put nvcc on PATH): the megakernel is built "
                         "just in time with the CUDA toolkit")
    archs = archs_for_device(device)
    key = tuple(archs)
    if key in _loaded:
        return _loaded[key]
    from torch.utils.cpp_extension import load as torch_load

    build_dir = cache_dir(archs)
    os.makedirs(build_dir, exist_ok=True)
    name = f"qwen35_megakernel_{source_hash()[:10]}_{'_'.join(a[3:] for a in archs)}"
    try:
        module = torch_load(
            name=name,
            sources=[os.path.join(CSRC, s) for s in CPP_SOURCES + CU_SOURCES],
            extra_cflags=["-O3"],
            extra_cuda_cflags=NVCC_FLAGS + [gencode(a) for a in archs],
            extra_include_paths=[CSRC],
            build_directory=build_dir,
            verbose=verbose,
        )
    except Exception as e:  # compiler errors come as RuntimeError / CalledProcessError
        raise BuildError(f"building the megakernel for {archs} in {build_dir} failed: {e}") from e
    _loaded[key] = module
    return module


def compile_check(arch: str, out_dir: str | None = None, verbose: bool = False) -> str:
    """nvcc -c every .cu for `arch` with the real flags (no GPU needed). Returns ptxas'
    resource report; raises BuildError on a compile error, a warning, a spill or a stack frame."""
    nvcc = nvcc_path()
    if nvcc is None:
        raise BuildError("nvcc was not found (set CUDA_HOME or put nvcc on PATH)")
    arch = normalize_arch(arch)
    out_dir = out_dir or os.path.join(cache_dir([arch]), "check")
    os.makedirs(out_dir, exist_ok=True)
    reports = []
    for src in CU_SOURCES:
        obj = os.path.join(out_dir, os.path.splitext(src)[0] + f".{arch}.o")
        cmd = [nvcc, "-c", os.path.join(CSRC, src), "-o", obj, *NVCC_FLAGS, *TORCH_LIKE_FLAGS,
               "-Xptxas=-v", "-Xcompiler=-fPIC", gencode(arch), f"-I{CSRC}"]
        if verbose:
            print(" ".join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        text = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise BuildError(f"nvcc failed for {src} ({arch}):\n{text}")
        spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
        problems = [line for line in text.splitlines()
                    if re.search(r"warning", line, re.I) and "Registers are spilled" not in line]
        if any(int(st) > MAX_SPILL_BYTES or int(ld) > MAX_SPILL_BYTES for st, ld in spills):
            problems.append("register spills: " + str(spills))
        if problems:
            raise BuildError(f"{src} ({arch}) compiled with warnings:\n" + "\n".join(problems) + "\n\n" + text)
        reports.append(f"{src} [{arch}]\n" + "\n".join(line for line in text.splitlines() if "ptxas info" in line or "bytes stack" in line))
    return "\n".join(reports)
