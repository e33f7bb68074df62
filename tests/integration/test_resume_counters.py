"""A cell killed and resumed reports what a clean run reports, counters included.

SAP's ``forwards``, adaptive hybrid's routing counts and the window-kernel calls are summed
over every batch of the cell, whichever process generated it: each batch's record is written
after its rows (``samples/batches/``) and the cell's record is merged from them. Runs stop at
an injected crash (mid-cell, between a batch's rows and its record, after a cell's last row)
and resume; every results entry (timings aside) and every sample row equals a clean run's, in
both evaluation orders and at batch sizes 1 and 2.
"""

from __future__ import annotations

import pytest

from harness.api.specs import RunSpec, TaskSpec, parse_intervention
from harness.models.hf import HFAdapter
from harness.run import evaluator
from harness.run.evaluator import run_grid
from tests.integration.test_sample_major import entries_of, rows_of

GRID = (
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


def spec(out, batch_size):
    return RunSpec(
        tasks=(TaskSpec("pope_mini", args={"n": 3}), TaskSpec("vidstg_mini", args={"n": 3})),
        interventions=tuple(parse_intervention(i) for i in GRID),
        output=str(out),
        batch_size=batch_size,
        gen_kwargs={"max_new_tokens": 4},
    )


def assert_like_clean(toy, tmp_path, resumed, order, batch_size):
    clean = tmp_path / "clean"
    run_grid(spec(clean, batch_size), toy, order=order)
    assert rows_of(resumed) == rows_of(clean)
    got, want = entries_of(resumed), entries_of(clean)
    sap = [e for e in want if e["intervention_spec"]["name"] == "sap"]
    assert sap and all(e["intervention_resolved"]["forwards"] > 0 for e in sap)
    assert got == want


@pytest.mark.parametrize("order", ["sample", "cell"])
@pytest.mark.parametrize("batch_size", [1, 2])
def test_killed_mid_cell_resumes_with_a_clean_runs_counters(
    toy, tmp_path, monkeypatch, order, batch_size
):
    out = tmp_path / "resumed"
    original, calls = HFAdapter.generate, []

    def crashing(self, requests, **kw):
        if len(calls) == 4:  # in the first task, a cell with counters midway or just done
            raise KeyboardInterrupt
        calls.append(1)
        return original(self, requests, **kw)

    with monkeypatch.context() as m:
        m.setattr(HFAdapter, "generate", crashing)
        with pytest.raises(KeyboardInterrupt):
            run_grid(spec(out, batch_size), toy, order=order)
    run_grid(spec(out, batch_size), toy, order=order)
    assert_like_clean(toy, tmp_path, out, order, batch_size)


@pytest.mark.parametrize("order", ["sample", "cell"])
def test_killed_after_a_cells_last_row_keeps_its_counters(toy, tmp_path, monkeypatch, order):
    """Was: the resume attached once more and recorded SAP's ``forwards`` as 0."""
    out = tmp_path / "resumed"

    def stop(*_a, **_k):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(evaluator, "save_resolved", stop)
        with pytest.raises(KeyboardInterrupt):
            run_grid(spec(out, 1), toy, order=order)
    run_grid(spec(out, 1), toy, order=order)
    assert_like_clean(toy, tmp_path, out, order, 1)


@pytest.mark.parametrize("order", ["sample", "cell"])
def test_a_batch_without_its_record_is_generated_again(toy, tmp_path, monkeypatch, order):
    """A stop between a batch's rows and its record: the rows are dropped and redone."""
    from harness.run.batch_records import BatchRecords

    out = tmp_path / "resumed"
    original, calls = BatchRecords.commit, []

    def stopping(self, *args, **kwargs):
        if len(calls) == 4:  # the fifth batch is SAP's second, in either order
            raise KeyboardInterrupt
        calls.append(1)
        return original(self, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(BatchRecords, "commit", stopping)
        with pytest.raises(KeyboardInterrupt):
            run_grid(spec(out, 1), toy, order=order)
    logged = sum(len(rows) for rows in rows_of(out).values())
    assert logged == 5  # four committed batches and the one whose record was lost
    run_grid(spec(out, 1), toy, order=order)
    assert_like_clean(toy, tmp_path, out, order, 1)
