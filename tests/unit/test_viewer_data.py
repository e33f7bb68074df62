"""The data the viewer's pages read: sample tables, heads and maps data, the written site."""

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jinja2")

from harness.api.errors import UsageError  # noqa: E402
from harness.schema.maps import load_maps  # noqa: E402
from harness.schema.results import load_results
from harness.schema.samples import SampleLog  # noqa: E402
from harness.testing.job_dirs import fixture_cells, write_fixture_job  # noqa: E402
from viewer.collect import collect  # noqa: E402
from viewer.samples import CORRECT_AT, correct_mark, differing, score_of, shared_prompt  # noqa: E402
from viewer.site import MARKER, build_site  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    return write_fixture_job(tmp_path_factory.mktemp("job") / "job", n_samples=12)


@pytest.fixture(scope="module")
def data(job):
    return collect([job], n_boot=20)


def _rows(job, entry):
    return {r["doc_id"]: r for r in SampleLog(job / "accuracy" / entry.samples_file).read()}


def test_score_of_uses_the_primary_metric_else_the_first_numeric_score():
    assert score_of({"pred": "B", "accuracy": 1.0}, "accuracy") == ("accuracy", 1.0)
    # vidstg-like row: the aggregate is m_tIoU, the row holds tIoU after a string and booleans
    row = {"sentence_type": "declarative", "evaluable": True, "counted": True, "tIoU": 0.25}
    assert score_of(row, "m_tIoU") == ("tIoU", 0.25)
    key, value = score_of({"pred": "x", "accuracy": float("nan")}, "accuracy")
    assert key == "accuracy" and math.isnan(value)  # shown as NaN, not as missing
    assert score_of({"pred": "x", "tIoU": float("nan")}, "m_tIoU") == (None, None)
    assert score_of(None, "accuracy") == (None, None)


def test_correct_mark_rule():
    assert correct_mark(CORRECT_AT, True, True) == "1"
    assert correct_mark(math.nextafter(CORRECT_AT, 0), True, True) == "0"
    assert correct_mark(0.9, False, True) == "-"  # lower-is-better: no correctness
    assert correct_mark(3.0, True, False) == "-"  # not a [0, 1] score
    assert correct_mark(None, True, True) == "-"


def test_sample_table_matches_the_logs(job, data):
    results = load_results(job / "accuracy")
    (ts,) = [t for t in data.tasks if t.task == "refcocog_mini"]
    cols = ts.table["columns"]
    # baseline, top, bottom, hybrid and the two random draws merged into one column
    assert len(cols) == len(fixture_cells()) - 1
    assert [c["baseline"] for c in cols].count(True) == 1
    (random_col,) = [c for c in cols if c["draws"]]
    assert random_col["draws"] == 2 and "mean of 2 draws" in random_col["label"]
    entries = [e for e in results.entries if e.task == "refcocog_mini"]
    by_label = {c["label"]: c["id"] for c in cols}
    draws = [e for e in entries if "select=random" in e.intervention]
    assert len(draws) == 2
    checked = 0
    for i, sample in enumerate(ts.table["samples"]):
        doc = sample["id"]
        for e in entries:
            if "select=random" in e.intervention:
                continue
            want = _rows(job, e)[doc]["scores"]["accuracy"]
            col = by_label[e.intervention]
            assert sample["s"][col] == want
            assert sample["c"][col] == ("1" if want >= CORRECT_AT else "0")
            checked += 1
        mean = np.mean([_rows(job, e)[doc]["scores"]["accuracy"] for e in draws])
        assert sample["s"][random_col["id"]] == pytest.approx(mean)
        assert sample["c"][random_col["id"]] == ("1" if mean >= CORRECT_AT else "0")
        detail = ts.chunks[i // ts.table["chunk_size"]]["samples"][i % ts.table["chunk_size"]]
        assert detail["id"] == doc
        assert [r["draw"] for r in detail["replies"][random_col["id"]]] == [0, 1]
        assert detail["fields"] == {"target": "yes"}
    assert checked == 12 * 4
    assert sum(len(c["samples"]) for c in ts.chunks) == 12


def test_the_list_shows_the_part_of_the_prompt_that_differs():
    ref = "Please provide the bounding box coordinate of the region this sentence describes: "
    prompts = [ref + "the black triangle.", ref + "the blue circle.", ref + "a red square."]
    shared = shared_prompt(prompts)
    assert shared == (ref, ".")
    assert [differing(p, shared) for p in prompts] == [
        "…the black triangle…",
        "…the blue circle…",
        "…a red square…",
    ]
    # cut at word boundaries, never inside a word
    pope = ["Is there a yak in the image?", "Is there a yellow square in the image?"]
    assert shared_prompt(pope) == ("Is there a ", " in the image?")
    assert shared_prompt(["the cat.", "the cart."]) == ("the ", ".")
    assert shared_prompt(["one prompt"]) == shared_prompt(["same", "same"]) == ("", "")
    assert (
        differing("x" * 300, ("", "")).endswith("…") and len(differing("x" * 300, ("", ""))) == 160
    )


def test_cells_carry_their_reply_and_random_draws_how_many_were_right(job, data):
    (ts,) = [t for t in data.tasks if t.task == "refcocog_mini"]
    results = load_results(job / "accuracy")
    draws = [e for e in results.entries if e.task == "refcocog_mini" and "random" in e.intervention]
    (col,) = [c["id"] for c in ts.table["columns"] if c["draws"]]
    (base,) = [c["id"] for c in ts.table["columns"] if c["baseline"]]
    base_entry = next(
        e for e in results.entries if e.task == "refcocog_mini" and e.intervention == "none"
    )
    for sample in ts.table["samples"]:
        right = sum(_rows(job, e)[sample["id"]]["scores"]["accuracy"] >= CORRECT_AT for e in draws)
        assert sample["k"][col] == f"{right}/{len(draws)}"
        assert sample["k"][base] is None
        assert sample["r"][base] == _rows(job, base_entry)[sample["id"]]["output"]
        assert sample["prompt"].startswith("…")  # "Is there a " is shared
    assert ts.table["prompt_shared"]["prefix"] == "Is there a "


def test_search_text_holds_prompt_and_replies(data):
    sample = data.tasks[0].table["samples"][0]
    assert sample["id"].lower() in sample["text"]
    assert "square" in sample["text"] and ("yes" in sample["text"] or "no" in sample["text"])


def test_runs_side_by_side_get_one_column_set_per_model(tmp_path):
    a = write_fixture_job(tmp_path / "a", n_samples=4, model="toy-a")
    b = write_fixture_job(tmp_path / "b", n_samples=4, model="toy-b", seed=1)
    data = collect([a, b], n_boot=20)
    (ts,) = [t for t in data.tasks if t.task == "pope_mini"]
    models = [c["model"] for c in ts.table["columns"]]
    assert models.count("toy-a") == models.count("toy-b") == len(fixture_cells()) - 1
    assert all(c["title"].startswith(c["model"] + " · ") for c in ts.table["columns"])
    assert [h["model"] for h in data.heads] == ["toy-a", "toy-b"]
    assert {r["name"] for r in data.runs} == {"a", "b"}


def test_heads_and_maps_data(job, data):
    (view,) = data.heads
    assert (view["num_layers"], view["num_heads"]) == (2, 4)
    entry = view["tasks"]["refcocog_mini"]
    assert entry["top"][0] == "L1H0"  # the fixture's strong head
    assert len(entry["mean"]) == 2 and len(entry["mean"][0]) == 4
    maps = entry["maps"]
    loaded = load_maps(job / "rank").tasks["refcocog_mini"]
    assert [h["name"] for h in maps["heads"]] == [h.label for h in loaded.heads]
    for page, saved in zip(maps["samples"], loaded.samples):
        finite = np.isfinite(saved.rects).all(axis=1) & (saved.token_media >= 0)
        assert len(page["tokens"]["rects"]) == int(finite.sum())
        assert page["tokens"]["evidence"] == [int(x) for x in saved.evidence[finite]]
        for k, weights in enumerate(page["attn"]):
            assert len(weights) == int(finite.sum())
            attn = saved.attn[k].astype(np.float64)
            assert page["off"][k] == pytest.approx(attn[~finite].sum() / attn.sum(), rel=1e-3)
            assert page["mass"][k] == pytest.approx(attn.sum(), rel=1e-3)  # all visual tokens
        # one colour scale for every head of the sample: the largest drawn share of any head
        assert page["scale"] == max(max(w) for w in page["attn"])
        assert page["scale"] == pytest.approx(float(saved.attn[:, finite].max()), rel=1e-3)
        assert page["logged"]  # the fixture's maps are on its first logged samples
        for m, ref in zip(page["media"], saved.media):
            assert Path(m["file"]) == job / "rank" / ref.path and Path(m["file"]).is_file()


def _data_file(path: Path):
    text = path.read_text(encoding="utf-8")
    match = re.fullmatch(r'HS\.put\(("[^"]+"),(.*)\);\n', text, re.S)
    assert match, f"{path} is not one HS.put statement"
    return json.loads(match.group(1)), json.loads(match.group(2))


def test_site_files(job, tmp_path):
    data = collect([job], n_boot=20)
    out = tmp_path / "site"
    index = build_site(data, out, figures=False)
    assert index == out / "index.html"
    for page in ("index", "heads", "samples", "sample"):
        assert (out / f"{page}.html").is_file()
    key, table = _data_file(out / "data/samples/refcocog_mini/table.js")
    assert key == "data/samples/refcocog_mini/table.js"
    assert table["samples"][3]["id"] == "refcocog_mini-00003"
    _, heads = _data_file(out / "data/heads.js")
    maps_path = heads[0]["tasks"]["refcocog_mini"]["maps"]
    _, maps = _data_file(out / maps_path)
    for sample in maps["samples"]:
        for m in sample["media"]:
            assert "file" not in m and (out / m["src"]).is_file()
    # nothing is fetched from the network: no absolute URL in any page, script or style
    for path in out.rglob("*"):
        if path.suffix in (".html", ".js", ".css"):
            assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", path.read_text()), path
    # a rebuild replaces the data of the earlier one
    stale = out / "data" / "samples" / "gone" / "table.js"
    stale.parent.mkdir(parents=True)
    stale.write_text("x")
    build_site(data, out, figures=False)
    assert not stale.exists() and (out / MARKER).is_file()


def test_site_refuses_a_folder_it_did_not_write(job, tmp_path):
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(UsageError, match="did not write"):
        build_site(collect([job], n_boot=20), tmp_path, figures=False)
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_a_log_still_being_written_is_read_not_changed(tmp_path):
    job = write_fixture_job(tmp_path / "job", n_samples=3, tasks=("pope_mini",), grounded=())
    log = next((job / "accuracy" / "samples").glob("pope_mini__00.jsonl"))
    with log.open("a") as fh:
        fh.write('{"doc_id": "pope_mini-00003", "prom')  # a row being appended
    before = log.read_bytes()
    (ts,) = collect([job], n_boot=20).tasks
    assert [s["id"] for s in ts.table["samples"]] == [f"pope_mini-0000{i}" for i in range(3)]
    assert log.read_bytes() == before


def test_view_command(job, tmp_path):
    def view(*args):
        return subprocess.run(
            [sys.executable, "-m", "harness", "view", *map(str, args)],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )

    done = view(job, "--no-figures", "--n-boot", "20")
    assert done.returncode == 0, done.stderr
    assert (job / "view" / "index.html").is_file()
    assert "2 tasks, 24 samples, 1 rankings" in done.stderr
    refused = view(job, tmp_path, "--no-figures")
    assert refused.returncode == 2
    assert "2 inputs and no --output (hint: give the site's folder: --output OUT" in refused.stderr


def test_package_data_ships_every_template_and_asset():
    import fnmatch

    tomllib = pytest.importorskip("tomllib")  # Python ≥ 3.11

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = config["package-data"]["viewer"]
    files = [
        p.relative_to(ROOT / "viewer").as_posix()
        for p in (ROOT / "viewer").rglob("*")
        if p.is_file() and p.suffix in (".js", ".css", ".jinja")
    ]
    assert len(files) >= 12
    assert [f for f in files if not any(fnmatch.fnmatch(f, pat) for pat in patterns)] == []


def test_maps_of_samples_without_logs_are_not_linked(job):
    data = collect([job / "rank"], n_boot=20)  # a ranking (and its maps) without any run
    assert data.tasks == [] and data.runs == []
    samples = data.heads[0]["tasks"]["refcocog_mini"]["maps"]["samples"]
    assert samples and not any(s["logged"] for s in samples)


def test_a_metric_without_declaration_is_refused(tmp_path):
    # As the leaderboard does (leaderboards.sources): its direction and meaning are unknown.
    from harness.schema.results import RunResults
    from leaderboards.settings import MergeError

    job = write_fixture_job(tmp_path / "job", n_samples=3, tasks=("pope_mini",), grounded=())
    path = job / "accuracy" / "results.json"
    res = json.loads(path.read_text())
    res["metric_defs"] = {}  # e.g. a results file converted from another harness
    RunResults.from_dict(res).save(path)
    with pytest.raises(MergeError, match="pope_mini/none holds metric 'accuracy'"):
        collect([job], n_boot=20)
