"""Test setup shared by every test module.

Without a CUDA GPU, Triton kernels can only run in the interpreter, and the interpreter
must be switched on before triton is first imported (transformers imports fla, which
imports triton): so it is set here, before anything else loads. On a GPU machine
nothing is changed.
"""

import os
import shutil
import subprocess


def _cuda_visible() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


if not _cuda_visible():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import settings  # noqa: E402

from reference import ModelConfig, ReferenceTier, perturb_norms, random_weights  # noqa: E402

settings.register_profile("ci", deadline=None, max_examples=15, derandomize=False, print_blob=True)
settings.load_profile("ci")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; none is visible on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tiny_config():
    from reference import ModelConfig

    return ModelConfig.tiny()


@pytest.fixture(scope="session")
def tiny_weights(tiny_config):
    """bf16-rounded random weights with the norms moved off their init values."""
    from reference import perturb_norms, random_weights

    return perturb_norms(random_weights(tiny_config, seed=0, dtype=torch.bfloat16))


# ---- the megakernel GPU modules' model: 0.8B shapes, seeded random weights (built when a test asks) ----
@pytest.fixture(scope="module")
def model():
    config = ModelConfig.qwen3_5_0_8b()
    return config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))


@pytest.fixture(scope="module")
def ref32(model):
    return ReferenceTier(*model, device="cuda", dtype=torch.float32)


@pytest.fixture(scope="module")
def bf16_baseline(model):
    """transformers' bf16 run when this transformers has Qwen3.5, else the bf16 reference."""
    from helpers import bf16_baseline_tier

    return bf16_baseline_tier(*model)
