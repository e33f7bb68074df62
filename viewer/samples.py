"""Per-task sample tables: every sample's score and correctness under each intervention.

A task's columns are the accuracy leaderboard's displayed lines for that task
(:func:`leaderboards.cells.build_lines`): one per intervention entry, the random draws of one
intervention merged into one column (their per-sample scores averaged, as the leaderboard
averages their metrics), one set per model (several runs side by side).

A sample's *score* in a column is its per-sample value of the task's primary metric (the
first declared one) when the sample row holds it under that name, else the first numeric,
non-boolean score of the row (``tIoU`` for a task whose primary metric is ``m_tIoU``); the key
used is recorded per column. It is *correct* when that score is ≥ :data:`CORRECT_AT`, for a
higher-is-better metric whose scores lie in [0, 1]; otherwise correctness is unknown.

Two files per task feed the pages: the *table* (compact: ids, the part of the prompt that
differs between samples, search text, scores, a correctness string, each cell's reply cut to
:data:`REPLY` characters and, for a random-draw column, how many draws were right — what the
list and its filters read) and *chunks* of
:data:`CHUNK` samples with everything else (prompts, every reply with all its scores).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CORRECT_AT", "CHUNK", "TaskSamples", "task_samples", "score_of", "correct_mark"]

#: A sample is correct in a column when its score is at least this (see the module docstring).
CORRECT_AT = 0.5
#: Samples per detail chunk (one file loaded per sample page).
CHUNK = 50
#: Characters of each text piece kept in the search text.
SEARCH_PIECE = 300
#: Characters of a reply kept in the samples list (the sample page shows it whole).
REPLY = 48
#: Row fields that are not task-specific extras.
_ROW_KEYS = ("doc_id", "prompt", "output", "timing", "scores", "error", "skipped")


@dataclass(frozen=True)
class TaskSamples:
    """The page data of one task.

    Attributes:
        task: Task name.
        table: The compact table (JSON-able).
        chunks: Detail chunks, :data:`CHUNK` samples each, in table order.
        source: How to rebuild the documents (:mod:`viewer.media`): the baseline entry's
            ``task_args`` and ``split`` (else the first column's), its run's ``model`` and
            ``run_dir``.
    """

    task: str
    table: dict[str, Any]
    chunks: list[dict[str, Any]]
    source: dict[str, Any] | None = None


def _number(value: Any, finite: bool = True) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    return math.isfinite(value) or not finite


def score_of(scores: Any, metric: str | None) -> tuple[str | None, float | None]:
    """The per-sample score of a row's ``scores``: ``(key used, value)`` (see module doc).

    A NaN or infinite value of the primary metric is that sample's score (shown as such, its
    correctness unknown); the fallback to another key takes finite numbers only.
    """
    if not isinstance(scores, dict):
        return None, None
    if metric is not None and _number(scores.get(metric), finite=False):
        return metric, float(scores[metric])
    for key, value in scores.items():
        if _number(value):
            return key, float(value)
    return None, None


def correct_mark(score: float | None, higher_is_better: bool, bounded: bool) -> str:
    """``1`` correct, ``0`` wrong, ``-`` unknown (no score, or no [0, 1] higher-is-better)."""
    if score is None or not higher_is_better or not bounded or not math.isfinite(score):
        return "-"
    return "1" if score >= CORRECT_AT else "0"


def _read_rows(cell: Any, warnings: list[str]) -> dict[Any, dict[str, Any]]:
    """A cell's logged rows by doc id, read only (a run still writing is left untouched).

    The log must be a regular file inside the run directory
    (:func:`harness.schema.samples.sample_log_path`); another is left out with a warning.
    """
    from harness.schema.results import ResultsError
    from harness.schema.samples import read_sample_rows, sample_log_path, unique_rows

    if not cell.entry.samples_file:  # e.g. an lmms-eval results file: no per-sample log
        return {}
    try:
        path = sample_log_path(cell.run.path.parent, cell.entry, str(cell.run.path))
    except ResultsError as exc:
        warnings.append(f"sample log left out: {exc}")
        return {}
    if not path.is_file():
        return {}
    rows, _ = unique_rows(read_sample_rows(path))
    return {r["doc_id"]: r for r in rows if "skipped" not in r}


def _group_names(lines: Sequence[Any], models: dict[str, str]) -> dict[tuple, str]:
    """Display name of each line group (model; plus the run folder when one model repeats)."""
    groups: dict[tuple, Any] = {}
    for line in lines:
        groups.setdefault(line.first.group, line.first.run)
    shown = {g: models.get(run.model, run.model) for g, run in groups.items()}
    repeated = {n for n in shown.values() if list(shown.values()).count(n) > 1}
    return {
        g: f"{name} [{run_name(groups[g].path)}]" if name in repeated else name
        for g, name in shown.items()
    }


def _higher_is_better(cell: Any, task: str, metric: str | None) -> bool:
    """The metric's declared direction; undeclared counts as not higher-is-better (unknown)."""
    try:
        return metric is not None and cell.run.results.higher_is_better(task, metric)
    except KeyError:
        return False


def run_name(results_path: Path) -> str:
    """A run's folder name: ``DIR`` for a main job's ``DIR/accuracy`` and ``DIR/rank`` files."""
    folder = Path(results_path).parent
    return folder.parent.name if folder.name in ("accuracy", "rank") else folder.name


def task_samples(
    task: str, lines: Sequence[Any], models: dict[str, str], warnings: list[str] | None = None
) -> TaskSamples:
    """Build the table and chunks of ``task`` from its displayed lines.

    Args:
        task: Task name.
        lines: :class:`leaderboards.cells.Line` objects of this task (any models).
        models: Model identity → display name.
        warnings: Gets a note per sample log left out (default: a list nobody reads).
    """
    warnings = [] if warnings is None else warnings
    from leaderboards.cells import is_baseline, primary_metric

    names = _group_names(lines, models)
    several = len(set(names.values())) > 1
    columns, per_column, draw_ids = [], [], []
    for i, line in enumerate(lines):
        cell = line.first
        metric = primary_metric(cell)
        hib = _higher_is_better(cell, task, metric)
        draws = [_read_rows(c, warnings) for c in line.cells]
        per_column.append(draws)
        draw_ids.append(
            [(c.spec.get("args") or {}).get("draw", d) for d, c in enumerate(line.cells)]
        )
        columns.append(
            {
                "id": i,
                "label": line.label,
                "model": names[cell.group],
                "title": f"{names[cell.group]} · {line.label}" if several else line.label,
                "baseline": is_baseline(cell.entry),
                "draws": len(line.cells) if line.draws else 0,
                "metric": metric,
                "higher_is_better": hib,
            }
        )
    order: dict[Any, None] = {}
    for draws in per_column:
        for rows in draws:
            order.update(dict.fromkeys(rows))
    samples, details = [], []
    key_seen: list[set[str]] = [set() for _ in columns]
    for doc_id in order:
        marks, scores, replies, prompts, texts = [], [], [], {}, [str(doc_id)]
        short: list[str | None] = []
        right: list[str | None] = []
        extras: dict[str, Any] = {}
        for col, draws, ids in zip(columns, per_column, draw_ids):
            got = [rows.get(doc_id) for rows in draws]
            values, reps = [], []
            for d, row in enumerate(got):
                if row is None:
                    continue
                key, value = score_of(row.get("scores"), col["metric"])
                if key is not None:
                    key_seen[col["id"]].add(key)
                    values.append(value)
                reps.append(_reply(row, ids[d] if col["draws"] else None))
                prompts.setdefault(str(row.get("prompt", "")), []).append(col["id"])
                texts.append(str(row.get("output", ""))[:SEARCH_PIECE])
                if not extras:
                    extras = {k: v for k, v in row.items() if k not in _ROW_KEYS}
            score = math.fsum(values) / len(values) if values else None
            bounded = all(0.0 <= v <= 1.0 for v in values)
            marks.append(correct_mark(score, col["higher_is_better"], bounded))
            scores.append(None if score is None else round(score, 4))
            replies.append(reps)
            short.append(_short(reps[0].get("error") or reps[0]["output"], REPLY) if reps else None)
            right.append(_draws_right(values, col) if col["draws"] else None)
        target = extras.get("target")
        texts += [p[:SEARCH_PIECE] for p in prompts] + [str(target)[:SEARCH_PIECE]]
        samples.append(
            {
                "id": doc_id,
                "prompt": next(iter(prompts), ""),
                "target": _short(target),
                "s": scores,
                "c": "".join(marks),
                "r": short,
                "k": right,
                "text": " \u2502 ".join(dict.fromkeys(texts)).lower(),
            }
        )
        details.append(
            {
                "id": doc_id,
                "fields": extras,
                "prompts": [{"columns": c, "text": p} for p, c in prompts.items()],
                "replies": replies,
            }
        )
    for col, keys in zip(columns, key_seen):
        col["score_key"] = ", ".join(sorted(keys)) or None
    shared = shared_prompt([s["prompt"] for s in samples])
    for sample in samples:
        sample["prompt"] = differing(sample["prompt"], shared)
    table = {
        "task": task,
        "columns": columns,
        "prompt_shared": {"prefix": shared[0], "suffix": shared[1]},
        "samples": samples,
        "chunk_size": CHUNK,
        "correct_at": CORRECT_AT,
    }
    chunks = [{"samples": details[i : i + CHUNK]} for i in range(0, len(details), CHUNK)]
    first = next((ln.first for ln in lines if is_baseline(ln.first.entry)), lines[0].first)
    source = {
        "task_args": dict(first.entry.task_args or {}),
        "split": first.entry.split,
        "model": dict(first.run.results.model or {}),
        "run_dir": str(Path(first.run.path).parent),
    }
    return TaskSamples(task, table, chunks, source)


def shared_prompt(prompts: Sequence[str]) -> tuple[str, str]:
    """The prefix and suffix every prompt shares, cut at word boundaries (none for < 2)."""
    if len(prompts) < 2 or len(set(prompts)) == 1:  # one prompt for all: shown whole
        return "", ""
    prefix = os.path.commonprefix(list(prompts))
    if not all(len(p) == len(prefix) or p[len(prefix)].isspace() for p in prompts):
        prefix = prefix[: max(prefix.rfind(" "), prefix.rfind("\n")) + 1]
    rest = [p[len(prefix) :] for p in prompts]
    suffix = os.path.commonprefix([r[::-1] for r in rest])[::-1]
    if suffix and not all(len(r) == len(suffix) or not r[-len(suffix) - 1].isalnum() for r in rest):
        cut = [i for i, ch in enumerate(suffix) if not ch.isalnum()]
        suffix = suffix[cut[0] :] if cut else ""
    return prefix, suffix


def differing(prompt: str, shared: tuple[str, str]) -> str:
    """The part of ``prompt`` between the shared prefix and suffix, ``…`` where cut."""
    prefix, suffix = shared
    middle = prompt[len(prefix) : len(prompt) - len(suffix)].strip()
    return ("…" if prefix else "") + _short(middle, 160) + ("…" if suffix.strip() else "")


def _draws_right(values: list[float], col: dict[str, Any]) -> str | None:
    """``"right/draws"`` of a random-draw cell (None when correctness is unknown)."""
    if not values or not col["higher_is_better"] or not all(0.0 <= v <= 1.0 for v in values):
        return None
    return f"{sum(v >= CORRECT_AT for v in values)}/{len(values)}"


def _reply(row: dict[str, Any], draw: Any) -> dict[str, Any]:
    out = {"output": row.get("output"), "scores": row.get("scores")}
    if draw is not None:
        out["draw"] = draw
    if "error" in row:
        out["error"] = row["error"]
    return out


def _short(value: Any, limit: int = 80) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
