"""Tiny offline processors matching :mod:`harness.testing.tiny` models (for CPU tests).

Each is the family unit's tiny-recipe processor (:func:`harness.models.tiny.tiny_processor`):
the family's real ``transformers`` processor class, PIL image back-ends and an offline byte
tokenizer; ``geometry="real"`` gives the released processor's geometry. The names below are
the ones tests import; a new family needs none (call ``tiny_processor(family)``).
"""

from __future__ import annotations

from typing import Any

from harness.models.tiny import tiny_processor

__all__ = [
    "tiny_internvl_processor",
    "tiny_llava_next_processor",
    "tiny_llava_onevision_processor",
    "tiny_llava_processor",
    "tiny_processor",
]


def tiny_llava_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """``tiny_processor("llava", ...)``."""
    return tiny_processor("llava", vocab_size, geometry)


def tiny_llava_next_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """``tiny_processor("llava_next", ...)``."""
    return tiny_processor("llava_next", vocab_size, geometry)


def tiny_llava_onevision_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """``tiny_processor("llava_onevision", ...)``."""
    return tiny_processor("llava_onevision", vocab_size, geometry)


def tiny_internvl_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """``tiny_processor("internvl", ...)``."""
    return tiny_processor("internvl", vocab_size, geometry)
