"""The generic family ``hf`` on tiny checkpoints of two architectures without a family module.

Each checkpoint is a tiny random instance saved with its real processor class to a folder
and loaded back through ``--model hf --model-args pretrained=DIR``
(``AutoModelForImageTextToText`` + ``AutoProcessor``):

- ViP-LLaVA (``VipLlavaForConditionalGeneration``, ``LlavaProcessor``): its processor's
  outputs name no layout kind, so every intervention and a task without gold evidence run,
  and grounded ranking is one usage error saying what to declare;
- PaddleOCR-VL (``PaddleOCRVLForConditionalGeneration``, an image-only processor with
  ``image_grid_thw``): the ``grid_thw`` kind is detected (its evidence map equals the
  model's own token-local trace, :mod:`harness.testing.trace`), so grounded ranking runs too.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from PIL import Image  # noqa: E402

from harness.api.errors import UsageError  # noqa: E402
from harness.api.model import load_adapter  # noqa: E402
from harness.api.payloads import Box, BoxEvidence, Request  # noqa: E402
from harness.api.specs import ModelSpec  # noqa: E402
from harness.cli import main as cli  # noqa: E402
from harness.models.offline.tokenizer import byte_tokenizer, special_token_ids  # noqa: E402
from harness.models.tiny import small_vit, text_kwargs  # noqa: E402
from harness.models.unit import unit_for_model  # noqa: E402

IDS = special_token_ids(None, 512)
PADDLE_TEMPLATE = (
    "{% for m in messages %}User: {% for c in m['content'] %}{% if c['type'] == 'image' %}"
    "<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}\n{% endfor %}{% if add_generation_prompt %}Assistant: {% endif %}"
)


def _vipllava(folder: Path) -> None:
    import transformers as tf

    from harness.models.offline.llava import llava_processor

    clip = small_vit(model_type="clip_vision_model", image_size=112, patch_size=14)
    config = tf.VipLlavaConfig(
        text_config=dict(text_kwargs(2, 4, 2, 16, 512), model_type="llama"),
        vision_config=clip,
        image_token_index=IDS["image"],
        vision_feature_layers=[-2, -1],
    )
    torch.manual_seed(0)
    tf.VipLlavaForConditionalGeneration(config).save_pretrained(folder)
    llava_processor().save_pretrained(folder)


def _paddleocr_vl(folder: Path) -> None:
    import transformers as tf
    from transformers.models.paddleocr_vl.image_processing_pil_paddleocr_vl import (
        PaddleOCRVLImageProcessorPil,
    )

    rope = {"rope_type": "default", "rope_theta": 5e5, "mrope_section": [2, 3, 3]}  # head_dim 16
    config = tf.PaddleOCRVLConfig(
        text_config=dict(text_kwargs(2, 4, 2, 16, 512), rope_parameters=rope),
        vision_config=small_vit(),
        image_token_id=IDS["image"],
        video_token_id=IDS["video"],
        vision_start_token_id=IDS["vision_start"],
        vision_end_token_id=IDS["vision_end"],
    )
    torch.manual_seed(0)
    tf.PaddleOCRVLForConditionalGeneration(config).save_pretrained(folder)
    specials = {
        "<|IMAGE_PLACEHOLDER|>": IDS["image"],
        "<|IMAGE_START|>": IDS["vision_start"],
        "<|IMAGE_END|>": IDS["vision_end"],
        "</s>": IDS["eos"],
        "<pad>": IDS["pad"],
        "<s>": IDS["bos"],
    }
    tokenizer = byte_tokenizer(
        512, specials, eos="</s>", pad="<pad>", bos="<s>", image_token="<|IMAGE_PLACEHOLDER|>"
    )
    images = PaddleOCRVLImageProcessorPil(min_pixels=56 * 56, max_pixels=28 * 28 * 64)
    processor = tf.PaddleOCRVLProcessor(
        image_processor=images, tokenizer=tokenizer, chat_template=PADDLE_TEMPLATE
    )
    processor.save_pretrained(folder)


@functools.cache
def checkpoint(name: str) -> Path:
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix=f"headscope-{name}-"))
    {"vipllava": _vipllava, "paddleocr_vl": _paddleocr_vl}[name](folder)
    return folder


def adapter(name: str):
    return load_adapter(ModelSpec("hf", pretrained=str(checkpoint(name))))


@pytest.mark.parametrize("name", ["vipllava", "paddleocr_vl"])
def test_loads_a_class_without_a_family_module(name):
    ad = adapter(name)
    assert unit_for_model(ad.model) is None  # no family module declares this class
    assert ad.settings()["model_class"] == type(ad.model).__name__
    request = Request("What is it?", images=(Image.new("RGB", (200, 150)),))
    ids = ad.encode([request])["input_ids"][0].tolist()
    spans = ad.token_spans(request)
    assert list(spans.visual) == [i for i, t in enumerate(ids) if t == IDS["image"]]
    assert spans.visual and spans.instruction and spans.evidence == ()


def test_without_a_layout_kind_evidence_is_one_usage_error():
    ad = adapter("vipllava")
    request = Request("What is it?", images=(Image.new("RGB", (200, 150)),))
    with pytest.raises(UsageError, match="name none headscope detects") as err:
        ad.token_spans(request, BoxEvidence(Box(0, 0, 10, 10)))
    assert "FamilyUnit(model_class='VipLlavaForConditionalGeneration'" in err.value.hint
    with pytest.raises(UsageError, match="evidence maps need the layout"):
        ad.token_footprints(request)


def test_a_detected_grid_thw_maps_evidence_to_its_cells():
    ad = adapter("paddleocr_vl")
    request = Request("What is it?", images=(Image.new("RGB", (200, 150)),))
    found = ad.token_footprints(request)
    assert ad.unit is not None and ad.unit.layout.kind == "grid_thw"
    spans = ad.token_spans(request, BoxEvidence(Box(0, 0, 200, 150)))
    assert spans.evidence == spans.visual == tuple(found.positions.tolist())
    corner = ad.token_spans(request, BoxEvidence(Box(0, 0, 1, 1))).evidence
    assert corner == spans.visual[:1]


@pytest.mark.parametrize(
    ("size", "boxes"),
    [
        ((200, 150), [(0, 0, 1, 1), (50, 40, 90, 41), (199, 149, 200, 150)]),
        ((333, 1000), [(100, 300, 140, 360), (0, 999, 333, 1000)]),
    ],
)
def test_the_detected_grid_thw_equals_the_trace(size, boxes):
    """The detected kind's evidence map equals the model's own token-local trace."""
    from harness.testing.trace import draw_box, traced_positions

    ad = adapter("paddleocr_vl")
    blank = [Request("Where?", images=(Image.new("RGB", size),)) for _ in boxes]
    lit = [Request("Where?", images=(draw_box(Image.new("RGB", size), Box(*b)),)) for b in boxes]
    traced = traced_positions(ad, blank, lit)
    assert all(traced)
    for request, box, seen in zip(blank, boxes, traced, strict=True):
        assert set(ad.token_spans(request, BoxEvidence(Box(*box))).evidence) == seen, box


def test_tiny_true_is_refused():
    with pytest.raises(UsageError, match="no tiny recipe"):
        load_adapter(ModelSpec("hf", args={"tiny": True}))


CELLS = [
    "none",
    "ablate:k=0.25,select=random",
    "sap:prior=uniform",
    "noise_delta",
    "noise_qkv",
    "hybrid:keep=0.5,select=adaptive,window=32",
]


def _run(name: str, tmp: Path, cells: list[str]) -> list[dict]:
    argv = ["run", "--model", "hf", "--model-args", f"pretrained={checkpoint(name)}"]
    argv += ["--tasks", "pope_mini", "--limit", "1", "--output", str(tmp)]
    for cell in cells:
        argv += ["--interventions", cell]
    assert cli.main(argv) == 0
    return json.loads((tmp / "results.json").read_text())["entries"]


def test_vipllava_runs_every_intervention_and_refuses_grounded_ranking(tmp_path, capsys):
    entries = _run("vipllava", tmp_path / "run", CELLS)
    assert sorted(e["intervention"] for e in entries if e["n_samples"] == 1) == sorted(CELLS)
    argv = ["rank", "--model", "hf", "--model-args", f"pretrained={checkpoint('vipllava')}"]
    argv += ["--tasks", "refcocog_mini", "--limit", "1", "--output", str(tmp_path / "rank")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "name none headscope detects" in err and "--include-path" in err


def test_paddleocr_vl_ranks_with_evidence_then_runs_the_ranking(tmp_path):
    folder = checkpoint("paddleocr_vl")
    argv = ["rank", "--model", "hf", "--model-args", f"pretrained={folder}", "--no-progress"]
    argv += ["--tasks", "refcocog_mini", "--limit", "1", "--output", str(tmp_path / "rank")]
    assert cli.main(argv) == 0
    ranking = tmp_path / "rank" / "ranking.json"
    assert json.loads(ranking.read_text())["tasks"]["refcocog_mini"]["n_samples"] == 1
    cells = [*CELLS, f"ablate:k=0.25,ranking={ranking}", f"hybrid:keep=0.5,ranking={ranking}"]
    entries = _run("paddleocr_vl", tmp_path / "run", cells)
    assert len({e["intervention"] for e in entries if e["n_samples"] == 1}) == len(cells)
