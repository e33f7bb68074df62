"""Accuracy leaderboards: model × task × intervention, with Δ against the right baseline.

Each row is one displayed line (:mod:`leaderboards.cells`: an entry, or the mean of the
random draws of one intervention) and one metric: the task's primary metric (its first
declared :class:`~harness.schema.results.MetricDefRecord`) or, with ``all_metrics``, every declared
metric. Δ is ``value − baseline`` where the baseline is the ``none`` intervention of the
*same* model, the *same* run settings (attention implementation, dtype, ...) and the *same*
task settings (split, frames, variant, ...), possibly from another run directory. Without
such a baseline Δ is missing, never borrowed from another setting.

Confidence intervals: an entry may carry metrics named ``<metric>_ci_low`` and
``<metric>_ci_high`` (e.g. a bootstrap CI); they fill the CI columns of ``<metric>``.
Per-draw values of random draws are in the ``accuracy_draws`` detail table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from leaderboards.cells import (
    Cell,
    Line,
    build_lines,
    collect_cells,
    directions,
    is_baseline,
    line_stats,
    metric_names,
    metric_value,
    primary_metric,
    ranking_names,
    task_diffs,
)
from leaderboards.formatting import Column, Table, decimal_diff
from leaderboards.labels import MODEL_COLUMNS, model_cells, model_names
from leaderboards.settings import (
    config_key,
    scoring_of,
    settings_note,
    settings_row,
    split_settings,
)
from leaderboards.sources import Run

__all__ = [
    "Cell",
    "collect_cells",
    "is_baseline",
    "primary_metric",
    "accuracy_table",
    "accuracy_summary_table",
    "accuracy_draws_table",
]

_DRAW_COLUMNS = (
    Column("draws", "draws", "int"),
    Column("draw_sd", "sd over draws", "float"),
    Column("draw_min", "min draw", "float"),
    Column("draw_max", "max draw", "float"),
    Column("draw_se", "se over draws", "float", machine=True),
)


class _Context:
    """What every accuracy table needs: lines, baselines, settings, display names."""

    def __init__(self, runs: Sequence[Run]) -> None:
        self.cells = collect_cells(runs)
        self.lines = build_lines(self.cells)
        self.baselines = {c.group: c for c in self.cells if is_baseline(c.entry)}
        self.differing, self.common = split_settings(c.run.config for c in self.cells)
        self.task_diffs = task_diffs(self.cells)
        self.models = model_names((r.model, r.results.model) for r in runs)
        self.paths = ranking_names(self.cells)

    def head(self, cell: Cell) -> dict[str, Any]:
        """Model, differing run settings, task and task settings of a row."""
        return {
            **model_cells(cell.run.model, self.models),
            **settings_row(cell.run.config, self.differing),
            "task": cell.entry.task,
            "scoring": scoring_of(cell.entry),
            "task_settings": self.task_diffs[cell.key],
        }

    def head_columns(self, with_task: bool = True) -> list[Column]:
        cols = [*MODEL_COLUMNS, *(Column(f"set:{k}", k) for k in self.differing)]
        if with_task:
            cols += [Column("task"), Column("scoring")]
            if any(self.task_diffs.values()):
                cols.append(Column("task_settings", "task settings"))
        return cols

    def delta(self, cell: Cell, name: str, value: Any) -> float | None:
        base = self.baselines.get(cell.group)
        ref = metric_value(base.entry, name) if base is not None else None
        if value is None or ref is None or ref.value is None:
            return None
        return decimal_diff(value, ref.value)

    def notes(self, failures: bool = True) -> list[str]:
        notes = []
        shortened = {full: short for full, short in self.paths.items() if full != short}
        if shortened:
            notes.append(
                "Files in labels: " + "; ".join(f"{s} = {f}" for f, s in sorted(shortened.items()))
            )
        note = settings_note(self.common)
        if note:
            notes.append(note)
        labels = {c.key: ln.label for ln in self.lines for c in ln.cells}
        failed = [
            f"{c.entry.task}/{labels[c.key]}: {len(c.entry.failures)} failed, "
            f"{c.entry.n_skipped} skipped"
            for c in self.cells
            if c.entry.failures or c.entry.n_skipped
        ]
        if failed and failures:
            notes.append("Samples not scored: " + "; ".join(failed))
        return notes


def _draw_note(lines: Sequence[Line]) -> str:
    seeds = {c.spec["args"].get("seed") for ln in lines for c in ln.cells} - {None}
    seeded = f" (seed {', '.join(sorted(map(str, seeds)))})" if seeds else ""
    return (
        "(mean of N draws): value = mean over the random draws draw=0..N−1"
        f"{seeded} with otherwise identical arguments; Δ from that mean; "
        "stderr = mean of the draws' per-sample stderrs; sd/min/max across draws. "
        "Per-draw values: accuracy_draws (CSV/JSON)."
    )


def accuracy_table(runs: Sequence[Run], all_metrics: bool = False) -> Table:
    """The long accuracy table (one row per model × settings × task × line × metric)."""
    ctx = _Context(runs)
    dirs = directions(runs)
    rows, has_ci, no_base = [], False, set()
    for line in ctx.lines:
        cell = line.first
        for name in metric_names(cell, all_metrics):
            stats = line_stats(line, name) or {}
            lo = hi = None
            if not line.draws:
                lo = metric_value(cell.entry, name + "_ci_low")
                hi = metric_value(cell.entry, name + "_ci_high")
            has_ci = has_ci or lo is not None or hi is not None
            if cell.group not in ctx.baselines:
                no_base.add(f"{ctx.models[cell.run.model]}/{cell.entry.task}")
            higher = dirs[(cell.entry.task, name)]  # defined: load_sources refuses others
            rows.append(
                {
                    **ctx.head(cell),
                    "intervention": line.label,
                    "intervention_id": line.identity,
                    "metric": name,
                    "better": "higher" if higher else "lower",
                    **stats,
                    "delta": ctx.delta(cell, name, stats.get("value")),
                    "ci_low": None if lo is None else lo.value,
                    "ci_high": None if hi is None else hi.value,
                }
            )
    columns = ctx.head_columns()
    columns += [
        Column("intervention"),
        Column("intervention_id", "intervention id", machine=True),
        Column("metric"),
        Column("better"),
        Column("value", kind="float"),
        Column("delta", "Δ vs none", "signed"),
        Column("stderr", kind="float"),
    ]
    if has_ci:
        columns += [Column("ci_low", "CI low", "float"), Column("ci_high", "CI high", "float")]
    columns.append(Column("n", kind="int"))
    drawn = [ln for ln in ctx.lines if ln.draws]
    if drawn:
        columns += _DRAW_COLUMNS
    notes = [
        "Δ vs none = value − value of the 'none' intervention of the same model, "
        "run settings and task settings (from any merged run)."
    ]
    if drawn:
        notes.append(_draw_note(drawn))
    if no_base:
        notes.append("No 'none' baseline (Δ missing) for: " + ", ".join(sorted(no_base)))
    notes += ctx.notes()
    return Table("accuracy", "Accuracy", tuple(columns), tuple(rows), tuple(notes))


def accuracy_summary_table(runs: Sequence[Run]) -> Table:
    """Wide view: one row per model × settings × intervention, one column per task.

    Cells hold the task's primary metric (the mean for random draws); a task measured under
    differing task settings gets one column per setting (``task [frames=8]``).
    """
    ctx = _Context(runs)
    columns: dict[str, Column] = {}
    rows: dict[tuple, dict[str, Any]] = {}
    order: dict[tuple, tuple] = {}
    for line in ctx.lines:
        cell = line.first
        name = primary_metric(cell)
        if name is None:
            continue
        diff = ctx.task_diffs[cell.key]
        title = cell.entry.task + (f" [{diff}]" if diff else "")
        col_key = f"task:{title}"
        label = f"{title} ({name}, scoring {scoring_of(cell.entry)})"
        columns.setdefault(col_key, Column(col_key, label, "float"))
        row_key = (cell.run.model, config_key(cell.run.config), line.identity, line.draws)
        if row_key not in rows:
            order[row_key] = (*row_key[:2], not is_baseline(cell.entry), line.label)
            rows[row_key] = {
                **model_cells(cell.run.model, ctx.models),
                **settings_row(cell.run.config, ctx.differing),
                "intervention": line.label,
                "intervention_id": line.identity,
            }
        rows[row_key][col_key] = (line_stats(line, name) or {}).get("value")
    head = ctx.head_columns(with_task=False)
    head += [Column("intervention"), Column("intervention_id", "intervention id", machine=True)]
    drawn = [ln for ln in ctx.lines if ln.draws]
    notes = [_draw_note(drawn)] if drawn else []
    notes += ctx.notes(failures=False)
    return Table(
        "accuracy_summary",
        "Accuracy summary (primary metric per task)",
        (*head, *columns.values()),
        tuple(rows[k] for k in sorted(rows, key=order.__getitem__)),
        tuple(notes),
    )


def accuracy_draws_table(runs: Sequence[Run], all_metrics: bool = False) -> Table:
    """Detail table: every random draw behind a ``(mean of N draws)`` row, one row each."""
    ctx = _Context(runs)
    rows = []
    for line in ctx.lines:
        if not line.draws:
            continue
        for cell in line.cells:
            for name in metric_names(cell, all_metrics):
                rec = metric_value(cell.entry, name)
                value = None if rec is None else rec.value
                rows.append(
                    {
                        **ctx.head(cell),
                        "intervention": line.label,
                        "draw": cell.spec["args"]["draw"],
                        "intervention_id": cell.entry.intervention,
                        "metric": name,
                        "value": value,
                        "delta": ctx.delta(cell, name, value),
                        "stderr": None if rec is None else rec.stderr,
                        "n": None if rec is None else rec.n,
                    }
                )
    columns = ctx.head_columns() + [
        Column("intervention"),
        Column("draw", kind="int"),
        Column("intervention_id", "intervention id", machine=True),
        Column("metric"),
        Column("value", kind="float"),
        Column("delta", "Δ vs none", "signed"),
        Column("stderr", kind="float"),
        Column("n", kind="int"),
    ]
    notes = ["One row per random draw; the accuracy table shows their mean."]
    notes += ctx.notes(failures=False)
    return Table(
        "accuracy_draws",
        "Accuracy per random draw",
        tuple(columns),
        tuple(rows),
        tuple(notes),
        detail=True,
    )
