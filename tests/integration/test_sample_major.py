"""Sample-major evaluation equals the cell-major reference, and encodes each batch once.

Every test runs the same grid twice, ``order="cell"`` (each cell reads, processes and encodes
every document itself) and ``order="sample"`` (once per batch for all cells), and compares
the sample logs row by row (timings removed) and the results entries; the real encoder
functions are counted underneath the memo.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from harness.api.specs import RunSpec, TaskSpec, parse_intervention
from harness.models.unit import unit_names, unit_of
from harness.run.evaluator import run_grid
from harness.schema.results import load_results
from tests.fixtures import make_image_doc_fixtures as image_fx
from tests.fixtures import make_video_fixtures as video_fx

pytest.importorskip("av")

GRID = (
    "none",
    "ablate:select=random,k=0.5,mode=zero",
    "hybrid:select=adaptive,keep=0.5,window=8",
    "noise_delta:layers=1",
)


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    root = tmp_path_factory.mktemp("fx")
    return {
        "pope": image_fx.make_pope(root / "pope"),
        "mmlongbench_doc": image_fx.make_mmlongbench(root / "mmlb"),
        "videomme": video_fx.make_videomme(root / "videomme"),
    }


def rows_of(out: Path) -> dict[str, list[dict]]:
    """Every sample log of a run, rows without their timings."""
    logs = {}
    for path in sorted((out / "samples").glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        logs[path.name] = [{k: v for k, v in r.items() if k != "timing"} for r in rows]
    return logs


def entries_of(out: Path) -> list[dict]:
    """The results entries without their timing summaries."""
    res = load_results(out).to_dict()
    return [{k: v for k, v in e.items() if k != "timing"} for e in res["entries"]]


def count_encoders(monkeypatch, model) -> dict[str, int]:
    """Count the model's real encoder calls (under the memo, which wraps the instance)."""
    calls = {"get_image_features": 0, "get_video_features": 0}
    cls = type(model.base_model)
    for name in calls:
        fn = getattr(cls, name, None)
        if fn is None:
            continue

        def counting(*args, __fn=fn, __name=name, **kwargs):
            if not getattr(counting_depth, "on", False):
                calls[__name] += 1
            counting_depth.on = True
            try:
                return __fn(*args, **kwargs)
            finally:
                counting_depth.on = False

        monkeypatch.setattr(cls, name, functools.wraps(fn)(counting))
    return calls


class _Depth:
    on = False


counting_depth = _Depth()


def run_both(tmp_path, adapter, tasks, grid=GRID, batch_size=1, monkeypatch=None, **kw):
    """Run the grid in both orders; return (cell, sample) output dirs and encoder counts."""
    counts = {}
    outs = {}
    for order in ("cell", "sample"):
        calls = count_encoders(monkeypatch, adapter.model) if monkeypatch else {}
        spec = RunSpec(
            tasks=tasks,
            interventions=tuple(parse_intervention(i) for i in grid),
            output=str(tmp_path / order),
            batch_size=batch_size,
            gen_kwargs={"max_new_tokens": 4},
            **kw,
        )
        run_grid(spec, adapter, order=order)
        outs[order] = tmp_path / order
        counts[order] = dict(calls)
        if monkeypatch:
            monkeypatch.undo()
    return outs, counts


def assert_same(outs):
    cell, sample = rows_of(outs["cell"]), rows_of(outs["sample"])
    assert cell and list(cell) == list(sample)
    for name in cell:
        assert sample[name] == cell[name], name
    assert entries_of(outs["sample"]) == entries_of(outs["cell"])


def tiny_adapter(family: str):
    from harness.testing.tiny import tiny_adapter as build

    return build(family)


FAMILIES = unit_names(tiny=True)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_sample_major_equals_cell_major(family, fixtures, tmp_path, monkeypatch):
    adapter = tiny_adapter(family)
    tasks = (
        TaskSpec("pope", args=fixtures["pope"], limit=2),
        TaskSpec("videomme", args=dict(fixtures["videomme"], num_frames=4), limit=2),
        TaskSpec("mmlongbench_doc", args=fixtures["mmlongbench_doc"], limit=2),
    )
    if "video" not in unit_of(family).capabilities:  # refused: test_video_refused_without_it
        tasks = tuple(t for t in tasks if t.name != "videomme")
    outs, counts = run_both(tmp_path, adapter, tasks, monkeypatch=monkeypatch, batch_size=2)
    assert_same(outs)
    cell, sample = counts["cell"], counts["sample"]
    assert sum(cell.values()) > 0
    # one encoder call per (modality, batch) instead of one per (modality, batch, cell)
    for name in cell:
        assert cell[name] == len(GRID) * sample[name], (name, cell, sample)


# -- the toy: SAP (reads the vision pass), adaptive hybrid, ablation; batch 1 and > 1 -------
TOY_GRID = (
    "none",
    "sap:prior=complexity,semantics=distribution",
    "hybrid:select=adaptive,keep=0.25,window=24",
    "ablate:select=random,k=0.2,mode=zero",
)


@pytest.fixture(scope="module")
def toy():
    from harness.api.model import load_adapter
    from harness.api.specs import ModelSpec

    return load_adapter(ModelSpec(name="toy"))


def toy_tasks(n=3):
    return tuple(
        TaskSpec(name, args={"n": n}) for name in ("pope_mini", "vidstg_mini", "mmlongbench_mini")
    )


@pytest.mark.parametrize("batch_size", [1, 2])
def test_toy_sample_major_equals_cell_major(toy, tmp_path, monkeypatch, batch_size):
    outs, counts = run_both(tmp_path, toy, toy_tasks(), TOY_GRID, batch_size, monkeypatch)
    assert_same(outs)
    sap = [e for e in entries_of(outs["sample"]) if e["intervention_spec"]["name"] == "sap"]
    assert all(e["intervention_resolved"]["forwards"] > 0 for e in sap)
    # SAP's cell computes the batch's features (its hooks see the pass); the others reuse them
    assert (
        counts["cell"]["get_image_features"]
        == len(TOY_GRID) * counts["sample"]["get_image_features"]
    )


def test_toy_sample_major_resumes_after_a_crash(toy, tmp_path, monkeypatch):
    from harness.models.hf import HFAdapter

    spec = RunSpec(
        tasks=toy_tasks(),
        interventions=tuple(parse_intervention(i) for i in TOY_GRID),
        output=str(tmp_path / "resumed"),
        gen_kwargs={"max_new_tokens": 4},
    )
    original, calls = HFAdapter.generate, []

    def crashing(self, requests, **kw):
        if len(calls) == 14:  # the 15th generate: pope done, vidstg's second batch midway
            raise RuntimeError("injected crash")
        calls.append(1)
        return original(self, requests, **kw)

    monkeypatch.setattr(HFAdapter, "generate", crashing)
    with pytest.raises(RuntimeError, match="injected crash"):
        run_grid(spec, toy, order="sample")
    monkeypatch.undo()
    run_grid(spec, toy, order="sample")
    reference = RunSpec(**{**spec.__dict__, "output": str(tmp_path / "cell")})
    run_grid(reference, toy, order="cell")
    cell, resumed = rows_of(tmp_path / "cell"), rows_of(tmp_path / "resumed")
    assert list(cell) == list(resumed) and cell == resumed
    # the records' event counters (SAP forwards, routed samples) sum every batch's record,
    # the crashed run's included (tests/integration/test_resume_counters.py)
    assert entries_of(tmp_path / "resumed") == entries_of(tmp_path / "cell")


# -- the memo's key: a wrong reuse is impossible ---------------------------------------------
def test_memo_reuses_only_the_same_call():
    import torch

    from harness.models.vision_memo import VisionMemo
    from harness.testing.tiny import build_tiny_model

    model = build_tiny_model("llava")
    base = model.base_model
    size = model.config.vision_config.image_size
    pixels = torch.randn(1, 3, size, size)

    def encode(px):
        return base.get_image_features(pixel_values=px, return_dict=True).pooler_output

    with torch.inference_mode(), VisionMemo(model).installed() as memo:
        first = encode(pixels)
        assert encode(pixels) is first and (memo.computed, memo.reused) == (1, 1)
        assert encode(pixels.clone()) is not first  # other pixels (even equal ones)
        with memo.using("writes"):
            assert encode(pixels) is not first  # the intervention changes the tower
        handle = base.vision_tower.register_forward_pre_hook(lambda *a: None)
        assert encode(pixels) is not first  # a hook wants to see the pass
        handle.remove()
        assert encode(pixels) is first
    with torch.no_grad():
        pixels.add_(1.0)  # in place: the version counter moves
        next(base.vision_tower.parameters()).mul_(1.0)  # so do the weights'
    with torch.inference_mode(), VisionMemo(model).installed() as memo:
        a = encode(pixels)
        with torch.no_grad():
            pixels.mul_(2.0)
        assert encode(pixels) is not a
        b = encode(pixels)
        with torch.no_grad():
            next(base.vision_tower.parameters()).mul_(1.0)
        assert encode(pixels) is not b
    assert "get_image_features" not in vars(base)  # the instance is left as it was


@pytest.mark.parametrize("order", ["sample", "cell"])
def test_each_document_is_read_once_per_run(toy, tmp_path, monkeypatch, order):
    """Sample-major builds every request once, preflight's first document included."""
    from collections import Counter

    from harness.api.registry import TASKS

    cls = TASKS.get("pope_mini")
    real, calls = cls.request, Counter()

    def counting(self, doc):
        calls[doc.doc_id] += 1
        return real(self, doc)

    monkeypatch.setattr(cls, "request", counting)
    spec = RunSpec(
        tasks=(TaskSpec("pope_mini", args={"n": 5}),),
        interventions=tuple(parse_intervention(i) for i in GRID[:2]),
        output=str(tmp_path / "run"),
        batch_size=2,
        gen_kwargs={"max_new_tokens": 2},
    )
    run_grid(spec, toy, order=order)
    assert len(calls) == 5
    first = next(iter(calls))  # preflight reads it before the grid starts
    if order == "sample":
        assert set(calls.values()) == {1}
    else:  # the reference: every cell reads every document, preflight the first once more
        assert calls == Counter({d: 2 for d in calls}) + Counter({first: 1})


@pytest.mark.parametrize(("grid", "installs"), [(GRID[:1], 0), (GRID[:2], 3)])
def test_memo_is_installed_only_where_two_cells_can_share(
    toy, tmp_path, monkeypatch, grid, installs
):
    """One cell has nothing to share: no memo (its key of the vision side costs per call);
    two sharing cells get one per batch (5 documents in batches of 2: 3)."""
    from harness.models.hf import HFAdapter

    real, installed = HFAdapter.reuse_vision, []

    def counting(self, **kw):
        installed.append(1)
        return real(self, **kw)

    monkeypatch.setattr(HFAdapter, "reuse_vision", counting)
    spec = RunSpec(
        tasks=(TaskSpec("pope_mini", args={"n": 5}),),
        interventions=tuple(parse_intervention(i) for i in grid),
        output=str(tmp_path / "run"),
        batch_size=2,
        gen_kwargs={"max_new_tokens": 2},
    )
    run_grid(spec, toy, order="sample")
    assert len(installed) == installs


def real_geometry_adapter(family: str):
    """A tiny model of ``family`` with its processor at the released checkpoints' geometry.

    The unit's tiny recipe at ``geometry="real"``: LLaVA family, InternVL: real tower sizes,
    crops and pinpoints; Qwen: the checkpoints' image budgets (up to 16,384 merged tokens per
    image) and 128–768 merged tokens per video frame pair.
    """
    from harness.testing.tiny import tiny_adapter as build

    return build(family, geometry="real")


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_real_geometry_sample_major_equals_cell_major(family, fixtures, tmp_path, monkeypatch):
    adapter = real_geometry_adapter(family)
    tasks = (
        TaskSpec("pope", args=fixtures["pope"], limit=3),
        TaskSpec("videomme", args=dict(fixtures["videomme"], num_frames=8), limit=3),
        TaskSpec("mmlongbench_doc", args=fixtures["mmlongbench_doc"], limit=3),
    )
    for batch_size in (1, 3):
        outs, counts = run_both(
            tmp_path / str(batch_size),
            adapter,
            tasks,
            monkeypatch=monkeypatch,
            batch_size=batch_size,
        )
        assert_same(outs)
        for name in counts["cell"]:
            assert counts["cell"][name] == len(GRID) * counts["sample"][name]


@pytest.mark.slow
def test_toy_main_job_accuracy_stage_is_the_same_in_both_orders(tmp_path):
    """The main job's 22-cell grid on the eight mini tasks (8 docs each, batch 4)."""
    from harness.api.specs import ModelSpec
    from harness.run.main_job import ProtocolConfig, run_protocol

    for order in ("cell", "sample"):
        cfg = ProtocolConfig(
            n_eval=8,
            n_rank=8,
            bench_lengths=(64,),
            bench_window=16,
            bench_geometry="tiny",
            n_diagnose=2,
            batch_size=4,
            order=order,
        )
        run_protocol(ModelSpec(name="toy"), cfg, tmp_path / order)
    cell, sample = tmp_path / "cell" / "accuracy", tmp_path / "sample" / "accuracy"
    assert len(rows_of(cell)) == 8 * 22
    assert rows_of(sample) == rows_of(cell)
    # the entries name each job's own ranking file; everything else is the same
    here = json.dumps(entries_of(cell)).replace(str(tmp_path / "cell"), str(tmp_path / "sample"))
    assert json.loads(here) == entries_of(sample)


@pytest.mark.parametrize(("flags", "order"), [([], "sample"), (["--cell-major"], "cell")])
def test_cli_runs_sample_major_unless_told_cell_major(tmp_path, monkeypatch, flags, order):
    from harness.cli import main as cli
    from harness.run import evaluator

    seen = []
    monkeypatch.setattr(evaluator, "run_grid", lambda spec, order="?", **kw: seen.append(order))
    argv = ["run", "--model", "toy", "--tasks", "pope_mini", "--interventions", "none"]
    assert cli.main([*argv, "--output", str(tmp_path / "o"), *flags]) == 0
    assert seen == [order]
