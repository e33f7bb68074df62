"""What a loaded run's numbers depend on, and whether they may stand in one table.

Used by :func:`leaderboards.sources.load_sources` once every file is read: the run-identity
fields beside a run's model and settings (:func:`run_identity`), runs of one shown model name
kept apart where another identity field differs (:func:`separate_models`), and the refusals
of a metric without a definition (:func:`check_definitions`) and of a task scored under
another mode than ``--scoring`` (:func:`check_mode`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from leaderboards.settings import (
    CI_SUFFIXES,
    IDENTITY_KEYS,
    UNRECORDED_SCORING,
    MergeError,
    combine,
    flatten,
    scoring_of,
)

# Runs are leaderboards.sources.Run values (path, results, model, config); typed as Any here,
# since sources imports this module.

__all__ = ["run_identity", "separate_models", "check_definitions", "check_mode"]


def run_identity(res: Any) -> dict[str, Any]:
    """The run-identity fields a results file's numbers depend on beyond its model and settings.

    The run's seed (random head draws, seeded fallbacks), and the requested model's revision,
    device type (``cuda:1`` counts as ``cuda``) and device map: runs that differ in any of
    them never share a row. (Model identity fields besides the shown name, e.g. the family of
    two runs of one checkpoint, join the settings where two runs differ in them:
    :func:`separate_models`.)
    """
    spec = res.spec_resolved if isinstance(res.spec_resolved, dict) else {}
    model = spec.get("model") if isinstance(spec.get("model"), dict) else {}
    out: dict[str, Any] = {}
    if "seed" in spec:
        out["seed"] = spec["seed"]
    for key in ("revision", "device_map"):
        if model.get(key) is not None:
            out[f"model.{key}"] = model[key]
    if isinstance(model.get("device"), str):
        out["model.device"] = model["device"].split(":")[0]
    return flatten(out)


def separate_models(runs: list[Any]) -> list[Any]:
    """Runs shown under one model name that differ in another identity field keep it apart.

    Such a field (``family``, ``checkpoint``...) joins those runs' settings as ``model.KEY``,
    so that they form different rows (a differing-settings column says which is which).
    """
    by_label: dict[str, list[Any]] = {}
    for run in runs:
        by_label.setdefault(run.model, []).append(run)
    extra: dict[int, dict[str, Any]] = {}
    for group in by_label.values():
        for key in IDENTITY_KEYS:
            values = {json.dumps(r.results.model.get(key), default=str) for r in group}
            if len(values) > 1:
                for r in group:
                    extra.setdefault(id(r), {})[f"model.{key}"] = r.results.model.get(key)
    return [
        replace(r, config=combine(r.config, flatten(extra[id(r)]))) if id(r) in extra else r
        for r in runs
    ]


def check_definitions(runs: Sequence[Any]) -> None:
    """Refuse a metric its results file does not define (``metric_defs``).

    Without a definition its direction (higher or lower is better), meaning and bounds are
    unknown, so no table can say whether a change is a gain or a loss. A declared metric's
    confidence-interval companions (``<metric>_ci_low`` / ``_ci_high``) need none of their own.
    """
    for run in runs:
        for entry in run.results.entries:
            defined = {d.name for d in run.results.metric_defs.get(entry.task, [])}
            for metric in entry.metrics:
                base = metric.name
                for suffix in CI_SUFFIXES:
                    base = base.removesuffix(suffix)
                if metric.name not in defined and base not in defined:
                    raise MergeError(
                        f"{run.path}: {entry.task}/{entry.intervention} holds metric "
                        f"{metric.name!r}, which its metric_defs do not define (direction and "
                        f"meaning unknown; defined: {sorted(defined) or 'none'})",
                        hint="declare it in the task's metrics and rerun, or leave this file out",
                    )


def check_mode(runs: Sequence[Any], scoring: str) -> None:
    """Refuse runs holding a task scored under another mode than ``--scoring``."""
    for run in runs:
        for entry in run.results.entries:
            mode = scoring_of(entry)
            if mode not in (scoring, UNRECORDED_SCORING):
                raise MergeError(
                    f"{run.path}: {entry.task} is scored {mode!r}, not --scoring {scoring!r}, "
                    f"and there is no rescored copy: run `headscope rescore "
                    f"{run.path.parent} --scoring {scoring}` first, or leave it out"
                )
