"""Compatibility name for ``attention_keys``: ``hfkv.report`` imports ``max_positions`` from here.

New code imports from ``attention_keys`` (and the other reader modules) directly.
"""

from __future__ import annotations

from .attention_keys import max_positions

__all__ = ["max_positions"]
