"""Evidence → token positions for the Qwen adapters, checked against the real vision tower.

Method (attention.md): make the vision tower token-local (its attention returns V, so each
merged token depends only on its own patches), feed a black image and the same image with a
white box, and compare the decoder's input embeddings position by position. The changed
positions must satisfy predicted(box shrunk by m) ⊆ changed ⊆ predicted(box grown by m).
m is 4 px of the *resized* image (4 · max(1, original/resized) original px): bicubic
resampling spreads an edge over 2 resized px, which is more than 4 original px once an image
is downscaled a lot.
"""

from __future__ import annotations

import contextlib

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from harness.api.payloads import (  # noqa: E402
    Box,
    BoxEvidence,
    EvidenceError,
    PageEvidence,
    Request,
    TubeEvidence,
    Video,
)
from harness.api.registry import MODEL_FAMILIES  # noqa: E402
from harness.models.qwen2_vl import QwenVLAdapter  # noqa: E402
from harness.models.unit import unit_names, unit_of  # noqa: E402
from harness.testing.tiny import tiny_adapter  # noqa: E402

FAMILIES = unit_names(tiny=True, kind="grid_thw")
QWEN = tuple(f for f in FAMILIES if issubclass(MODEL_FAMILIES.get(f), QwenVLAdapter))
"""The Qwen adapters (``resized_size``, video); GLM-4.1V's oracle is the conformance test."""
VIDEO = tuple(f for f in QWEN if "video" in unit_of(f).capabilities)
_CACHE: dict[str, object] = {}


def adapter(family: str):
    if family not in _CACHE:
        _CACHE[family] = tiny_adapter(family)
    return _CACHE[family]


def _local_v(module, query, key, value, attention_mask, **kwargs):
    return value.transpose(1, 2).contiguous(), None


@contextlib.contextmanager
def token_local(model):
    from transformers import AttentionInterface

    AttentionInterface.register("hs_test_token_local", _local_v)
    cfg = model.model.visual.config
    old = cfg._attn_implementation
    cfg._attn_implementation = "hs_test_token_local"
    try:
        yield
    finally:
        cfg._attn_implementation = old


def decoder_inputs(ad, request: Request) -> torch.Tensor:
    """The decoder's inputs_embeds (vision features scattered into the sequence), row 0."""
    seen = {}

    def grab(_module, _args, kwargs):
        seen["x"] = kwargs["inputs_embeds"].detach().clone()

    hook = ad.model.model.language_model.register_forward_pre_hook(grab, with_kwargs=True)
    try:
        with torch.no_grad(), token_local(ad.model):
            ad.model(**ad.prepare([request]))
    finally:
        hook.remove()
    return seen["x"][0]


def changed_positions(a: torch.Tensor, b: torch.Tensor) -> set[int]:
    diff = (a - b).abs().amax(dim=-1)
    return set(torch.nonzero(diff > 1e-4 * (1 + a.abs().amax())).flatten().tolist())


def black(w: int, h: int) -> Image.Image:
    return Image.new("RGB", (w, h))


def with_box(img: Image.Image, box: Box) -> Image.Image:
    out = img.copy()
    # PIL's rectangle includes x2/y2; Box edges are exclusive
    ImageDraw.Draw(out).rectangle([box.x1, box.y1, box.x2 - 1, box.y2 - 1], fill=(255, 255, 255))
    return out


def margin(ad, size: tuple[int, int]) -> float:
    rw, rh = ad.resized_size(size)
    return 4.0 * max(1.0, size[0] / rw, size[1] / rh)


SHAPES = [
    ((100, 70), Box(20, 10, 61, 44)),
    ((57, 130), Box(5, 60, 40, 120)),
    ((30, 40), Box(8, 8, 22, 30)),  # upscaled to min_pixels
    ((900, 640), Box(300, 100, 520, 420)),  # downscaled to max_pixels
]


@pytest.mark.parametrize("family", QWEN)
@pytest.mark.parametrize(("size", "box"), SHAPES)
def test_box_tokens_match_vision_tower(family, size, box):
    ad = adapter(family)
    text = "Where is the box?"
    base = decoder_inputs(ad, Request(text=text, images=(black(*size),)))
    lit = Request(text=text, images=(with_box(black(*size), box),))
    changed = changed_positions(base, decoder_inputs(ad, lit))
    m = margin(ad, size)
    spans = ad.token_spans(lit, BoxEvidence(box))
    inner = set(ad.token_spans(lit, BoxEvidence(box.grow(-m))).evidence)
    outer = set(ad.token_spans(lit, BoxEvidence(box.grow(m))).evidence)
    assert changed, "the white box changed no decoder input"
    assert changed <= set(spans.visual)
    assert inner <= changed <= outer
    assert inner <= set(spans.evidence) <= outer


@pytest.mark.parametrize("family", VIDEO)
@pytest.mark.parametrize("n_frames", [4, 5])
def test_tube_tokens_match_vision_tower(family, n_frames):
    ad = adapter(family)
    size, box, frame = (96, 64), Box(30, 8, 70, 40), n_frames - 2
    frames = [black(*size) for _ in range(n_frames)]
    indices = tuple(range(0, 3 * n_frames, 3))
    base = decoder_inputs(ad, Request(text="Q?", video=Video(tuple(frames), indices, fps=6.0)))
    frames[frame] = with_box(frames[frame], box)
    lit = Request(text="Q?", video=Video(tuple(frames), indices, fps=6.0))
    changed = changed_positions(base, decoder_inputs(ad, lit))
    m = 4.0 * max(1.0, size[0] / 64)
    inner = set(ad.token_spans(lit, TubeEvidence({frame: box.grow(-m)})).evidence)
    outer = set(ad.token_spans(lit, TubeEvidence({frame: box.grow(m)})).evidence)
    spans = ad.token_spans(lit, TubeEvidence({frame: box}))
    assert changed and changed <= set(spans.visual)
    assert inner <= changed <= outer
    # a box on the other frame of the same temporal group maps to the same tokens
    partner = frame + 1 if frame % 2 == 0 else frame - 1
    if partner < n_frames:
        same = ad.token_spans(lit, TubeEvidence({partner: box}))
        assert same.evidence == spans.evidence


@pytest.mark.parametrize("family", FAMILIES)
def test_pages_map_to_their_own_tokens(family):
    ad = adapter(family)
    pages = (black(80, 100), black(100, 80), black(60, 60))
    request = Request(text="Which page?", images=(black(50, 50),), pages=pages)
    spans = ad.token_spans(request, PageEvidence(pages=(1,)))
    whole = ad.token_spans(request, PageEvidence(pages=(0, 1, 2)))
    boxed = ad.token_spans(request, PageEvidence(pages=(1,), boxes={1: (Box(0, 0, 30, 30),)}))
    image_only = ad.token_spans(request, BoxEvidence(Box(0, 0, 50, 50), image_index=0))
    assert set(boxed.evidence) < set(spans.evidence) < set(whole.evidence) < set(spans.visual)
    assert not set(image_only.evidence) & set(whole.evidence)
    assert set(image_only.evidence) | set(whole.evidence) == set(spans.visual)


@pytest.mark.parametrize("family", FAMILIES)
def test_bad_evidence_raises(family):
    ad = adapter(family)
    request = Request(text="Q?", images=(black(100, 70),))
    with pytest.raises(EvidenceError, match="outside"):
        ad.token_spans(request, BoxEvidence(Box(200, 200, 300, 300)))
    with pytest.raises(EvidenceError, match="image 1"):
        ad.token_spans(request, BoxEvidence(Box(0, 0, 10, 10), image_index=1))
    with pytest.raises(EvidenceError, match="without video"):
        ad.token_spans(request, TubeEvidence({0: Box(0, 0, 10, 10)}))
    with pytest.raises(EvidenceError, match="page"):
        ad.token_spans(request, PageEvidence(pages=(0,)))
    with pytest.raises(EvidenceError):
        Box(5, 5, 5, 9)
    if "video" not in unit_of(family).capabilities:
        return
    clip = Request(text="Q?", video=Video((black(64, 64),) * 2, (0, 1), fps=1.0))
    with pytest.raises(EvidenceError, match="frame 2"):
        ad.token_spans(clip, TubeEvidence({2: Box(0, 0, 10, 10)}))


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    w=st.integers(20, 500),
    h=st.integers(20, 500),
    fx=st.tuples(st.floats(-0.3, 1.2), st.floats(0.05, 1.0)),
    fy=st.tuples(st.floats(-0.3, 1.2), st.floats(0.05, 1.0)),
    grow=st.floats(1.0, 40.0),
)
def test_box_positions_properties(family, w, h, fx, fy, grow):
    ad = adapter(family)
    request = Request(text="Q?", images=(black(w, h),))
    box = Box(fx[0] * w, fy[0] * h, fx[0] * w + fx[1] * w, fy[0] * h + fy[1] * h)
    try:
        spans = ad.token_spans(request, BoxEvidence(box))
    except EvidenceError:
        assert box.clip(w, h) is None  # only a box fully outside may fail
        return
    visual = set(spans.visual)
    assert spans.evidence and set(spans.evidence) <= visual
    bigger = ad.token_spans(request, BoxEvidence(box.grow(grow)))
    assert set(spans.evidence) <= set(bigger.evidence) <= visual
    clipped = ad.token_spans(request, BoxEvidence(box.clip(w, h)))
    assert clipped.evidence == spans.evidence  # parts outside the image add nothing
