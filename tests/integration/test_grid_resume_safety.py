"""A grid resumed at any point keeps each cell whole (issue 29).

- a run stopped after a cell's last row and before ``results.json`` was rewritten keeps the
  cell's resolved intervention record (SAP's forwards, adaptive hybrid's routed samples);
- a ranking file that changes while the grid runs stops it before a cell's log can hold rows
  of two head sets; the rerun starts the cells that use the new content under a new name;
- a moved output directory, whose ranking path is inside it, resumes.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import numpy as np
import pytest

from harness.api.model import load_adapter
from harness.api.specs import InterventionSpec, ModelSpec, RunSpec, TaskSpec
from harness.run import evaluator
from harness.run.evaluator import EvaluationError, run_grid
from harness.schema.ranking import Ranking, TaskRam, save_ranking


@pytest.fixture(scope="module")
def toy():
    return load_adapter(ModelSpec("toy"))


def _spec(out, interventions, tasks=("pope_mini",)):
    return RunSpec(
        model=ModelSpec("toy"),
        tasks=tuple(TaskSpec(t, args={"n": 2}) for t in tasks),
        interventions=tuple(interventions),
        batch_size=2,
        output=str(out),
    )


def _ranking(path, toy, seed):
    g = toy.geometry
    rng = np.random.default_rng(seed)
    task = TaskRam.from_samples({"name": "t"}, rng.random((3, g.num_layers, g.num_heads)), n_boot=5)
    settings = {"attn_implementation": "sdpa", "dtype": "float32", "seed": 0}
    save_ranking(path, Ranking({"name": "toy"}, settings, {"t": task}, g.num_layers, g.num_heads))


def _resolved(out):
    data = json.loads((out / "results.json").read_text())
    return {e["intervention_spec"]["name"]: e["intervention_resolved"] for e in data["entries"]}


@pytest.mark.parametrize(
    ("intervention", "key"),
    [
        (InterventionSpec("sap", {"prior": "complexity"}), "forwards"),
        (
            InterventionSpec("hybrid", {"select": "adaptive", "keep": 0.25, "window": 8}),
            "routed_samples",
        ),
    ],
)
def test_stop_before_results_keeps_the_cells_record(tmp_path, toy, monkeypatch, intervention, key):
    """Before: the resume re-attached and recorded forwards 0 / routed_samples 0."""
    out = tmp_path / "run"

    def stop(*_a, **_k):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(evaluator, "_save", stop)
        with pytest.raises(KeyboardInterrupt):
            run_grid(_spec(out, [intervention]), toy)
    assert not (out / "results.json").exists()
    run_grid(_spec(out, [intervention]), toy)
    record = _resolved(out)[intervention.name]
    assert record[key] > 0
    if key == "routed_samples":
        assert any(any(v > 0 for v in row) for row in record["kept_share"] if row)


def test_a_ranking_changed_under_the_grid_stops_it(tmp_path, toy, monkeypatch):
    """Before: the second task's cell read the new ranking into a log named by the old one."""
    ranking = tmp_path / "ranking.json"
    _ranking(ranking, toy, seed=0)
    out = tmp_path / "run"
    ablate = InterventionSpec("ablate", {"select": "top", "k": 2, "ranking": str(ranking)})
    spec = _spec(out, [ablate], tasks=("pope_mini", "refcocog_mini"))
    real = evaluator.run_task  # one task's cells (sample-major)

    def run_task_then_rank_again(*args, **kwargs):
        real(*args, **kwargs)
        _ranking(ranking, toy, seed=1)  # e.g. `headscope rank` writing it meanwhile

    with monkeypatch.context() as m:
        m.setattr(evaluator, "run_task", run_task_then_rank_again)
        with pytest.raises(EvaluationError, match="the ranking file .* changed since this run"):
            run_grid(spec, toy)
    logs = sorted(p.name for p in (out / "samples").glob("*.jsonl"))
    assert len(logs) == 1 and logs[0].startswith("pope_mini")
    run_grid(spec, toy)  # the rerun: every cell under the new content's name
    data = json.loads((out / "results.json").read_text())
    names = {e["samples_file"] for e in data["entries"]}
    assert all(f"samples/{logs[0]}" != n for n in names) and len(names) == 2
    heads = {e["task"]: e["intervention_resolved"]["heads"] for e in data["entries"]}
    assert heads["pope_mini"] == heads["refcocog_mini"]


def test_a_moved_output_directory_resumes(tmp_path, toy):
    """Before: the ranking's absolute path was in run_spec.json, so the moved run was refused."""
    first = tmp_path / "a"
    first.mkdir()
    _ranking(first / "ranking.json", toy, seed=0)
    ablate = {"select": "top", "k": 2, "ranking": str(first / "ranking.json")}
    run_grid(_spec(first / "run", [InterventionSpec("ablate", ablate)]), toy)
    shutil.move(first, tmp_path / "b")
    moved = {**ablate, "ranking": str(tmp_path / "b" / "ranking.json")}
    res = run_grid(_spec(tmp_path / "b" / "run", [InterventionSpec("ablate", moved)]), toy)
    assert res.entries[0].n_samples == 2


def _duo_pattern(folder, toy, seed):
    g = toy.geometry
    folder.mkdir(exist_ok=True)
    gates = np.random.default_rng(seed).random((g.num_layers, g.num_kv_heads))
    np.savetxt(folder / "full_attention_heads.tsv", gates, delimiter="\t")


def test_a_head_set_folder_changed_between_kill_and_resume_starts_a_new_log(
    tmp_path, toy, monkeypatch
):
    """Before: the folder entered the log's name by its base name only, so the resumed cell
    appended rows of the new head set to rows of the old one (3 of 8 rows mixed)."""
    from harness.run import sample_major

    duo = tmp_path / "duo"
    _duo_pattern(duo, toy, seed=0)
    ablate = InterventionSpec("ablate", {"select": "top", "k": 2, "ranking": str(duo)})
    spec = RunSpec(
        model=ModelSpec("toy"),
        tasks=(TaskSpec("pope_mini", args={"n": 8}),),
        interventions=(ablate,),
        batch_size=3,
        output=str(tmp_path / "run"),
    )
    real = sample_major.log_generations

    def killed_after_one_batch(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(sample_major, "log_generations", killed_after_one_batch)
        with pytest.raises(KeyboardInterrupt):
            run_grid(spec, toy)
    (first,) = (tmp_path / "run" / "samples").glob("*.jsonl")
    assert len(first.read_text().splitlines()) == 3
    _duo_pattern(duo, toy, seed=1)  # ranked again before the resume, with other heads
    res = run_grid(spec, toy)
    (entry,) = res.entries
    assert entry.samples_file != f"samples/{first.name}"
    assert len(first.read_text().splitlines()) == 3  # the old head set's rows stay apart
    log = tmp_path / "run" / entry.samples_file
    assert len(log.read_text().splitlines()) == 8 and entry.n_samples == 8
    clean = run_grid(replace(spec, output=str(tmp_path / "clean")), toy)
    assert entry.intervention_resolved["heads"] == clean.entries[0].intervention_resolved["heads"]
    assert entry.metrics == clean.entries[0].metrics  # every row made with the new head set
