"""Short display names: models, intervention labels, file paths, figure file names.

Identities stay exact (rows are grouped and merged on them); only what is *shown* gets
shorter, and a short form is used only while it stays unique:

- a model whose ``pretrained`` is a local path shows as ``<family>:<basename>``
  (``llava:tinyllava``), or just the basename when it equals the family (the bundled
  ``harness/assets/toy`` → ``toy``); hub ids (``Qwen/Qwen2-VL-2B-Instruct``) show as they are;
- a file path inside an intervention label (``ranking=/runs/a/rank/ranking.json``) shows as
  its shortest unique trailing part (``ranking.json``, or ``a/rank/ranking.json`` when another
  run's ``ranking.json`` is in the same table).

Two identities whose short forms collide keep their full form.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath
from typing import Any

from leaderboards.formatting import Column

__all__ = [
    "is_local_path",
    "model_display",
    "unique_names",
    "short_paths",
    "path_args",
    "arg_text",
    "intervention_label",
    "file_stem",
    "model_names",
    "model_cells",
    "MODEL_COLUMNS",
]

#: The model columns of every table: short display name, full identity (CSV/JSON only).
MODEL_COLUMNS = (Column("model"), Column("model_id", "model id", machine=True))
#: Argument names whose string values are file paths even when they look relative.
PATH_ARGS = ("ranking", "mean_reference", "path")


def is_local_path(text: Any) -> bool:
    """True for strings that name a local file or folder rather than a hub id.

    Absolute paths, ``./`` / ``../`` / ``~`` paths and paths with two or more separators
    are local; ``org/name`` (one separator) is taken for a hub id.
    """
    if not isinstance(text, str) or not text:
        return False
    if text.startswith(("/", "./", "../", "~", ".\\")) or "\\" in text:
        return True
    return re.match(r"^[A-Za-z]:[\\/]", text) is not None or text.count("/") >= 2


def _basename(path: str) -> str:
    return PurePosixPath(path.replace("\\", "/").rstrip("/")).name or path


def model_display(model: Any) -> str:
    """The short display name of a model dict (or label string); see the module docstring."""
    if isinstance(model, str):
        return _basename(model) if is_local_path(model) else model
    if not isinstance(model, dict):
        return "unknown"
    family = str(model.get("family") or "")
    for key in ("pretrained", "checkpoint", "name"):
        value = model.get(key)
        if not value:
            continue
        if not is_local_path(value):
            return str(value)
        base = _basename(str(value))
        return base if not family or base == family else f"{family}:{base}"
    return family or "unknown"


def unique_names(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``identity → display``; identities whose displays collide keep their identity."""
    wanted: dict[str, str] = {}
    for identity, display in pairs:
        wanted.setdefault(identity, display or identity)
    owners: dict[str, set[str]] = {}
    for identity, display in wanted.items():
        owners.setdefault(display, set()).add(identity)
    return {i: d if len(owners[d]) == 1 else i for i, d in wanted.items()}


def short_paths(paths: Iterable[str]) -> dict[str, str]:
    """``path → shortest trailing part that no other path in ``paths`` ends with``."""
    parts = {p: PurePosixPath(p.replace("\\", "/")).parts for p in set(paths)}
    out: dict[str, str] = {}
    for path, mine in parts.items():
        for size in range(1, len(mine) + 1):
            tail = mine[-size:]
            if not any(o[-size:] == tail for q, o in parts.items() if q != path):
                out[path] = "/".join(tail).replace("//", "/")
                break
        else:
            out[path] = path
    return out


def path_args(spec: dict[str, Any] | None) -> list[str]:
    """The file-path argument values of an intervention spec (``ranking`` and the like)."""
    args = (spec or {}).get("args") or {}
    return [
        v for k, v in args.items() if isinstance(v, str) and (k in PATH_ARGS or is_local_path(v))
    ]


def _value(value: Any) -> str:
    # The same text as harness.api.specs.InterventionSpec.label gives an argument value.
    return json.dumps(value, sort_keys=True, separators=(",", ":")).strip('"')


def arg_text(
    args: dict[str, Any], paths: dict[str, str] | None = None, drop: Sequence[str] = ()
) -> str:
    """``k=v,...`` sorted by key, without ``drop``; path values shortened by ``paths``."""
    paths = paths or {}
    parts = []
    for key in sorted(args):
        if key in drop:
            continue
        value = args[key]
        shown = paths.get(value, value) if isinstance(value, str) else value
        parts.append(f"{key}={_value(shown)}")
    return ",".join(parts)


def intervention_label(
    spec: dict[str, Any] | None,
    fallback: str,
    paths: dict[str, str] | None = None,
    drop: Sequence[str] = (),
) -> str:
    """Display label ``name:k=v,...`` of an intervention spec (``fallback`` without a spec)."""
    if not spec or not spec.get("name"):
        return fallback
    text = arg_text(spec.get("args") or {}, paths, drop)
    return f"{spec['name']}:{text}" if text else str(spec["name"])


def file_stem(*parts: str, limit: int = 96) -> str:
    """A short, filesystem-friendly file stem joining ``parts`` with ``__``.

    Characters other than letters, digits, ``.``, ``=`` and ``-`` become ``_``; a stem longer
    than ``limit`` is cut and ends with an 8-character hash of the full text (still unique).
    """
    slugs = [re.sub(r"[^A-Za-z0-9.=-]+", "_", str(p)).strip("_") for p in parts]
    stem = "__".join(s for s in slugs if s) or "x"
    if len(stem) <= limit:
        return stem
    digest = hashlib.sha1(stem.encode()).hexdigest()[:8]
    return stem[: limit - 9].rstrip("_") + "_" + digest


def model_names(items: Iterable[tuple[str, Any]]) -> dict[str, str]:
    """``identity → display`` for ``(identity, model dict or label)`` pairs, kept unique."""
    return unique_names((identity, model_display(model)) for identity, model in items)


def model_cells(identity: str | None, names: dict[str, str]) -> dict[str, Any]:
    """The ``model`` (display) and ``model_id`` (full identity, machine-only) cells."""
    if identity is None:
        return {"model": "—", "model_id": None}
    return {"model": names.get(identity, identity), "model_id": identity}
