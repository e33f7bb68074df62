"""Auxiliary probe losses of the toy model's training (``scripts/train_toy.py``).

- :func:`probe_width` / :func:`content_probe_loss`: a linear probe on the projector output
  predicts each vision token's content (empty / text decoy / colour × shape, jointly or as
  colour + shape) and optionally its grid row and column. Without it the tiny CLIP tower does
  not learn to see in the time available; the row/column part keeps box positions readable.
- :func:`image_index_loss`: a linear probe on a decoder layer's output predicts which image
  (frame / page) each vision token belongs to.

torch is imported inside the functions so importing this module stays light.
"""

from __future__ import annotations

from harness.toy.batches import N_CELL_CLASSES, image_index
from harness.toy.scenes import COLORS, GRID, SHAPES

__all__ = ["N_COLOUR_CLASSES", "probe_width", "content_probe_loss", "image_index_loss"]

# Factored classes: 0 empty, 1 text decoy, then one per colour (resp. shape).
N_COLOUR_CLASSES = 2 + len(COLORS)
N_SHAPE_CLASSES = 2 + len(SHAPES)


def probe_width(factored: bool, with_position: bool) -> int:
    """Output width of the content probe (content logits, then row and column logits)."""
    width = N_COLOUR_CLASSES + N_SHAPE_CLASSES if factored else N_CELL_CLASSES
    return width + (2 * GRID if with_position else 0)


def content_probe_loss(logits, cells, *, factored, smoothing=0.0, with_position=False):
    """Cross-entropy of the content probe over every vision token.

    Args:
        logits: [tokens, probe_width(...)] probe outputs, images' tokens in row-major order.
        cells: [tokens] content class per token (``harness.toy.batches.cell_labels``): 0 empty,
            1 text decoy, ``2 + i`` the i-th colour × shape type (colour-major).
        factored: Predict colour and shape separately (the sum of two cross-entropies).
        smoothing: Label smoothing of the content terms. It bounds the probe's logits, and so
            the projector's output norms, which otherwise drown the decoder's updates.
        with_position: Add the row and column cross-entropies (no smoothing).
    """
    import torch
    import torch.nn.functional as F

    n_content = probe_width(factored, False)
    content = logits[:, :n_content]
    if factored:
        obj = cells >= 2
        colour = torch.where(obj, 2 + (cells - 2) // len(SHAPES), cells)
        shape = torch.where(obj, 2 + (cells - 2) % len(SHAPES), cells)
        loss = F.cross_entropy(
            content[:, :N_COLOUR_CLASSES], colour, label_smoothing=smoothing
        ) + F.cross_entropy(content[:, N_COLOUR_CLASSES:], shape, label_smoothing=smoothing)
    else:
        loss = F.cross_entropy(content, cells, label_smoothing=smoothing)
    if with_position:
        where = logits[:, n_content:]
        pos = torch.arange(GRID * GRID).repeat(len(cells) // (GRID * GRID))
        row = F.cross_entropy(where[:, :GRID], pos // GRID)
        loss = loss + (row + F.cross_entropy(where[:, GRID:], pos % GRID))
    return loss


def image_index_loss(probe, hidden, input_ids, image_id):
    """Cross-entropy of ``probe(hidden)`` against each vision token's image index.

    Args:
        probe: Maps [n, hidden] to [n, max images] logits.
        hidden: [batch, seq, hidden] a decoder layer's output.
        input_ids: [batch, seq] the input ids.
        image_id: The image placeholder token id.
    """
    import torch.nn.functional as F

    index = image_index(input_ids, image_id)
    seen = index >= 0
    return F.cross_entropy(probe(hidden[seen]), index[seen])
