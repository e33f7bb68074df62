"""Tiny random instances of the registered families, for CPU tests (no hub access).

The builders are product code (:mod:`harness.models.tiny`, each family unit's
:class:`~harness.models.unit.TinyRecipe`, also behind ``--model-args tiny=true``); this module
keeps the names the tests import. :data:`TINY_FAMILIES` is every registered family with a tiny
recipe, read from the registry (no list here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.models.offline.llava import REAL_IMAGE_SIZE, TINY_IMAGE_SIZE, vision_geometry
from harness.models.offline.tokenizer import RESERVED as TINY_RESERVED
from harness.models.offline.tokenizer import special_token_ids
from harness.models.tiny import build_tiny_model, tiny_adapter, tiny_processor

if TYPE_CHECKING:
    import torch

__all__ = [
    "REAL_IMAGE_SIZE",
    "TINY_IMAGE_SIZE",
    "TINY_RESERVED",
    "build_tiny_model",
    "special_token_ids",
    "tiny_adapter",
    "tiny_processor",
    "tiny_text_inputs",
    "vision_geometry",
]


def __getattr__(name: str) -> Any:
    if name == "TINY_FAMILIES":  # derived at first use: importing this module stays light
        from harness.models.unit import unit_names

        return unit_names(tiny=True)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def tiny_text_inputs(
    model: Any,
    batch: int,
    seq: int,
    seed: int = 0,
    *,
    left_pad: list[int] | tuple[int, ...] | None = None,
) -> dict[str, torch.Tensor]:
    """Random text-only inputs for a tiny model (special ids excluded).

    Args:
        model: A model from :func:`build_tiny_model`.
        batch: Batch size.
        seq: Padded sequence length.
        seed: Seed for the random ids.
        left_pad: Optional number of left-padding tokens per row (pad id, mask 0).

    Returns:
        ``{"input_ids": (batch, seq) long, "attention_mask": (batch, seq) long}`` (and
        ``token_type_ids`` zeros where the model takes them: Gemma 3, PaliGemma).
    """
    import inspect

    import torch

    vocab = model.config.get_text_config().vocab_size
    pad_id = model.config.get_text_config().pad_token_id
    gen = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(0, vocab - TINY_RESERVED, (batch, seq), generator=gen)
    attention_mask = torch.ones(batch, seq, dtype=torch.long)
    if left_pad is not None:
        if len(left_pad) != batch:
            raise ValueError(f"left_pad has {len(left_pad)} entries for batch {batch}")
        for row, n in enumerate(left_pad):
            if not 0 <= n < seq:
                raise ValueError(f"left_pad[{row}]={n} must be in [0, {seq})")
            input_ids[row, :n] = pad_id
            attention_mask[row, :n] = 0
    out = {"input_ids": input_ids, "attention_mask": attention_mask}
    if "token_type_ids" in inspect.signature(model.forward).parameters:
        # what Gemma 3's and PaliGemma's processors return for text (PaliGemma's prefix-LM
        # reads the padding as prefix without them)
        out["token_type_ids"] = torch.zeros_like(input_ids)
    return out
