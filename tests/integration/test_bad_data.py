"""Malformed evidence in each grounded task: a clear error naming the row (nothing scored
silently), or with ``--skip-bad-docs`` a counted skip with its reason; the same rule in ``run``
(the evaluator) and ``rank`` (``probe_task``)."""

from __future__ import annotations

import io
import json
import struct
import zlib

import pytest

from harness.api.payloads import EvidenceError
from harness.api.specs import RunSpec, TaskSpec
from harness.api.task import BadDataError
from harness.probes.rank import probe_task
from harness.run.evaluator import run_grid
from harness.testing.mock import ScriptedAdapter
from tests.fixtures import make_image_doc_fixtures as F


def png_bomb(width: int = 30000, height: int = 30000) -> bytes:
    """A valid 1×1 PNG whose header claims ``width`` × ``height`` pixels."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (1, 1)).save(buf, format="PNG")
    data = bytearray(buf.getvalue())
    data[16:24] = struct.pack(">II", width, height)  # IHDR width/height
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))  # IHDR CRC
    return bytes(data)


def _refcocog_box_outside(rows):
    return [rows[0], rows[1] | {"bbox": [500.0, 500.0, 10.0, 10.0]}, rows[2]]


def _refcocog_inf_width(rows):
    return [rows[0], rows[1] | {"bbox": [1.0, 2.0, float("inf"), 4.0]}, rows[2]]


def _refcocog_bomb(rows):
    return [rows[0], rows[1] | {"image": {"bytes": png_bomb(), "path": None}}, rows[2]]


def _mmdocir_layout_outside(notes):
    q = notes[0]["questions"][0]
    bad = q | {"layout_mapping": [q["layout_mapping"][0] | {"bbox": [700, 800, 900, 1000]}]}
    return [notes[0] | {"questions": [bad, *notes[0]["questions"][1:]]}, *notes[1:]]


def _mmdocir_layout_reversed(notes):
    q = notes[0]["questions"][0]
    bad = q | {"layout_mapping": [q["layout_mapping"][0] | {"bbox": [300, 200, 100, 400]}]}
    return [notes[0] | {"questions": [bad, *notes[0]["questions"][1:]]}, *notes[1:]]


def _mmdocir_garbage_page(pages):
    return [p | {"image_binary": b"garbage"} if i == 3 else p for i, p in enumerate(pages)]


def _vidstg_tube_outside(entries):
    return [*entries[:2], entries[2] | {"width": 4, "height": 6}]


def _vidstg_size_not_the_video_s(entries):
    e = entries[2]
    return [*entries[:2], e | {"width": 2 * e["width"], "height": 2 * e["height"]}]


def _mmlongbench_zero_page(rows):
    return [rows[0] | {"evidence_pages": "[0]"}, *rows[1:]]


def _mmlongbench_page_beyond(rows):
    return [rows[0] | {"evidence_pages": "[9]"}, *rows[1:]]


def _image_doc(maker, **kw):
    return lambda root: maker(root, **kw)


def _vidstg(mutate):
    def make(root):
        pytest.importorskip("av")
        from tests.fixtures import make_video_fixtures as V

        return V.make_vidstg(root, mutate=mutate) | {"num_frames": 4}

    return make


# (id, task, fixture maker, culprit in the error, docs, skipped, found at load). The garbage
# page of MMDocIR is gold for question 0 (found at load) and shown to question 1 (at request).
REF, DOCIR, LONG = F.make_refcocog, F.make_mmdocir, F.make_mmlongbench
CASES = [
    ("refcocog-box-outside-image", "refcocog",
     _image_doc(REF, mutate=_refcocog_box_outside),
     r"1002#0.*outside the 80×60 image", 4, 1, False),
    ("refcocog-infinite-width", "refcocog",
     _image_doc(REF, mutate=_refcocog_inf_width),
     r"refcocog row 1 \(question_id='1002'\).*non-finite", 4, 1, True),
    ("refcocog-decompression-bomb", "refcocog",
     _image_doc(REF, mutate=_refcocog_bomb),
     r"1002#0.*too large to decode safely", 4, 1, False),
    ("mmdocir-layout-outside-page", "mmdocir",
     _image_doc(DOCIR, mutate=_mmdocir_layout_outside),
     r"alpha.pdf.*question 0.*outside its 612×792 page", 3, 1, True),
    ("mmdocir-layout-reversed", "mmdocir",
     _image_doc(DOCIR, mutate=_mmdocir_layout_reversed),
     r"alpha.pdf.*question 0.*\[300\.0, 200\.0, 100\.0, 400\.0\] is written reversed", 3, 1, True),
    ("mmdocir-garbage-gold-page", "mmdocir",
     _image_doc(DOCIR, mutate_pages=_mmdocir_garbage_page),
     r"alpha.pdf.*question 0 page 1.*cannot read image", 3, 2, True),
    ("vidstg-tube-outside-frame", "vidstg",
     _vidstg(_vidstg_tube_outside),
     r"entry 2 .*wholly outside the 4×6 frame", 4, 1, True),
    ("vidstg-annotated-size-not-the-video-s", "vidstg",
     _vidstg(_vidstg_size_not_the_video_s),
     r"decoded frames are \d+×\d+ but the annotation says \d+×\d+", 4, 1, False),
    ("mmlongbench-zero-page", "mmlongbench_doc",
     _image_doc(LONG, mutate=_mmlongbench_zero_page),
     r"mmlongbench_doc row 0.*1-based", 5, 1, True),
    ("mmlongbench-page-beyond-document", "mmlongbench_doc",
     _image_doc(LONG, mutate=_mmlongbench_page_beyond),
     r"report\.pdf#0.*\[9\]", 5, 1, False),
]  # fmt: skip
PARAMS = ("case", "name", "make", "culprit", "n", "skipped", "at_load")
IDS = [c[0] for c in CASES]


def _responder(request):
    return "1"


def _spec(tmp_path, name, args, skip):
    return RunSpec(
        tasks=(TaskSpec(name, args=args),), output=str(tmp_path / "out"), skip_bad_docs=skip
    )


@pytest.mark.parametrize(PARAMS, CASES, ids=IDS)
def test_run_refuses_bad_evidence_naming_the_row(
    tmp_path, case, name, make, culprit, n, skipped, at_load
):
    args = make(tmp_path / "data")
    with pytest.raises(BadDataError, match=culprit) as err:
        run_grid(_spec(tmp_path, name, args, False), ScriptedAdapter(_responder))
    assert "--skip-bad-docs" in str(err.value) and "rerun" not in str(err.value)
    if at_load:  # found before anything was written
        assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(PARAMS, CASES, ids=IDS)
def test_run_with_skip_counts_the_bad_row_with_its_reason(
    tmp_path, case, name, make, culprit, n, skipped, at_load
):
    import re

    args = make(tmp_path / "data")
    res = run_grid(_spec(tmp_path, name, args, True), ScriptedAdapter(_responder))
    entry = res.entries[0]
    assert entry.n_skipped == skipped and entry.n_samples == n - skipped
    text = (tmp_path / "out" / entry.samples_file).read_text()
    rows = [json.loads(line) for line in text.splitlines()]
    reasons = [r["skipped"] for r in rows if "skipped" in r]
    assert len(reasons) == skipped and re.search(culprit, reasons[0])
    assert "Infinity" not in text and "NaN" not in text


class _NoEvidenceAdapter(ScriptedAdapter):
    """Good samples reach the evidence mapping, which this mock declines (counted skips)."""

    def token_spans(self, request, evidence):
        raise EvidenceError("mock: no token mapping")


@pytest.mark.parametrize(PARAMS, CASES, ids=IDS)
def test_rank_follows_the_same_rule(tmp_path, case, name, make, culprit, n, skipped, at_load):
    import re

    tspec = TaskSpec(name, args=make(tmp_path / "data"))
    with pytest.raises(BadDataError, match=culprit):
        probe_task(_NoEvidenceAdapter(_responder), tspec, progress=False)
    probe = probe_task(_NoEvidenceAdapter(_responder), tspec, progress=False, skip_bad_docs=True)
    declined = ("mock: no token mapping", "the task gives no evidence")
    bad = [s for s in probe.skipped if not s["reason"].startswith(declined)]
    assert len(bad) == skipped and re.search(culprit, bad[0]["reason"])
    assert len(probe.skipped) == n  # the others were declined by the mock's evidence mapping


@pytest.mark.parametrize(
    ("name", "maker", "mutate", "culprit", "n"),
    [
        ("pope", F.make_pope, lambda rows: [*rows[:2], rows[2] | {"answer": "maybe"}, *rows[3:]],
         r"pope row 2 .*not yes/no", 6),
        ("mmmu", F.make_mmmu, lambda rows: [rows[0] | {"options": "['a', 'b'"}, *rows[1:]],
         r"mmmu row 0 \(id='validation_Math_1'\).*'options'", 4),
    ],
)  # fmt: skip
def test_other_tasks_follow_the_same_rule(tmp_path, name, maker, mutate, culprit, n):
    args = maker(tmp_path / "data", mutate=mutate)
    with pytest.raises(BadDataError, match=culprit):
        run_grid(_spec(tmp_path / "a", name, args, False), ScriptedAdapter(_responder))
    assert not (tmp_path / "a").exists()
    entry = run_grid(_spec(tmp_path / "b", name, args, True), ScriptedAdapter(_responder)).entries[
        0
    ]
    assert entry.n_skipped == 1 and entry.n_samples == n - 1


def test_progress_is_closed_before_the_error_is_reported(tmp_path, capsys):
    args = F.make_refcocog(tmp_path / "data", mutate=_refcocog_box_outside)
    adapter = _NoEvidenceAdapter(_responder)
    with pytest.raises(BadDataError) as err:
        probe_task(adapter, TaskSpec("refcocog", args=args), progress=True)
    # The progress report ended (bar cleared / summary line written) while the error was
    # still in flight, so the error line starts on a line of its own.
    assert "[headscope] rank refcocog: 2/4 samples" in capsys.readouterr().err
    assert err.value is not None
