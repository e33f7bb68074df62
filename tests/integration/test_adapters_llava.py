"""LLaVA / LLaVA-NeXT / LLaVA-OneVision / InternVL / toy adapters on tiny random models."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
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
from harness.api.registry import MODEL_FAMILIES  # noqa: E402
from harness.attention.dispatch import ATTN_NAME  # noqa: E402
from harness.models.internvl import InternVLAdapter  # noqa: E402
from harness.models.layouts import SpatialKind  # noqa: E402
from harness.models.llava import LlavaAdapter  # noqa: E402
from harness.models.llava_onevision import LlavaOnevisionAdapter  # noqa: E402
from harness.models.toy import TOY_DIR, ToyAdapter  # noqa: E402
from harness.models.unit import unit_names, unit_of  # noqa: E402
from harness.testing import tiny_processors as tp  # noqa: E402
from harness.testing.tiny import build_tiny_model, tiny_adapter  # noqa: E402

FAMILIES = tuple(n for n in unit_names(tiny=True) if isinstance(unit_of(n).layout, SpatialKind))
"""Families whose layout kind follows from the media sizes (fixed grid, anyres, tiles)."""
IMAGE = Image.new("RGB", (150, 100), (40, 80, 120))
TALL = Image.new("RGB", (90, 130), (200, 10, 10))
FRAMES = tuple(Image.new("RGB", (64, 48), (60 * i, 20, 90)) for i in range(3))
REQUESTS = [
    Request("What is shown here?", images=(IMAGE,), max_new_tokens=4),
    Request("Describe both images.", images=(IMAGE, TALL), max_new_tokens=3),
    Request("What happens in the video?", video=Video(FRAMES, (0, 5, 10)), max_new_tokens=5),
    Request("Read page two.", pages=(TALL, IMAGE), max_new_tokens=2),
]


@pytest.fixture(scope="module", params=FAMILIES)
def adapter(request):
    return tiny_adapter(request.param)


def shown(adapter, requests: list[Request]) -> list[Request]:
    """The requests the family can be shown (its unit's capabilities: video, pages)."""
    can = adapter.unit.capabilities
    video_ok = [r for r in requests if r.video is None or "video" in can]
    return [r for r in video_ok if not r.pages or "pages" in can]


def needs(adapter, capability: str) -> None:
    if capability not in adapter.unit.capabilities:
        pytest.skip(f"{adapter.registry_name} has no {capability}")


def test_registered_with_hub_defaults():
    assert MODEL_FAMILIES.get("llava") is LlavaAdapter
    assert MODEL_FAMILIES.get("toy") is ToyAdapter
    assert LlavaOnevisionAdapter.default_pretrained == "llava-hf/llava-onevision-qwen2-7b-ov-hf"
    assert InternVLAdapter.default_pretrained == "OpenGVLab/InternVL3-8B-hf"
    want = {"llava": "normalized", "llava_next": "normalized", "llava_onevision": "normalized"}
    want |= {"internvl": "normalized_1000_auto", "toy": "normalized"}
    for name, convention in want.items():
        assert MODEL_FAMILIES.get(name).box_convention == convention


def test_forward_through_dispatch_equals_sdpa(adapter):
    family = adapter.registry_name
    assert adapter.model.config.get_text_config()._attn_implementation == ATTN_NAME
    reference = build_tiny_model(family)  # same seed, plain sdpa
    for req in shown(adapter, REQUESTS[:3]):
        inputs = adapter.prepare([req])
        with torch.no_grad():
            ours = adapter.model(**inputs).logits
            ref = reference(**inputs).logits
        assert torch.isfinite(ours).all()
        torch.testing.assert_close(ours, ref, rtol=0, atol=1e-6)


def test_left_padded_batch_equals_one_by_one(adapter):
    requests = shown(adapter, REQUESTS)
    batch = adapter.prepare(requests)
    mask = batch["attention_mask"]
    assert (mask[:, -1] == 1).all() and (mask[:, 0] == 0).any()  # left padding
    with torch.no_grad():
        last = adapter.model(**batch).logits[:, -1]
        for row, req in enumerate(requests):
            alone = adapter.model(**adapter.prepare([req])).logits[0, -1]
            torch.testing.assert_close(last[row], alone, rtol=1e-4, atol=1e-4)
    together = adapter.generate(requests)
    single = [adapter.generate([r])[0] for r in requests]
    assert [g.text for g in together] == [g.text for g in single]
    for gen, req in zip(together, requests):
        assert 1 <= gen.output_tokens <= req.max_new_tokens
        assert gen.prompt_tokens == adapter.token_spans(req).seq_len


@pytest.mark.parametrize("index", range(len(REQUESTS)))
def test_spans_instruction_and_visual_positions(adapter, index):
    req = REQUESTS[index]
    if not shown(adapter, [req]):
        pytest.skip(f"{adapter.registry_name} cannot be shown this request")
    spans = adapter.token_spans(req)
    ids = adapter.encode([req])["input_ids"][0].tolist()
    assert spans.seq_len == len(ids)
    assert adapter.tokenizer.decode([ids[i] for i in spans.instruction]).strip() == req.text
    wanted = set(adapter.visual_token_ids())
    assert list(spans.visual) == [i for i, t in enumerate(ids) if t in wanted]
    assert not set(spans.visual) & set(spans.instruction)


def test_page_evidence_whole_page_and_box(adapter):
    needs(adapter, "pages")
    req = REQUESTS[3]
    spans = adapter.token_spans(req)
    page1 = adapter.token_spans(req, PageEvidence((1,))).evidence
    boxed = adapter.token_spans(req, PageEvidence((1,), {1: (Box(0, 0, 40, 30),)})).evidence
    assert set(boxed) < set(page1) <= set(spans.visual)
    page0 = adapter.token_spans(req, PageEvidence((0,))).evidence
    assert max(page0) < min(page1)  # pages in display order


def test_bad_evidence_raises(adapter):
    req = REQUESTS[0]
    with pytest.raises(EvidenceError):
        adapter.token_spans(req, BoxEvidence(Box(400, 400, 500, 500)))  # outside the image
    with pytest.raises(EvidenceError):
        adapter.token_spans(req, BoxEvidence(Box(1, 1, 5, 5), image_index=3))
    with pytest.raises(EvidenceError):
        adapter.token_spans(req, TubeEvidence({0: Box(0, 0, 5, 5)}))  # no video
    if "video" in adapter.unit.capabilities:
        with pytest.raises(EvidenceError):  # a frame the video does not have
            adapter.token_spans(REQUESTS[2], TubeEvidence({7: Box(0, 0, 5, 5)}))
    with pytest.raises(EvidenceError):
        Box(5, 5, 5, 9)  # degenerate


def test_llava_box_in_cropped_away_region_raises():
    ad = LlavaAdapter.from_parts(build_tiny_model("llava"), tp.tiny_llava_processor())
    req = Request("q", images=(Image.new("RGB", (300, 100)),))  # crop keeps x ∈ [100, 200)
    with pytest.raises(EvidenceError, match="no visual token"):
        ad.token_spans(req, BoxEvidence(Box(0, 10, 90, 90)))
    assert ad.token_spans(req, BoxEvidence(Box(90, 10, 120, 90))).evidence


def test_parse_box_normalized(adapter):
    if adapter.box_convention == "paligemma_loc":  # y1 x1 y2 x2, each index / 1023 (loc_box)
        box = adapter.parse_box("<loc0102><loc0256><loc0921><loc0767>", (200, 100))
        expected = (256 / 1023 * 200, 102 / 1023 * 100, 767 / 1023 * 200, 921 / 1023 * 100)
        assert box is not None and box.as_tuple() == expected
        assert adapter.parse_box("[ 0.25 , 0.1 , 0.75 , 0.9 ]", (200, 100)) is None
        return
    box = adapter.parse_box("[ 0.25 , 0.1 , 0.75 , 0.9 ]", (200, 100))
    assert box is not None and box.as_tuple() == (50.0, 10.0, 150.0, 90.0)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    w=st.integers(24, 420),
    h=st.integers(24, 420),
    fx=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    fy=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    grow=st.floats(1, 40),
)
def test_property_evidence_inside_visual_and_monotone(adapter, w, h, fx, fy, grow):
    x1, x2 = sorted(fx)
    y1, y2 = sorted(fy)
    if (x2 - x1) * w < 1 or (y2 - y1) * h < 1:
        return
    box = Box(x1 * w, y1 * h, x2 * w, y2 * h)
    req = Request("Where is it?", images=(Image.new("RGB", (w, h)),))
    layout = adapter.layout(req)
    visual = adapter.token_spans(req).visual
    assert len(layout) == len(visual)

    def omega(b: Box) -> set[int]:
        try:
            return set(adapter.token_spans(req, BoxEvidence(b)).evidence)
        except EvidenceError:
            assert adapter.registry_name == "llava"  # only a center crop can hide a box
            return set()

    small, big = omega(box), omega(box.grow(grow))
    assert small <= big <= set(visual)
    if adapter.registry_name != "llava":
        assert small


@pytest.mark.skipif(
    not (TOY_DIR / "config.json").is_file(),
    reason="toy model assets not built yet (harness/assets/toy/ is trained concurrently)",
)
def test_toy_loads_and_answers():
    from harness.api.specs import ModelSpec

    ad = ToyAdapter(ModelSpec(name="toy"))
    req = Request("Is there a red circle in the image?", images=(Image.new("RGB", (64, 64)),))
    out = ad.generate([req])[0]
    assert isinstance(out.text, str) and out.output_tokens >= 1
    spans = ad.token_spans(req, BoxEvidence(Box(0, 0, 16, 16)))
    assert len(spans.evidence) >= 1


def test_evidence_rule_is_recorded_in_adapter_settings(adapter):
    # RAM rankings depend on the evidence -> token rule; results and ranking files carry it
    # through the adapter's settings, so rankings under another rule never merge silently.
    from harness.models.hf import EVIDENCE_RULE

    assert adapter.settings()["evidence_rule"] == EVIDENCE_RULE
    assert "v2" in EVIDENCE_RULE
