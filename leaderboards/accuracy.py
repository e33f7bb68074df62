"""Accuracy leaderboards: model × task × intervention, with Δ against the right baseline.

Each row is one (task, intervention) entry of a run and one metric: the task's primary
metric (its first declared :class:`~harness.results.MetricDefRecord`) or, with
``all_metrics``, every declared metric. Δ is ``value − baseline`` where the baseline is the
``none`` intervention of the *same* model, the *same* run settings (attention
implementation, dtype, ...) and the *same* task settings (split, frames, variant, ...),
possibly from another run directory. Without such a baseline Δ is missing, never borrowed
from another setting.

Confidence intervals: an entry may carry metrics named ``<metric>_ci_low`` and
``<metric>_ci_high`` (e.g. a bootstrap CI); they fill the CI columns of ``<metric>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from leaderboards.formatting import Column, Table, decimal_diff
from leaderboards.merge import (
    MergeError,
    Run,
    check_unique,
    combine,
    config_key,
    flatten,
    settings_note,
    settings_row,
    split_settings,
)

__all__ = [
    "Cell",
    "collect_cells",
    "is_baseline",
    "primary_metric",
    "accuracy_table",
    "accuracy_summary_table",
]

_CI_SUFFIXES = ("_ci_low", "_ci_high")


@dataclass(frozen=True)
class Cell:
    """One (task, intervention) entry of one run, with the settings it was measured under."""

    run: Run
    entry: Any  # harness.results.ResultEntry
    task_config: dict[str, Any]

    @property
    def group(self) -> tuple[str, str, str, str]:
        """(model, run settings, task, task settings): rows comparable to each other."""
        return (
            self.run.model,
            config_key(self.run.config),
            self.entry.task,
            config_key(self.task_config),
        )

    @property
    def key(self) -> tuple[str, ...]:
        """The identity of the cell; two cells with one key must hold the same numbers."""
        return (*self.group, self.entry.intervention)


def is_baseline(entry: Any) -> bool:
    """True for the ``none`` intervention (no arguments)."""
    spec = entry.intervention_spec or {}
    return entry.intervention == "none" or (spec.get("name") == "none" and not spec.get("args"))


def _task_config(entry: Any) -> dict[str, Any]:
    return combine(
        flatten({"split": entry.split}, "task") if entry.split is not None else {},
        flatten(entry.task_args or {}, "task"),
        flatten(entry.task_settings or {}, "task"),
    )


def _same_numbers(a: Cell, b: Cell) -> bool:
    return (a.entry.metrics, a.entry.n_samples, a.entry.n_skipped) == (
        b.entry.metrics,
        b.entry.n_samples,
        b.entry.n_skipped,
    )


def _describe(cell: Cell) -> str:
    return f"{cell.run.model} / {cell.entry.task} / {cell.entry.intervention} in {cell.run.path}"


def collect_cells(runs: Sequence[Run]) -> list[Cell]:
    """All entries of ``runs``; identical duplicates are dropped, conflicting ones raise.

    Raises:
        MergeError: The same (model, settings, task, intervention) with different numbers.
    """
    cells = [Cell(run, e, _task_config(e)) for run in runs for e in run.results.entries]
    return check_unique(cells, lambda c: c.key, _same_numbers, _describe)


def _directions(runs: Sequence[Run]) -> dict[tuple[str, str], bool]:
    out: dict[tuple[str, str], bool] = {}
    for run in runs:
        for task, defs in run.results.metric_defs.items():
            for d in defs:
                prev = out.setdefault((task, d.name), d.higher_is_better)
                if prev != d.higher_is_better:
                    raise MergeError(
                        f"{run.path}: {task}/{d.name} is declared "
                        f"{'higher' if d.higher_is_better else 'lower'}-is-better here but "
                        "the opposite in another run"
                    )
    return out


def _metric_names(cell: Cell, all_metrics: bool) -> list[str]:
    defs = [d.name for d in cell.run.results.metric_defs.get(cell.entry.task, [])]
    names = defs or [m.name for m in cell.entry.metrics]
    names = [n for n in names if not n.endswith(_CI_SUFFIXES)]
    return names if all_metrics else names[:1]


def primary_metric(cell: Cell) -> str | None:
    """The task's first declared metric (CI companions excluded), or None if it has none."""
    names = _metric_names(cell, False)
    return names[0] if names else None


def _value(entry: Any, name: str) -> Any:
    try:
        return entry.metric(name)
    except KeyError:
        return None


def _task_diffs(cells: Sequence[Cell]) -> dict[tuple[str, ...], str]:
    """Per cell: the task settings that differ between runs of the same task, as text."""
    by_task: dict[str, list[Cell]] = {}
    for c in cells:
        by_task.setdefault(c.entry.task, []).append(c)
    out = {}
    for group in by_task.values():
        differing, _ = split_settings(c.task_config for c in group)
        for c in group:
            out[c.key] = ", ".join(
                f"{k.removeprefix('task.')}={c.task_config.get(k, 'unset')}" for k in differing
            )
    return out


def _order(cell: Cell) -> tuple:
    return (*cell.group, not is_baseline(cell.entry), cell.entry.intervention)


def accuracy_table(runs: Sequence[Run], all_metrics: bool = False) -> Table:
    """The long accuracy table (one row per model × settings × task × intervention × metric)."""
    cells = sorted(collect_cells(runs), key=_order)
    directions = _directions(runs)
    baselines = {c.group: c for c in cells if is_baseline(c.entry)}
    differing, common = split_settings(c.run.config for c in cells)
    task_diffs = _task_diffs(cells)
    rows, has_ci, no_base = [], False, set()
    for cell in cells:
        base = baselines.get(cell.group)
        for name in _metric_names(cell, all_metrics):
            rec = _value(cell.entry, name)
            lo, hi = _value(cell.entry, name + "_ci_low"), _value(cell.entry, name + "_ci_high")
            has_ci = has_ci or lo is not None or hi is not None
            ref = _value(base.entry, name) if base is not None else None
            delta = None
            if rec is not None and ref is not None and None not in (rec.value, ref.value):
                delta = decimal_diff(rec.value, ref.value)
            elif base is None:
                no_base.add(f"{cell.run.model}/{cell.entry.task}")
            higher = directions.get((cell.entry.task, name))
            rows.append(
                {
                    "model": cell.run.model,
                    **settings_row(cell.run.config, differing),
                    "task": cell.entry.task,
                    "task_settings": task_diffs[cell.key],
                    "intervention": cell.entry.intervention,
                    "metric": name,
                    "better": None if higher is None else ("higher" if higher else "lower"),
                    "value": None if rec is None else rec.value,
                    "delta": delta,
                    "stderr": None if rec is None else rec.stderr,
                    "ci_low": None if lo is None else lo.value,
                    "ci_high": None if hi is None else hi.value,
                    "n": None if rec is None else rec.n,
                }
            )
    columns = [Column("model")]
    columns += [Column(f"set:{k}", k) for k in differing]
    columns.append(Column("task"))
    if any(task_diffs.values()):
        columns.append(Column("task_settings", "task settings"))
    columns += [Column("intervention"), Column("metric"), Column("better")]
    columns += [Column("value", kind="float"), Column("delta", "Δ vs none", "signed")]
    columns.append(Column("stderr", kind="float"))
    if has_ci:
        columns += [Column("ci_low", "CI low", "float"), Column("ci_high", "CI high", "float")]
    columns.append(Column("n", kind="int"))
    notes = [
        "Δ vs none = value − value of the 'none' intervention of the same model, "
        "run settings and task settings (from any merged run)."
    ]
    if no_base:
        notes.append("No 'none' baseline (Δ missing) for: " + ", ".join(sorted(no_base)))
    notes += _run_notes(cells, common)
    return Table("accuracy", "Accuracy", tuple(columns), tuple(rows), tuple(notes))


def _run_notes(cells: Sequence[Cell], common: dict[str, Any]) -> list[str]:
    notes = []
    note = settings_note(common)
    if note:
        notes.append(note)
    failed = [
        f"{c.entry.task}/{c.entry.intervention}: {len(c.entry.failures)} failed, "
        f"{c.entry.n_skipped} skipped"
        for c in cells
        if c.entry.failures or c.entry.n_skipped
    ]
    if failed:
        notes.append("Samples not scored: " + "; ".join(failed))
    return notes


def accuracy_summary_table(runs: Sequence[Run]) -> Table:
    """Wide view: one row per model × settings × intervention, one column per task.

    Cells hold the task's primary metric; a task measured under differing task settings
    gets one column per setting (``task [frames=8]``).
    """
    cells = sorted(collect_cells(runs), key=_order)
    differing, common = split_settings(c.run.config for c in cells)
    task_diffs = _task_diffs(cells)
    columns: dict[str, Column] = {}
    rows: dict[tuple, dict[str, Any]] = {}
    for cell in cells:
        names = _metric_names(cell, False)
        if not names:
            continue
        diff = task_diffs[cell.key]
        title = cell.entry.task + (f" [{diff}]" if diff else "")
        col_key = f"task:{title}"
        columns.setdefault(col_key, Column(col_key, f"{title} ({names[0]})", "float"))
        row_key = (cell.run.model, config_key(cell.run.config), cell.entry.intervention)
        row = rows.setdefault(
            row_key,
            {
                "model": cell.run.model,
                **settings_row(cell.run.config, differing),
                "intervention": cell.entry.intervention,
            },
        )
        rec = _value(cell.entry, names[0])
        row[col_key] = None if rec is None else rec.value
    head = [
        Column("model"),
        *(Column(f"set:{key}", key) for key in differing),
        Column("intervention"),
    ]
    ordered = sorted(
        rows.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] != "none", kv[0][2])
    )
    notes = [n for n in [settings_note(common)] if n]
    return Table(
        "accuracy_summary",
        "Accuracy summary (primary metric per task)",
        (*head, *columns.values()),
        tuple(r for _, r in ordered),
        tuple(notes),
    )
