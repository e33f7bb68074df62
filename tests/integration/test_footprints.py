"""Token footprints (the attention maps' pixel space) invert the evidence map, every family.

For each family at its real geometry (tiny-width random model behind its real processor, as
``test_evidence_conformance.py`` builds them) and the bundled toy: a request with an image and
two pages, and a 5-frame video (odd: Qwen repeats the last frame). ``token_footprints`` must
list exactly the visual positions of ``token_spans``, and each token's footprint, given back as
evidence on its medium (a box on the image, a region of the page, a box on the frame — and on
the other frame of a Qwen temporal pair), must select that token through ``token_spans``.
Tokens without a footprint (row newlines, CLS) are never evidence of a whole medium.

The default run checks a seeded dozen tokens per medium (plus its first and last); the slow
test checks every token.
"""

from __future__ import annotations

import contextlib
import functools
import random

import numpy as np
import pytest

pytest.importorskip("torch")
from PIL import Image  # noqa: E402

from harness.api.payloads import (  # noqa: E402
    Box,
    BoxEvidence,
    PageEvidence,
    Request,
    TubeEvidence,
    Video,
)
from harness.models.llava import FRAME  # noqa: E402
from harness.models.unit import unit_names, unit_of  # noqa: E402
from tests.integration.test_evidence_conformance import adapter as real_adapter  # noqa: E402

ALL = unit_names()
"""Every family with a unit: those with a tiny recipe at real geometry, the toy as shipped."""


@functools.cache
def adapter(family: str):
    if unit_of(family).tiny is None:
        from harness.api.model import load_adapter
        from harness.api.specs import ModelSpec

        return load_adapter(ModelSpec(family))
    return real_adapter(family)


def requests(family: str) -> list[Request]:
    """An image with two pages, and a 5-frame video (the parts the family can be shown)."""
    big = family != "toy"
    can = unit_of(family).capabilities
    image = Image.new("RGB", (500, 375) if big else (64, 64), (90, 20, 20))
    pages = (Image.new("RGB", (306, 396)), Image.new("RGB", (400, 300))) if big else ()
    size = (320, 240) if big else (64, 64)
    frames = tuple(Image.new("RGB", size, (0, 0, 10 * i)) for i in range(5))
    video = Video(frames, tuple(range(0, 20, 4)), fps=8.0)
    out = [Request("Where is the thing?", images=(image,), pages=pages if "pages" in can else ())]
    if "video" in can:
        out.append(Request("What moves?", video=video))
    return out


def evidence_for(request: Request, source: int, box: Box):
    n_images = len(request.images)
    if source >= FRAME:
        return TubeEvidence({source - FRAME: box})
    if source >= n_images:
        page = source - n_images
        return PageEvidence(pages=(page,), boxes={page: (box,)})
    return BoxEvidence(box, image_index=source)


def whole(request: Request, source: int):
    n_images = len(request.images)
    if source >= FRAME:
        w, h = request.video.frames[source - FRAME].size
        return TubeEvidence({source - FRAME: Box(0, 0, w, h)})
    if source >= n_images:
        return PageEvidence(pages=(source - n_images,))
    w, h = request.images[source].size
    return BoxEvidence(Box(0, 0, w, h), image_index=source)


@contextlib.contextmanager
def encode_once(ad):
    """Reuse each request's processor output (deterministic) across the many evidence queries."""
    plain, memo = ad.encode, {}

    def encode(batch):
        key = tuple(id(r) for r in batch)
        if key not in memo:
            memo[key] = (batch, plain(batch))  # keeps the requests alive: ids stay unique
        return memo[key][1]

    ad.encode = encode
    try:
        yield
    finally:
        del ad.encode


def check(family: str, per_medium: int | None) -> tuple[int, int]:
    """(tokens checked, tokens without a footprint)."""
    ad = adapter(family)
    with encode_once(ad):
        return _check(ad, family, per_medium)


def _check(ad, family: str, per_medium: int | None) -> tuple[int, int]:
    rng = random.Random(7)
    checked = blanks = 0
    for request in requests(family):
        fp = ad.token_footprints(request)
        spans = ad.token_spans(request)
        assert tuple(fp.positions.tolist()) == spans.visual
        assert fp.frames_per_token == (2 if family.startswith("qwen") and request.video else 1)
        layout = fp.layout
        for source in sorted(set(layout.source.tolist())):
            mine = np.flatnonzero(layout.source == source)
            if source < 0:  # e.g. a video's trailing newline: nowhere
                assert np.isnan(layout.rects[mine]).all()
                continue
            width, height = layout.sizes[source]
            rects = layout.rects[mine]
            blank = np.isnan(rects).any(1)
            seen = ~blank & (rects[:, 2] > 0) & (rects[:, 0] < width)
            seen &= (rects[:, 3] > 0) & (rects[:, 1] < height)
            full = set(ad.token_spans(request, whole(request, source)).evidence)
            assert not full & set(fp.positions[mine[~seen]].tolist())  # newlines, padding
            blanks += int(blank.sum())
            assert set(fp.positions[mine[seen]].tolist()) <= full
            picks = np.flatnonzero(seen)
            if per_medium is not None and len(picks) > per_medium:
                chosen = {0, len(picks) - 1, *rng.sample(range(len(picks)), per_medium)}
                picks = picks[sorted(chosen)]
            for i in picks:
                box = Box(*(float(v) for v in rects[i]))
                position = int(fp.positions[mine[i]])
                got = ad.token_spans(request, evidence_for(request, source, box)).evidence
                assert position in got, f"{family} source {source} token {i} {box}"
                if source >= FRAME and fp.frames_per_token > 1:
                    partner = source + 1
                    if partner - FRAME < len(request.video.frames):
                        got = ad.token_spans(request, evidence_for(request, partner, box))
                        assert position in got.evidence
                checked += 1
    return checked, blanks


@pytest.mark.parametrize("family", ALL)
def test_footprints_map_back_through_the_evidence_map(family):
    checked, blanks = check(family, per_medium=12)
    assert checked >= 20
    if unit_of(family).layout.kind == "anyres":
        assert blanks > 0  # row newlines: the no-footprint rule has teeth


@pytest.mark.slow
@pytest.mark.parametrize("family", ALL)
def test_every_footprint_maps_back(family):
    assert check(family, per_medium=None)[0] > 0
