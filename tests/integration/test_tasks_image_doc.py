"""Image and document tasks end to end: real loaders on schema-exact fixtures, the evaluator,
a scripted model, metrics checked against hand-computed values; malformed rows and media."""

from __future__ import annotations

import json
import random
import shutil

import pytest

from harness.api.payloads import Box, BoxEvidence, PageEvidence
from harness.api.specs import RunSpec, TaskSpec
from harness.api.task import SampleError, TaskLoadError, build_task
from harness.run.evaluator import BadDataError, run_grid
from harness.testing.mock import ScriptedAdapter
from tests.fixtures import make_image_doc_fixtures as F


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    return F.make_all(tmp_path_factory.mktemp("fx"))


def run(tmp_path, name, args, responder, convention="normalized", split=None, **kw):
    tasks = (TaskSpec(name, split=split, args=args),)
    spec = RunSpec(tasks=tasks, output=str(tmp_path / name), **kw)
    adapter = ScriptedAdapter(responder, box_convention=convention)
    entry = run_grid(spec, adapter).entries[0]
    return {m.name: m.value for m in entry.metrics}, adapter, entry


def by_text(answers: dict[str, str], default: str = ""):
    def respond(request):
        hits = [a for key, a in answers.items() if key in request.text]
        return hits[0] if hits else default

    return respond


def test_pope_end_to_end(fx, tmp_path):
    got, adapter, entry = run(tmp_path, "pope", fx["pope"], lambda r: "Yes.")
    assert entry.n_samples == 6 and len(adapter.calls) == 6
    assert got["accuracy"] == 0.5 and got["precision"] == 0.5 and got["recall"] == 1.0
    assert got["f1"] == pytest.approx(2 / 3) and got["yes_ratio"] == 1.0
    assert adapter.calls[0].text.endswith("Answer the question using a single word or phrase.")
    assert adapter.calls[0].images[0].size == (40, 30)
    oracle = by_text({"dog": "yes, there is", "cat": "No."})
    got, _, _ = run(tmp_path / "b", "pope", fx["pope"] | {"subset": "adversarial"}, oracle)
    assert got["accuracy"] == 1.0 and got["yes_ratio"] == 0.5


def test_refcocog_end_to_end(fx, tmp_path):
    answers = {
        "the red box on the left.": "[10, 12, 40, 32]",
        "a red square.": "[26, 12, 56, 32]",
        "the tall red thing.": "I cannot tell",
        "the bottom half.": "[0, 30, 80, 90]",
    }
    args = fx["refcocog"] | {"scoring": "lenient"}  # the lenient rule: clipping, pixels
    got, adapter, entry = run(tmp_path, "refcocog", args, by_text(answers), "pixels")
    assert entry.n_samples == 4
    assert got["acc@0.5"] == 0.5 and got["acc@0.3"] == 0.75 and got["acc@0.7"] == 0.5
    assert got["miou"] == pytest.approx((1 + 280 / 920 + 0 + 1) / 4)
    assert got["center_acc"] == 0.5 and got["parse_rate"] == 0.75
    assert adapter.calls[0].text == (
        "Please provide the bounding box coordinate of the region this sentence describes: "
        "the red box on the left."
    )


def test_refcocog_boxes_are_xyxy_pixels_and_evidence(fx):
    task = build_task("refcocog", fx["refcocog"])
    samples = task.load()
    assert [s.doc_id for s in samples] == ["1001#0", "1001#1", "1002#0", "1003#0"]
    for sample, row in zip(samples, [r for r in F.refcocog_rows() for _ in r["answer"]]):
        x, y, w, h = row["bbox"]
        assert sample.box == Box(x, y, x + w, y + h)
        assert task.evidence(sample, task.request(sample)) == BoxEvidence(sample.box, 0)
    assert task.grounded


def test_mmmu_end_to_end_with_seeded_fallback(fx, tmp_path):
    answers = {"What shape": "(B)", "Which is larger": "I am not sure", "area": "256",
               "ratio": "It is 1.5"}  # fmt: skip
    got, adapter, _ = run(tmp_path, "mmmu", fx["mmmu"], by_text(answers), seed=7)
    fallback = random.Random("7:validation_Math_2").choice("AB")
    assert got["accuracy"] == pytest.approx((3 + (fallback == "A")) / 4)
    assert got["fallback_rate"] == 0.5
    two = [c for c in adapter.calls if "Which is larger" in c.text][0]
    assert len(two.images) == 2 and "A. the first\nB. the second\n" in two.text
    again, _, _ = run(tmp_path / "again", "mmmu", fx["mmmu"], by_text(answers), seed=7)
    assert again == got


def test_mmlongbench_end_to_end(fx, tmp_path):
    answers = {"title": "Annual report", "squares": "3", "share": "0.125",
               "colours": "blue and red", "CEO": "Jane Doe"}  # fmt: skip
    args = fx["mmlongbench_doc"] | {"dpi": 36, "scoring": "lenient"}  # "blue and red" is a list
    got, adapter, _ = run(tmp_path, "mmlongbench_doc", args, by_text(answers))
    assert got["accuracy"] == pytest.approx(4 / 5)
    # recall: 4 hits / 4 answerable; precision: 4 hits / 5 answered
    assert got["f1"] == pytest.approx(2 * 1 * 0.8 / 1.8)
    assert [len(c.pages) for c in adapter.calls] == [3, 3, 4, 4, 4]
    assert adapter.calls[0].pages[0].size == (100, 75)  # 200×150 pt at 36 dpi


def test_mmlongbench_gold_pages_and_evidence(fx):
    task = build_task("mmlongbench_doc", fx["mmlongbench_doc"] | {"pages": "gold", "dpi": 36})
    samples = task.load()
    assert [s.evidence_pages for s in samples] == [(0,), (0, 2), (1,), (3,), ()]
    req = task.request(samples[1])
    assert len(req.pages) == 2 and task.evidence(samples[1], req) == PageEvidence(pages=(0, 1))
    assert task.evidence(samples[4], task.request(samples[4])) is None
    assert task.settings()["pages"] == "gold"
    everything = build_task("mmlongbench_doc", fx["mmlongbench_doc"] | {"max_pages": 2})
    req = everything.request(samples[1])
    assert len(req.pages) == 2 and everything.evidence(samples[1], req) == PageEvidence((0,))


def test_mmlongbench_missing_pdf_error_or_counted_skip(fx, tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(fx["mmlongbench_doc"]["doc_dir"], docs)
    (docs / "slides.pdf").unlink()
    args = fx["mmlongbench_doc"] | {"doc_dir": str(docs), "dpi": 36}
    with pytest.raises(BadDataError, match=r"slides\.pdf.*not found"):
        run(tmp_path / "a", "mmlongbench_doc", args, lambda r: "3")
    _, adapter, entry = run(tmp_path / "b", "mmlongbench_doc", args, lambda r: "3",
                            skip_bad_docs=True)  # fmt: skip
    assert entry.n_skipped == 3 and entry.n_samples == 2 and len(adapter.calls) == 2


def test_a_wrong_media_folder_is_refused_before_anything_is_written(fx, tmp_path):
    (tmp_path / "empty").mkdir()
    args = fx["mmlongbench_doc"] | {"doc_dir": str(tmp_path / "empty"), "dpi": 36}
    spec = RunSpec(tasks=(TaskSpec("mmlongbench_doc", args=args),), output=str(tmp_path / "o"))
    adapter = ScriptedAdapter(lambda r: "3")
    with pytest.raises(BadDataError, match=r"the first document: .*not found"):
        run_grid(spec, adapter)
    assert not (tmp_path / "o").exists() and not adapter.calls  # nothing written, nothing run


def test_mmdocir_page_level_end_to_end(fx, tmp_path):
    answers = {"chart on page 2": "2", "authors": "3, 2, 1", "table": "1"}
    got, adapter, entry = run(tmp_path, "mmdocir", fx["mmdocir"], by_text(answers))
    assert entry.n_samples == 3
    assert got["recall@1"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert got["recall@3"] == pytest.approx((1 + 1 + 0) / 3)
    assert [len(c.pages) for c in adapter.calls] == [3, 3, 4]
    assert adapter.calls[0].pages[0].size == F.MMDOCIR_PIXELS


def test_mmdocir_layout_level_boxes_scaled_to_pixels(fx, tmp_path):
    task = build_task("mmdocir", fx["mmdocir"] | {"level": "layout", "scoring": "lenient"})
    samples = task.load()
    # bbox [50, 60, 250, 100.5] pt on a 612×792 pt page, image 306×396 px: scale 0.5.
    assert samples[1].layouts[0] == (0, Box(25, 30, 125, 50.25))
    ev = task.evidence(samples[1], task.request(samples[1]))
    assert ev.pages == (0, 2) and ev.boxes[2] == (Box(30, 40, 250, 150),)
    answers = {"authors": "page 1: [25, 30, 125, 50]\npage 3: [0, 0, 10, 10]"}
    got, _, _ = run(tmp_path, "mmdocir", fx["mmdocir"] | {"level": "layout", "scoring": "lenient"},
                    by_text(answers, "page 4: [0, 0, 306, 198]"), "pixels")  # fmt: skip
    # chart question: page 4 predicted → misses; authors: 1 of 2 layouts; table: exact hit.
    assert got["layout_recall@1"] == pytest.approx((0 + 0.5 + 1) / 3)
    assert got["recall@5"] == pytest.approx((0 + 1 + 1) / 3)


def test_mmdocir_official_layout_end_to_end(fx, tmp_path):
    answers = {"authors": "page 1: [25, 30, 125, 50]\npage 3: [0, 0, 10, 10]"}
    got, _, entry = run(tmp_path, "mmdocir", fx["mmdocir"] | {"level": "layout"},
                        by_text(answers, "page 4: [0, 0, 306, 198]"), "pixels")  # fmt: skip
    assert entry.task_settings["scoring"] == "official"
    # Hand-derived from metric_eval.recall_layout in page points (612×792 pt, images at 0.5):
    # chart: its region is on page 4 of a 3-page document → nothing; authors: [50, 60, 250,
    # 100] pt covers 200·40 of gold areas 200·40.5 + 440·220; table: [0, 0, 612, 396] exact.
    authors = 200 * 40 / (200 * 40.5 + 440 * 220)
    assert got["layout_recall@1"] == pytest.approx((0 + authors + 1) / 3)
    assert got["layout_recall@10"] == pytest.approx((0 + authors + 1) / 3)
    # alpha (2 questions) is "Research report / Introduction", beta "Academic paper"; the
    # other eight domains count 0 in the release's macro average.
    assert got["layout_recall@1_macro"] == pytest.approx(((0 + authors) / 2 + 1) / 10)
    assert got["recall@1"] == pytest.approx((0 + 0.5 + 1) / 3)
    assert got["recall@1_macro"] == pytest.approx(((0 + 0.5) / 2 + 1) / 10)


def test_mmdocir_accepts_the_release_s_odd_gold_layouts(tmp_path):
    def odd(notes):  # as in the real annotations: a zero-width layout, a layout off page_id
        q0, q1 = notes[0]["questions"]
        zero = {"page": 1, "page_size": [612, 792], "bbox": [300, 100, 300, 450]}
        q0 = q0 | {"layout_mapping": [*q0["layout_mapping"], zero]}
        off = {"page": 1, "page_size": [612, 792], "bbox": [0, 0, 306, 396]}
        q1 = q1 | {"layout_mapping": [*q1["layout_mapping"], off]}
        return [notes[0] | {"questions": [q0, q1]}, *notes[1:]]

    task = build_task("mmdocir", F.make_mmdocir(tmp_path, mutate=odd) | {"level": "layout"})
    chart, authors, _ = task.load()
    assert chart.layout_rects[-1] == (1, (300.0, 100.0, 300.0, 450.0))
    assert [b for p, b in chart.layouts] == [Box(50, 100, 150, 200)]  # zero area: no pixels
    assert authors.gold_pages == (0, 2) and authors.layout_rects[-1][0] == 1
    assert dict(authors.page_sizes)[1] == F.MMDOCIR_PIXELS  # a layout page, not a gold page
    ev = task.evidence(authors, task.request(authors))
    assert ev.pages == (0, 2) and 1 not in ev.boxes


@pytest.mark.parametrize(
    ("maker", "name", "mutate", "pattern"),
    [
        (F.make_refcocog, "refcocog", lambda rows: [rows[0], rows[1] | {"bbox": [1, 2, -3, 4]}],
         r"refcocog row 1 \(question_id='1002'\).*non-positive"),
        (F.make_pope, "pope", lambda rows: rows[:2] + [rows[2] | {"answer": "maybe"}],
         r"pope row 2 .*not yes/no"),
        (F.make_mmmu, "mmmu", lambda rows: [rows[0] | {"options": "['a', 'b'"}],
         r"mmmu row 0 \(id='validation_Math_1'\).*'options'"),
        (F.make_mmlongbench, "mmlongbench_doc",
         lambda rows: [rows[0] | {"evidence_pages": "[0]"}], r"mmlongbench_doc row 0.*1-based"),
        (F.make_mmdocir, "mmdocir",
         lambda notes: [notes[0] | {"questions": [notes[0]["questions"][0] | {"page_id": [3]}]}],
         r"mmdocir annotations row 0 \(doc_name='alpha.pdf'\) question 0.*outside"),
        (F.make_mmdocir, "mmdocir", lambda notes: [notes[0] | {"page_indices": [0, 2]}],
         r"mmdocir annotations row 0.*belongs to another document"),
    ],
)  # fmt: skip
def test_malformed_rows_name_the_row(tmp_path, maker, name, mutate, pattern):
    task = build_task(name, maker(tmp_path, mutate=mutate))
    with pytest.raises(SampleError, match=pattern):
        task.load()


def test_evidence_page_beyond_document_is_a_sample_error(tmp_path):
    args = F.make_mmlongbench(tmp_path, mutate=lambda rows: [rows[0] | {"evidence_pages": "[9]"}])
    task = build_task("mmlongbench_doc", args)
    with pytest.raises(SampleError, match=r"report\.pdf#0.*\[9\].*3 pages"):
        task.request(task.load()[0])


def test_missing_image_file_names_the_file(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "image"} | {"image": f"img/{r['id']}.png"}
            for r in F.pope_rows()]  # fmt: skip
    (tmp_path / "pope.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "img").mkdir()
    F._img((8, 8)).save(tmp_path / "img" / "0.png")
    task = build_task("pope", {"data_files": str(tmp_path / "pope.jsonl"),
                               "image_root": str(tmp_path)})  # fmt: skip
    samples = task.load()
    assert task.request(samples[0]).images[0].size == (8, 8)
    with pytest.raises(SampleError, match=r"img/1\.png.*not found"):
        task.request(samples[1])


def test_loader_errors_are_clear(tmp_path, fx):
    with pytest.raises(TaskLoadError, match=r"lmms-lab-encoder/POPE.*lmms-lab/POPE.*data_files"):
        build_task("pope").load()
    with pytest.raises(TaskLoadError, match="not found"):
        build_task("pope", {"data_files": str(tmp_path / "nope.parquet")}).load()
    with pytest.raises(TaskLoadError, match="doc_dir"):
        build_task("mmlongbench_doc", {"data_files": fx["mmlongbench_doc"]["data_files"]}).load()
    with pytest.raises(ValueError, match="subset"):
        build_task("pope", {"subset": "hard"})
    with pytest.raises(TaskLoadError, match="one evaluation split"):
        build_task("mmdocir", fx["mmdocir"]).load(split="val")


MINI = [("pope_mini", "pope"), ("refcocog_mini", "refcocog"), ("mmmu_mini", "mmmu"),
        ("mmlongbench_mini", "mmlongbench"), ("mmdocir_mini", "mmdocir")]  # fmt: skip


@pytest.mark.parametrize(("name", "kind"), MINI)
def test_mini_tasks_oracle_scores_perfectly(tmp_path, name, kind):
    from harness.toy.scenes import generate_samples

    def key(text, images):
        return text, tuple(im.tobytes() for im in images)

    truth = {key(s.question, s.images): s.answer for s in generate_samples(kind, "validation", 6)}
    oracle = lambda r: truth[key(r.text, r.visual_inputs())]  # noqa: E731
    got, adapter, entry = run(tmp_path, name, {"n": 6}, oracle, split="validation")
    assert entry.n_samples == 6 and len(adapter.calls) == 6
    headline = {"pope_mini": "accuracy", "refcocog_mini": "acc@0.5", "mmmu_mini": "accuracy",
                "mmlongbench_mini": "accuracy", "mmdocir_mini": "recall@1"}  # fmt: skip
    assert got[headline[name]] == 1.0
    wrong, _, _ = run(tmp_path / "w", name, {"n": 6}, lambda r: "[0.9, 0.9, 1.0, 1.0] zzz 9",
                      split="validation")  # fmt: skip
    assert wrong[headline[name]] < 1.0


@pytest.mark.parametrize(("name", "kind"), MINI)
def test_mini_tasks_evidence_matches_toy(name, kind):
    from harness.toy.scenes import generate_samples

    task = build_task(name, {"n": 4})
    samples = task.load("test")
    for sample, mini in zip(samples, generate_samples(kind, "test", 4)):
        ev = task.evidence(sample, task.request(sample))
        expected = {(i, Box(*b)) for i, b in mini.evidence}
        if isinstance(ev, BoxEvidence):
            assert {(ev.image_index, ev.box)} == expected
        elif isinstance(ev, PageEvidence):
            assert {(p, b) for p, bs in ev.boxes.items() for b in bs} == expected
        else:
            assert ev is None and not task.grounded


def test_mini_refuses_training_split():
    with pytest.raises(TaskLoadError, match="held out"):
        build_task("pope_mini", {"n": 2}).load("train")


def test_render_pages_sizes_order_and_errors(tmp_path, monkeypatch):
    import sys

    from harness.media import pdf as media_pdf

    pdf = tmp_path / "doc.pdf"
    F.make_pdf(pdf, 3)
    assert media_pdf.page_count(pdf) == 3
    pages = media_pdf.render_pages(pdf, [2, 0], dpi=72)
    assert [p.size for p in pages] == [F.PDF_POINTS, F.PDF_POINTS]
    # the red square moves 30 pt right per page: page 3's is at x 80..105, page 1's at 20..45
    assert pages[0].getpixel((90, 70)) == (255, 0, 0)
    assert pages[1].getpixel((90, 70)) == (255, 255, 255)
    assert [p.size for p in media_pdf.render_pages(pdf, dpi=144)] == [(400, 300)] * 3
    with pytest.raises(SampleError, match=r"doc\.pdf.*3 pages.*\[3\]"):
        media_pdf.render_pages(pdf, [3])
    (tmp_path / "bad.pdf").write_text("not a pdf")
    with pytest.raises(SampleError, match=r"bad\.pdf.*cannot be read"):
        media_pdf.render_pages(tmp_path / "bad.pdf")
    with pytest.raises(SampleError, match=r"gone\.pdf.*not found"):
        media_pdf.render_pages(tmp_path / "gone.pdf")
    monkeypatch.setitem(sys.modules, "pymupdf", None)
    monkeypatch.setitem(sys.modules, "fitz", None)
    with pytest.raises(ImportError, match=r"pip install 'headscope\[docs\]'"):
        media_pdf.render_pages(pdf)
