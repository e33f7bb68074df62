"""Auxiliary probe losses of the toy model's training (``scripts/train_toy.py``).

- :func:`probe_width` / :func:`content_probe_loss`: a linear probe on the projector output
  predicts each vision token's content (empty / text decoy / colour × shape, jointly or as
  colour + shape) and optionally its grid row and column. Without it the tiny CLIP tower does
  not learn to see in the time available; the row/column part keeps box positions readable.
- :func:`image_index_loss`: a linear probe on a decoder layer's output predicts which image
  (frame / page) each vision token belongs to.
- :func:`evidence_probe_loss`: a linear probe at the question's object noun, after the reader
  heads' layer, predicts where the evidence is (row, column, which images): what a box, a span
  or a count needs the readers to bring.

torch is imported inside the functions so importing this module stays light.
"""

from __future__ import annotations

from harness.toy.training.batches import N_CELL_CLASSES, image_index
from harness.toy.world import COLORS, GRID, SHAPES

__all__ = [
    "N_COLOUR_CLASSES",
    "probe_width",
    "content_probe_loss",
    "image_index_loss",
    "evidence_targets",
    "evidence_probe_loss",
]

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
        cells: [tokens] content class per token (``harness.toy.training.batches.cell_labels``):
            0 empty, 1 text decoy, ``2 + i`` the i-th colour × shape type (colour-major).
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


def evidence_targets(input_ids, image_id, sup, max_images=8):
    """Per sample with a question noun and evidence: (row, column, image set) of the evidence.

    Args:
        input_ids: [batch, seq] the input ids.
        image_id: The image placeholder token id.
        sup: ``collate``'s per-sample (final position, evidence positions, noun position).
        max_images: Length of the image-set vector.

    Returns:
        ``(batch rows, noun positions, rows, columns, image sets)``; rows and columns are -1
        (ignored) when the evidence is not in one cell (objects that move between frames).
    """
    import torch

    # Rank of each vision token among the sample's vision tokens: image = rank // 16 (as in
    # image_index), cell within the image = rank % 16. Evidence positions are vision tokens.
    rank = torch.cumsum((input_ids == image_id).long(), dim=-1) - 1
    picked, nouns, rows, cols, sets = [], [], [], [], []
    for b, (_, evidence, noun) in enumerate(sup):
        if noun is None or not evidence:
            continue
        cells = {int(rank[b, p]) % (GRID * GRID) for p in evidence}
        cell = cells.pop() if len(cells) == 1 else None
        picked.append(b), nouns.append(noun)
        rows.append(-1 if cell is None else cell // GRID)
        cols.append(-1 if cell is None else cell % GRID)
        images = torch.zeros(max_images)
        images[rank[b, evidence] // (GRID * GRID)] = 1.0
        sets.append(images)
    if not picked:
        return None
    as_long = lambda x: torch.tensor(x, dtype=torch.long)  # noqa: E731
    return as_long(picked), as_long(nouns), as_long(rows), as_long(cols), torch.stack(sets)


def evidence_probe_loss(probe, hidden, input_ids, image_id, sup):
    """What the readers brought to the question's noun: the evidence's row, column, images.

    A linear probe on a decoder layer's output at the noun predicts the evidence object's grid
    row and column (cross-entropy) and which images hold it (binary cross-entropy per image; a
    set, so spans and counts are readable). 0 when no sample names its evidence object.

    Args:
        probe: Maps [n, hidden] to [n, 2 * GRID + max images] logits.
        hidden: [batch, seq, hidden] the output of the layer the reader heads are in.
        input_ids: [batch, seq] the input ids.
        image_id: The image placeholder token id.
        sup: ``collate``'s per-sample (final position, evidence positions, noun position).
    """
    import torch.nn.functional as F

    targets = evidence_targets(input_ids, image_id, sup, probe.out_features - 2 * GRID)
    if targets is None:
        return hidden.sum() * 0.0
    picked, nouns, rows, cols, sets = targets
    logits = probe(hidden[picked, nouns])
    loss = F.binary_cross_entropy_with_logits(logits[:, 2 * GRID :], sets)
    for part, target in ((logits[:, :GRID], rows), (logits[:, GRID : 2 * GRID], cols)):
        if (target >= 0).any():
            loss = loss + F.cross_entropy(part, target, ignore_index=-1)
    return loss
