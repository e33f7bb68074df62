"""Every registered task takes ``scoring``, defaults to ``official`` and records the mode."""

from __future__ import annotations

import pytest

from harness.api.registry import TASKS
from harness.api.scoring import SCORING_MODES
from harness.api.task import build_task
from harness.testing.task_checks import task_problems

TASKS.discover()
#: Built-in tasks only: test modules register their own (tests/toy_task.py's test_echo) when
#: collected first, e.g. by tests/unit/test_progress.py.
NAMES = sorted(n for n in TASKS.names() if TASKS.get(n).__module__.startswith("tasks."))
#: lmms-eval 0.7.3 ships no VidSTG and no MMDocIR task.
NO_LMMS = {"vidstg", "vidstg_mini", "mmdocir", "mmdocir_mini"}


def test_every_benchmark_is_here():
    real = {"pope", "mmmu", "mlvu", "videomme", "refcocog", "vidstg", "mmlongbench_doc", "mmdocir"}
    assert real <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_official_is_the_default_and_recorded(name):
    assert build_task(name).settings()["scoring"] == "official"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("mode", SCORING_MODES)
def test_each_mode_is_taken_and_recorded_or_refused_by_name(name, mode):
    if mode == "lmms_eval" and name in NO_LMMS:
        with pytest.raises(ValueError, match="lmms-eval 0.7.3 has no such task"):
            build_task(name, {"scoring": mode})
        return
    assert build_task(name, {"scoring": mode}).settings()["scoring"] == mode


@pytest.mark.parametrize("name", NAMES)
def test_every_builtin_task_meets_the_task_contract(name):
    assert task_problems(name) == []


def test_the_contract_check_finds_what_a_task_lacks():
    from harness.api.registry import TASKS
    from harness.api.task import MetricDef, Task

    class NoModes(Task):
        metrics = (MetricDef("exact", True, ""), MetricDef("rate", True, "x", bounds=(1.0, 0.0)))

        def __init__(self, *, scoring: str = "lenient") -> None:
            self.scoring = scoring

    with TASKS.temporary("contract_probe", NoModes):
        problems = task_problems("contract_probe")
    assert any("no docstring" in p for p in problems)
    assert any("has no description" in p for p in problems)
    assert any("'rate': bounds (1.0, 0.0)" in p for p in problems)
    assert any("default scoring is None" in p for p in problems)
    assert any("an unknown scoring mode is accepted" in p for p in problems)


def test_grounded_tasks_are_the_four_evidence_benchmarks_and_their_minis():
    from harness.api.task import grounded_tasks

    real = {"refcocog", "vidstg", "mmlongbench_doc", "mmdocir"}
    minis = {"refcocog_mini", "vidstg_mini", "mmlongbench_mini", "mmdocir_mini"}
    assert set(grounded_tasks(NAMES)) == real | minis
    assert grounded_tasks(["pope", "mmdocir", "refcocog"]) == ["mmdocir", "refcocog"]
