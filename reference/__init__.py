"""The readable specification of Qwen3.5's text forward pass, in plain PyTorch, and
what every tier shares: the config, the weights, the state and the tier interface."""

from .checkpoint import CheckpointError, load_checkpoint
from .config import FULL, LINEAR, ConfigError, ModelConfig
from .interface import (FAULT_NONE, FAULT_POSITION, FAULT_TOKEN, FAULT_WORDS, Tier, TierInputError, TierState,
                        TierUnavailable, check_id_range, id_range, record)
from .model import HybridModel, ModelState, forward_rows, new_model_state, reset_row, row_view
from .tier import ReferenceTier
from . import tolerances
from .weights import (WeightsError, expected_shapes, hazard_weights, perturb_norms, random_weights, validate_weights,
                      without_tied_head)

__all__ = [
    "CheckpointError", "ConfigError", "FAULT_NONE", "FAULT_POSITION", "FAULT_TOKEN", "FAULT_WORDS", "FULL", "HybridModel", "LINEAR", "ModelConfig", "ModelState",
    "ReferenceTier", "Tier", "TierInputError", "TierState", "TierUnavailable", "WeightsError",
    "check_id_range", "expected_shapes", "id_range", "forward_rows", "load_checkpoint", "new_model_state", "reset_row", "row_view", "perturb_norms", "hazard_weights", "random_weights", "record",
    "tolerances", "validate_weights", "without_tied_head",
]
