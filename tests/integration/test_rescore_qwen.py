"""``headscope rescore`` parses Qwen boxes exactly as the adapters do, from recorded settings.

Tiny random Qwen2.5-VL (boxes in resized pixels) and Qwen3-VL (boxes in [0, 1000]) built from
config, with the real checkpoints' image processor budgets: Qwen2.5-VL-7B-Instruct's
``preprocessor_config.json`` (min_pixels 3136, max_pixels 12845056, patch 14, merge 2) and
Qwen3-VL's (``size`` 65536 / 16777216 px, patch 16, merge 2).
"""

from __future__ import annotations

import functools
import json
import random

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
from PIL import Image  # noqa: E402

from harness.api.payloads import Generation, Request  # noqa: E402
from harness.api.registry import MODEL_FAMILIES  # noqa: E402
from harness.api.specs import InterventionSpec, RunSpec, TaskSpec  # noqa: E402
from harness.api.task import build_task  # noqa: E402
from harness.cli import main as cli  # noqa: E402
from harness.cli.rescore import _parse_box  # noqa: E402
from harness.models.offline.qwen import qwen_processor  # noqa: E402
from harness.models.qwen_resize import resized_size  # noqa: E402
from harness.run.evaluator import run_grid  # noqa: E402
from harness.testing.tiny import build_tiny_model  # noqa: E402

REAL_IMAGE_TOKENS = {"qwen2_5_vl": (4, 16384), "qwen3_vl": (64, 16384)}
"""Merged tokens per image (pixels / cell²): 3136/28², 12845056/28²; 65536/32², 16777216/32²."""
FAMILIES = tuple(REAL_IMAGE_TOKENS)


def _settings(ad) -> dict:
    """The model settings as a results file stores them (a JSON round trip)."""
    return json.loads(json.dumps(ad.settings()))


@functools.cache
def adapter(family: str, scripted: bool = False):
    cls = MODEL_FAMILIES.get(family)
    if scripted:
        cls = type(f"Scripted{cls.__name__}", (cls,), {"generate": _scripted_generate})
    processor = qwen_processor(family, image_tokens=REAL_IMAGE_TOKENS[family])
    return cls.from_parts(build_tiny_model(family), processor)


SIZES = [
    (1, 1), (2, 3), (13, 7), (27, 29), (28, 28), (29, 27), (55, 57), (56, 56), (63, 65),
    (99, 101), (333, 777), (640, 480), (1023, 767), (1920, 1080), (2000, 300), (4000, 3000),
    (3583, 3584), (8192, 8192), (12000, 9000), (20000, 15), (15, 2999), (1, 200), (200, 1),
    (3, 600), (601, 3), (201, 1), (1, 401),
]  # fmt: skip
"""Odd, tiny, huge and extreme-aspect sizes (the last two: aspect > 200, refused by HF)."""


def _sizes() -> list[tuple[int, int]]:
    rng = random.Random(18)
    extra = [(rng.randint(1, 5000), rng.randint(1, 5000)) for _ in range(120)]
    extra += [(rng.randint(1, 60), rng.randint(100, 9000)) for _ in range(30)]
    return SIZES + extra


def _replies(size: tuple[int, int], rw: int, rh: int, rng: random.Random) -> list[str]:
    """Boxes in resized pixels (and a few malformed ones), in several written forms."""
    xs = sorted(rng.uniform(-5, rw + 5) for _ in range(2))
    ys = sorted(rng.uniform(-5, rh + 5) for _ in range(2))
    a, b = (round(v) for v in xs), (round(v) for v in ys)
    (x1, x2), (y1, y2) = a, b
    return [
        f"[{x1}, {y1}, {x2}, {y2}]",
        f"The box is [{xs[0]:.2f}, {ys[0]:.2f}, {xs[1]:.2f}, {ys[1]:.2f}].",
        f"<|box_start|>({x1},{y1}),({x2},{y2})<|box_end|>",
        f"[{x2}, {y2}, {x1}, {y1}]",  # ends written in reverse
        f"[0, 0, {rw}, {rh}]",  # the whole resized image
        f"[{x1}, {y1}, {x1}, {y2}]",  # degenerate
        "no box here",
        "[1e2, .5, 3e2, 400]",
    ]


def _outcome(parse, text: str, size: tuple[int, int]):
    try:
        return parse(text, size)
    except ValueError as exc:
        return f"ValueError: {exc}"


@pytest.mark.parametrize("family", FAMILIES)
def test_rescore_parses_boxes_as_the_adapter_does(family):
    ad = adapter(family)
    settings = _settings(ad)
    parse = _parse_box(settings)
    rng = random.Random(family)
    resized_differs = refused = compared = 0
    for size in _sizes():
        try:
            rw, rh = ad.resized_size(size)
        except ValueError:  # aspect ratio > 200: HF refuses the image itself
            rw, rh = size
            refused += 1
        resized_differs += (rw, rh) != size
        for text in _replies(size, rw, rh, rng):
            assert _outcome(parse, text, size) == _outcome(ad.parse_box, text, size), (size, text)
            compared += 1
    extreme = sum(max(s) / min(s) > 200 for s in _sizes())  # HF's own refusal rule
    assert compared > 1000 and refused == extreme >= 2
    assert resized_differs > 100  # the resize is real on most sizes: the test has teeth


@pytest.mark.parametrize("family", FAMILIES)
def test_recorded_resize_reproduces_the_processors_grid(family):
    """The recorded numbers, through the shared helper, give the grid the processor makes."""
    ad = adapter(family)
    resize = _settings(ad)["resize"]
    proc = ad.processor.image_processor
    assert resize["factor"] == {"qwen2_5_vl": 28, "qwen3_vl": 32}[family]
    assert (resize["min_pixels"], resize["max_pixels"]) == (
        proc.size["shortest_edge"],
        proc.size["longest_edge"],
    )
    lo = {"qwen2_5_vl": 3136, "qwen3_vl": 65536}[family]
    assert resize["min_pixels"] == lo  # the real checkpoint's budget, not the tiny default
    for size in [(1, 1), (13, 7), (27, 29), (99, 101), (333, 777), (640, 480), (1023, 767),
                 (15, 2999), (3, 600), (1500, 1100)]:  # fmt: skip
        grid = proc(images=[Image.new("RGB", size)], return_tensors="np")["image_grid_thw"][0]
        patch = int(proc.patch_size)
        assert resized_size(size, resize) == (int(grid[2]) * patch, int(grid[1]) * patch), size


def test_results_without_resize_are_refused_naming_what_is_missing():
    settings = _settings(adapter("qwen2_5_vl"))
    del settings["resize"]
    parse = _parse_box(settings)
    with pytest.raises(ValueError, match="no 'resize'.*rerun the grounded task"):
        parse("[1, 2, 3, 4]", (100, 100))
    bad = {**_settings(adapter("qwen2_5_vl"))}
    bad["resize"] = {**bad["resize"], "rule": "somewhere.else.resize"}
    with pytest.raises(ValueError, match="unknown resize rule"):
        _parse_box(bad)("[1, 2, 3, 4]", (100, 100))


# -- end to end: a grounded run with scripted replies, rescored ---------------------------------

_GOLD: dict[bytes, tuple] = {}


def _scripted_generate(self, requests: list[Request]) -> list[Generation]:
    """Replies aimed at the gold box, written in the family's own convention, IoU spread out."""
    out = []
    for request in requests:
        image = request.images[0]
        i, box = _GOLD[image.tobytes()]
        w, h = image.size
        if self.box_convention == "pixels_resized":
            rw, rh = self.resized_size((w, h))
            sx, sy = rw / w, rh / h
        else:
            sx, sy = 1000 / w, 1000 / h
        grow = (0.0, 0.1, 0.25, 0.4, 0.6, 1.0)[i % 6]  # IoU 1 down to ~0.25
        dx, dy = (box[2] - box[0]) * grow / 2, (box[3] - box[1]) * grow / 2
        x1, y1, x2, y2 = (
            (box[0] - dx) * sx,
            (box[1] - dy) * sy,
            (box[2] + dx) * sx,
            (box[3] + dy) * sy,
        )
        forms = [
            f"[{x1:.0f}, {y1:.0f}, {x2:.0f}, {y2:.0f}]",
            f"<|box_start|>({x1:.0f},{y1:.0f}),({x2:.0f},{y2:.0f})<|box_end|>",
            f"It is at [{x2:.1f}, {y2:.1f}, {x1:.1f}, {y1:.1f}].",
            "I cannot find it.",
        ]
        out.append(Generation(text=forms[i % len(forms)]))
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_rescore_of_a_grounded_run_equals_the_runs_own_scores(tmp_path, family, capsys):
    n = 24
    task_spec = TaskSpec("refcocog_mini", args={"n": n})
    docs = build_task("refcocog_mini", {"n": n}).load()
    _GOLD.update({d.image.tobytes(): (i, d.box.as_tuple()) for i, d in enumerate(docs)})
    ad = adapter(family, scripted=True)
    spec = RunSpec(tasks=(task_spec,), interventions=(InterventionSpec("none"),),
                   output=str(tmp_path / "run"))  # fmt: skip
    run = run_grid(spec, ad).entries[0]
    metrics = {m.name: m.value for m in run.metrics}
    assert 0.2 < metrics["acc@0.5"] < 0.9, metrics  # hits and misses: the equality has teeth
    recorded = json.loads((tmp_path / "run" / "results.json").read_text())
    assert recorded["model"]["box_convention"] == ad.box_convention
    assert recorded["model"]["resize"]["factor"] == {"qwen2_5_vl": 28, "qwen3_vl": 32}[family]
    mode = run.task_settings["scoring"]
    assert cli.main(["rescore", str(tmp_path / "run"), "--scoring", mode]) == 0
    new = json.loads((tmp_path / "run" / f"results.scoring-{mode}.json").read_text())
    assert new["entries"][0]["metrics"] == recorded["entries"][0]["metrics"]
    assert new["entries"][0]["failures"] == []

    # A results file written before `resize` was recorded: refused, one line, exit 2.
    del recorded["model"]["resize"]
    (tmp_path / "run" / "old.json").write_text(json.dumps(recorded))
    capsys.readouterr()
    code = cli.main(["rescore", str(tmp_path / "run"), "--scoring", mode, "--results", "old.json"])
    err = capsys.readouterr().err
    if family == "qwen2_5_vl":
        assert code == 2 and "no 'resize'" in err and len(err.strip().splitlines()) == 1
        assert not (tmp_path / "run" / f"old.scoring-{mode}.json").exists()
    else:  # [0, 1000] boxes need no resize
        assert code == 0
