"""Auxiliary probe losses of the toy model's training: hand-computed cases."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from harness.toy.builders import ALL_TYPES  # noqa: E402
from harness.toy.scenes import COLORS, GRID, SHAPES  # noqa: E402
from harness.toy.training.probe_losses import (  # noqa: E402
    N_COLOUR_CLASSES,
    content_probe_loss,
    image_index_loss,
    probe_width,
)

N_TOKENS = GRID * GRID


@pytest.mark.parametrize(
    ("factored", "with_position", "width"),
    [
        (False, False, 2 + len(ALL_TYPES)),
        (True, False, 2 + len(COLORS) + 2 + len(SHAPES)),
        (True, True, 2 + len(COLORS) + 2 + len(SHAPES) + 2 * GRID),
        (False, True, 2 + len(ALL_TYPES) + 2 * GRID),
    ],
)
def test_uniform_logits_cost_log_of_each_class_count(factored, with_position, width):
    assert probe_width(factored, with_position) == width
    cells = torch.randint(0, 2 + len(ALL_TYPES), (2 * N_TOKENS,))
    loss = content_probe_loss(
        torch.zeros(2 * N_TOKENS, width), cells, factored=factored, with_position=with_position
    )
    if factored:
        expected = math.log(2 + len(COLORS)) + math.log(2 + len(SHAPES))
    else:
        expected = math.log(2 + len(ALL_TYPES))
    expected += 2 * math.log(GRID) if with_position else 0.0
    assert loss.item() == pytest.approx(expected, rel=1e-6)


def _one_hot_logits(cells, factored, with_position, big=50.0):
    logits = torch.zeros(len(cells), probe_width(factored, with_position))
    for t, c in enumerate(cells.tolist()):
        if factored:
            colour, shape = (c, c) if c < 2 else (2 + TYPE_PARTS[c][0], 2 + TYPE_PARTS[c][1])
            logits[t, colour] = big
            logits[t, N_COLOUR_CLASSES + shape] = big
        else:
            logits[t, c] = big
        if with_position:
            n = probe_width(factored, False)
            logits[t, n + (t % N_TOKENS) // GRID] = big  # row of token t in its image
            logits[t, n + GRID + t % GRID] = big  # column
    return logits


# Class 2 + i is ALL_TYPES[i]: its colour and shape indices, computed independently.
TYPE_PARTS = {2 + i: (list(COLORS).index(c), SHAPES.index(s)) for i, (c, s) in enumerate(ALL_TYPES)}


@pytest.mark.parametrize("factored", [False, True])
@pytest.mark.parametrize("with_position", [False, True])
def test_the_right_classes_cost_nothing_and_a_wrong_one_costs(factored, with_position):
    cells = torch.randint(0, 2 + len(ALL_TYPES), (3 * N_TOKENS,))
    logits = _one_hot_logits(cells, factored, with_position)
    kw = dict(factored=factored, with_position=with_position)
    assert content_probe_loss(logits, cells, **kw).item() < 1e-6
    wrong = cells.clone()
    wrong[5] = 2 if cells[5] != 2 else 3  # another object type on one token
    assert content_probe_loss(logits, wrong, **kw).item() > 0.1
    if with_position:  # a row/column shifted by one token is wrong
        shifted = torch.cat([logits[1:], logits[:1]])
        assert content_probe_loss(shifted, cells.roll(-1), **kw).item() > 1.0


def test_image_index_loss_reads_only_vision_tokens():
    image_id, g = 9, N_TOKENS
    # Two images in row 0, one in row 1 (right padding with 0).
    ids = torch.tensor(
        [[1, 5, *[image_id] * g, 5, *[image_id] * g, 7], [1, 5, *[image_id] * g, 7, *[0] * (g + 1)]]
    )
    hidden = torch.zeros(*ids.shape, 3)
    hidden[0, 2 : 2 + g, 0] = 1.0  # image 1 of row 0
    hidden[0, 3 + g : 3 + 2 * g, 1] = 1.0  # image 2 of row 0
    hidden[1, 2 : 2 + g, 0] = 1.0
    hidden[ids != image_id] = torch.tensor([0.0, 0.0, 1.0])  # text: would be "class 2"
    probe = torch.nn.Linear(3, 8, bias=False)
    with torch.no_grad():
        probe.weight.zero_()
        probe.weight[0, 0] = probe.weight[1, 1] = 40.0
    assert image_index_loss(probe, hidden, ids, image_id).item() < 1e-6
    with torch.no_grad():  # swap the two images' answers: every token of 2 images wrong
        probe.weight[0, 0] = probe.weight[1, 1] = 0.0
        probe.weight[1, 0] = probe.weight[0, 1] = 40.0
    assert image_index_loss(probe, hidden, ids, image_id).item() == pytest.approx(40.0, rel=1e-3)


def _two_frame_batch(image_id=9):
    """Row 0: 2 images, evidence at cell (1, 2) of both; row 1: 1 image, no noun; row 2: an
    object at cell (0, 3) of image 1 and at (2, 0) of image 2 (it moves)."""
    g = N_TOKENS
    two = [1, 5, *[image_id] * g, 5, *[image_id] * g, 7, 8, 7]
    ids = torch.tensor([two, [1, 5, *[image_id] * g, 7, *[0] * (g + 3)], two])
    first, second = 2, 3 + g  # where each image's tokens start
    sup = [
        (len(two) - 1, [first + 1 * GRID + 2, second + 1 * GRID + 2], len(two) - 2),
        (g + 3, [first + 5], None),
        (len(two) - 1, [first + 3, second + 2 * GRID], len(two) - 2),
    ]
    return ids, sup


def test_evidence_targets_are_row_column_and_image_set():
    from harness.toy.training.probe_losses import evidence_targets

    ids, sup = _two_frame_batch()
    picked, nouns, rows, cols, sets = evidence_targets(ids, 9, sup, max_images=4)
    assert picked.tolist() == [0, 2]  # row 1 names no object
    assert nouns.tolist() == [sup[0][2], sup[2][2]]
    assert rows.tolist() == [1, -1] and cols.tolist() == [2, -1]  # row 2's object moves
    assert sets.tolist() == [[1, 1, 0, 0], [1, 1, 0, 0]]
    assert evidence_targets(ids[1:2], 9, sup[1:2]) is None


def test_evidence_probe_loss_is_zero_only_for_the_right_answer():
    from harness.toy.training.probe_losses import evidence_probe_loss

    ids, sup = _two_frame_batch()
    n_images = 4
    hidden = torch.zeros(*ids.shape, 2)
    hidden[0, sup[0][2], 0] = 1.0  # feature 0 at row 0's noun, feature 1 at row 2's
    hidden[2, sup[2][2], 1] = 1.0
    probe = torch.nn.Linear(2, 2 * GRID + n_images, bias=False)
    with torch.no_grad():
        probe.weight.fill_(-60.0)  # every class and image off...
        probe.weight[1, 0] = probe.weight[GRID + 2, 0] = 60.0  # ...but row 1, column 2
        probe.weight[2 * GRID : 2 * GRID + 2] = 60.0  # and images 1 and 2, for both
    assert evidence_probe_loss(probe, hidden, ids, 9, sup).item() < 1e-6
    with torch.no_grad():  # claim image 3 too: one of four image bits wrong in both samples
        probe.weight[2 * GRID + 2] = 60.0
    assert evidence_probe_loss(probe, hidden, ids, 9, sup).item() == pytest.approx(60.0 / 4)
