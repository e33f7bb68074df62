"""Per-cell bookkeeping of a grid: sample-log names, and what a resumed cell keeps.

A cell is one (task with its args, intervention with its args). Its log's name must

- differ for every cell of a grid: the same task listed twice with different args (``pope`` and
  ``pope`` with ``subset: adversarial``) gets two files, never one shared log whose rows a
  second cell would silently take as already done;
- stay the same when the output directory or a ranking file is moved or reached through another
  path, so that a resumed or relocated run finds its logs: a file-path argument enters the name
  by its base name and a hash of the file's content (``ranking.json-1a2b3c4d``), never by its
  absolute path; a head-set folder (a DuoAttention pattern, a rank folder:
  :func:`harness.schema.headset_readers.folder_files`) by its base name and a hash of the files
  read from it; any other directory argument (a task's data folder) by its base name only;
- be readable and filesystem-safe: ``<task>[<args>]__<intervention>_<args>.jsonl``; a part
  that had to be changed to be safe, or is longer than :data:`MAX_PART`, ends with a hash.

Two cells that still map to one name (two data folders with the same base name, say) are told
apart by a hash of their full identity, paths included.

A resumed cell with nothing left to run keeps the resolved intervention details of the run that
did the work (:func:`previous_resolved`): re-attaching would record e.g. SAP's ``forwards`` as 0.
Each cell's record is saved (``samples/resolved.json``, :func:`save_resolved`) as soon as the
cell ends, so a run stopped before it rewrote ``results.json`` keeps it too.

A file argument read while the run goes on (an intervention's ranking) must be the one whose
content named the cell's log: :func:`file_hashes` at the start, compared before and after each
cell attaches (``harness.run.evaluator``), so one log never holds rows of two head sets.

The run's identity (``run_spec.json``, :func:`run_identity`) names path arguments by their base
name, so a moved output directory (the main job's ``rank/ranking.json`` inside it) resumes; a
file whose content changed gets new cell names, so those cells start again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "cell_names",
    "samples_filename",
    "portable_args",
    "previous_resolved",
    "save_resolved",
    "file_hashes",
    "run_identity",
    "RESOLVED_FILE",
]

RESOLVED_FILE = "samples/resolved.json"
"""Each finished cell's resolved intervention record, by its samples file."""

MAX_PART = 80
"""Longest readable part (task or intervention) of a file name before it is cut and hashed."""

_PATH_KEYS = frozenset({"ranking", "mean_reference", "path"})


def _sha(text: str | bytes, n: int = 8) -> str:
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha1(data).hexdigest()[:n]


def _looks_like_path(key: str, value: Any) -> bool:
    if not isinstance(value, str) or not value:
        return False
    if key in _PATH_KEYS or key.endswith(("_dir", "_root", "_file", "_files", "_path")):
        return True
    return value.startswith(("/", "./", "../", "~")) or "\\" in value


def _digest(path: Path) -> str | None:
    """Hash of what is read from ``path`` (a file, a head-set folder's files); else None."""
    if path.is_file():
        return _sha(path.read_bytes())
    if not path.is_dir():
        return None
    from harness.schema.headset_readers import folder_files

    files = folder_files(path)
    if not files:
        return None
    return _sha(
        b"\0".join(f.relative_to(path).as_posix().encode() + b"\0" + f.read_bytes() for f in files)
    )


def _portable(value: str) -> str:
    path = Path(value).expanduser()
    digest = _digest(path)
    if digest is not None:
        return f"{path.name}-{digest}"
    return path.name or value


def portable_args(args: dict[str, Any]) -> dict[str, Any]:
    """``args`` with every file-path value replaced by its base name (+ content hash for files)."""
    return {k: _portable(v) if _looks_like_path(k, v) else v for k, v in args.items()}


def _text(args: dict[str, Any]) -> str:
    return ",".join(
        f"{k}={json.dumps(v, sort_keys=True, separators=(',', ':')).strip(chr(34))}"
        for k, v in sorted(args.items())
    )


def _safe(part: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.,=+\[\]-]+", "_", part)
    if slug != part or len(slug) > MAX_PART:
        slug = slug[: MAX_PART - 9] + "-" + _sha(part)
    return slug


def samples_filename(
    task: str,
    intervention: str,
    task_args: dict[str, Any] | None = None,
    intervention_args: dict[str, Any] | None = None,
) -> str:
    """The log name of one cell (see the module docstring), before grid-wide disambiguation.

    Args:
        task: Task name.
        intervention: Intervention name, or a full label (``name:k=v,...``) when no args
            are given separately.
        task_args: The task's variant arguments ({} or None: none, and no brackets).
        intervention_args: The intervention's arguments.
    """
    task_part = task
    if task_args:
        task_part += f"[{_text(portable_args(task_args))}]"
    interv = intervention
    if intervention_args:
        interv += "_" + _text(portable_args(intervention_args))
    return f"{_safe(task_part)}__{_safe(interv)}.jsonl"


def cell_names(tasks: Sequence[Any], interventions: Sequence[Any]) -> dict[tuple[int, int], str]:
    """``(task index, intervention index) → file name`` for a whole grid, every name distinct.

    Args:
        tasks: Task specs (``name``, ``args``; ``split`` when not None joins the args).
        interventions: Intervention specs (``name``, ``args``).
    """

    def targs(t: Any) -> dict[str, Any]:
        return {**t.args, **({"split": t.split} if t.split is not None else {})}

    names = {
        (i, j): samples_filename(t.name, x.name, targs(t), x.args)
        for i, t in enumerate(tasks)
        for j, x in enumerate(interventions)
    }
    counts: dict[str, int] = {}
    for name in names.values():
        counts[name] = counts.get(name, 0) + 1
    for (i, j), name in names.items():
        if counts[name] > 1:
            t, x = tasks[i], interventions[j]
            full = json.dumps([t.name, targs(t), x.name, x.args], sort_keys=True, default=str)
            names[(i, j)] = name.removesuffix(".jsonl") + f"-{_sha(full)}.jsonl"
    return names


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def previous_resolved(out: Path) -> dict[str, dict[str, Any]]:
    """``samples_file → intervention_resolved`` of the cells already done in ``out``.

    From ``results.json`` and, over it, the records saved as each cell ended
    (:data:`RESOLVED_FILE`); {} if neither exists.
    """
    found: dict[str, dict[str, Any]] = {}
    try:
        data = _read_json(out / "results.json")
        found = {e["samples_file"]: e["intervention_resolved"] for e in data["entries"]}
    except (KeyError, TypeError):
        pass
    saved = _read_json(out / RESOLVED_FILE)
    if isinstance(saved, dict):
        found.update({k: v for k, v in saved.items() if isinstance(v, dict)})
    return found


def save_resolved(out: Path, samples_file: str, resolved: dict[str, Any]) -> None:
    """Record ``resolved`` for the cell logged in ``samples_file`` (atomic rewrite)."""
    from harness.schema.results import write_json_atomic

    path = out / RESOLVED_FILE
    saved = _read_json(path)
    saved = saved if isinstance(saved, dict) else {}
    saved[samples_file] = resolved
    write_json_atomic(path, json.loads(json.dumps(saved, default=str)))


def file_hashes(args: dict[str, Any], keys: Any = None) -> dict[str, str | None]:
    """``key → content hash`` of the file-path arguments in ``args`` (head-set folders too).

    Args:
        args: Arguments of a task or intervention.
        keys: The keys to hash (a file gone since gives None); default: each argument that
            names a file now.
    """
    out: dict[str, str | None] = {}
    for key, value in args.items():
        if keys is not None and key not in keys or not _looks_like_path(key, value):
            continue
        digest = _digest(Path(value).expanduser())
        if digest is not None or keys is not None:
            out[key] = digest
    return out


def _base_names(args: dict[str, Any]) -> dict[str, Any]:
    return {
        k: (Path(v).expanduser().name or v) if _looks_like_path(k, v) else v
        for k, v in args.items()
    }


def run_identity(spec: Any) -> dict[str, Any]:
    """``spec.identity()`` with every path argument (tasks, interventions) by its base name."""
    data = spec.identity()
    for part in (*data["tasks"], *data["interventions"]):
        part["args"] = _base_names(part.get("args") or {})
    return data
