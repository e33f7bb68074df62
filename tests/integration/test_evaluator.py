import json

import pytest

from harness.api.specs import InterventionSpec, RunSpec, SpecError, TaskSpec
from harness.run.evaluator import BadDataError, run_grid, samples_filename
from harness.schema.results import load_results
from harness.testing.mock import ScriptedAdapter
from tests.toy_task import correct_on_even


def make_spec(out, n=10, **kw):
    return RunSpec(
        tasks=(TaskSpec("test_echo", args={"n": n}),),
        interventions=(InterventionSpec("none"),),
        output=str(out),
        **kw,
    )


def test_grid_writes_results_and_samples(tmp_path):
    res = run_grid(make_spec(tmp_path / "run", batch_size=3), ScriptedAdapter(correct_on_even))
    entry = res.entries[0]
    assert entry.metric("accuracy").value == pytest.approx(0.5)
    assert entry.metric("accuracy").n == 10
    assert entry.metric("accuracy").stderr == pytest.approx((0.25 * 10 / 9 / 10) ** 0.5)
    loaded = load_results(tmp_path / "run")
    assert loaded.to_dict() == res.to_dict()
    assert loaded.higher_is_better("test_echo", "length") is False
    rows = (tmp_path / "run" / entry.samples_file).read_text().splitlines()
    assert len(rows) == 10
    first = json.loads(rows[0])
    assert first["doc_id"] == "d000" and first["output"] == "1" and first["scores"]["accuracy"] == 1
    assert res.spec_passed["tasks"][0]["name"] == "test_echo"
    assert set(res.git) == {"commit", "dirty"}


def test_resume_after_crash_equals_uninterrupted(tmp_path):
    full = run_grid(make_spec(tmp_path / "a", batch_size=2), ScriptedAdapter(correct_on_even))
    crashing = ScriptedAdapter(correct_on_even, fail_after=5)
    with pytest.raises(RuntimeError, match="scripted crash"):
        run_grid(make_spec(tmp_path / "b", batch_size=2), crashing)
    log = tmp_path / "b" / "samples" / samples_filename("test_echo", "none", {"n": 10})
    assert len(log.read_text().splitlines()) == 4  # two full batches survived the crash
    second = ScriptedAdapter(correct_on_even)
    resumed = run_grid(make_spec(tmp_path / "b", batch_size=2), second)
    assert len(second.calls) == 6  # only the missing samples were asked again
    assert [e.metrics for e in resumed.entries] == [e.metrics for e in full.entries]
    assert resumed.entries[0].n_samples == 10


def test_torn_last_line_is_repaired(tmp_path):
    run_grid(make_spec(tmp_path / "r", n=4), ScriptedAdapter(correct_on_even))
    log = tmp_path / "r" / "samples" / samples_filename("test_echo", "none", {"n": 4})
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:2]) + lines[2][:15])  # crash mid-write
    adapter = ScriptedAdapter(correct_on_even)
    res = run_grid(make_spec(tmp_path / "r", n=4), adapter)
    assert len(adapter.calls) == 2
    assert res.entries[0].metric("accuracy").value == pytest.approx(0.5)


def test_different_spec_into_same_dir_is_refused(tmp_path):
    run_grid(make_spec(tmp_path / "r", n=4), ScriptedAdapter(correct_on_even))
    with pytest.raises(SpecError, match="different spec"):
        run_grid(make_spec(tmp_path / "r", n=5), ScriptedAdapter(correct_on_even))


def test_non_run_directory_is_refused(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "notes.txt").write_text("mine")
    with pytest.raises(SpecError, match="not empty"):
        run_grid(make_spec(tmp_path / "r"), ScriptedAdapter(correct_on_even))


def test_bad_media_stops_with_clear_error_or_counted_skip(tmp_path):
    spec = RunSpec(
        tasks=(TaskSpec("test_echo", args={"n": 6, "broken": (2,)}),), output=str(tmp_path / "a")
    )
    with pytest.raises(BadDataError, match=r"d002.*nonexistent/d002.jpg.*--skip-bad-docs"):
        run_grid(spec, ScriptedAdapter(correct_on_even))
    spec = RunSpec(
        tasks=(TaskSpec("test_echo", args={"n": 6, "broken": (2,)}),),
        output=str(tmp_path / "b"),
        skip_bad_docs=True,
    )
    res = run_grid(spec, ScriptedAdapter(correct_on_even))
    assert res.entries[0].n_skipped == 1 and res.entries[0].n_samples == 5
    assert res.entries[0].metric("accuracy").value == pytest.approx(
        2 / 5
    )  # docs 0 and 4 of 0,1,3,4,5


def test_scoring_failures_are_counted_not_swallowed(tmp_path):
    def responder(req):
        return "boom" if "3 plus" in req.text else correct_on_even(req)

    res = run_grid(make_spec(tmp_path / "r", n=5), ScriptedAdapter(responder))
    entry = res.entries[0]
    assert entry.failures == [{"doc_id": "d003", "error": "RuntimeError: scorer exploded"}]
    assert entry.n_samples == 4


def test_unknown_names_fail_before_any_work(tmp_path):
    from harness.api.registry import UnknownNameError

    spec = RunSpec(tasks=(TaskSpec("test_echoo"),), output=str(tmp_path / "r"))
    with pytest.raises(UnknownNameError, match="did you mean 'test_echo'"):
        run_grid(spec, ScriptedAdapter(correct_on_even))
    assert not (tmp_path / "r").exists()
    spec = RunSpec(tasks=(TaskSpec("test_echo", args={"nn": 3}),), output=str(tmp_path / "r"))
    with pytest.raises(ValueError, match="does not take argument"):
        run_grid(spec, ScriptedAdapter(correct_on_even))


@pytest.mark.parametrize("order", ["sample", "cell"])
@pytest.mark.parametrize(("interval", "fsyncs"), [(0.0, 3), (3600.0, 1)])
def test_sample_logs_are_fsynced_per_batch_at_most(tmp_path, monkeypatch, order, interval, fsyncs):
    """10 docs in batches of 4: one fsync per batch with no interval (3, not one per row),
    one at the cell's end when batches come faster than the interval; every row kept."""
    import os

    from harness.schema.samples import SampleLog

    if not os.path.exists("/proc/self/fd"):
        pytest.skip("needs /proc to name the fsynced files")
    real_fsync, synced = os.fsync, []

    def counting(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting)
    monkeypatch.setattr(SampleLog, "SYNC_INTERVAL_S", interval)
    run_grid(make_spec(tmp_path / "r", batch_size=4), ScriptedAdapter(correct_on_even), order=order)
    log = tmp_path / "r" / "samples" / samples_filename("test_echo", "none", {"n": 10})
    assert synced.count(str(log.resolve())) == fsyncs
    assert len(log.read_text().splitlines()) == 10
