"""Speed and memory leaderboards from ``headscope bench`` JSON files.

Accepted inputs (the ``--json`` output of the bench commands saved to a file):

- ``bench hybrid``: ``{"rows": [{"length", "keep", "window", "dense_ms", "hybrid_ms",
  "speedup", "bound", ...settings}], "model": ..., "settings": {...}}``; ``keep`` is the
  fraction (or count) of heads kept with full attention, ``window`` the sliding window,
  ``bound`` the FLOP-model speedup bound; ``speedup`` defaults to ``dense_ms / hybrid_ms``.
- ``bench ram``: ``{"rows": [{"length", "probe_peak_mb", "eager_peak_mb", "mem_ratio",
  "probe_ms", "eager_ms", "time_ratio", ...settings}]}``; ``eager_*`` are ``null`` where
  eager attention could not run; missing ratios are computed when both sides exist.

Any other row key, and the optional top-level ``model`` / ``settings``, are settings: rows
under differing settings are shown apart. Accuracy retention joins a hybrid row with the
``hybrid`` intervention of the same model, ``keep`` and ``window`` (and ``sinks`` when
both record it): ``retention = hybrid value / none value`` of the task's primary metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaderboards.accuracy import Cell, collect_cells, is_baseline, primary_metric
from leaderboards.formatting import Column, Table
from leaderboards.merge import (
    MergeError,
    Run,
    check_unique,
    combine,
    config_key,
    flatten,
    model_label,
    model_settings,
    settings_note,
    settings_row,
    split_settings,
)

__all__ = ["BenchFile", "parse_bench", "speedup_table", "memory_table", "hybrid_args"]

HYBRID_COLUMNS = ("length", "keep", "window", "dense_ms", "hybrid_ms", "speedup", "bound")
RAM_COLUMNS = (
    "length",
    "probe_peak_mb",
    "eager_peak_mb",
    "mem_ratio",
    "probe_ms",
    "eager_ms",
    "time_ratio",
)


@dataclass(frozen=True)
class BenchFile:
    """Rows of ``bench hybrid`` / ``bench ram`` with each row's model and settings."""

    path: Path
    kind: str
    rows: tuple[dict[str, Any], ...]
    models: tuple[str | None, ...]
    configs: tuple[dict[str, Any], ...]


def parse_bench(doc: dict[str, Any], path: str | Path, kind: str) -> BenchFile:
    """Validate a ``bench hybrid`` (``kind="hybrid"``) or ``bench ram`` JSON document.

    Raises:
        leaderboards.merge.MergeError: A row lacks a required field.
    """
    path = Path(path)
    known = HYBRID_COLUMNS if kind == "hybrid" else RAM_COLUMNS
    required = (*HYBRID_COLUMNS[:5], "bound") if kind == "hybrid" else known[:2]
    top = combine(model_settings(doc.get("model")), flatten(doc.get("settings") or {}))
    rows, models, configs = [], [], []
    for i, row in enumerate(doc["rows"]):
        missing = [k for k in required if row.get(k) is None]
        if missing:
            raise MergeError(f"{path}: bench {kind} row {i} lacks {missing}")
        extra = {k: v for k, v in row.items() if k not in known and k != "model"}
        rows.append(dict(row))
        row_model = row.get("model", doc.get("model"))
        models.append(None if row_model is None else model_label(row_model))
        configs.append(combine(top, model_settings(row.get("model")), flatten(extra)))
    return BenchFile(path, kind, tuple(rows), tuple(models), tuple(configs))


_KEEP_NAMES = ("keep", "k", "fraction")
_WINDOW_NAMES = ("window", "w", "window_size")


def _ratio(num: Any, den: Any) -> float | None:
    if num is None or den is None or den == 0:
        return None
    return float(num) / float(den)


def _flat_rows(files: Sequence[BenchFile]) -> list[tuple[BenchFile, int]]:
    return [(f, i) for f in files for i in range(len(f.rows))]


def _pick(args: dict[str, Any], names: Sequence[str]) -> Any:
    for name in names:
        if name in args:
            return args[name]
    return None


def hybrid_args(entry: Any) -> dict[str, Any] | None:
    """``{"keep", "window", "sinks"}`` of a ``hybrid`` entry (None for other interventions)."""
    spec = entry.intervention_spec or {}
    if spec.get("name") != "hybrid":
        return None
    args = {**(entry.intervention_resolved or {}), **(spec.get("args") or {})}
    return {
        "keep": _pick(args, _KEEP_NAMES),
        "window": _pick(args, _WINDOW_NAMES),
        "sinks": args.get("sinks"),
    }


def _close(a: Any, b: Any) -> bool:
    try:
        return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)))
    except (TypeError, ValueError):
        return a == b


def _compatible(run_config: dict[str, Any], bench_config: dict[str, Any]) -> bool:
    return all(_close(run_config[k], v) for k, v in bench_config.items() if k in run_config)


def _retention(
    cells: Sequence[Cell], model: str | None, row: dict[str, Any], config: dict[str, Any]
) -> dict[str, float]:
    models = {c.run.model for c in cells}
    if model is None and len(models) == 1:
        model = next(iter(models))  # an unlabelled bench file of a single-model leaderboard
    base = {c.group: c for c in cells if is_baseline(c.entry)}
    found: dict[str, list[float]] = {}
    for c in cells:
        args = hybrid_args(c.entry)
        if c.run.model != model or args is None or c.group not in base:
            continue
        if not _compatible(c.run.config, config):
            continue
        if not (_close(args["keep"], row["keep"]) and _close(args["window"], row["window"])):
            continue
        if "sinks" in row and args["sinks"] is not None and not _close(args["sinks"], row["sinks"]):
            continue
        name = primary_metric(c)
        try:
            value, ref = c.entry.metric(name).value, base[c.group].entry.metric(name).value
        except KeyError:
            continue
        r = _ratio(value, ref)
        if r is not None:
            found.setdefault(c.entry.task, []).append(r)
    # Several settings groups of one model give several retentions: ambiguous, not averaged.
    return {t: v[0] for t, v in found.items() if len(v) == 1}


def speedup_table(files: Sequence[BenchFile], runs: Sequence[Run] = ()) -> Table:
    """Measured prefill speedup next to the FLOP-model bound, plus accuracy retention."""
    items = _flat_rows(files)
    key = _row_key(("length", "keep", "window"))
    items = check_unique(items, key, _same_row, _describe)
    differing, common = split_settings(f.configs[i] for f, i in items)
    cells = collect_cells(runs) if runs else []
    rows, tasks = [], []
    for f, i in sorted(items, key=lambda it: _sort(it, ("keep", "window", "length"))):
        r = f.rows[i]
        measured = r.get("speedup")
        if measured is None:
            measured = _ratio(r["dense_ms"], r["hybrid_ms"])
        row = {
            "model": f.models[i] or "—",
            **settings_row(f.configs[i], differing),
            "length": r["length"],
            "keep": r["keep"],
            "window": r["window"],
            "dense_ms": r["dense_ms"],
            "hybrid_ms": r["hybrid_ms"],
            "speedup": measured,
            "bound": r["bound"],
            "of_bound": _ratio(measured, r["bound"]),
        }
        for task, value in _retention(cells, f.models[i], r, f.configs[i]).items():
            row[f"retention:{task}"] = value
            if task not in tasks:
                tasks.append(task)
        rows.append(row)
    columns = [Column("model"), *(Column(f"set:{key}", key) for key in differing)]
    columns += [
        Column("length", kind="int"),
        Column("keep", "full heads", "float"),
        Column("window", kind="int"),
        Column("dense_ms", "dense ms", "float"),
        Column("hybrid_ms", "hybrid ms", "float"),
        Column("speedup", "measured ×", "float"),
        Column("bound", "FLOP bound ×", "float"),
        Column("of_bound", "measured/bound", "float"),
    ]
    columns += [Column(f"retention:{t}", f"retention {t}", "float") for t in sorted(tasks)]
    notes = ["measured × = dense_ms / hybrid_ms (prefill); FLOP bound from metrics.md's model."]
    if tasks:
        notes.append(
            "retention = primary metric under 'hybrid' (same keep, window) / under 'none', "
            "same model and settings."
        )
    notes += [n for n in [settings_note(common)] if n]
    return Table(
        "speedup", "Hybrid attention prefill speedup", tuple(columns), tuple(rows), tuple(notes)
    )


def memory_table(files: Sequence[BenchFile]) -> Table:
    """Peak memory and time of the RAM probe against eager attention, per length."""
    items = check_unique(_flat_rows(files), _row_key(("length",)), _same_row, _describe)
    differing, common = split_settings(f.configs[i] for f, i in items)
    rows = []
    for f, i in sorted(items, key=lambda it: _sort(it, ("length",))):
        r = f.rows[i]
        mem = r.get("mem_ratio")
        if mem is None:
            mem = _ratio(r.get("eager_peak_mb"), r["probe_peak_mb"])
        time = r.get("time_ratio")
        if time is None:
            time = _ratio(r.get("eager_ms"), r.get("probe_ms"))
        rows.append(
            {
                "model": f.models[i] or "—",
                **settings_row(f.configs[i], differing),
                "length": r["length"],
                "probe_peak_mb": r["probe_peak_mb"],
                "eager_peak_mb": r.get("eager_peak_mb"),
                "mem_ratio": mem,
                "probe_ms": r.get("probe_ms"),
                "eager_ms": r.get("eager_ms"),
                "time_ratio": time,
            }
        )
    columns = [Column("model"), *(Column(f"set:{key}", key) for key in differing)]
    columns += [
        Column("length", kind="int"),
        Column("probe_peak_mb", "probe peak MB", "float"),
        Column("eager_peak_mb", "eager peak MB", "float"),
        Column("mem_ratio", "eager/probe mem", "float"),
        Column("probe_ms", "probe ms", "float"),
        Column("eager_ms", "eager ms", "float"),
        Column("time_ratio", "eager/probe time", "float"),
    ]
    notes = ["— under eager: eager attention could not run at that length (e.g. out of memory)."]
    notes += [n for n in [settings_note(common)] if n]
    return Table("memory", "RAM probe memory and time", tuple(columns), tuple(rows), tuple(notes))


def _row_key(fields: Sequence[str]):
    def key(item: tuple[BenchFile, int]) -> tuple:
        f, i = item
        return (f.models[i], config_key(f.configs[i]), *(repr(f.rows[i][k]) for k in fields))

    return key


def _same_row(a: tuple[BenchFile, int], b: tuple[BenchFile, int]) -> bool:
    return a[0].rows[a[1]] == b[0].rows[b[1]]


def _describe(item: tuple[BenchFile, int]) -> str:
    f, i = item
    r = f.rows[i]
    what = ", ".join(f"{k}={r[k]}" for k in ("length", "keep", "window") if k in r)
    return f"bench {f.kind} row ({f.models[i] or 'unlabelled model'}: {what}) in {f.path}"


def _sort(item: tuple[BenchFile, int], fields: Sequence[str]) -> tuple:
    f, i = item
    return (f.models[i] or "", config_key(f.configs[i]), *(float(f.rows[i][k]) for k in fields))
