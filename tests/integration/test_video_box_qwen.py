"""Boxes on video frames are read at the geometry the *video* processor gave the frames.

Qwen2.5-VL answers in pixels of its resized input; a VidSTG box is on a video frame, which the
model saw through ``processor.video_processor`` (its own budget, and a per-frame cap that
depends on the frame count), not the image processor. Checked here:

- :func:`harness.models.qwen_resize.video_resized_size` from a record read off transformers'
  real ``Qwen2VLVideoProcessor`` / ``Qwen3VLVideoProcessor`` equals what those processors
  produce (``video_grid_thw`` × patch, or their ``resize`` for long clips), over odd, tiny, HD,
  4K and extreme-aspect frames, with and without ``cap_pixels_per_frame`` (run in a subprocess
  with a geometry-only torchvision stand-in: ``_hf_video_geometry.py``);
- the adapter's ``parse_video_box`` equals ``headscope rescore``'s parser;
- a VidSTG run on 1920×1080 / 1280×720 fixture videos with scripted replies under the
  Qwen2.5-VL adapter class scores boxes by the video rule, and rescore reproduces it.

Budgets: Qwen2.5-VL-7B-Instruct ships only ``preprocessor_config.json`` (min_pixels 3136,
max_pixels 12845056), which transformers' video processor also loads when no
``video_preprocessor_config.json`` exists; qwen-vl-utils' video budget is 128·28² … 768·28²
per frame (``VIDEO_MIN_PIXELS`` / ``VIDEO_MAX_PIXELS``); Qwen3-VL's video config: 4096 …
25165824 over the clip, patch 16.
"""

from __future__ import annotations

import functools
import json
import os
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from harness.api.payloads import Box, Generation, Request  # noqa: E402
from harness.api.registry import MODEL_FAMILIES  # noqa: E402
from harness.api.specs import InterventionSpec, RunSpec, TaskSpec  # noqa: E402
from harness.cli import main as cli  # noqa: E402
from harness.cli.rescore import _parse_video_box  # noqa: E402
from harness.models import qwen_resize  # noqa: E402
from harness.models.offline.qwen import qwen_processor  # noqa: E402
from harness.run.evaluator import run_grid  # noqa: E402
from harness.testing.tiny import build_tiny_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
REAL_IMAGE_TOKENS = (4, 16384)  # 3136 / 12845056 px at 28 px per merged token
UTILS_VIDEO_TOKENS = (128, 768)  # qwen-vl-utils VIDEO_MIN_PIXELS / VIDEO_MAX_PIXELS per frame

FRAMES = [
    (1, 1), (13, 7), (27, 29), (28, 28), (57, 55), (99, 101), (333, 777), (640, 480),
    (1023, 767), (1280, 720), (1920, 1080), (1080, 1920), (3840, 2160), (4096, 2160),
    (2000, 300), (15, 2999), (3, 600), (601, 3), (201, 1),
]  # fmt: skip
"""Odd, tiny, HD, 4K and extreme-aspect frames (the last: aspect > 200, refused by HF)."""


def _cases() -> list[list]:
    rng = random.Random(18)
    frames = FRAMES + [(rng.randint(1, 4000), rng.randint(1, 4000)) for _ in range(12)]
    # The whole processor call (its own kwargs, padding, grid) up to HD; its resize method
    # (the part that sizes frames) on every frame and on long clips, where the cap binds.
    calls = [[w, h, n, "call"] for (w, h) in frames if w * h <= 1920 * 1080 for n in (1, 3)]
    longs = [[w, h, n, "resize"] for (w, h) in frames for n in (2, 8, 129, 768)]
    return calls + longs


CONFIGS = {
    "qwen2.5-vl-7b": ("qwen2", {"min_pixels": 3136, "max_pixels": 12845056}),
    "qwen2.5-vl-7b capped": (
        "qwen2",
        {"min_pixels": 3136, "max_pixels": 12845056, "cap_pixels_per_frame": True},
    ),
    "qwen-vl-utils budget": ("qwen2", {"min_pixels": 128 * 784, "max_pixels": 768 * 784}),
    "small total, capped": (  # the cap binds on few frames, through the processor's own call
        "qwen2",
        {
            "min_pixels": 3136,
            "max_pixels": 12845056,
            "cap_pixels_per_frame": True,
            "max_video_tokens": 700,
        },
    ),  # fmt: skip
    "small total, cap unset": (  # the installed default of cap_pixels_per_frame, on 3 frames
        "qwen2",
        {"min_pixels": 3136, "max_pixels": 12845056, "max_video_tokens": 700},
    ),
    "qwen3-vl": ("qwen3", {"size": {"shortest_edge": 4096, "longest_edge": 25165824}}),
    "qwen3-vl capped": (
        "qwen3",
        {
            "size": {"shortest_edge": 4096, "longest_edge": 25165824},
            "cap_pixels_per_frame": True,
            "max_video_tokens": 300,
        },
    ),  # fmt: skip
}


@functools.cache
def _real_geometry() -> dict[str, dict]:
    """Per config: the record read off the real processor and the sizes it produced."""
    cases = _cases()
    jobs = [{"family": fam, "kwargs": kw, "cases": cases} for fam, kw in CONFIGS.values()]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("_hf_video_geometry.py"))],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {name: {**res, "cases": cases} for name, res in zip(CONFIGS, out, strict=True)}


def _ours(record: dict, w: int, h: int, n: int):
    try:
        return list(qwen_resize.video_resized_size((w, h), n, record))
    except ValueError as exc:
        return f"ValueError: {exc}"


@pytest.mark.parametrize("config", list(CONFIGS))
def test_video_rule_equals_the_real_video_processor(config):
    real = _real_geometry()[config]
    record = real["record"]
    family, kwargs = CONFIGS[config]
    assert record["cap_pixels_per_frame"] is bool(kwargs.get("cap_pixels_per_frame"))
    want_rule = {"qwen2": qwen_resize.VIDEO_RESIZE_QWEN2, "qwen3": qwen_resize.VIDEO_RESIZE_QWEN3}
    assert record["rule"] == want_rule[family]
    refused = differs_from_image = 0
    image = {"rule": qwen_resize.SMART_RESIZE, "factor": record["factor"],
             "min_pixels": record["min_pixels"], "max_pixels": record["max_pixels"]}  # fmt: skip
    for (w, h, n, _mode), got in zip(real["cases"], real["sizes"], strict=True):
        assert _ours(record, w, h, n) == got, (config, w, h, n)
        if isinstance(got, str):
            refused += 1
            continue
        try:
            differs_from_image += tuple(got) != qwen_resize.resized_size((w, h), image)
        except ValueError:
            pass
    assert refused >= 2 * 6  # the two aspect > 200 frames, each in all six frame counts
    if config.endswith("capped"):  # the cap (or the 3-D budget) really moves sizes
        assert differs_from_image >= 20, differs_from_image


def test_the_1920x1080_numbers():
    """The numbers reported for one HD frame (image rule vs video rule, same checkpoint)."""
    real = _real_geometry()
    cases = real["qwen2.5-vl-7b"]["cases"]

    def size(config, n):
        return real[config]["sizes"][cases.index([1920, 1080, n, "call" if n < 4 else "resize"])]

    image = {"rule": qwen_resize.SMART_RESIZE, "factor": 28, "min_pixels": 3136,
             "max_pixels": 12845056}  # fmt: skip
    assert qwen_resize.resized_size((1920, 1080), image) == (1932, 1092)
    assert size("qwen2.5-vl-7b", 8) == [1932, 1092]  # same budget, no cap: same size
    assert size("qwen2.5-vl-7b capped", 8) == [1932, 1092]
    assert size("qwen2.5-vl-7b capped", 129) == [1568, 868]
    assert size("qwen2.5-vl-7b capped", 768) == [644, 336]
    assert size("qwen-vl-utils budget", 8) == [1008, 560]


# -- the adapters -------------------------------------------------------------------------------
@functools.cache
def adapter(family: str, scripted: bool = False):
    cls = MODEL_FAMILIES.get(family)
    if scripted:
        cls = type(f"Scripted{cls.__name__}", (cls,), {"generate": _scripted_generate})
    processor = qwen_processor(
        family, image_tokens=REAL_IMAGE_TOKENS, video_tokens=UTILS_VIDEO_TOKENS
    )
    return cls.from_parts(build_tiny_model(family), processor)


def _settings(ad) -> dict:
    return json.loads(json.dumps(ad.settings()))


def _outcome(parse, *args):
    try:
        return parse(*args)
    except ValueError as exc:
        return f"ValueError: {exc}"


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl", "qwen2_vl"])
def test_rescore_parses_video_boxes_as_the_adapter_does(family):
    ad = adapter(family)
    parse = _parse_video_box(_settings(ad))
    rng = random.Random(family)
    compared = moved = 0
    for w, h in FRAMES + [(rng.randint(1, 4000), rng.randint(1, 4000)) for _ in range(60)]:
        for n in (2, 4, 9):
            x1, y1 = rng.randint(0, 900), rng.randint(0, 500)
            for text in (f"0-1 [{x1}, {y1}, {x1 + 90}, {y1 + 70}]", "[7.5, 3, 1.25e2, 88]", "no"):
                mine = _outcome(ad.parse_video_box, text, (w, h), n)
                assert _outcome(parse, text, (w, h), n) == mine, (w, h, n, text)
                moved += mine != _outcome(ad.parse_box, text, (w, h))
                compared += 1
    assert compared > 500
    if family == "qwen2_5_vl":  # video budget below the image one: most boxes move
        assert moved > 100
    else:  # [0, 1000] units (Qwen3-VL, Qwen2-VL): no resize, the video box is the image box
        assert moved == 0


def test_results_without_video_resize_refuse_only_video_boxes():
    from harness.cli.rescore import ResizeUnrecorded, _parse_box

    settings = _settings(adapter("qwen2_5_vl"))
    del settings["video_resize"]
    parse_video = _parse_video_box(settings)  # building it is fine: nothing parsed yet
    assert _parse_box(settings)("[0, 0, 28, 28]", (56, 56)) == Box(0.0, 0.0, 28.0, 28.0)
    with pytest.raises(ResizeUnrecorded, match="no 'video_resize'"):
        parse_video("0-1 [0, 0, 28, 28]", (56, 56), 4)
    settings["video_resize"] = {**_settings(adapter("qwen2_5_vl"))["video_resize"], "rule": "x.y"}
    with pytest.raises(ValueError, match="unknown video resize rule"):
        _parse_video_box(settings)("[1, 2, 3, 4]", (100, 100), 4)


def test_adapter_video_size_is_the_loaded_processors_grid():
    ad = adapter("qwen2_5_vl")
    from PIL import Image

    patch = int(ad.processor.video_processor.patch_size)
    for w, h in [(1920, 1080), (1280, 720), (333, 777), (57, 55)]:
        frames = [Image.new("RGB", (w, h))] * 3
        out = ad.processor.video_processor(videos=[frames], return_tensors="np")
        _, gh, gw = out["video_grid_thw"][0]
        assert ad.video_resized_size((w, h), 3) == (int(gw) * patch, int(gh) * patch)
    assert ad.video_resized_size((1920, 1080), 3) == (1008, 560)
    assert ad.resized_size((1920, 1080)) == (1932, 1092)  # the image rule differs here


# -- end to end: VidSTG on HD fixture videos, scripted replies ------------------------------------
VIDEOS = {"hd": (1920, 1080), "sd": (1280, 720)}
GOLD = {  # sentence -> (video, temporal_gt [begin, end), box)
    "a red ball rolls past the door.": ("hd", (2, 7), (610.0, 300.0, 1130.0, 700.0)),
    "what rolls past the door?": ("hd", (2, 7), (610.0, 300.0, 1130.0, 700.0)),
    "a cat sits on the left.": ("sd", (0, 5), (40.0, 200.0, 420.0, 610.0)),
}
_ANSWERS: dict[str, str] = {}


def _scripted_generate(self, requests: list[Request]) -> list[Generation]:
    """The gold span and box, in pixels of the frames as the processor really resized them."""
    out = []
    for request in requests:
        sentence = next(s for s in GOLD if f'"{s}"' in request.text)
        _, (b, e), box = GOLD[sentence]
        inputs = self.encode([request])  # what the model sees: the grid of the video input
        _, gh, gw = inputs["video_grid_thw"][0].tolist()
        patch = int(self.processor.video_processor.patch_size)
        w, h = request.video.frames[0].size
        sx, sy = gw * patch / w, gh * patch / h
        shown = [p for p, f in enumerate(request.video.frame_indices) if b <= f < e]
        x1, y1, x2, y2 = box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy
        text = f"{shown[0]}-{shown[-1]} [{x1:.3f}, {y1:.3f}, {x2:.3f}, {y2:.3f}]"
        _ANSWERS[sentence] = text
        out.append(Generation(text=text))
    return out


def _write_video(path: Path, size: tuple[int, int], n: int) -> None:
    import av
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=Fraction(10))
        stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv420p"
        for i in range(n):
            img = Image.new("RGB", size, (100 + 10 * i, 110, 120))
            for packet in stream.encode(av.VideoFrame.from_image(img)):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def _vidstg_fixture(root: Path) -> dict:
    entries = []
    for vid, (w, h) in VIDEOS.items():
        _write_video(root / "video" / f"{vid}.mp4", (w, h), 8)
        objs = [{"tid": 0, "category": "thing"}]
        sentences = [(s, span, box) for s, (v, span, box) in GOLD.items() if v == vid]
        traj = [[] for _ in range(8)]
        for _, (b, e), box in sentences[:1]:
            for f in range(b, e):
                xyxy = dict(zip(("xmin", "ymin", "xmax", "ymax"), box, strict=True))
                traj[f] = [{"tid": 0, "bbox": xyxy, "generated": 0, "tracker": "none"}]
        caption = [{"description": s, "type": "thing", "target_id": 0}
                   for s, *_ in sentences if not s.endswith("?")]  # fmt: skip
        question = [{"description": s, "type": "thing", "target_id": 0}
                    for s, *_ in sentences if s.endswith("?")]  # fmt: skip
        span = sentences[0][1]
        entries.append({
            "vid": vid, "fps": 10.0, "frame_count": 8, "width": w, "height": h,
            "subject/objects": objs, "video_path": f"{vid}.mp4", "trajectories": traj,
            "used_segment": {"begin_fid": 0, "end_fid": 8},
            "temporal_gt": {"begin_fid": span[0], "end_fid": span[1]},
            "captions": caption, "questions": question,
        })  # fmt: skip
    (root / "ann").mkdir(parents=True, exist_ok=True)
    (root / "ann" / "val_annotations.json").write_text(json.dumps(entries))
    return {"annotation_dir": str(root / "ann"), "video_root": str(root / "video")}


def _iou(a, b) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    area = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / area


def test_vidstg_run_scores_boxes_by_the_video_rule_and_rescore_agrees(tmp_path, capsys):
    pytest.importorskip("av")
    # lenient: shown-frame metrics, so exact spans and boxes score 1
    args = {**_vidstg_fixture(tmp_path / "data"), "num_frames": 4, "scoring": "lenient"}
    ad = adapter("qwen2_5_vl", scripted=True)
    none = (InterventionSpec("none"),)
    spec = RunSpec(
        tasks=(TaskSpec("vidstg", args=args),), interventions=none, output=str(tmp_path / "run")
    )
    entry = run_grid(spec, ad).entries[0]
    metrics = {m.name: m.value for m in entry.metrics}
    rows = [json.loads(x) for x in (tmp_path / "run" / entry.samples_file).read_text().splitlines()]
    assert len(rows) == 3 and set(_ANSWERS) == set(GOLD)
    gold_of = {video: box for video, _, box in GOLD.values()}
    for row in rows:  # the scored boxes are the gold boxes: mapped back by the video rule
        gold = gold_of[row["doc_id"].split(":")[0]]
        assert row["scores"]["pred_box"] == pytest.approx(gold, abs=0.01)
    assert metrics["m_tIoU"] == pytest.approx(1.0)
    assert metrics["m_vIoU"] == pytest.approx(1.0, abs=1e-4)  # the video rule: gold boxes back
    for sentence, text in _ANSWERS.items():
        video, _, gold = GOLD[sentence]
        size = VIDEOS[video]
        box = ad.parse_video_box(text, size, 4)
        assert box.as_tuple() == pytest.approx(gold, abs=0.01)
        as_image = ad.parse_box(text, size)  # the still-image rule: far off on these frames
        assert _iou(as_image.as_tuple(), gold) < 0.5
    recorded = json.loads((tmp_path / "run" / "results.json").read_text())
    assert recorded["model"]["video_resize"]["max_pixels"] == 768 * 784
    assert recorded["model"]["resize"]["max_pixels"] == 16384 * 784

    mode = entry.task_settings["scoring"]
    assert cli.main(["rescore", str(tmp_path / "run"), "--scoring", mode]) == 0
    new = json.loads((tmp_path / "run" / f"results.scoring-{mode}.json").read_text())
    assert new["entries"][0]["metrics"] == recorded["entries"][0]["metrics"]
    assert new["entries"][0]["failures"] == []

    # Results written before `video_resize` was recorded: refused, one line, exit 2.
    del recorded["model"]["video_resize"]
    (tmp_path / "run" / "old.json").write_text(json.dumps(recorded))
    capsys.readouterr()
    code = cli.main(["rescore", str(tmp_path / "run"), "--scoring", mode, "--results", "old.json"])
    err = capsys.readouterr().err
    assert code == 2 and "no 'video_resize'" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run" / f"old.scoring-{mode}.json").exists()


def test_box_on_a_frame_defaults_to_parse_box_for_other_adapters():
    from harness.api.task import ScoringContext
    from harness.testing.mock import ScriptedAdapter

    ad = ScriptedAdapter(lambda r: "", box_convention="normalized")
    ctx = ScoringContext(ad.parse_box)
    want = Box(10.0, 20.0, 50.0, 60.0)
    assert ctx.parse_video_box("[0.1, 0.2, 0.5, 0.6]", (100, 100), 8) == want
    assert ad.parse_video_box("[0.1, 0.2, 0.5, 0.6]", (100, 100), 8) == want
