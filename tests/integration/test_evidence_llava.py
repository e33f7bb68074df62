"""Evidence → token mapping of the LLaVA-family / InternVL adapters, checked end to end.

Method (attention.md): make the vision tower token-local (a registered attention function
that returns V, so a token only sees its own patch), show a black image and the same image
with a white box, capture the decoder's input embeddings (features scattered at the visual
positions) and check predicted(box shrunk) ⊆ changed positions ⊆ predicted(box grown). The
margin is 4 px in the vision tower's pixels, i.e. 4 · max(1, original px per tower px).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from PIL import Image, ImageDraw  # noqa: E402

from harness.api.payloads import Box, BoxEvidence, Request, TubeEvidence, Video  # noqa: E402
from harness.api.registry import MODEL_FAMILIES  # noqa: E402
from harness.models.layouts import SpatialKind  # noqa: E402
from harness.models.unit import unit_names, unit_of  # noqa: E402
from harness.testing.tiny import build_tiny_model, tiny_processor  # noqa: E402
from harness.testing.trace import text_decoder, vision_tower  # noqa: E402

TOKEN_LOCAL = "headscope_test_tokenlocal"
FAMILIES = tuple(n for n in unit_names(tiny=True) if isinstance(unit_of(n).layout, SpatialKind))
"""Families whose layout kind follows from the media sizes (fixed grid, anyres, tiles)."""
VIDEO_FAMILIES = tuple(n for n in FAMILIES if "video" in unit_of(n).capabilities)


def _value_only(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kw):
    return value.transpose(1, 2).contiguous(), None


def _local_adapter(family: str, **config):
    from transformers import AttentionInterface

    AttentionInterface.register(TOKEN_LOCAL, _value_only)
    model = build_tiny_model(family)
    vision_tower(model).config._attn_implementation = TOKEN_LOCAL
    processor = tiny_processor(family)
    for key, value in config.items():  # e.g. a smaller anyres_max_N, on model and processor
        setattr(model.config, key, value)
        setattr(processor, key, value)
    return MODEL_FAMILIES.get(family).from_parts(model, processor)


@pytest.fixture(scope="module")
def adapters():
    cache = {}

    def get(family: str, **config):
        key = (family, tuple(sorted(config.items())))
        if key not in cache:
            cache[key] = _local_adapter(family, **config)
        return cache[key]

    return get


def _embeds(adapter, request: Request) -> torch.Tensor:
    seen = {}

    def grab(module, args, kwargs):
        seen["x"] = kwargs["inputs_embeds"].detach().clone()

    lm = text_decoder(adapter.model)
    handle = lm.register_forward_pre_hook(grab, with_kwargs=True)
    try:
        with torch.no_grad():
            adapter.model(**adapter.prepare([request]))
    finally:
        handle.remove()
    return seen["x"][0]


def _with_box(size, box: Box) -> Image.Image:
    image = Image.new("RGB", size)
    ImageDraw.Draw(image).rectangle([box.x1, box.y1, box.x2 - 1, box.y2 - 1], fill="white")
    return image


def _changed(adapter, before: Request, after: Request) -> set[int]:
    diff = (_embeds(adapter, before) - _embeds(adapter, after)).abs().amax(-1)
    return set(torch.nonzero(diff > 1e-5).flatten().tolist())


def _margin(adapter, size: tuple[int, int]) -> float:
    """4 tower pixels, in original pixels (the tower's input size from its config)."""
    tower = adapter.model.config.vision_config.image_size
    tower = tower[0] if isinstance(tower, list | tuple) else tower
    return 4.0 * max(1.0, max(size) / int(tower))


def _check(adapter, family, make_request, size, box, evidence):
    changed = _changed(adapter, make_request(Image.new("RGB", size)), make_request(None))
    margin = _margin(adapter, size)
    request = make_request(Image.new("RGB", size))
    inner = set(adapter.token_spans(request, evidence(box.grow(-margin))).evidence)
    outer = set(adapter.token_spans(request, evidence(box.grow(margin))).evidence)
    visual = set(adapter.token_spans(request).visual)
    assert inner, "test has no teeth: the shrunk box covers no token"
    assert inner <= changed, f"tokens predicted but unchanged: {sorted(inner - changed)[:8]}"
    assert changed <= outer, f"tokens changed but not predicted: {sorted(changed - outer)[:8]}"
    assert outer <= visual


IMAGE_CASES = [
    ((150, 100), Box(30, 20, 110, 80)),
    ((90, 260), Box(10, 100, 80, 220)),
    ((400, 300), Box(100, 50, 300, 220)),
    ((700, 500), Box(200, 100, 520, 420)),
]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("size", "box"), IMAGE_CASES)
def test_single_image_box_maps_to_changed_tokens(adapters, family, size, box):
    adapter = adapters(family)

    def make(image):
        return Request("Where?", images=(image or _with_box(size, box),))

    _check(adapter, family, make, size, box, lambda b: BoxEvidence(b, 0))


def test_onevision_anyres_max_downsampling(adapters):
    # anyres_max_2: the 3×2-crop grid (~3× too many tokens) is shrunk bilinearly
    adapter = adapters("llava_onevision", vision_aspect_ratio="anyres_max_2")
    size, box = (330, 220), Box(60, 40, 250, 180)
    probe = Request("q", images=(Image.new("RGB", size),))
    plain = len(adapters("llava_onevision").token_spans(probe).visual)
    assert len(adapter.token_spans(probe).visual) < plain

    def make(image):
        return Request("Where?", images=(image or _with_box(size, box),))

    _check(adapter, "llava_onevision", make, size, box, lambda b: BoxEvidence(b, 0))


@pytest.mark.parametrize("family", FAMILIES)
def test_second_of_two_images(adapters, family):
    adapter = adapters(family)
    other = Image.new("RGB", (120, 90), (10, 200, 30))
    size, box = (160, 120), Box(40, 30, 130, 100)

    def make(image):
        return Request("Compare.", images=(other, image or _with_box(size, box)))

    _check(adapter, family, make, size, box, lambda b: BoxEvidence(b, 1))


@pytest.mark.parametrize("family", VIDEO_FAMILIES)
def test_tube_on_one_frame(adapters, family):
    adapter = adapters(family)
    size, box = (128, 96), Box(20, 20, 100, 80)
    plain = tuple(Image.new("RGB", size, (0, 0, 0)) for _ in range(3))

    def make(image):
        frames = list(plain)
        frames[1] = image or _with_box(size, box)
        return Request("What moves?", video=Video(tuple(frames), (0, 4, 8)))

    _check(adapter, family, make, size, box, lambda b: TubeEvidence({1: b}))


def test_llava_box_partly_outside_crop(adapters):
    adapter = adapters("llava")
    size = (300, 100)  # resized to 336×112; the center crop keeps x ∈ [100, 200)
    box = Box(0, 20, 120, 80)

    def make(image):
        return Request("Where?", images=(image or _with_box(size, box),))

    _check(adapter, "llava", make, size, box, lambda b: BoxEvidence(b, 0))
