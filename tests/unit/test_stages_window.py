"""The hybrid window record says which tasks' prompts the shared window does not cut."""

from harness.api.heads import Geometry
from harness.run.stages import scaled_window, unwindowed_tasks, window_record


class _Cfg:
    hybrid_window = None
    hybrid_window_fraction = 0.25
    hybrid_keep = (0.25,)


def test_a_short_task_under_a_window_scaled_to_long_ones_is_flagged():
    lengths = {  # one image task, two long video tasks: the median of medians is long
        "pope": {"n": 4, "min": 600, "median": 640, "max": 700},
        "videomme": {"n": 4, "min": 9000, "median": 10000, "max": 11000},
        "mlvu": {"n": 4, "min": 8000, "median": 12000, "max": 15000},
    }
    window = scaled_window(lengths, 0.25)
    assert window == 2500  # ceil(0.25 · 10000)
    record = window_record(_Cfg(), window, lengths, Geometry(2, 4, 2, 8, 32))
    assert unwindowed_tasks(record) == ["pope"]
    assert record["per_task"]["videomme"]["windowed"] is True
    assert unwindowed_tasks({"window": 24, "rule": "fixed"}) == []  # nothing measured


def test_lengths_measured_for_other_tasks_are_measured_again(tmp_path, monkeypatch):
    """Before: a resumed job given other tasks or task arguments reused sequence_lengths.json
    and scaled its hybrid window to the old tasks' lengths."""
    from types import SimpleNamespace

    from harness.api.specs import TaskSpec
    from harness.run import stages

    calls = []

    def measure(adapter, specs):
        calls.append([s.name for s in specs])
        return {s.name: {"median": 10 * len(calls), "min": 1, "max": 20, "n": 8} for s in specs}

    monkeypatch.setattr(stages, "measure_lengths", measure)
    cfg = SimpleNamespace(hybrid_window=None, bench_lengths=None)
    first = (TaskSpec("pope", limit=8, args={"data_dir": "a"}),)
    assert stages.task_lengths(None, first, cfg, tmp_path)["pope"]["median"] == 10
    assert stages.task_lengths(None, first, cfg, tmp_path)["pope"]["median"] == 10
    assert len(calls) == 1  # the same tasks: reused
    other = (TaskSpec("pope", limit=8, args={"data_dir": "b"}),)
    assert stages.task_lengths(None, other, cfg, tmp_path)["pope"]["median"] == 20
    assert stages.task_lengths(None, (*other, TaskSpec("mmmu")), cfg, tmp_path)["mmmu"]
    assert len(calls) == 3
