"""Each layout kind's oracle: evidence → tokens held to EQUALITY with the model's own tracing.

Every registered family with a tiny recipe (``unit_names(tiny=True)``: so every layout kind on
every family that declares it) runs. Each family is a tiny-width random model at its real
geometry (:func:`tests.integration.family_table.conformance_adapter`: CLIP 336 with centre crop,
LLaVA-NeXT 336 with its default pinpoints, OneVision SigLIP 384/14 with the 36 default
pinpoints and ``anyres_max_9``, InternVL 448 tiles with thumbnail, Qwen2/2.5-VL's default
pixel budget and Qwen3-VL's checkpoint budget) behind its real processor. The reference is
:func:`harness.testing.trace.traced_positions`: black media vs. the same media with a white box,
exact-overlap resampling, a token-local vision tower, the model's own packing / pooling /
scatter; the positions whose decoder input changes. ``token_spans(...).evidence`` must be that
set exactly (an :class:`EvidenceError` where the trace is empty).

The default run keeps a few hard cases per family (corners, 1-px boxes, boxes on token
boundaries, thin and extreme boxes, and cases where the adapters used to differ from the trace:
SigLIP's 384/14 grid, transformers' anyres resize order, float touching, whole pages); the
``slow`` sweep traces hundreds of seeded boxes over photo and page sizes.
"""

from __future__ import annotations

import functools
import random

import pytest

pytest.importorskip("torch")
from PIL import Image  # noqa: E402

from harness.api.payloads import (  # noqa: E402
    Box,
    BoxEvidence,
    EvidenceError,
    PageEvidence,
    Request,
    TubeEvidence,
    Video,
)
from harness.models.unit import unit_names  # noqa: E402
from harness.testing.trace import draw_box, traced_positions  # noqa: E402
from tests.integration.family_table import ROWS, conformance_adapter  # noqa: E402

FAMILIES = unit_names(tiny=True)
"""Every registered family with a tiny recipe (its layout kind's oracle runs on each)."""
VIDEO_FAMILIES = unit_names(tiny=True, capability="video")
PAGE_FAMILIES = unit_names(tiny=True, capability="pages")


@functools.cache
def adapter(family: str):
    return conformance_adapter(family)


def black(size: tuple[int, int]) -> Image.Image:
    return Image.new("RGB", size)


def predicted(ad, request: Request, evidence) -> set[int]:
    try:
        return set(ad.token_spans(request, evidence).evidence)
    except EvidenceError:
        return set()


def assert_equal_to_trace(ad, blank: list[Request], lit: list[Request], evidence: list) -> None:
    traced = traced_positions(ad, blank, lit)
    assert any(traced), "test has no teeth: no box changed any decoder input"
    for row, (request, ev, seen) in enumerate(zip(blank, evidence, traced)):
        mine = predicted(ad, request, ev)
        assert mine == seen, (
            f"row {row} {ev}: predicted but unchanged {sorted(mine - seen)[:8]}, "
            f"changed but not predicted {sorted(seen - mine)[:8]} ({len(mine)} vs {len(seen)})"
        )


def check_boxes(ad, size: tuple[int, int], boxes: list[tuple[int, int, int, int]]) -> None:
    """One image of ``size`` per row, one box per row (a batch of same-shaped rows)."""
    blank = [Request("Where is it?", images=(black(size),)) for _ in boxes]
    lit = [Request("Where is it?", images=(draw_box(black(size), Box(*b)),)) for b in boxes]
    assert_equal_to_trace(ad, blank, lit, [BoxEvidence(Box(*b)) for b in boxes])


GENERIC = [
    ((500, 375), [(0, 0, 1, 1), (499, 374, 500, 375), (0, 0, 500, 375), (100, 50, 300, 200)]),
    ((818, 1582), [(400, 0, 410, 1582), (0, 700, 818, 703)]),  # thin boxes, tall page
    ((2000, 300), [(1000, 100, 1001, 101), (0, 0, 2000, 2)]),  # extreme aspect ratio
]
"""Corners and 1-px boxes, the whole image, thin and extreme boxes: every family."""


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("case", range(len(GENERIC)))
def test_boxes_equal_trace(family, case):
    size, boxes = GENERIC[case]
    check_boxes(adapter(family), size, boxes)


@pytest.mark.parametrize("family", FAMILIES)
def test_former_mismatches_equal_trace(family):
    for size, boxes in ROWS[family].trace_cases:
        check_boxes(adapter(family), size, boxes)


@pytest.mark.parametrize("family", PAGE_FAMILIES)
def test_several_images_and_pages_equal_trace(family):
    """Two images and two pages; rows: a box on image 1, a whole page, boxes on a page."""
    ad = adapter(family)
    sizes = {"images": [(320, 240), (240, 400)], "pages": [(306, 396), (400, 300)]}

    def request(lit_image: int | None = None, box: Box | None = None) -> Request:
        media = [black(s) for s in sizes["images"] + sizes["pages"]]
        if lit_image is not None:
            media[lit_image] = draw_box(media[lit_image], box)
        return Request("Which page?", images=tuple(media[:2]), pages=tuple(media[2:]))

    page = Box(0, 0, *sizes["pages"][1])
    rows = [
        (1, Box(200, 300, 240, 400), BoxEvidence(Box(200, 300, 240, 400), image_index=1)),
        (3, page, PageEvidence(pages=(1,))),  # the whole page: no newlines, no padding
        (2, Box(5, 350, 300, 395), PageEvidence(pages=(0,), boxes={0: (Box(5, 350, 300, 395),)})),
    ]
    blank = [request() for _ in rows]
    lit = [request(i, box) for i, box, _ in rows]
    assert_equal_to_trace(ad, blank, lit, [ev for *_, ev in rows])


@pytest.mark.parametrize("family", VIDEO_FAMILIES)
@pytest.mark.parametrize(("n_frames", "frame"), [(4, 1), (5, 4)])
def test_video_tube_equals_trace(family, n_frames, frame):
    """A box on one frame (odd / even / the repeated last frame of an odd count)."""
    ad = adapter(family)
    size, box = (320, 240), Box(101, 37, 229, 150)
    indices = tuple(range(0, 4 * n_frames, 4))

    def request(lit: bool) -> Request:
        frames = [black(size) for _ in range(n_frames)]
        if lit:
            frames[frame] = draw_box(frames[frame], box)
        return Request("What moves?", video=Video(tuple(frames), indices, fps=8.0))

    assert_equal_to_trace(ad, [request(False)], [request(True)], [TubeEvidence({frame: box})])


@pytest.mark.parametrize("family", VIDEO_FAMILIES)
def test_a_tube_box_wholly_outside_one_frame_drops_that_frame(family):
    """Issue 29: one frame's box past the frame edge failed the whole tube (EvidenceError).

    The frame whose box lies outside is left out (as VidSTG's loader reads such a tube); the
    other frame still counts, equal to the trace of its box alone; with no box inside any
    frame the tube is refused.
    """
    ad = adapter(family)
    size, box, outside = (320, 240), Box(101, 37, 229, 150), Box(330, 10, 400, 60)
    frames, indices = [black(size) for _ in range(4)], (0, 4, 8, 12)
    blank = Request("What moves?", video=Video(tuple(frames), indices, fps=8.0))
    lit_frames = list(frames)
    lit_frames[1] = draw_box(frames[1], box)
    lit = Request("What moves?", video=Video(tuple(lit_frames), indices, fps=8.0))
    assert_equal_to_trace(ad, [blank], [lit], [TubeEvidence({1: box, 2: outside})])
    alone = set(ad.token_spans(blank, TubeEvidence({1: box})).evidence)
    assert set(ad.token_spans(blank, TubeEvidence({1: box, 2: outside})).evidence) == alone
    with pytest.raises(EvidenceError, match="every box of the tube lies wholly outside"):
        ad.token_spans(blank, TubeEvidence({2: outside, 3: outside}))


@pytest.mark.parametrize("family", PAGE_FAMILIES)
def test_a_page_box_wholly_outside_its_page_drops_that_page(family):
    """Issue 35: a page box past the page edge failed the whole page evidence (EvidenceError).

    As a tube's frame is dropped: the box that lies outside is left out, a page all of whose
    boxes lie outside is dropped, the other pages (and boxes) still count, equal to the trace
    of the inside box alone; with every box outside its page the evidence is refused.
    """
    ad = adapter(family)
    sizes = [(306, 396), (400, 300)]
    box, outside = Box(5, 350, 300, 395), Box(410, 10, 480, 60)  # outside: past page 1's width
    blank = Request("Which page?", pages=tuple(black(s) for s in sizes))
    lit = Request("Which page?", pages=(draw_box(black(sizes[0]), box), black(sizes[1])))
    rows = [
        PageEvidence(pages=(0, 1), boxes={0: (box,), 1: (outside,)}),  # page 1 dropped
        PageEvidence(pages=(0,), boxes={0: (box, Box(310, 400, 350, 420))}),  # one box left out
    ]
    assert_equal_to_trace(ad, [blank, blank], [lit, lit], rows)
    alone = set(ad.token_spans(blank, PageEvidence(pages=(0,), boxes={0: (box,)})).evidence)
    for evidence in rows:
        assert set(ad.token_spans(blank, evidence).evidence) == alone
    whole = PageEvidence(pages=(0, 1), boxes={1: (outside,)})  # page 0 whole, page 1 dropped
    assert (
        ad.token_spans(blank, whole).evidence
        == ad.token_spans(blank, PageEvidence(pages=(0,))).evidence
    )
    with pytest.raises(EvidenceError, match="every box of the page evidence lies wholly outside"):
        ad.token_spans(blank, PageEvidence(pages=(1,), boxes={1: (outside,)}))


@pytest.mark.parametrize("family", FAMILIES)
def test_rows_of_a_left_padded_batch_equal_trace(family):
    ad = adapter(family)
    rows = [
        ("A short one?", (640, 480), Box(300, 200, 364, 248)),
        ("A much longer question about the picture, padded by nobody?", (300, 500), None),
        ("Mid-length question here?", (1024, 768), Box(511, 383, 513, 385)),
    ]
    blank = [Request(text, images=(black(size),)) for text, size, _ in rows]
    lit = [
        Request(text, images=(draw_box(black(size), box) if box else black(size),))
        for text, size, box in rows
    ]
    evidence = [BoxEvidence(box) if box else BoxEvidence(Box(0, 0, 1, 1)) for *_, box in rows]
    traced = traced_positions(ad, blank, lit)
    mask = ad.prepare(blank)["attention_mask"]
    assert (mask == 0).any(), "test has no teeth: the batch is not padded"
    for row, (request, ev, seen) in enumerate(zip(blank, evidence, traced)):
        if rows[row][2] is None:
            assert seen == set()  # an unlit row changes nothing
            continue
        assert seen and predicted(ad, request, ev) == seen


def _sweep_boxes(rng: random.Random, size: tuple[int, int], n: int) -> list[tuple[int, ...]]:
    w, h = size
    out = []
    for _ in range(n):
        x1, y1 = rng.randrange(w), rng.randrange(h)
        x2 = rng.randrange(x1 + 1, min(w, x1 + max(2, w // 3)) + 1)
        y2 = rng.randrange(y1 + 1, min(h, y1 + max(2, h // 3)) + 1)
        out.append((x1, y1, x2, y2))
    for k in (7, 14, 16, 25, 28, 32, 50, 100):  # edges on round numbers: token boundaries
        if k >= min(w, h):
            continue
        x1, y1 = rng.randrange(w // k) * k, rng.randrange(h // k) * k
        out.append(
            (x1, y1, min(w, x1 + k * rng.randrange(1, 4)), min(h, y1 + k * rng.randrange(1, 4)))
        )
    return out


SWEEP_SIZES = [(500, 375), (4000, 3000), (1200, 900), (600, 400), (640, 427), (800, 600),
               (818, 1582), (1024, 768), (333, 1000), (2000, 300), (300, 2000), (1700, 2200),
               (612, 792), (700, 196), (100, 700), (1808, 1582), (57, 130), (30, 40)]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_sweep_equals_trace(family):
    ad = adapter(family)
    rng = random.Random(19)
    for size in SWEEP_SIZES:
        boxes = _sweep_boxes(rng, size, 16)
        for start in range(0, len(boxes), 8):
            check_boxes(ad, size, boxes[start : start + 8])
