"""Bench and diagnose files carry schema tags with typed readers in harness.schema; the
leaderboard dispatches on the tags."""

import json
from pathlib import Path

import pytest

from harness.schema.bench import (
    BENCH_KINDS,
    BenchDocument,
    BenchFormatError,
    bench_document,
    bench_kind,
)
from harness.schema.diagnostics import DiagnosticsFile, DiagnosticsFormatError
from leaderboards.settings import MergeError
from leaderboards.sources import classify, load_sources

HYBRID_ROW = {"length": 64, "keep": 0.25, "window": 16, "dense_ms": 2.0, "hybrid_ms": 1.0,
              "speedup": 2.0, "bound": 2.5}  # fmt: skip
RAM_ROW = {"length": 512, "probe_peak_mb": 10.0, "eager_peak_mb": 30.0, "probe_ms": 1.0,
           "eager_ms": 2.0}  # fmt: skip


@pytest.mark.parametrize("kind", BENCH_KINDS)
def test_document_round_trips_with_its_tag(kind):
    doc = bench_document(kind, [{"x": 1}], model="m", settings={"dtype": "float32"}, details=[])
    assert doc["schema"] == f"headscope.bench_{kind}" and doc["schema_version"] == 1
    assert doc["bench"] == kind
    read = BenchDocument.from_dict(json.loads(json.dumps(doc)))
    assert (read.kind, read.rows, read.model, read.settings) == (
        kind,
        ({"x": 1},),
        "m",
        {"dtype": "float32"},
    )
    assert read.extra == {"details": []} and not read.legacy
    assert read.to_dict() == doc


def test_the_tag_decides_not_the_row_keys():
    # Rows holding hybrid_ms under a ram tag are a ram file (no sniffing either way) ...
    assert classify(bench_document("ram", [HYBRID_ROW])) == "bench_ram"
    # ... an adaptive file (its rows hold hybrid_ms too) is adaptive, not a hybrid file ...
    assert classify(bench_document("adaptive", [HYBRID_ROW])) == "bench_adaptive"
    # ... and untagged rows are nothing, whatever their keys.
    assert classify({"rows": [HYBRID_ROW]}) is None and classify({"rows": [RAM_ROW]}) is None
    assert classify({"schema": "headscope.bench_nope", "rows": [HYBRID_ROW]}) == "bench"


@pytest.mark.parametrize(
    "doc, message",
    [
        ({**bench_document("hybrid", [HYBRID_ROW]), "schema_version": 2}, "schema_version 2"),
        ({**bench_document("hybrid", [HYBRID_ROW]), "bench": "ram"}, "contradicts"),
        (bench_document("hybrid", []), "non-empty list"),
        ({"schema": "headscope.bench_nope", "rows": [HYBRID_ROW]}, "unknown bench schema"),
        ({"rows": [HYBRID_ROW]}, "rerun the bench with --json"),
    ],
)
def test_reader_refuses_what_does_not_follow_the_schema(doc, message):
    with pytest.raises(BenchFormatError, match=message):
        BenchDocument.from_dict(doc, "f.json")


def _write(path, doc):
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_untagged_files_of_an_older_headscope_are_read_and_said_so(tmp_path):
    # What the main job and `bench ram --json` wrote before the tag: an explicit "bench" key.
    _write(tmp_path / "bench_hybrid.json", {"bench": "hybrid", "rows": [HYBRID_ROW]})
    _write(tmp_path / "ram.json", {"bench": "ram", "model": "m", "rows": [RAM_ROW]})
    assert bench_kind({"bench": "hybrid", "rows": []}) == "hybrid"
    assert BenchDocument.from_dict({"bench": "ram", "rows": [RAM_ROW]}).legacy
    sources = load_sources([tmp_path])
    assert len(sources.bench_hybrid) == 1 and len(sources.bench_ram) == 1
    assert sources.bench_hybrid[0].rows == (HYBRID_ROW,)
    untagged = [w for w in sources.warnings if "untagged bench" in w]
    assert len(untagged) == 2 and all("older headscope" in w for w in untagged)


def test_untagged_rows_are_refused_by_name_and_skipped_with_a_hint_in_a_folder(tmp_path):
    old = _write(tmp_path / "rows.json", {"rows": [HYBRID_ROW]})
    with pytest.raises(MergeError, match=r"untagged bench rows\? rerun the bench with --json"):
        load_sources([old])
    _write(tmp_path / "b.json", bench_document("hybrid", [HYBRID_ROW]))
    sources = load_sources([tmp_path])
    assert len(sources.bench_hybrid) == 1
    assert [w for w in sources.warnings if "rows.json: skipped (untagged" in w]


def test_benches_without_a_table_are_skipped_with_a_warning(tmp_path):
    _write(tmp_path / "a.json", bench_document("adaptive", [{**HYBRID_ROW, "estimate_ms": 1.0}]))
    _write(tmp_path / "m.json", bench_document("masks", [{"samples": 2, "hybrid_ms": 3.0}]))
    _write(tmp_path / "b.json", bench_document("hybrid", [HYBRID_ROW]))
    sources = load_sources([tmp_path])
    assert len(sources.bench_hybrid) == 1 and sources.bench_hybrid[0].path.name == "b.json"
    notes = sorted(w for w in sources.warnings if "have no leaderboard table" in w)
    assert len(notes) == 2 and "bench adaptive" in notes[0] and "bench masks" in notes[1]


def test_a_bad_bench_file_is_an_error_naming_the_file(tmp_path):
    bad = _write(
        tmp_path / "b.json", {**bench_document("hybrid", [HYBRID_ROW]), "schema_version": 9}
    )
    with pytest.raises(MergeError, match=r"b\.json: headscope.bench_hybrid schema_version 9"):
        load_sources([tmp_path])
    _write(bad, {"schema": "headscope.bench_nope", "schema_version": 1, "rows": [HYBRID_ROW]})
    with pytest.raises(MergeError, match="unknown bench schema 'headscope.bench_nope'"):
        load_sources([bad])


DIAGNOSE = Path(__file__).resolve().parents[1] / "data" / "leaderboards" / "run_a"


def test_diagnose_files_have_a_typed_reader():
    doc = json.loads((DIAGNOSE / "diagnostics_code.json").read_text(encoding="utf-8"))
    read = DiagnosticsFile.from_dict(doc, "d.json")
    assert read.variant == "code" and read.n_samples == doc["n_samples"]
    assert len(read.layers) == len(doc["layers"])
    assert [(r["layer"], r["module"]) for r in read.layers] == sorted(
        (r["layer"], r["module"]) for r in doc["layers"]
    )
    assert set(read.baselines) == {"noise_delta", "noise_qkv"}
    assert classify(doc) == "diagnostics"
    untagged = {k: v for k, v in doc.items() if k != "schema"}
    assert classify(untagged) is None
    with pytest.raises(DiagnosticsFormatError, match=r"^d\.json: not a diagnose file"):
        DiagnosticsFile.from_dict(untagged, "d.json")
    renamed = {**doc, "layers": [{**r, "eRank_in": r["erank_in"]} for r in doc["layers"]]}
    for row in renamed["layers"]:
        del row["erank_in"]
    assert DiagnosticsFile.from_dict(renamed).layers == read.layers


def test_profile_files_have_a_typed_reader():
    from harness.probes.profile import ranking_profiles
    from harness.schema.profile import METRICS, ProfileFile, ProfileFormatError
    from harness.schema.ranking import load_ranking

    ranking = load_ranking(DIAGNOSE / "ranking.json")
    doc = json.loads(json.dumps(ranking_profiles(ranking, n_boot=20)))
    read = ProfileFile.from_dict(doc, "p.json")
    assert list(read.tasks) == list(ranking.task_names) and read.model == ranking.model
    assert all(set(t["metrics"]) == set(METRICS) for t in read.tasks.values())
    assert classify(doc) is None  # shown from the rankings, not from profile.json
    first = ranking.task_names[0]
    task = doc["tasks"][first]
    broken = [
        ({**doc, "version": 2}, "version 2 is not supported"),
        ({**doc, "tasks": {}}, "non-empty"),
        ({**doc, "tasks": {first: {**task, "metrics": {}}}}, "metric 'heads_for_50' lacks"),
        ({**doc, "tasks": {first: {**task, "cumulative_mass": [0.5]}}}, "cumulative_mass"),
    ]
    for bad, message in broken:
        with pytest.raises(ProfileFormatError, match=message):
            ProfileFile.from_dict(bad, "p.json")
