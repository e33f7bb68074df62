"""The evidence rule and the geometry pieces the adapters build footprints from (issue 19).

Each piece is held to equality with the transformers / torch code it replays: the anyres
resize (``image_processing_utils.get_patch_output_size``), the bilinear pooling support
(``nn.functional.interpolate``), the SigLIP patch grid (a stride-14 valid convolution).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.api.payloads import Box, EvidenceError
from harness.models.hf import OVERLAP_TOL, overlapping
from harness.models.layouts.geometry import Axis, View, bilinear_sources, patch_spans
from harness.models.llava_next import patch_output_size
from harness.testing.tiny import vision_geometry


def test_rule_is_positive_area_with_exclusive_edges():
    rects = np.array(
        [
            [0, 0, 10, 10],  # left of the box edge at x = 10: touches only
            [10, 0, 20, 10],  # inside
            [0, 10, 10, 20],  # below the box's y2 = 10: touches only
            [9.5, 9.5, 10.5, 10.5],  # positive area both ways
            [np.nan] * 4,  # a newline token
        ]
    )
    box = Box(10, 0, 30, 10)
    assert overlapping(rects, box, (100, 100)).tolist() == [False, True, False, True, False]


def test_rule_tolerates_round_off_but_not_real_overlap():
    edge = 100 * 196 / 700 / 28 * 28 / 196 * 700 / 100  # an edge that should be 100 exactly
    rects = np.array([[0, 0, 100 + 1e-12, 5], [0, 0, 100 + 10 * OVERLAP_TOL, 5], [0, 0, edge, 5]])
    hit = overlapping(rects, Box(100, 0, 120, 5), (200, 200))
    assert hit.tolist() == [False, True, False]


def test_rule_clips_to_the_image_and_refuses_boxes_outside():
    rects = np.array([[90, 0, 110, 10]])  # a token that sees the image and padding
    assert overlapping(rects, Box(95, 0, 130, 10), (100, 100)).tolist() == [True]
    assert overlapping(rects, Box(0, 0, 95, 10), (100, 100)).tolist() == [True]
    with pytest.raises(EvidenceError, match="outside"):
        overlapping(rects, Box(100, 0, 130, 10), (100, 100))


def test_axis_maps_integer_edges_exactly():
    # Qwen: 700 px resized to 196 (7 cells of 28): cell edge 28 is original pixel 100 exactly;
    # the old float path gave 100 · (196 / 700) / 28 = 1.0000000000000002 cells.
    assert 100 * (196 / 700) / 28 > 1
    axis = Axis(700, 196)
    assert axis.to_original(np.array([28, 56, 196])).tolist() == [100.0, 200.0, 700.0]
    # pad 10 before, resize 120 → 336, crop 5 after: u = (x + 10) · 336 / 120 − 5
    axis = Axis(120, 336, pre=10, post=-5)
    x = np.array([0.0, 7.5, 100.0])
    u = (x + 10) * 336 / 120 - 5
    assert np.allclose(axis.to_original(u), x)


def test_patch_spans_leave_siglips_last_pixels_unseen():
    spans = patch_spans(2, 384, 14)  # two 384-px crops side by side
    assert len(spans) == 54
    assert spans[26].tolist() == [364, 378]  # crop 0 ends at 378: pixels 378–383 unseen
    assert spans[27].tolist() == [384, 398]
    assert patch_spans(1, 336, 14)[-1].tolist() == [322, 336]  # CLIP 336/14 is exact


def _transformers_patch_output_size(height, width, target):
    from transformers.image_processing_utils import get_patch_output_size

    dummy = np.zeros((1, height, width), dtype=np.uint8)
    return get_patch_output_size(dummy, target, input_data_format="channels_first")


@pytest.mark.parametrize("family", ["llava_next", "llava_onevision"])
def test_anyres_resize_equals_transformers(family):
    from transformers.image_processing_utils import select_best_resolution

    pins = vision_geometry(family, "real")["pinpoints"]
    sizes = [(500, 375), (4000, 3000), (1200, 900), (600, 400), (818, 1582), (1808, 1582)]
    sizes += [(w, h) for w in range(37, 1600, 97) for h in range(29, 1600, 89)]
    old_differs = []
    for w, h in sizes:
        best = select_best_resolution((h, w), pins)
        new = patch_output_size(h, w, best)
        assert new == _transformers_patch_output_size(h, w, best)
        # the adapter's old order, ceil(h · best_w / w), misses transformers' float scale
        if best[1] / w < best[0] / h:
            old = (min(math.ceil(h * best[1] / w), best[0]), best[1])
        else:
            old = (best[0], min(math.ceil(w * best[0] / h), best[1]))
        if old != new:
            old_differs.append((w, h))
    if family == "llava_next":  # 500×375 into 672²: transformers resizes to 505 rows, not 504
        assert {(500, 375), (4000, 3000), (1200, 900), (600, 400)} <= set(old_differs)
    else:  # 1808×1582 into 1920²: 1681 rows, not 1680
        assert (1808, 1582) in old_differs


@pytest.mark.parametrize(
    ("n_in", "n_out"), [(104, 40), (117, 45), (27, 14), (8, 4), (81, 72), (162, 61), (5, 3)]
)
def test_bilinear_sources_equal_torch_on_a_real_feature_map(n_in, n_out):
    torch = pytest.importorskip("torch")
    # a (1, C, H, W) map like the model's, H = n_in rows; W wide so vector paths are used
    basis = torch.eye(n_in).reshape(1, n_in, n_in, 1).expand(1, n_in, n_in, 33).contiguous()
    out = torch.nn.functional.interpolate(basis, [n_out, 19], mode="bilinear")[0, :, :, 3]
    expected = [
        (int(col.nonzero().min()), int(col.nonzero().max()))
        for col in out.T  # per output row
    ]
    assert [tuple(p) for p in bilinear_sources(n_in, n_out).tolist()] == expected
    if (n_in, n_out) == (104, 40):  # float32 + FMA: output 12 also reads input 31
        assert tuple(bilinear_sources(104, 40)[12]) == (31, 32)


def test_view_grid_is_row_major():
    spans = patch_spans(1, 28, 14)
    rects = View.squash(56, 28, 28, 28).grid(spans, spans)
    assert rects.tolist() == [
        [0, 0, 28, 14],
        [28, 0, 56, 14],
        [0, 14, 28, 28],
        [28, 14, 56, 28],
    ]
