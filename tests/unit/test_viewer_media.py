"""Every sample page's media, rebuilt by its task: images, sampled frames, pages; gold and
predicted regions in the medium's original pixels; refused when the log disagrees."""

import json
from pathlib import Path

import pytest

pytest.importorskip("jinja2")
pytest.importorskip("PIL")

from harness.api.task import build_task  # noqa: E402
from harness.testing.job_dirs import use_task_documents, write_fixture_job  # noqa: E402
from viewer.collect import collect  # noqa: E402
from viewer.media import MAX_PER_DOC, MAX_SIDE  # noqa: E402
from viewer.site import build_site  # noqa: E402

TASKS = ("refcocog_mini", "pope_mini", "vidstg_mini", "mmdocir_mini")
N = 3
REPLY = {"refcocog_mini": "[0.5, 0.25, 1.0, 0.75]"}
#: What the tube and page tasks log of a reply's prediction (frame positions, pixels; pages).
PREDICTED = {
    "vidstg_mini": {"pred_positions": [1, 2], "pred_box": [2.0, 3.0, 20.0, 30.0]},
    "mmdocir_mini": {"pred_pages": [1, 0]},
}


def _docs(task):
    t = build_task(task, {})
    return t, list(t.load(split="test"))[:N]


def _real_job(root, tasks=TASKS):
    """A fixture job whose logs name the tasks' real documents, prompts and logged fields."""
    job = write_fixture_job(root, n_samples=N, tasks=tasks, grounded=())
    use_task_documents(job, REPLY)
    for log in (job / "accuracy" / "samples").glob("*.jsonl"):
        extra = PREDICTED.get(log.name.split("__")[0], {})
        rows = [json.loads(line) for line in log.read_text().splitlines()]
        for row in rows:
            row["scores"].update(extra)
        log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return job


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("media")
    job = _real_job(root / "job")
    data = collect([job], n_boot=20)
    build_site(data, root / "site", figures=False)
    return root / "site", data


def _read(path):
    return json.loads(path.read_text().split(",", 1)[1][:-3])


def _details(out, task):
    return _read(out / f"data/samples/{task}/chunk-0.js")["samples"]


def test_every_sample_shows_the_media_its_task_gave_the_model(site):
    from PIL import Image

    out, data = site
    for task in TASKS:
        t, docs = _docs(task)
        for detail, doc in zip(_details(out, task), docs):
            assert detail["id"] == doc.doc_id
            request = t.request(doc)
            shown = list(request.images) + list(request.pages)
            shown += list(request.video.frames if request.video else ())
            media = detail["media"]["media"]
            assert media and detail["media"]["note"] is None, (task, detail["media"])
            assert detail["media"]["n_media"] == len(shown)
            assert len(media) == min(len(shown), MAX_PER_DOC)
            for m in media:
                with Image.open(out / m["src"]) as im:
                    assert max(im.size) <= MAX_SIDE[m["kind"]]
                original = shown[m["index"] + (len(request.images) if m["kind"] == "page" else 0)]
                assert (m["width"], m["height"]) == original.size
            if request.video is not None:  # frames: 0-based position and source frame
                for m in media:
                    assert m["kind"] == "frame"
                    assert m["source"] == request.video.frame_indices[m["index"]]
                    assert m["source"] == detail["fields"]["frame_indices"][m["index"]]


def test_gold_and_predicted_boxes_are_in_original_pixels(site):
    out, _ = site
    t, docs = _docs("refcocog_mini")
    for detail, doc in zip(_details(out, "refcocog_mini"), docs):
        (image,) = t.request(doc).images
        w, h = image.size
        ev = detail["media"]["evidence"]
        assert ev["kind"] == "box"
        assert ev["regions"] == [{"media": 0, "box": [round(v, 1) for v in doc.box.as_tuple()]}]
        assert detail["fields"]["target"] == list(doc.box.as_tuple())  # the same pixels
        for replies in detail["replies"]:
            for r in replies:  # "[0.5, 0.25, 1.0, 0.75]" read in the toy's normalised convention
                assert r["region"] == [{"media": 0, "box": [w / 2, h / 4, w, 3 * h / 4]}]
    # the samples list gives the reply with its box in pixels, as the gold target is given
    table = _read(out / "data/samples/refcocog_mini/table.js")
    box = f"[{w / 2:g}, {h / 4:g}, {w:g}, {3 * h / 4:g}] px"
    assert {r for s in table["samples"] for r in s["r"]} == {f"{REPLY['refcocog_mini']} → {box}"}


def test_tube_and_page_evidence(site):
    out, _ = site
    for detail in _details(out, "vidstg_mini"):
        ev = detail["media"]["evidence"]
        assert ev["kind"] == "tube" and ev["regions"]
        frames = detail["media"]["media"]
        span = detail["fields"]["target"]["span"]
        for r in ev["regions"]:  # each tube box sits on a frame inside the gold span
            assert span[0] <= frames[r["media"]]["source"] <= span[1]
        media = detail["media"]["media"]
        for replies in detail["replies"]:  # the logged span on the shown frames, its box
            for r in replies:
                assert [media[x["media"]]["index"] for x in r["region"]] == [1, 2]
                assert {tuple(x["box"]) for x in r["region"]} == {(2.0, 3.0, 20.0, 30.0)}
    for detail in _details(out, "mmdocir_mini"):
        ev = detail["media"]["evidence"]
        media = detail["media"]["media"]
        pages = {media[r["media"]]["index"] for r in ev["regions"]}
        assert ev["kind"] == "page" and pages == set(detail["fields"]["target"])
        for replies in detail["replies"]:
            for r in replies:
                assert sorted(media[x["media"]]["index"] for x in r["region"]) == [0, 1]
                assert all(x["box"] is None for x in r["region"])
    for detail in _details(out, "pope_mini"):
        assert detail["media"]["evidence"] == {"kind": None, "regions": []}


def test_media_written_once_per_document(site):
    out, data = site
    files = sorted((out / "media" / "docs").rglob("*.png"))
    refs = [m["src"] for task in TASKS for d in _details(out, task) for m in d["media"]["media"]]
    assert len(refs) == len(set(refs)) == len(files)
    assert {Path(r) for r in refs} == {f.relative_to(out) for f in files}


def test_a_document_the_task_gives_otherwise_is_not_shown(tmp_path):
    job = _real_job(tmp_path / "job", tasks=("pope_mini", "vidstg_mini"))
    for name, field in (("pope_mini", "prompt"), ("vidstg_mini", "frame_indices")):
        log = next((job / "accuracy" / "samples").glob(f"{name}__00.jsonl"))
        rows = [json.loads(line) for line in log.read_text().splitlines()]
        rows[0][field] = "Is there a unicorn?" if field == "prompt" else [0, 1, 2]
        log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "site"
    build_site(collect([job], n_boot=20), out, figures=False)
    pope, vid = _details(out, "pope_mini"), _details(out, "vidstg_mini")
    assert pope[0]["media"]["media"] == [] and "another prompt" in pope[0]["media"]["note"]
    assert vid[0]["media"]["media"] == [] and "other frames" in vid[0]["media"]["note"]
    assert pope[1]["media"]["media"] and vid[1]["media"]["media"]


def test_a_task_that_does_not_load_is_a_warning(tmp_path):
    job = _real_job(tmp_path / "job", tasks=("pope_mini",))
    path = job / "accuracy" / "results.json"
    res = json.loads(path.read_text())
    for e in res["entries"]:
        e["task_args"] = {"no_such_argument": 1}
    path.write_text(json.dumps(res))
    data = collect([job], n_boot=20)
    build_site(data, tmp_path / "site", figures=False)
    assert any("pope_mini: sample media not shown" in w for w in data.warnings)
    for d in _details(tmp_path / "site", "pope_mini"):
        assert d["media"]["media"] == [] and "does not load" in d["media"]["note"]


def test_no_media_leaves_them_out(tmp_path):
    import subprocess
    import sys

    job = _real_job(tmp_path / "job", tasks=("pope_mini",))
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "harness", "view", str(job), "--no-figures", "--no-media"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert not (job / "view" / "media" / "docs").exists()
    for d in _details(job / "view", "pope_mini"):
        assert d["media"] == {"media": [], "note": "media left out (headscope view --no-media)"}


def test_boxes_in_resized_pixels_map_back_through_the_recorded_resize(tmp_path):
    from harness.models.qwen_resize import SMART_RESIZE, resized_size

    job = write_fixture_job(tmp_path / "job", n_samples=2, tasks=("refcocog_mini",), grounded=())
    use_task_documents(job, {"refcocog_mini": "[28, 14, 56, 42]"})
    path = job / "accuracy" / "results.json"
    res = json.loads(path.read_text())
    resize = {"rule": SMART_RESIZE, "factor": 28, "min_pixels": 3136, "max_pixels": 1003520}
    res["model"].update(box_convention="pixels_resized", resize=resize)
    path.write_text(json.dumps(res))
    out = tmp_path / "site"
    build_site(collect([job], n_boot=20), out, figures=False)
    for d in _details(out, "refcocog_mini"):
        m = d["media"]["media"][0]
        rw, rh = resized_size((m["width"], m["height"]), resize)
        sx, sy = m["width"] / rw, m["height"] / rh
        want = [round(v, 1) for v in (28 * sx, 14 * sy, 56 * sx, 42 * sy)]
        assert (rw, rh) != (m["width"], m["height"])  # the resize matters here
        assert {tuple(r["region"][0]["box"]) for rs in d["replies"] for r in rs} == {tuple(want)}
    del res["model"]["resize"]  # recorded before headscope kept the resize: said, not drawn
    path.write_text(json.dumps(res))
    build_site(collect([job], n_boot=20), out, figures=False)
    for d in _details(out, "refcocog_mini"):
        assert "resized pixels but not the resize" in d["media"]["predicted_note"]
        assert not any("region" in r for rs in d["replies"] for r in rs)


def test_garbage_in_a_logged_prediction_is_not_drawn_and_does_not_crash(tmp_path):
    job = _real_job(tmp_path / "job", tasks=("vidstg_mini", "mmdocir_mini"))
    bad = {
        "vidstg_mini": [
            {"pred_positions": ["a", "b"]},
            {"pred_positions": [1, 2], "pred_box": [1, 2, "x"]},
            {"pred_positions": [True, 2]},
        ],
        "mmdocir_mini": [{"pred_pages": ["one"]}, {"pred_pages": [0.5]}, {"pred_pages": "1"}],
    }
    for task, patches in bad.items():
        log = next((job / "accuracy" / "samples").glob(f"{task}__00.jsonl"))
        rows = [json.loads(line) for line in log.read_text().splitlines()]
        for row, patch in zip(rows, patches):
            row["scores"].update(patch)
        rows[0]["frame_indices"] = ["zero"]  # garbage here: the frames are not shown
        log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "site"
    build_site(collect([job], n_boot=20), out, figures=False)
    for task in bad:
        cols = _read(out / f"data/samples/{task}/table.js")["columns"]
        (base,) = [c["id"] for c in cols if c["baseline"]]  # the log patched above
        for detail in _details(out, task)[1:]:
            assert all("region" not in r for r in detail["replies"][base])
            others = [r for c in cols if c["id"] != base for r in detail["replies"][c["id"]]]
            assert others and all(r["region"] for r in others)  # PREDICTED, well formed
    assert "other frames" in _details(out, "vidstg_mini")[0]["media"]["note"]


def test_task_arguments_naming_data_outside_the_run_need_task_paths(tmp_path):
    from viewer.media import outside_paths

    job = _real_job(tmp_path / "job", tasks=("pope_mini",))
    elsewhere = tmp_path / "someone_elses_pdfs"
    elsewhere.mkdir()
    assert outside_paths({"doc_dir": str(elsewhere), "n": 3}, job / "accuracy") == [str(elsewhere)]
    assert outside_paths({"d": str(job / "accuracy" / "samples")}, job / "accuracy") == []
    assert outside_paths({"d": "/no/such/folder", "scoring": "official"}, job) == []
    path = job / "accuracy" / "results.json"
    res = json.loads(path.read_text())
    for e in res["entries"]:
        e["task_args"] = {"data_dir": str(elsewhere)}
    path.write_text(json.dumps(res))
    data = collect([job], n_boot=20)
    build_site(data, tmp_path / "site", figures=False)
    assert any("name data outside the run" in w and "--task-paths" in w for w in data.warnings)
    for d in _details(tmp_path / "site", "pope_mini"):
        assert d["media"]["media"] == [] and "view --task-paths" in d["media"]["note"]
    # trusted: the task is built with those arguments (the mini task does not take data_dir)
    data = collect([job], n_boot=20)
    build_site(data, tmp_path / "site", figures=False, task_paths=True)
    for d in _details(tmp_path / "site", "pope_mini"):
        assert "does not load" in d["media"]["note"] and "data_dir" in d["media"]["note"]
