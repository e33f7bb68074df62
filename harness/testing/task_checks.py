"""The contract every registered task meets, built-in or plugin, as one reusable check.

``tests/unit/test_scoring_every_task.py`` runs it on every built-in task and
``tests/integration/test_adding_a_benchmark.py`` on the example plugin task of
docs/adding_a_benchmark.md, so a new benchmark passes exactly the checks the built-in ones do::

    from harness.testing.task_checks import task_problems
    assert task_problems("my_task") == []
"""

from __future__ import annotations

import json

from harness.api.registry import TASKS
from harness.api.scoring import SCORING_MODES
from harness.api.task import MetricDef, build_task

__all__ = ["task_problems"]


def _metric_problems(name: str, metrics: object) -> list[str]:
    if not isinstance(metrics, tuple) or not metrics:
        return [f"{name}: `metrics` must be a non-empty tuple of MetricDef"]
    problems = []
    seen: set[str] = set()
    for metric in metrics:
        if not isinstance(metric, MetricDef):
            problems.append(f"{name}: metric {metric!r} is not a MetricDef")
            continue
        if metric.name in seen:
            problems.append(f"{name}: metric {metric.name!r} declared twice")
        seen.add(metric.name)
        if not isinstance(metric.higher_is_better, bool):
            problems.append(f"{name}: metric {metric.name!r}: higher_is_better is not a bool")
        if not metric.description.strip():
            problems.append(f"{name}: metric {metric.name!r} has no description")
        if not _bounds_ok(metric.bounds):
            problems.append(
                f"{name}: metric {metric.name!r}: bounds {metric.bounds!r} is not None or "
                "(low, high) with low ≤ high (either side None)"
            )
    return problems


def _bounds_ok(bounds: object) -> bool:
    if bounds is None:
        return True
    if not isinstance(bounds, tuple) or len(bounds) != 2:
        return False
    number = lambda v: isinstance(v, int | float) and not isinstance(v, bool)  # noqa: E731
    if not all(v is None or number(v) for v in bounds):
        return False
    return None in bounds or bounds[0] <= bounds[1]


def _mode_problems(name: str) -> list[str]:
    problems = []
    for mode in SCORING_MODES:
        try:
            recorded = build_task(name, {"scoring": mode}).settings().get("scoring")
        except ValueError as exc:
            # A mode the task lacks is refused by name (harness.api.scoring.check_scoring).
            if f"scoring {mode!r} is not available" not in str(exc) or name not in str(exc):
                problems.append(f"{name}: scoring {mode!r} refused without naming it: {exc}")
            continue
        if recorded != mode:
            problems.append(f"{name}: scoring {mode!r} recorded as {recorded!r}")
    try:
        build_task(name, {"scoring": "offical"})
        problems.append(f"{name}: an unknown scoring mode is accepted")
    except ValueError as exc:
        if "did you mean 'official'" not in str(exc):
            problems.append(f"{name}: an unknown scoring mode is refused without a hint: {exc}")
    return problems


def task_problems(name: str) -> list[str]:
    """What registered task ``name`` lacks of the task contract; ``[]`` when it meets it.

    The contract: a docstring (``headscope list`` prints its first line); declared metrics
    (unique names, ``higher_is_better``, a description: leaderboards read them); it builds
    with its defaults and its settings are JSON; it takes ``scoring``, defaults to
    ``official`` and records the mode; every mode of :data:`~harness.api.scoring.SCORING_MODES`
    is taken and recorded or refused by name; an unknown mode is refused with a did-you-mean.
    """
    cls = TASKS.get(name)
    problems = []
    if not (cls.__doc__ or "").strip():
        problems.append(f"{name}: no docstring (headscope list prints its first line)")
    problems += _metric_problems(name, getattr(cls, "metrics", None))
    try:
        settings = build_task(name).settings()
    except Exception as exc:  # noqa: BLE001 - reported as a problem of the task
        return [*problems, f"{name}: does not build with its defaults: {exc}"]
    try:
        json.dumps(settings, allow_nan=False)
    except (TypeError, ValueError) as exc:
        problems.append(f"{name}: settings are not JSON: {exc}")
    if settings.get("scoring") != "official":
        problems.append(f"{name}: default scoring is {settings.get('scoring')!r}, not 'official'")
    return problems + _mode_problems(name)
