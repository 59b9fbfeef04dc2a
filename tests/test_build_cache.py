"""The megakernel's build cache cannot wedge (megakernel/build.py, `cached_build`), on the CPU.

Loading the real extension needs a GPU build of torch, so the builds here are stand-ins that go
through the same machinery: `load()` itself with the sources swapped for one small C++ extension
module (torch's cpp_extension, its lock file, ninja and the import are all real), and a ninja-like
fake that trusts any object it finds (so a half-written one left by a killed build would corrupt
the result unless the cache clears it). The real sm_90a nvcc compile runs once, in the last test.

Every child process runs under a timeout, so a wedged build fails a test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch

import megakernel.build as build
from megakernel.build import BuildError, archs_for_device, cache_dir, cached_build, compile_check, load, source_hash

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 120  # seconds a child may take before the test calls it wedged
needs_toolchain = pytest.mark.skipif(
    build.nvcc_path() is None or shutil.which("ninja") is None or shutil.which("c++") is None,
    reason="nvcc, ninja or c++ is missing")

# A Python extension module in plain C++ (no torch headers: it compiles in a fraction of a second).
TINY_EXTENSION = r"""
#include <Python.h>
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define STR2(x) #x
#define STR(x) STR2(x)
static PyObject* answer(PyObject*, PyObject*) { return PyLong_FromLong(42); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, ""}, {nullptr, nullptr, 0, nullptr}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, STR(TORCH_EXTENSION_NAME), nullptr, -1, methods};
PyMODINIT_FUNC CAT(PyInit_, TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&module); }
"""

# megakernel.build.load() with the sources swapped for TINY_EXTENSION; argv: the sources' folder, a file
# it creates once torch is imported (so that a kill's random moment falls in load() itself)
LOAD_CHILD = r"""
import sys, time
import torch
import megakernel.build as b
b.CSRC, b.CPP_SOURCES, b.CU_SOURCES, b.HEADERS = sys.argv[1], ("tiny.cpp",), (), ()
open(sys.argv[2], "w").close()
start = time.monotonic()
ext = b.load()
print("answer", ext.answer(), "seconds", time.monotonic() - start, flush=True)
"""

# cached_build around a ninja-like fake: it compiles ext.o only when missing and trusts one it finds
# (ninja trusts an object that is newer than its source), slowly enough to be caught mid-write.
# argv: build folder, compile log
FAKE_CHILD = r"""
import os, shutil, sys, time
from megakernel.build import cached_build
build_dir, log = sys.argv[1], sys.argv[2]

def fake_build():
    obj, lib = os.path.join(build_dir, "ext.o"), os.path.join(build_dir, "ext.so")
    if not os.path.exists(obj):
        with open(log, "a") as f:
            f.write("compile\n")
        with open(obj, "w") as f:
            f.write("half")
            f.flush()
            time.sleep(float(os.environ.get("FAKE_COMPILE_S", "0")))
            f.write("+whole")
    if not os.path.exists(lib):
        shutil.copy(obj, lib)
    text = open(lib).read()
    if text != "half+whole":
        sys.exit(f"corrupt library {text!r}")
    return text

print("result", cached_build(build_dir, {"source_hash": "fake", "archs": ["sm_90a"]}, fake_build), flush=True)
"""


# ---- helpers ------------------------------------------------------------------------

@pytest.fixture
def children():
    """Starts child processes in their own process groups; kills what is left of them (orphaned
    compilers of a killed child included) at the end of the test."""
    started = []

    def start(code, *args, env=None):
        proc = subprocess.Popen([sys.executable, "-c", code, *map(str, args)], cwd=ROOT, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()


def finish(proc) -> tuple[str, str]:
    """(stdout, stderr) of a child that must exit 0 within TIMEOUT."""
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the build wedged: no exit within {TIMEOUT} s")
    assert proc.returncode == 0, err
    return out, err


def wait_until(condition, what: str, timeout: float = TIMEOUT) -> None:
    """Polls condition() every millisecond until it holds; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.001)


def kill(proc) -> None:
    """SIGKILL the child itself, as the OOM killer or `timeout -s KILL` would: compilers it started
    are orphaned and may go on writing."""
    proc.kill()
    proc.wait(timeout=TIMEOUT)


@pytest.fixture
def tiny(tmp_path):
    """(sources folder, cache root, environment) for LOAD_CHILD: load() building for sm_90a."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "tiny.cpp").write_text(TINY_EXTENSION)
    root = tmp_path / "cache"
    env = dict(os.environ, QWEN35_MEGAKERNEL_CACHE=str(root), TORCH_CUDA_ARCH_LIST="9.0a")
    return src, root, env


def build_folder(root) -> str:
    """The one build folder under a cache root (not a compile check's, nor one being cleared)."""
    folders = [p for p in root.iterdir() if p.is_dir() and not p.name.endswith("-check") and ".cleared-" not in p.name]
    assert len(folders) == 1, folders
    return str(folders[0])


def marker(build_dir: str) -> dict:
    with open(os.path.join(build_dir, build.MARKER)) as f:
        return json.load(f)


def compiles(build_dir: str) -> int:
    """How many objects ninja compiled in build_dir (its log lists every edge it ran: start, end, mtime, output)."""
    with open(os.path.join(build_dir, ".ninja_log")) as f:
        return sum(1 for line in f if not line.startswith("#") and line.split("\t")[3].endswith(".o"))


# ---- two processes at once -------------------------------------------------------------

@needs_toolchain
def test_three_loads_at_once_all_succeed_and_one_builds(tiny, children):
    src, root, env = tiny
    procs = [children(LOAD_CHILD, src, src / f"ready{i}", env=env) for i in range(3)]
    results = [finish(p) for p in procs]
    assert all("answer 42" in out for out, _ in results)
    assert sum(err.count("megakernel: building for sm_90a") for _, err in results) == 1
    folder = build_folder(root)
    assert compiles(folder) == 1 and not os.path.exists(os.path.join(folder, "lock"))
    assert marker(folder)["archs"] == ["sm_90a"] and marker(folder)["torch"] == torch.__version__


def test_a_second_process_waits_for_the_build_in_progress_and_reuses_it(tmp_path, children):
    folder, log = tmp_path / "cache" / "h-sm_90a", tmp_path / "compile.log"
    env = dict(os.environ, FAKE_COMPILE_S="1.5")
    first = children(FAKE_CHILD, folder, log, env=env)
    wait_until(lambda: (folder / "ext.o").exists(), "the first build to start compiling")
    second = children(FAKE_CHILD, folder, log, env=env)
    (out1, err1), (out2, err2) = finish(first), finish(second)
    assert "result half+whole" in out1 and "result half+whole" in out2
    assert "building for sm_90a" in err1 and "waiting for another process" in err2
    assert "building for" not in err2
    assert log.read_text() == "compile\n"


# ---- a killed build --------------------------------------------------------------------

def test_a_build_killed_mid_write_is_detected_and_rebuilt(tmp_path, children):
    folder, log = tmp_path / "cache" / "h-sm_90a", tmp_path / "compile.log"
    first = children(FAKE_CHILD, folder, log, env=dict(os.environ, FAKE_COMPILE_S="60"))
    wait_until(lambda: (folder / "ext.o").exists(), "the build to start compiling")
    kill(first)
    assert (folder / "ext.o").read_text() == "half"  # what a ninja-like build would trust
    out, err = finish(children(FAKE_CHILD, folder, log))
    assert "result half+whole" in out
    assert f"megakernel: the build in {folder} was interrupted or failed (no complete.json)" in err
    assert "building for sm_90a" in err and log.read_text() == "compile\n" * 2
    assert marker(str(folder))["source_hash"] == "fake"


@needs_toolchain
def test_load_killed_while_torch_holds_its_lock_rebuilds(tiny, children):
    """torch's cpp_extension leaves its `lock` file when killed mid-build; alone, it would wait on it forever."""
    src, root, env = tiny
    first = children(LOAD_CHILD, src, src / "ready", env=env)
    wait_until(lambda: root.exists() and any(root.glob("*/lock")), "torch's lock file")
    kill(first)
    folder = build_folder(root)
    assert os.path.exists(os.path.join(folder, "lock")) and not os.path.exists(os.path.join(folder, build.MARKER))
    out, err = finish(children(LOAD_CHILD, src, src / "ready", env=env))
    assert "answer 42" in out
    assert "was interrupted or failed (no complete.json): clearing it and rebuilding" in err
    assert marker(folder)["archs"] == ["sm_90a"] and not os.path.exists(os.path.join(folder, "lock"))


@needs_toolchain
def test_load_killed_at_a_random_moment_then_load_again_rebuilds(tiny, children):
    """The issue's acceptance test: kill load() at random moments of its build (seed in the message)."""
    src, root, env = tiny
    ready = src / "ready"
    out, _ = finish(children(LOAD_CHILD, src, ready, env=dict(env, QWEN35_MEGAKERNEL_CACHE=f"{root}-timing")))
    seconds = float(out.split("seconds")[1])  # load()'s own time, from after torch's import
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    for round_ in range(4):
        shutil.rmtree(root, ignore_errors=True)
        ready.unlink()
        first = children(LOAD_CHILD, src, ready, env=env)
        wait_until(ready.exists, "the child to import torch")
        delay = rng.uniform(0, seconds)
        time.sleep(delay)
        kill(first)
        left = [p for p in root.iterdir() if p.is_dir()] if root.exists() else []
        unfinished = any(os.listdir(p) and not (p / build.MARKER).exists() for p in left)
        out, err = finish(children(LOAD_CHILD, src, ready, env=env))
        where = f"seed {seed}, round {round_}, killed after {delay:.3f} s of {seconds:.3f} s"
        assert "answer 42" in out, where
        assert ("was interrupted or failed" in err) == unfinished, f"{where}\n{err}"
        assert compiles(build_folder(root)) == 1, where


@needs_toolchain
def test_load_again_in_the_same_process_after_a_failed_build_rebuilds(tiny, monkeypatch, capsys):
    """torch remembers the names it built in a process and would skip the retry's build, importing
    from the folder that cached_build cleared."""
    from torch.utils import cpp_extension

    src, root, env = tiny
    for name in ("QWEN35_MEGAKERNEL_CACHE", "TORCH_CUDA_ARCH_LIST"):
        monkeypatch.setenv(name, env[name])
    for name, value in (("CSRC", str(src)), ("CPP_SOURCES", ("tiny.cpp",)), ("CU_SOURCES", ()), ("HEADERS", ()),
                        ("_loaded", {})):
        monkeypatch.setattr(build, name, value)
    real = cpp_extension._write_ninja_file_and_build_library

    def dies_after_building(**kwargs):
        real(**kwargs)
        raise RuntimeError("killed")

    monkeypatch.setattr(cpp_extension, "_write_ninja_file_and_build_library", dies_after_building)
    with pytest.raises(BuildError, match="killed"):
        load()
    monkeypatch.setattr(cpp_extension, "_write_ninja_file_and_build_library", real)
    assert load().answer() == 42
    assert "was interrupted or failed (no complete.json): clearing it and rebuilding" in capsys.readouterr().err


# ---- torch's stale lock, a source change, other tools ------------------------------------

@needs_toolchain
def test_a_stale_torch_lock_in_a_finished_build_does_not_block(tiny, children):
    src, root, env = tiny
    finish(children(LOAD_CHILD, src, src / "ready", env=env))
    folder = build_folder(root)
    open(os.path.join(folder, "lock"), "w").close()  # torch waits while this file exists
    out, err = finish(children(LOAD_CHILD, src, src / "ready", env=env))
    assert "answer 42" in out
    assert f"megakernel: removing the lock file a killed build left in {folder}" in err
    assert "building" not in err and compiles(folder) == 1


def test_a_source_change_builds_into_a_new_folder(tmp_path, monkeypatch, capsys):
    csrc = tmp_path / "csrc"
    shutil.copytree(build.CSRC, csrc)
    monkeypatch.setattr(build, "CSRC", str(csrc))
    monkeypatch.setenv("QWEN35_MEGAKERNEL_CACHE", str(tmp_path / "cache"))
    before_hash, before_dir = source_hash(), cache_dir(["sm_90a"])
    header = csrc / build.HEADERS[0]
    header.write_text(header.read_text() + "\n// changed\n")
    assert source_hash() != before_hash and cache_dir(["sm_90a"]) != before_dir
    assert os.path.dirname(cache_dir(["sm_90a"])) == os.path.dirname(before_dir)

    building = []
    for folder in (before_dir, cache_dir(["sm_90a"]), cache_dir(["sm_90a"])):
        cached_build(folder, {"source_hash": os.path.basename(folder)[:16], "archs": ["sm_90a"]}, lambda: None)
        building.append(f"building for sm_90a in {folder}" in capsys.readouterr().err)
    assert building == [True, True, False]  # the old folder stays for the old sources; the new one is reused
    assert os.path.isdir(before_dir) and marker(cache_dir(["sm_90a"]))["source_hash"] == source_hash()


def test_two_checkouts_of_the_same_sources_build_in_their_own_folders(tmp_path, monkeypatch):
    """The same sources in another folder (a second checkout, an A/B's base tree) hash to another build
    folder: torch's build file names the sources by path, and one shared folder rebuilt for each in turn."""
    monkeypatch.setenv("QWEN35_MEGAKERNEL_CACHE", str(tmp_path / "cache"))
    here = (source_hash(), cache_dir(["sm_90a"]))
    copy = tmp_path / "other" / "csrc"
    shutil.copytree(build.CSRC, copy)
    monkeypatch.setattr(build, "CSRC", str(copy))
    there = (source_hash(), cache_dir(["sm_90a"]))
    assert there[0] != here[0] and there[1] != here[1] and os.path.dirname(there[1]) == os.path.dirname(here[1])
    assert (source_hash(), cache_dir(["sm_90a"])) == there  # (stable for one folder)


def test_a_build_made_with_other_tools_is_rebuilt(tmp_path, capsys):
    folder = str(tmp_path / "h-sm_90a")
    key = {"source_hash": "h", "archs": ["sm_90a"], "torch": "2.13.0", "nvcc": "V13.0.88"}
    cached_build(folder, key, lambda: open(os.path.join(folder, "ext.so"), "w").close())
    capsys.readouterr()
    cached_build(folder, dict(key, nvcc="V13.1.0"), lambda: None)
    err = capsys.readouterr().err
    assert "was made with other tools (nvcc V13.0.88 -> V13.1.0): clearing it and rebuilding" in err
    assert not os.path.exists(os.path.join(folder, "ext.so")) and marker(folder)["nvcc"] == "V13.1.0"


def test_a_failed_build_leaves_no_marker_and_is_rebuilt(tmp_path, capsys):
    folder = str(tmp_path / "h-sm_90a")
    key = {"source_hash": "h", "archs": ["sm_90a"]}

    def failing():
        open(os.path.join(folder, "ext.o"), "w").close()
        raise BuildError("nvcc failed")

    with pytest.raises(BuildError, match="nvcc failed"):
        cached_build(folder, key, failing)
    assert not os.path.exists(os.path.join(folder, build.MARKER))
    assert cached_build(folder, key, lambda: "ok") == "ok"
    assert "was interrupted or failed" in capsys.readouterr().err


# ---- one-line errors ---------------------------------------------------------------------

def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert "\n" not in text, text
    return text


def test_missing_nvcc_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert build.nvcc_path() is None
    with pytest.raises(BuildError) as e:
        load()
    assert "nvcc was not found" in one_line(e)
    with pytest.raises(BuildError) as e:
        compile_check("sm_90a")
    assert "nvcc was not found" in one_line(e)


@pytest.mark.parametrize("capability, words", [((7, 0), "compute capability 7.0 (sm_70) is not supported"),
                                               ((10, 0), "compute capability 10.0 (sm_100) is not supported"),
                                               (None, "no CUDA GPU is visible")])
def test_an_unsupported_or_missing_gpu_is_a_one_line_error(monkeypatch, capability, words):
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
    monkeypatch.setattr(build, "nvcc_path", lambda: "/usr/local/cuda/bin/nvcc")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: capability is not None)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    with pytest.raises(BuildError) as e:
        load()
    assert words in one_line(e) and "expected" in one_line(e)


def test_hopper_builds_as_sm_90a_and_an_unsupported_arch_list_is_one_line(monkeypatch):
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    assert archs_for_device() == ["sm_90a"]
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "7.0")
    with pytest.raises(BuildError) as e:
        archs_for_device()
    assert "'7.0' is not supported; expected one of" in one_line(e)


# ---- the sm_90a compile check beside the build folder --------------------------------------

@pytest.mark.skipif(build.nvcc_path() is None, reason="nvcc is not installed (CUDA toolkit missing)")
def test_compile_check_for_sm_90a_writes_beside_the_build_folder(tmp_path, monkeypatch, capsys):
    """The real nvcc -c of every .cu for sm_90a (no GPU): its objects must not make the build folder
    look like a killed build."""
    monkeypatch.setenv("QWEN35_MEGAKERNEL_CACHE", str(tmp_path))
    assert "for 'sm_90a'" in compile_check("sm_90a")
    folder = cache_dir(["sm_90a"])
    assert sorted(os.listdir(folder + "-check")) == sorted(f"{s[:-3]}.sm_90a.o" for s in build.CU_SOURCES)
    cached_build(folder, {"source_hash": source_hash(), "archs": ["sm_90a"]}, lambda: None)
    assert "interrupted" not in capsys.readouterr().err
