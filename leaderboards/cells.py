"""Result entries as table material: cells, displayed lines, random-draw averaging.

A :class:`Cell` is one (task, intervention) entry of one run. A :class:`Line` is what one
table row shows for a comparable group (model, run settings, task, task settings): a single
cell, or — for an intervention whose arguments hold ``draw`` (random-k ablation run as
``draw=0..N-1``) — every draw with otherwise identical arguments, shown as their mean::

    ablate:k=0.1,mode=zero,select=random (mean of 5 draws)

The spread across draws (sd, min, max, standard error = sd/√draws) is kept next to the
mean, and the per-draw values stay available (``accuracy_draws`` table). The ``stderr`` of
a draw mean is the mean of the draws' per-sample stderrs: the draws score the same samples,
so this bounds the sampling stderr of the mean from above.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from leaderboards.labels import intervention_label, path_args, short_paths
from leaderboards.settings import (
    CI_SUFFIXES,
    MergeError,
    check_unique,
    combine,
    config_key,
    flatten,
    split_settings,
)
from leaderboards.sources import Run

__all__ = [
    "Cell",
    "Line",
    "collect_cells",
    "build_lines",
    "line_stats",
    "is_baseline",
    "primary_metric",
    "metric_names",
    "metric_value",
    "directions",
    "task_diffs",
    "ranking_names",
]

DRAW_ARG = "draw"
# Label forms of a draw mean, tried in order until labels are unique within every group.
_DRAW_DROPS = (("draw", "draws", "seed"), ("draw", "draws"), ("draw",))


@dataclass(frozen=True)
class Cell:
    """One (task, intervention) entry of one run, with the settings it was measured under."""

    run: Run
    entry: Any  # harness.schema.results.ResultEntry
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

    @property
    def spec(self) -> dict[str, Any]:
        """The intervention spec as passed (``{}`` when the file has none)."""
        return self.entry.intervention_spec or {}


@dataclass(frozen=True)
class Line:
    """What one row shows: one cell, or the draws of one random intervention.

    Attributes:
        cells: The cell, or every draw (sorted by draw).
        identity: The entry's label, or for draws the label without ``draw``.
        label: The display label (short paths; ``(mean of N draws)`` for draws).
        draws: True when the row is a mean over draws.
    """

    cells: tuple[Cell, ...]
    identity: str
    label: str
    draws: bool

    @property
    def first(self) -> Cell:
        """The first cell (its run, task and settings are the line's)."""
        return self.cells[0]


def is_baseline(entry: Any) -> bool:
    """True for the ``none`` intervention (no arguments)."""
    spec = entry.intervention_spec or {}
    return entry.intervention == "none" or (spec.get("name") == "none" and not spec.get("args"))


def _task_config(entry: Any) -> dict[str, Any]:
    settings = entry.task_settings or {}
    args = dict(entry.task_args or {})
    if "scoring" in settings:  # the mode as applied is the setting; as passed, it repeats it
        args.pop("scoring", None)
    return combine(
        flatten({"split": entry.split}, "task") if entry.split is not None else {},
        flatten(args, "task"),
        flatten(settings, "task"),
    )


def _same_numbers(a: Cell, b: Cell) -> bool:
    fields = ("metrics", "n_samples", "n_skipped")
    return all(getattr(a.entry, f) == getattr(b.entry, f) for f in fields)


def _describe(cell: Cell) -> str:
    return f"{cell.run.model} / {cell.entry.task} / {cell.entry.intervention} in {cell.run.path}"


def collect_cells(runs: Sequence[Run]) -> list[Cell]:
    """All entries of ``runs``; identical duplicates are dropped, conflicting ones raise.

    Raises:
        MergeError: The same (model, settings, task, intervention) with different numbers.
    """
    cells = [Cell(run, e, _task_config(e)) for run in runs for e in run.results.entries]
    return check_unique(cells, lambda c: c.key, _same_numbers, _describe)


def directions(runs: Sequence[Run]) -> dict[tuple[str, str], bool]:
    """``(task, metric) → higher_is_better``; runs that disagree raise MergeError."""
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


def metric_names(cell: Cell, all_metrics: bool) -> list[str]:
    """The cell's metrics (CI companions excluded); the first unless all.

    Declared metrics, in their order (a metric without a definition is refused when the
    results are loaded, :func:`leaderboards.sources.load_sources`).
    """
    defs = [d.name for d in cell.run.results.metric_defs.get(cell.entry.task, [])]
    names = [n for n in defs if not n.endswith(CI_SUFFIXES)]
    return names if all_metrics else names[:1]


def primary_metric(cell: Cell) -> str | None:
    """The task's first declared metric (CI companions excluded), or None if it has none."""
    names = metric_names(cell, False)
    return names[0] if names else None


def metric_value(entry: Any, name: str) -> Any:
    """The entry's :class:`~harness.schema.results.MetricRecord` ``name``, or None."""
    try:
        return entry.metric(name)
    except KeyError:
        return None


def task_diffs(cells: Sequence[Cell]) -> dict[tuple[str, ...], str]:
    """Per cell key: the task settings that differ between runs of the same task, as text."""
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


def ranking_names(cells: Sequence[Cell]) -> dict[str, str]:
    """Full path → shown path of every file argument (``ranking=...``) in ``cells``."""
    return short_paths(p for c in cells for p in path_args(c.spec))


def _draw_identity(cell: Cell) -> str:
    args = {k: v for k, v in (cell.spec.get("args") or {}).items() if k != DRAW_ARG}
    return intervention_label({**cell.spec, "args": args}, cell.entry.intervention)


def _draw_order(cell: Cell) -> tuple:
    draw = cell.spec["args"][DRAW_ARG]
    number = isinstance(draw, int | float) and not isinstance(draw, bool)
    return (0, float(draw), "") if number else (1, 0.0, str(draw))


def build_lines(cells: Sequence[Cell]) -> list[Line]:
    """Group ``cells`` into displayed lines (draws merged), sorted by group and label."""
    paths = ranking_names(cells)
    buckets: dict[tuple, list[Cell]] = {}
    for c in cells:
        drawn = DRAW_ARG in (c.spec.get("args") or {})
        identity = _draw_identity(c) if drawn else c.entry.intervention
        buckets.setdefault((c.group, identity, drawn), []).append(c)
    for drop in _DRAW_DROPS:
        lines = []
        for (_, identity, drawn), members in buckets.items():
            first = members[0]
            if drawn:
                members = sorted(members, key=_draw_order)
                label = intervention_label(first.spec, identity, paths, drop)
                label += f" (mean of {len(members)} draw{'s' if len(members) != 1 else ''})"
            else:
                label = intervention_label(first.spec, identity, paths)
            lines.append(Line(tuple(members), identity, label, drawn))
        shown = [(ln.first.group, ln.label) for ln in lines]
        if len(set(shown)) == len(shown):
            break
    return sorted(lines, key=lambda ln: (ln.first.group, not is_baseline(ln.first.entry), ln.label))


def line_stats(line: Line, name: str) -> dict[str, Any] | None:
    """Statistics of metric ``name`` over a line; None when no cell has the metric.

    Returns:
        ``value, stderr, n``, plus ``draws, draw_sd, draw_se, draw_min, draw_max`` for a
        draw mean (see the module docstring).
    """
    records = [metric_value(c.entry, name) for c in line.cells]
    if all(r is None for r in records):
        return None
    if not line.draws:
        (rec,) = records
        return {"value": rec.value, "stderr": rec.stderr, "n": rec.n}
    found = [r for r in records if r is not None and r.value is not None]
    values = [float(r.value) for r in found]
    errors = [r.stderr for r in found if r.stderr is not None]
    sizes = {r.n for r in found}
    sd = statistics.stdev(values) if len(values) > 1 else None
    return {
        "value": math.fsum(values) / len(values) if values else None,
        "stderr": math.fsum(errors) / len(errors) if errors and len(errors) == len(found) else None,
        "n": sizes.pop() if len(sizes) == 1 else None,
        "draws": len(values),
        "draw_sd": sd,
        "draw_se": None if sd is None else sd / math.sqrt(len(values)),
        "draw_min": min(values, default=None),
        "draw_max": max(values, default=None),
    }
