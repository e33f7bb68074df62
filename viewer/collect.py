"""Everything the viewer shows, gathered from the run directories as plain JSON-able data.

Inputs are found and loaded by :func:`leaderboards.sources.load_sources` (results, rankings,
bench and diagnose files; any folder depth) and attention maps by
:func:`viewer.heads.find_maps`. Nothing here writes a file; :mod:`viewer.site` writes the
site from a :class:`SiteData`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SiteData", "collect", "table_view", "runs_view"]


@dataclass
class SiteData:
    """The material of one site.

    Attributes:
        inputs: The directories given, as passed.
        sources: The loaded :class:`leaderboards.sources.Sources`.
        tables: Overview tables (:func:`table_view` form).
        runs: One summary per run (:func:`runs_view` form).
        tasks: Per task, its :class:`viewer.samples.TaskSamples`.
        heads: Per ranking, its heads data (:func:`viewer.heads.ranking_view`).
        warnings: Notes on skipped inputs.
    """

    inputs: list[str]
    sources: Any
    tables: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[Any] = field(default_factory=list)
    heads: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def collect(
    paths: Sequence[str | Path], n_boot: int = 1000, scoring: str | None = None
) -> SiteData:
    """Load every input under ``paths`` and build the pages' data.

    Args:
        paths: Grid run directories, main-job directories, or folders of runs.
        n_boot: Bootstrap replicates of the Spearman CIs in the overview tables.
        scoring: Read each run's copy rescored under this mode
            (:func:`leaderboards.sources.load_sources`); None: the runs' own results.

    Raises:
        FileNotFoundError: A path does not exist.
        leaderboards.settings.MergeError: Nothing headscope wrote was found, or inputs conflict.
    """
    from leaderboards.cells import build_lines, collect_cells
    from leaderboards.cli import build_tables
    from leaderboards.labels import model_names
    from leaderboards.sources import load_sources
    from viewer.heads import ranking_views
    from viewer.samples import task_samples

    sources = load_sources(paths, scoring=scoring)
    data = SiteData([str(p) for p in paths], sources, warnings=list(sources.warnings))
    data.tables = [table_view(t) for t in build_tables(sources, n_boot=n_boot) if not t.detail]
    data.runs = runs_view(sources)
    models = model_names((r.model, r.results.model) for r in sources.runs)
    lines = build_lines(collect_cells(sources.runs)) if sources.runs else []
    by_task: dict[str, list[Any]] = {}
    for line in lines:
        by_task.setdefault(line.first.entry.task, []).append(line)
    data.tasks = [task_samples(t, by_task[t], models, data.warnings) for t in sorted(by_task)]
    data.heads = ranking_views(sources.rankings, data.warnings)
    _mark_logged(data)
    return data


def _mark_logged(data: SiteData) -> None:
    """Flag each saved map's sample ``logged`` when its task's sample table holds it.

    A ranking's samples need not be among the accuracy run's (``headscope rank`` alone, or
    another split); only logged ones link to a sample page.
    """
    ids = {ts.task: {str(s["id"]) for s in ts.table["samples"]} for ts in data.tasks}
    for view in data.heads:
        for task, entry in view["tasks"].items():
            for sample in (entry["maps"] or {}).get("samples", []):
                sample["logged"] = str(sample["doc_id"]) in ids.get(task, set())


def table_view(table: Any) -> dict[str, Any]:
    """A :class:`leaderboards.formatting.Table` as the overview template shows it.

    Every cell holds its text (the leaderboards' rounding rule) and a sort key (the raw
    number, or the text), so the page sorts numbers as numbers.
    """
    from leaderboards.formatting import format_value

    columns = [{"key": c.key, "title": c.label, "numeric": c.kind != "text"} for c in table.shown]
    rows = []
    for row in table.rows:
        cells = []
        for c in table.shown:
            value = row.get(c.key)
            text = format_value(value, c.kind)
            number = c.kind != "text" and isinstance(value, int | float) and value == value
            cells.append({"text": text, "sort": float(value) if number else text})
        rows.append(cells)
    return {
        "name": table.name,
        "title": table.title,
        "columns": columns,
        "rows": rows,
        "notes": list(table.notes),
    }


def runs_view(sources: Any) -> list[dict[str, Any]]:
    """One summary per run: folder, model, status, scoring mode per task, run settings."""
    from leaderboards.labels import model_display
    from leaderboards.settings import flatten
    from viewer.samples import run_name

    out = []
    for run in sources.runs:
        res = run.results
        scoring: dict[str, str] = {}
        for e in res.entries:
            mode = (e.task_settings or {}).get("scoring") or (e.task_args or {}).get("scoring")
            scoring.setdefault(e.task, str(mode) if mode else "unrecorded")
        out.append(
            {
                "name": run_name(run.path),
                "path": str(run.path),
                "model": model_display(res.model),
                "status": res.status,
                "created": res.created,
                "entries": len(res.entries),
                "scoring": scoring,
                "settings": {k: str(v) for k, v in flatten(res.settings).items()},
            }
        )
    return out
