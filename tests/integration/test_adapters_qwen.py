"""Qwen2-VL / Qwen2.5-VL / Qwen3-VL adapters on tiny random models (offline, CPU)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from harness.api.anatomy import geometry_of  # noqa: E402
from harness.api.payloads import Box, Request, Video  # noqa: E402
from harness.api.registry import MODEL_FAMILIES  # noqa: E402
from harness.api.specs import ModelSpec  # noqa: E402
from harness.attention.dispatch import ATTN_NAME  # noqa: E402
from harness.models.hf import chat_messages, instruction_positions  # noqa: E402
from harness.models.qwen2_vl import QwenVLAdapter  # noqa: E402
from harness.models.unit import unit_names, unit_of  # noqa: E402
from harness.testing.tiny import build_tiny_model, tiny_adapter, tiny_processor  # noqa: E402

FAMILIES = unit_names(tiny=True, kind="grid_thw")
QWEN = tuple(f for f in FAMILIES if issubclass(MODEL_FAMILIES.get(f), QwenVLAdapter))
"""The Qwen adapters (their resize record and budgets); GLM-4.1V shares only the layout."""
_CACHE: dict[str, object] = {}


def adapter(family: str):
    if family not in _CACHE:
        _CACHE[family] = tiny_adapter(family)
    return _CACHE[family]


def noise(w: int, h: int, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


def clip(n: int = 4, seed: int = 0) -> Video:
    frames = tuple(noise(90, 60, seed + i) for i in range(n))
    return Video(frames, tuple(range(0, 4 * n, 4)), fps=8.0)


def requests(family: str | None = None) -> list[Request]:
    """Image, video, two images, two pages (no video for a family without it)."""
    out = [
        Request(text="What is in the picture?", images=(noise(100, 70, 1),), max_new_tokens=6),
        Request(text="Describe the clip.", video=clip(), max_new_tokens=8),
        Request(
            text="Compare them", images=(noise(60, 120, 2), noise(50, 50, 3)), max_new_tokens=3
        ),
        Request(
            text="Read page two.", pages=(noise(80, 110, 4), noise(80, 110, 5)), max_new_tokens=5
        ),
    ]
    if family is not None and "video" not in unit_of(family).capabilities:
        out = [r for r in out if r.video is None]
    return out


def test_registered_with_conventions():
    expected = {
        "qwen2_vl": ("normalized_1000", "Qwen/Qwen2-VL-7B-Instruct"),
        "qwen2_5_vl": ("pixels_resized", "Qwen/Qwen2.5-VL-7B-Instruct"),
        "qwen3_vl": ("normalized_1000", "Qwen/Qwen3-VL-4B-Instruct"),
    }
    for family, (convention, hub_id) in expected.items():
        cls = MODEL_FAMILIES.get(family)
        assert cls.registry_name == family
        assert (cls.box_convention, cls.default_pretrained) == (convention, hub_id)


@pytest.mark.parametrize("family", FAMILIES)
def test_forward_through_dispatch_matches_sdpa(family):
    ad = adapter(family)
    assert ad.model.config.get_text_config()._attn_implementation == ATTN_NAME
    assert ad.model.config.vision_config._attn_implementation == "sdpa"
    assert ad.geometry == geometry_of(ad.model)
    reference = build_tiny_model(family)  # same seed → same weights, plain sdpa
    reqs = requests(family)[:2]
    inputs = ad.prepare(reqs)
    assert "mm_token_type_ids" in inputs
    assert ("video_grid_thw" in inputs) == ("video" in unit_of(family).capabilities)
    assert (inputs["attention_mask"][:, 0] == 0).any(), "batch should be left padded"
    with torch.no_grad():
        ours = ad.model(**inputs).logits
        ref = reference(**inputs).logits
        torch.testing.assert_close(ours, ref, rtol=0, atol=0)
        # each left-padded row equals the request run alone (last position)
        for row, request in enumerate(reqs):
            alone = ad.model(**ad.prepare([request])).logits[0, -1]
            torch.testing.assert_close(ours[row, -1], alone, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_generate_equals_one_by_one(family):
    ad = adapter(family)
    reqs = requests(family)
    batched = ad.generate(reqs)
    batched_ids = ad.last_output_ids
    for request, gen, ids in zip(reqs, batched, batched_ids):
        (single,) = ad.generate([request])
        assert ad.last_output_ids[0] == ids
        assert single.text == gen.text
        assert gen.output_tokens == len(ids) <= request.max_new_tokens
        assert gen.prompt_tokens == single.prompt_tokens
        assert gen.prefill_ms is not None and gen.total_ms is not None
    assert any(len(ids) > 0 for ids in batched_ids)


@pytest.mark.parametrize("family", FAMILIES)
def test_instruction_positions_decode_to_the_question(family):
    ad = adapter(family)
    for request in requests(family):
        spans = ad.token_spans(request)
        ids = ad.encode([request])["input_ids"][0].tolist()
        assert spans.seq_len == len(ids)
        picked = [ids[p] for p in spans.instruction]
        assert ad.tokenizer.decode(picked) == request.text
        assert not set(spans.instruction) & set(spans.visual)
        assert spans.evidence == ()


def test_instruction_positions_reject_media_after_text():
    ad = adapter("qwen2_vl")
    request = Request(text="Where?", images=(noise(56, 56, 0),))
    messages = chat_messages(request)
    content = messages[0]["content"]
    messages[0]["content"] = [content[1], content[0]]  # text before the image
    prompt = ad.processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = ad.processor(text=[prompt], images=list(request.images))["input_ids"][0]
    with pytest.raises(ValueError, match="tail"):
        instruction_positions(ad.tokenizer, prompt, request.text, ids)


@pytest.mark.parametrize("family", FAMILIES)
def test_visual_positions_match_grids(family):
    ad = adapter(family)
    for request in requests(family):
        inputs = ad.encode([request])
        merge = 4
        expected = 0
        for key in ("image_grid_thw", "video_grid_thw"):
            if key in inputs:
                expected += int(inputs[key].prod(dim=1).sum()) // merge
        assert len(ad.token_spans(request).visual) == expected > 0


def test_qwen3_video_blocks_have_timestamps():
    ad = adapter("qwen3_vl")
    request = Request(text="When?", video=clip(n=4))
    prompt = ad.tokenizer.decode(ad.encode([request])["input_ids"][0])
    # frames 0,4 | 8,12 at 8 fps → group centres 0.25 s and 1.25 s
    assert "<0.2 seconds>" in prompt or "<0.3 seconds>" in prompt
    assert "<1.2 seconds>" in prompt or "<1.3 seconds>" in prompt
    assert prompt.count("<|vision_start|>") == 3  # template wrapper + one block per group


def test_qwen2_5_seconds_per_grid_from_real_frame_gap():
    ad = adapter("qwen2_5_vl")
    inputs = ad.encode([Request(text="Q", video=clip(n=4))])  # gap 4 frames at 8 fps
    assert inputs["second_per_grid_ts"].tolist() == pytest.approx([2 * 4 / 8.0])


@pytest.mark.parametrize("family", QWEN)
def test_resized_size_matches_processor(family):
    ad = adapter(family)
    patch = ad.processor.image_processor.patch_size
    for size in [(100, 70), (31, 200), (900, 640), (28, 28)]:
        grid = ad.encode([Request(text="Q", images=(noise(*size, 0),))])["image_grid_thw"][0]
        assert ad.resized_size(size) == (int(grid[2]) * patch, int(grid[1]) * patch)


def test_parse_box_conventions():
    size = (900, 640)
    q2, q25, q3 = (adapter(f) for f in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl"))
    assert q2.parse_box("[100, 250, 500, 750]", size) == Box(90, 160, 450, 480)
    assert q3.parse_box("box: [100, 250, 500, 750]", size) == Box(90, 160, 450, 480)
    rw, rh = q25.resized_size(size)
    got = q25.parse_box(f"[0, 0, {rw}, {rh / 2}]", size)
    assert got.as_tuple() == pytest.approx((0, 0, 900, 320))
    assert (rw, rh) != size  # the tiny max_pixels forces a real resize
    assert q25.parse_box("no box here", size) is None


def test_load_from_local_dir_offline(tmp_path, monkeypatch):
    import transformers

    build_tiny_model("qwen2_vl").save_pretrained(tmp_path)
    seen = {}

    def fake_processor(path, **kwargs):  # HF's Qwen video processor needs torchvision
        seen.update(path=path, **kwargs)
        return tiny_processor("qwen2_vl")

    monkeypatch.setattr(transformers.AutoProcessor, "from_pretrained", fake_processor)
    spec = ModelSpec(name="qwen2_vl", pretrained=str(tmp_path), args={"max_pixels": 50176})
    ad = MODEL_FAMILIES.get("qwen2_vl")(spec)
    assert seen == {"path": str(tmp_path), "local_files_only": True, "max_pixels": 50176}
    assert ad.model.config.get_text_config()._attn_implementation == ATTN_NAME
    assert not ad.model.training
    reference = adapter("qwen2_vl")
    request = requests()[0]
    with torch.no_grad():
        a = ad.model(**ad.prepare([request])).logits
        b = reference.model(**reference.prepare([request])).logits
    torch.testing.assert_close(a, b)
    assert ad.settings()["pretrained"] == str(tmp_path)


@pytest.mark.parametrize("family", QWEN)
def test_settings_record_pixel_budgets(family):
    settings = adapter(family).settings()
    cell = 32 if family == "qwen3_vl" else 28
    assert settings["family"] == family
    assert settings["image_max_pixels"] == 36 * cell * cell
    assert settings["image_min_pixels"] == 4 * cell * cell
    assert settings["video_max_pixels"] is not None
