"""The workbench's face: load any tier behind the one interface, diff and time them."""

from .tiers import TIERS, available_tiers, load_tier, unavailable_reason

__all__ = ["TIERS", "available_tiers", "load_tier", "unavailable_reason"]
