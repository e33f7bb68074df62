"""Speed and memory leaderboards from ``headscope bench`` JSON files.

Input layouts, and which row keys are settings vs measurements: :mod:`leaderboards.bench`.
Rows under differing settings are shown apart; the geometry preset and the timing scope
(attention only / whole layer) are always shown as columns, since they say what was timed.
Accuracy retention joins a hybrid row with the ``hybrid`` intervention of the same model,
``keep`` and ``window`` (and ``sinks`` when both record it): ``retention = hybrid value /
none value`` of the task's primary metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from leaderboards.bench import HYBRID_COLUMNS, RAM_COLUMNS, BenchFile, parse_bench
from leaderboards.cells import Cell, collect_cells, is_baseline, primary_metric
from leaderboards.formatting import Column, Table
from leaderboards.labels import MODEL_COLUMNS, model_cells, unique_names
from leaderboards.settings import (
    check_unique,
    config_key,
    scoring_of,
    settings_note,
    settings_row,
    split_settings,
)
from leaderboards.sources import Run

__all__ = [
    "BenchFile",
    "parse_bench",
    "speedup_table",
    "memory_table",
    "hybrid_args",
    "HYBRID_COLUMNS",
    "RAM_COLUMNS",
]

#: Settings always shown as columns (they say what was timed).
_SHOWN_SETTINGS = ("geometry", "scope")


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
    """``{"keep", "window", "sinks"}`` of a static ``hybrid`` entry (None for the others).

    ``hybrid:select=adaptive`` entries are left out: bench rows time the static head sets.
    """
    spec = entry.intervention_spec or {}
    if spec.get("name") != "hybrid":
        return None
    args = {**(entry.intervention_resolved or {}), **(spec.get("args") or {})}
    if args.get("select") == "adaptive":
        return None
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


#: Optional measurements of bench hybrid rows: key → column (shown when any row has it).
_MEASURED = {
    "kept_fraction": Column("kept_fraction", "heads kept", "float"),
    "sdpa_ms": Column("sdpa_ms", "sdpa ms", "float"),
    "dispatch_overhead": Column("dispatch_overhead", "dispatch overhead", "signed"),
    "speedup_cpu_time": Column("speedup_cpu_time", "CPU-time ×", "float"),
}
_MEASURED_NOTES = {
    "kept_fraction": "heads kept = fraction of heads actually kept full (⌈keep·H⌉/H).",
    "dispatch_overhead": "dispatch overhead = dense time through the headscope dispatch with an "
    "empty plan / plain sdpa − 1 (the dispatch's own cost; ≈ 0 is good).",
    "speedup_cpu_time": "CPU-time × = dense / hybrid process CPU time (steadier than wall "
    "time on a shared machine).",
}


def _head(files: Sequence[BenchFile], items: list[tuple[BenchFile, int]]) -> tuple:
    """Model names, differing settings (shown ones first) and the common-settings note."""
    names = unique_names((f.models[i], f.display(i)) for f, i in items if f.models[i])
    differing, common = split_settings(f.configs[i] for f, i in items)
    shown = [k for k in _SHOWN_SETTINGS if any(k in f.configs[i] for f, i in items)]
    differing = shown + [k for k in differing if k not in shown]
    common = {k: v for k, v in common.items() if k not in shown}
    columns = [*MODEL_COLUMNS, *(Column(f"set:{k}", k) for k in differing)]
    return names, differing, columns, [n for n in [settings_note(common)] if n]


def speedup_table(files: Sequence[BenchFile], runs: Sequence[Run] = ()) -> Table:
    """Measured prefill speedup next to the FLOP-model bound, plus accuracy retention."""
    items = _flat_rows(files)
    items = check_unique(items, _row_key(("length", "keep", "window")), _same_row, _describe)
    names, differing, columns, common_note = _head(files, items)
    cells = collect_cells(runs) if runs else []
    rows, tasks = [], []
    measured_keys = [k for k in _MEASURED if any(f.rows[i].get(k) is not None for f, i in items)]
    for f, i in sorted(items, key=lambda it: _sort(it, ("keep", "window", "length"))):
        r = f.rows[i]
        measured = r.get("speedup")
        if measured is None:
            measured = _ratio(r["dense_ms"], r["hybrid_ms"])
        row = {
            **model_cells(f.models[i], names),
            **settings_row(f.configs[i], differing),
            **{k: r[k] for k in HYBRID_COLUMNS[:5]},
            **{k: r.get(k) for k in measured_keys},
            "speedup": measured,
            "bound": r["bound"],
            "of_bound": _ratio(measured, r["bound"]),
        }
        for task, value in _retention(cells, f.models[i], r, f.configs[i]).items():
            row[f"retention:{task}"] = value
            if task not in tasks:
                tasks.append(task)
        rows.append(row)
    optional = [_MEASURED[k] for k in measured_keys]
    columns += [
        Column("length", kind="int"),
        Column("keep", "keep", "float"),
        *[c for c in optional if c.key == "kept_fraction"],
        Column("window", kind="int"),
        Column("dense_ms", "dense ms", "float"),
        Column("hybrid_ms", "hybrid ms", "float"),
        *[c for c in optional if c.key == "sdpa_ms"],
        Column("speedup", "measured ×", "float"),
        Column("bound", "FLOP bound ×", "float"),
        Column("of_bound", "measured/bound", "float"),
        *[c for c in optional if c.key in ("dispatch_overhead", "speedup_cpu_time")],
    ]
    modes = {c.entry.task: scoring_of(c.entry) for c in cells}  # one per task (check_scoring)
    columns += [
        Column(f"retention:{t}", f"retention {t} (scoring {modes[t]})", "float")
        for t in sorted(tasks)
    ]
    notes = [
        "measured × = dense_ms / hybrid_ms (prefill, median); FLOP bound from metrics.md's "
        "model; keep = requested fraction (or count) of heads with full attention."
    ]
    notes += [_MEASURED_NOTES[k] for k in measured_keys if k in _MEASURED_NOTES]
    if any(f.models[i] is None for f, i in items):
        notes.append("model —: a random-weight decoder with the geometry's layer shapes.")
    if tasks:
        notes.append(
            "retention = primary metric under 'hybrid' (same keep, window) / under 'none', "
            "same model and settings."
        )
    notes += common_note
    return Table(
        "speedup", "Hybrid attention prefill speedup", tuple(columns), tuple(rows), tuple(notes)
    )


def memory_table(files: Sequence[BenchFile]) -> Table:
    """Peak memory and time of the RAM probe against eager attention, per length."""
    items = check_unique(_flat_rows(files), _row_key(("length",)), _same_row, _describe)
    names, differing, columns, common_note = _head(files, items)
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
                **model_cells(f.models[i], names),
                **settings_row(f.configs[i], differing),
                **{k: r.get(k) for k in RAM_COLUMNS},
                "mem_ratio": mem,
                "time_ratio": time,
            }
        )
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
    notes += common_note
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
