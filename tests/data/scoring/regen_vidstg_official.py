"""Regenerate tests/data/scoring/modes_vidstg.json: VidSTG ``official`` from TubeDETR's evaluator.

The replies and their hand reading (span positions among the shown frames as headscope's
``parse_span`` reads them, one box in original pixels as the family's convention gives it)
are below; the reading is checked against headscope's parsers before anything is computed.
Every expected number comes from RUNNING antoyang/TubeDETR @ d70c0ee
``datasets/vidstg_eval.py`` (``VidSTGEvaluator.summarize`` → ``VidSTGiouEvaluator.evaluate``)
on an annotation file built here in its own format; nothing of it is vendored. Usage:

    G="git --git-dir=<TubeDETR mirror>"
    $G show d70c0ee:datasets/vidstg_eval.py > DIR/vidstg_eval.py
    $G show d70c0ee:util/box_ops.py > DIR/box_ops.py
    PYTHONHASHSEED=1 python tests/data/scoring/regen_vidstg_official.py --refs DIR  # numpy

(``summarize`` walks the sentence types as a set: the hash seed only orders the per-type keys
of the aggregate; 1 writes them in the committed order.)

What is supplied instead of TubeDETR's own modules (written into the JSON's provenance):
``util.dist`` (only ``is_main_process`` is called, by ``summarize``: True, one process) and
``util.box_ops`` (``np_box_area``, ``_box_inter_union``, ``np_box_iou`` compiled from the
mirrored file; its module imports torch and torchvision, which these numpy functions do not
use and which cannot be installed here).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from harness.api.model import parse_box_text  # noqa: E402
from tasks.vidstg.data import box_text, parse_span  # noqa: E402

REPO, COMMIT = "antoyang/TubeDETR", "d70c0eed94da09a9a5e4329c937230ecfb1d3ee6"
FPS = 5  # VidSTGEvaluator's fps (TubeDETR's default)
RESIZED = (448, 336)  # the frame size a pixels_resized (Qwen2.5-VL) case's model saw


def _tube_a(f):
    return [100 + 2 * (f - 30), 120, 300 + 2 * (f - 30), 360]  # moves right 2 px a frame


def _tube_c(f):
    return [320, 180 + 2 * (f - 16), 960, 540 + 2 * (f - 16)]  # moves down


def _tube_d(f):
    return [40 + 10 * f, 30, 200 + 10 * f, 180]


def _tube_e(f):
    return [300 - 3 * (f - 95), 200, 500 - 3 * (f - 95), 400]


# name: (width, height), segment, num_frames, span [begin, end), tube(frame) → VidOR xyxy,
# video fps (TubeDETR samples its frame ids at FPS / video fps), shown frames (by hand:
# headscope's uniform segment centres; TubeDETR's frame ids are checked equal to them).
SETUPS = {
    "A": ((640, 480), (5, 105), 10, (30, 71), _tube_a, 50, list(range(10, 101, 10))),
    "B": ((640, 480), (5, 105), 10, (42, 48), lambda f: [200, 100, 400, 300], 50,
          list(range(10, 101, 10))),  # gold span between shown frames 40 and 50
    "C": ((1280, 720), (4, 52), 6, (16, 41), _tube_c, 40, list(range(8, 49, 8))),
    "D": ((320, 240), (0, 8), 8, (0, 3), _tube_d, 5, list(range(8))),  # every frame shown
    "E": ((640, 480), (5, 105), 10, (95, 105), _tube_e, 50, list(range(10, 101, 10))),
    "F": ((640, 480), (0, 10), 10, (2, 5), lambda f: [100, 100, 300, 300], 5, list(range(10))),
}  # fmt: skip
PX = [140, 120, 340, 360]  # setup A's gold box on frame 50, in pixels
C_PX = [320, 180, 960, 540]
# (kind, setup, convention, reply, hand reading: positions as parse_span gives them, box px)
# fmt: off
CASES = [
    ("exact", "A", "pixels", "2-6 [140, 120, 340, 360]", (2, 6), PX),
    ("exact", "A", "normalized", "2-6 [0.21875, 0.25, 0.53125, 0.75]", (2, 6), PX),
    ("exact", "A", "normalized_1000", "2-6 [219, 250, 531, 750]", (2, 6),
     [140.16, 120, 339.84, 360]),
    ("exact", "A", "normalized_1000_auto", "2-6 [[219, 250, 531, 750]]", (2, 6),
     [140.16, 120, 339.84, 360]),
    ("exact", "A", "pixels_resized", "2-6 [98, 84, 238, 252]", (2, 6), PX),
    ("partial", "A", "pixels", "3-5 [140, 120, 340, 360]", (3, 5), PX),
    ("partial", "A", "pixels", "0-3 [100, 120, 300, 360]", (0, 3), [100, 120, 300, 360]),
    ("wide", "A", "pixels", "0-9 [140, 120, 340, 360]", (0, 9), PX),
    ("reversed", "A", "pixels", "6-2 [140, 120, 340, 360]", (2, 6), PX),
    ("out_of_range", "A", "pixels", "4-15 [140, 120, 340, 360]", (4, 15), PX),
    ("out_of_range", "A", "pixels", "12-20 [140, 120, 340, 360]", (12, 20), PX),
    ("only_span", "A", "pixels", "2-6", (2, 6), None),
    ("only_box", "A", "pixels", "[140, 120, 340, 360]", None, PX),
    ("empty", "A", "pixels", "", None, None),
    ("refusal", "A", "pixels", "I cannot find it in the video.", None, None),
    ("lowercase", "A", "pixels", "frames 2 to 6 [140, 120, 340, 360]", (2, 6), PX),
    ("uppercase", "A", "pixels", "FRAMES 2 TO 6: [140, 120, 340, 360]", (2, 6), PX),
    ("words", "A", "pixels", "Frames 2 to 5 [140, 120, 340, 360]", (2, 5), PX),
    ("words", "A", "pixels", "frame 3 through frame 7, box [140, 120, 340, 360]", (3, 7), PX),
    ("words", "A", "pixels", "Frame 2 - Frame 6: [140, 120, 340, 360]", (2, 6), PX),
    ("words", "A", "pixels", "from frame 4 until frame 9 [140, 120, 340, 360]", (4, 9), PX),
    ("markdown", "A", "pixels", "**2-6** **[140, 120, 340, 360]**", (2, 6), PX),
    ("markdown", "A", "pixels", "**Frames:** 2–6\n**Box:** [140, 120, 340, 360]", (2, 6), PX),
    ("cot", "A", "pixels",
     "The man in red walks in on the third frame and stays until the seventh, where he "
     "turns left. Counting from zero, that is frames 2-6, and his box on those frames is "
     "about [150, 110, 350, 370].", (2, 6), [150, 110, 350, 370]),
    ("cot", "A", "pixels",
     "Step 1: the dog enters. Step 2: it sits down. So the answer is 3-5 "
     "[140, 120, 340, 360].", (3, 5), PX),
    # headscope's rule: the FIRST span outside the boxes wins ("0 to 9" here)
    ("cot_first_span", "A", "pixels",
     "There are 10 frames, numbered 0 to 9. The man appears in frame 2 and is gone after "
     "frame 6. Answer: 2-6 [140, 120, 340, 360]", (0, 9), PX),
    ("other_language", "A", "pixels", "目标出现在第2帧到第6帧，位置是[140, 120, 340, 360]。",
     (2, 6), PX),
    ("other_language", "A", "pixels",
     "El objeto aparece del fotograma 2 al 6, caja [140, 120, 340, 360].", (2, 6), PX),
    ("other_language", "A", "pixels", "Von Bild 2 bis 6, Box [140, 120, 340, 360]", (2, 6), PX),
    ("other_language", "A", "pixels", "De l'image 2 à 6 : [140, 120, 340, 360]", (2, 6), PX),
    ("box_first", "A", "pixels", "[140, 120, 340, 360] in frames 2-6", (2, 6), PX),
    ("qwen2_vl_form", "A", "normalized_1000", "2-6 (219,250),(531,750)", (2, 6),
     [140.16, 120, 339.84, 360]),
    ("qwen2_vl_form", "A", "normalized_1000",
     "<|box_start|>(219,250),(531,750)<|box_end|> frames 2-6", (2, 6),
     [140.16, 120, 339.84, 360]),
    ("brackets", "A", "pixels", "[2, 6] [140, 120, 340, 360]", (2, 6), PX),
    ("brackets", "A", "pixels", "[2-6] [140, 120, 340, 360]", (2, 6), PX),
    ("comma", "A", "pixels", "2, 6 [140, 120, 340, 360]", (2, 6), PX),
    ("one_frame", "A", "pixels", "4 [140, 120, 340, 360]", (4, 4), PX),
    ("reversed_box", "A", "pixels", "2-6 [340, 360, 140, 120]", (2, 6), PX),
    ("degenerate_box", "A", "pixels", "2-6 [140, 120, 140, 360]", (2, 6), None),
    ("half_box", "A", "pixels", "2-6 [240, 120, 440, 360]", (2, 6), [240, 120, 440, 360]),
    ("question_reply", "A", "pixels", "Is it frames 2-6? [140, 120, 340, 360]", (2, 6), PX),
    ("decimals", "A", "pixels", "2-6 [140.5, 119.5, 339.5, 360.25]", (2, 6),
     [140.5, 119.5, 339.5, 360.25]),
    ("between_shown", "B", "pixels", "3-4 [200, 100, 400, 300]", (3, 4), [200, 100, 400, 300]),
    ("between_shown", "B", "pixels", "3 [200, 100, 400, 300]", (3, 3), [200, 100, 400, 300]),
    ("between_shown", "B", "pixels", "0-9 [200, 100, 400, 300]", (0, 9), [200, 100, 400, 300]),
    ("exact", "C", "pixels", "1-4 [320, 180, 960, 540]", (1, 4), C_PX),
    ("partial", "C", "normalized", "0-2 [0.25, 0.25, 0.75, 0.75]", (0, 2), C_PX),
    ("exact", "C", "normalized_1000_auto", "1-4 [[0.25, 0.25, 0.75, 0.75]]", (1, 4), C_PX),
    ("other_language", "C", "pixels", "フレーム1から4、[320, 180, 960, 540]", (1, 4), C_PX),
    ("every_frame", "D", "pixels", "0-2 [40, 30, 200, 180]", (0, 2), [40, 30, 200, 180]),
    ("every_frame", "D", "pixels", "Frames 0 through 7 [40, 30, 200, 180]", (0, 7),
     [40, 30, 200, 180]),
    ("other_language", "D", "pixels", "Кадры с 1 по 3: [40, 30, 200, 180]", (1, 3),
     [40, 30, 200, 180]),
    ("last_frame", "E", "pixels", "9-9 [300, 200, 500, 400]", (9, 9), [300, 200, 500, 400]),
    ("last_frame", "E", "pixels", "8-12 [285, 200, 485, 400]", (8, 12), [285, 200, 485, 400]),
    # vIoU exactly at the thresholds (3/10 and 4 × 0.5 / 4): "> R" counts neither
    ("threshold", "F", "pixels", "0-9 [100, 100, 300, 300]", (0, 9), [100, 100, 300, 300]),
    ("threshold", "F", "pixels", "2-4 [100, 100, 300, 200]", (2, 4), [100, 100, 300, 200]),
    # headscope's rule: a box written with its corners named, "(x1, y1, x2, y2) = (…)"
    ("named_box", "A", "pixels", "2-6 (x1, y1, x2, y2) = (140, 120, 340, 360)", (2, 6), PX),
    ("named_box", "A", "pixels",
     "(x1, y1, x2, y2) = (140, 120, 340, 360), frames 2 to 6", (2, 6), PX),
    ("named_box", "A", "normalized", "(x1,y1,x2,y2)=(0.21875,0.25,0.53125,0.75) frames 2-6",
     (2, 6), PX),
    ("named_box", "A", "pixels",
     "Box (x_1, y_1, x_2, y_2): (150, 110, 350, 370) from frame 3 to frame 5", (3, 5),
     [150, 110, 350, 370]),
    ("named_box", "A", "pixels", "Frames 2-6, box (x1, y1, x2, y2): [140, 120, 340, 360]",
     (2, 6), PX),
]
# fmt: on


def sentence_type(i: int) -> str:
    return "interrogative" if i % 2 else "declarative"


def read(convention: str, reply: str, size: tuple[int, int]):
    """headscope's reading of a reply (the parsers the task and the adapters use)."""
    resized = RESIZED if convention == "pixels_resized" else None
    box = parse_box_text(box_text(reply), size, convention, resized_size=resized)
    return parse_span(reply), None if box is None else list(box.as_tuple())


def sted(positions, shown):
    """Positions → TubeDETR's predicted span: clamped, then [id[start], id[end] + 1).

    models/postprocessors.py::PostProcessSTVG gathers ``frames_id`` at the start and end
    indices and adds 1 to the end (floats). Clamping to the shown positions is headscope's
    reading of an out-of-range reply (TubeDETR's indices are always in range). No span: the
    empty span [0, 0), which the evaluator's arithmetic scores tIoU 0 and vIoU 0.
    """
    if positions is None:
        return [0.0, 0.0]
    lo, hi = (min(max(p, 0), len(shown) - 1) for p in positions)
    return [float(shown[lo]), float(shown[hi] + 1)]


def load_tubedetr(refs: Path):
    """TubeDETR's ``datasets/vidstg_eval.py`` as released, with util.dist/util.box_ops given."""
    util = types.ModuleType("util")
    dist = types.ModuleType("util.dist")
    dist.is_main_process = lambda: True  # one process

    def all_gather(data):
        raise AssertionError("not called: synchronize_between_processes is not used")

    dist.all_gather = all_gather
    box_ops = types.ModuleType("util.box_ops")
    tree = ast.parse((refs / "box_ops.py").read_text(encoding="utf-8"))
    names = {"np_box_area", "_box_inter_union", "np_box_iou"}
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    assert {n.name for n in body} == names
    import numpy as np

    box_ops.__dict__.update(np=np, Tuple=tuple)  # Tuple[..] of its annotation
    tree = ast.Module(body=body, type_ignores=[])
    # dont_inherit: compiled as written, without this file's __future__ flags
    exec(compile(tree, str(refs / "box_ops.py"), "exec", dont_inherit=True), box_ops.__dict__)
    util.dist, util.box_ops = dist, box_ops
    sys.modules.update({"util": util, "util.dist": dist, "util.box_ops": box_ops})
    module = types.ModuleType("tubedetr_vidstg_eval")
    path = refs / "vidstg_eval.py"
    code = compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True)
    exec(code, module.__dict__)
    return module


def annotations(rows) -> dict:
    """The evaluator's annotation file (preproc/preproc_vidstg.py's format: VidOR boxes as
    [xmin, ymin, xmax - xmin, ymax - ymin]); start/end frames chosen so that its own fps
    sampling yields exactly the shown frames."""
    videos, trajectories = [], {}
    for i, (setup, _, _) in enumerate(rows):
        _, _, _, span, tube, video_fps, shown = SETUPS[setup]
        videos.append({
            "video_id": i, "original_video_id": f"vid{setup}", "target_id": 1, "fps": video_fps,
            "start_frame": shown[0], "end_frame": shown[-1] + 1,
            "tube_start_frame": span[0], "tube_end_frame": span[1],
        })  # fmt: skip
        traj = {}
        for f in range(*span):
            x1, y1, x2, y2 = tube(f)
            traj[str(f)] = {"bbox": [x1, y1, x2 - x1, y2 - y1]}
        trajectories[f"vid{setup}"] = {"1": traj}
    return {"videos": videos, "trajectories": trajectories}


def run_tubedetr(module, rows, qtypes):
    """One VidSTGEvaluator run: per-video metrics and the summary (per qtype)."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "test.json").write_text(json.dumps(annotations(rows)), encoding="utf-8")
        ev = module.VidSTGEvaluator(tmp, "test", fps=FPS, video_max_len=200, tmp_loc=True)
    for i, (setup, positions, box) in enumerate(rows):
        shown = SETUPS[setup][6]
        frame_ids = ev.evaluator.vid2imgids[i][0]
        assert frame_ids == shown, (setup, frame_ids, shown)
        fed = box if box is not None else [0.0, 0.0, 0.0, 0.0]  # no box: IoU 0
        ev.update({f"{i}_{f}": {"boxes": [list(map(float, fed))]} for f in frame_ids})
        ev.video_update({i: {"sted": sted(positions, shown), "qtype": qtypes[i]}})
    summary = ev.summarize()
    return ev.results, {k: float(v) for k, v in summary.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refs", required=True, type=Path)
    module = load_tubedetr(ap.parse_args().refs)
    rows, out = [], []
    for _kind, setup, convention, reply, positions, box in CASES:
        got = read(convention, reply, SETUPS[setup][0])
        assert got[0] == positions, (reply, got[0], positions)
        assert (got[1] is None) == (box is None), (reply, got[1], box)
        if box is not None:
            assert all(abs(a - b) < 1e-9 for a, b in zip(got[1], box)), (reply, got[1], box)
        rows.append((setup, positions, box))
    types_ = [sentence_type(i) for i in range(len(CASES))]
    per_video, by_type = run_tubedetr(module, rows, types_)
    _, overall = run_tubedetr(module, rows, ["all"] * len(CASES))
    for i, (kind, setup, convention, reply, positions, box) in enumerate(CASES):
        m = per_video[i]
        out.append({
            "kind": kind, "setup": setup, "sentence_type": types_[i], "convention": convention,
            "output": reply,
            "reading": {"positions": list(positions) if positions else None, "box": box},
            "fed": {"sted": sted(positions, SETUPS[setup][6]),
                    "box": box if box is not None else [0.0, 0.0, 0.0, 0.0]},
            "expected": {"tIoU": float(m["tiou"]), "vIoU": float(m["viou"]),
                         "vIoU@0.3": m["viou@0.3"], "vIoU@0.5": m["viou@0.5"],
                         "gt_vIoU": float(m["gt_viou"])},
        })  # fmt: skip
    src = f"{REPO}@{COMMIT} datasets/vidstg_eval.py"
    data = {
        "provenance": {
            "evaluator": f"{src}::VidSTGEvaluator.summarize → VidSTGiouEvaluator.evaluate, "
            f"run as released (fps={FPS}, video_max_len=200, tmp_loc=True, one evaluator over "
            "all cases; per-case values are its per-video metrics)",
            "annotations": "built here in preproc/preproc_vidstg.py's format; each case's "
            "start_frame/end_frame/fps make the evaluator's own frame sampling give exactly "
            "the frames headscope shows (asserted): headscope's documented adaptation 'frame "
            "ids = the shown frames'",
            "stubbed": {
                "util.dist": "is_main_process() → True (one process); all_gather raises "
                "(synchronize_between_processes is not called)",
                "util.box_ops": f"{REPO}@{COMMIT} util/box_ops.py::np_box_area, "
                "_box_inter_union, np_box_iou compiled from the file (its module-level torch/"
                "torchvision imports skipped: unused by these numpy functions; torchvision "
                "cannot be installed)",
            },
            "predictions": "the hand reading fed as models/postprocessors.py::PostProcessSTVG "
            "would: sted = [frame_id[start], frame_id[end] + 1] (floats), positions clamped "
            "to the shown frames first (headscope's reading); the one box on every frame id. "
            "No span → sted [0, 0) (scores 0); no box → [0, 0, 0, 0] (IoU 0 with any gold)",
            "aggregate": "by_sentence_type: summarize() with each case's qtype; overall: "
            "summarize() of a second run with every qtype 'all' (TubeDETR reports per qtype "
            "only; headscope's unsuffixed metrics are that mean over all sentences)",
            "reading": "by hand; asserted equal to headscope's parse_span and "
            "harness.api.model.parse_box_text after tasks.vidstg.data.box_text (box within "
            "1e-9 px) before running",
        },
        "regenerate": "python tests/data/scoring/regen_vidstg_official.py --refs DIR (see its "
        "docstring)",
        "resized_size": list(RESIZED),
        "setups": {
            k: {
                "size": list(s[0]),
                "segment": list(s[1]),
                "num_frames": s[2],
                "span": list(s[3]),
                "tube": {str(f): s[4](f) for f in range(*s[3])},
                "video_fps": s[5],
                "shown": s[6],
            }
            for k, s in SETUPS.items()
        },  # fmt: skip
        "cases": out,
        "aggregate": {"by_sentence_type": by_type, "overall": overall},
    }
    path = HERE / "modes_vidstg.json"
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path} ({len(out)} cases)")
    for key, value in sorted({**by_type, **overall}.items()):
        print(f"  {key}: {value:.6f}")


if __name__ == "__main__":
    main()
