"""Scoring asks the adapter for boxes on video frames through ``parse_video_box``.

Every place that builds a :class:`~harness.api.task.ScoringContext` (the evaluator,
``diagnose``) hands it the adapter's ``parse_video_box``; VidSTG calls it with the number of
frames shown. Without one, the context falls back to ``parse_box``.
"""

from __future__ import annotations

import json

from harness.api.payloads import Box
from harness.api.specs import RunSpec, TaskSpec
from harness.api.task import ScoringContext, build_task
from harness.testing.mock import ScriptedAdapter

MARK = Box(1.0, 2.0, 3.0, 4.0)


class FrameBoxes(ScriptedAdapter):
    """A scripted adapter whose video-frame boxes are recognisable and whose calls are kept."""

    def __init__(self, responder):
        super().__init__(responder, box_convention="normalized")
        self.video_calls: list[tuple] = []

    def parse_video_box(self, text, frame_size, num_frames):
        self.video_calls.append((text, frame_size, num_frames))
        return MARK


def test_context_without_a_video_parser_uses_parse_box():
    ctx = ScoringContext(lambda text, size: Box(0.0, 0.0, *size))
    assert ctx.parse_video_box("x", (8, 6), 4) == Box(0.0, 0.0, 8.0, 6.0)
    ctx = ScoringContext(lambda text, size: None, parse_video_box=lambda t, s, n: MARK)
    assert ctx.parse_video_box("x", (8, 6), 4) == MARK


def test_evaluator_scores_vidstg_boxes_with_the_adapters_video_parser(tmp_path):
    adapter = FrameBoxes(lambda r: "0-1 [0.1, 0.1, 0.5, 0.5]")
    spec = RunSpec(tasks=(TaskSpec("vidstg_mini", args={"n": 3}),), output=str(tmp_path))
    from harness.run.evaluator import run_grid

    entry = run_grid(spec, adapter).entries[0]
    rows = [json.loads(x) for x in (tmp_path / entry.samples_file).read_text().splitlines()]
    assert [r["scores"]["pred_box"] for r in rows] == [list(MARK.as_tuple())] * 3
    docs = {d.doc_id: d for d in build_task("vidstg_mini", {"n": 3}).load()}
    assert len(adapter.video_calls) == 3
    for (_, size, n), row in zip(adapter.video_calls, rows, strict=True):
        doc = docs[row["doc_id"]]
        assert size == (doc.width, doc.height) and n == len(doc.frames)


def test_diagnose_scores_vidstg_boxes_with_the_adapters_video_parser():
    from harness.probes.diagnose import _correctness

    task = build_task("vidstg_mini", {"n": 1})
    doc = task.load(limit=1)[0]
    adapter = FrameBoxes(lambda r: "0-1 [0.1, 0.1, 0.5, 0.5]")
    _correctness(adapter, task, doc, task.request(doc), seed=0, threshold=0.5)
    assert [c[1:] for c in adapter.video_calls] == [((doc.width, doc.height), len(doc.frames))]
