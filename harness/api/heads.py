"""Attention heads as values, and the model geometry they live in.

A head has exactly one printed form, ``L{layer}H{head}`` (0-based), e.g. ``L12H3``, written
by :func:`head_label` only (a test forbids spelling it anywhere else).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.api.errors import UsageError

__all__ = ["Head", "Geometry", "head_label"]

_HEAD_RE = re.compile(r"^L(\d+)H(\d+)$")


def head_label(layer: int, head: int) -> str:
    """The printed form of head ``head`` of layer ``layer``: ``head_label(12, 3) == "L12H3"``.

    It does not check the indices (a maps file's reader names a bad head with it); build a
    :class:`Head` to check them.
    """
    return f"L{layer}H{head}"


@dataclass(frozen=True, slots=True, order=True)
class Head:
    """A query head of the text decoder: (layer, head), both 0-based."""

    layer: int
    head: int

    def __post_init__(self) -> None:
        if self.layer < 0 or self.head < 0:
            raise ValueError(f"negative head index {self.layer}, {self.head}")

    def __str__(self) -> str:
        return head_label(self.layer, self.head)

    @classmethod
    def parse(cls, text: str) -> Head:
        """Parse the printed form ``L12H3``."""
        match = _HEAD_RE.match(text.strip())
        if not match:
            raise UsageError(f"not a head: {text!r} (expected e.g. 'L12H3')")
        return cls(int(match.group(1)), int(match.group(2)))


@dataclass(frozen=True, slots=True)
class Geometry:
    """Text-decoder geometry of a model.

    Attributes:
        num_layers: Decoder layers.
        num_heads: Query heads per layer.
        num_kv_heads: Key/value heads per layer (GQA groups).
        head_dim: Per-head dimension.
        hidden_size: Residual width.
        intermediate_size: FFN width (0 if unknown).
        attention_layers: The layers that have heads, when some have none (linear-attention,
            conv or MoE layers of hybrid decoders such as Qwen3.5); None = every layer. Heads
            exist only there: :meth:`all_heads`, :attr:`num_total_heads`, :meth:`count` and
            :meth:`check` count and accept attention layers only.
    """

    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    hidden_size: int
    intermediate_size: int = 0
    attention_layers: tuple[int, ...] | None = None

    @property
    def head_layers(self) -> tuple[int, ...]:
        """The layers that have heads (every layer unless ``attention_layers`` says otherwise)."""
        if self.attention_layers is None:
            return tuple(range(self.num_layers))
        return self.attention_layers

    @property
    def num_total_heads(self) -> int:
        """All query heads of the decoder (L·H over the attention layers)."""
        return len(self.head_layers) * self.num_heads

    @property
    def group_size(self) -> int:
        """Query heads per KV head."""
        return self.num_heads // self.num_kv_heads

    def all_heads(self) -> list[Head]:
        """Every head, layer-major (attention layers only)."""
        return [Head(la, h) for la in self.head_layers for h in range(self.num_heads)]

    def check(self, head: Head) -> Head:
        """Return ``head`` or raise if it does not exist in this geometry."""
        if head.layer >= self.num_layers or head.head >= self.num_heads:
            raise UsageError(
                f"head {head} outside the model ({self.num_layers} layers × {self.num_heads} heads)"
            )
        if head.layer not in self.head_layers:
            raise UsageError(
                f"head {head}: layer {head.layer} is not an attention layer (attention layers: "
                f"{list(self.head_layers)})"
            )
        return head

    def count(self, k: float) -> int:
        """Turn ``k`` (a count ≥ 1, or a fraction in (0, 1)) into a head count (rounded up)."""
        import math

        if k < 0:
            raise UsageError(f"k must be ≥ 0, got {k}")
        if 0 < k < 1:
            return min(self.num_total_heads, math.ceil(k * self.num_total_heads))
        if k != int(k):
            raise UsageError(f"k must be a whole count or a fraction in (0, 1), got {k}")
        if k > self.num_total_heads:
            raise UsageError(f"k={int(k)} exceeds the model's {self.num_total_heads} heads")
        return int(k)
