"""Settings of a result, flattened, and the grouping keys every table shares.

Numbers are compared only under the same *settings*: everything recorded as changing numbers
(model adapter settings minus identity, ``RunResults.settings``, task settings / arguments /
split, a ranking's or bench file's settings), flattened to ``{"a.b": scalar}``. Tables split
settings into the ones common to all rows (a note under the table) and the differing ones
(columns), and refuse conflicting duplicates (:func:`check_unique`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from harness.api.errors import UsageError

__all__ = [
    "IDENTITY_KEYS",
    "MergeError",
    "flatten",
    "model_label",
    "model_settings",
    "combine",
    "config_key",
    "same_number",
    "split_settings",
    "settings_note",
    "settings_row",
    "check_unique",
    "check_scoring",
    "scoring_of",
    "UNRECORDED_SCORING",
]

#: Model-dict keys that name the model (its identity) rather than a setting.
IDENTITY_KEYS = ("pretrained", "checkpoint", "name", "family")
#: Model-dict keys that are records, not settings: the decoder geometry, and Qwen's image
#: ``resize`` (its factor follows from the checkpoint, its pixel budgets are already recorded
#: as ``image_min_pixels`` / ``image_max_pixels``; kept for ``headscope rescore``, so results
#: written before it was recorded still sit in the same rows), and likewise its
#: ``video_resize`` (budgets recorded as ``video_min_pixels`` / ``video_max_pixels``) — except
#: its per-frame cap (:data:`_VIDEO_CAP`), which changes the frames a video model sees and is
#: recorded nowhere else, so runs with the cap on and off never share a row.
_NOT_SETTINGS = (*IDENTITY_KEYS, "geometry", "resize", "video_resize")
_VIDEO_CAP = ("cap_pixels_per_frame", "max_video_tokens")
#: The scoring mode of results written before tasks recorded one.
UNRECORDED_SCORING = "unrecorded"
#: Suffixes of a metric's confidence-interval companions (``accuracy_ci_low``).
CI_SUFFIXES = ("_ci_low", "_ci_high")


class MergeError(UsageError):
    """Inputs that cannot be merged (conflicting duplicates, unknown files)."""


#: Top-level settings keys that are records, not settings: the CPU threads and OpenMP wait
#: policy a ranking or diagnosis ran with (they change its speed, not its numbers), and the
#: request a ranking was made for (model, tasks, seed: the resume check reads it; the tables
#: already key rows by the model, the tasks and the settings that change numbers).
_RECORDS = ("environment", "request")


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts → ``{"a.b": scalar}``; lists become compact JSON text.

    At the top level, the records of :data:`_RECORDS` are left out.
    """
    if not isinstance(data, dict):
        return {prefix: _scalar(data)} if prefix else {}
    out: dict[str, Any] = {}
    for key in sorted(data, key=str):
        if not prefix and key in _RECORDS:
            continue
        name = f"{prefix}.{key}" if prefix else str(key)
        value = data[key]
        if isinstance(value, dict) and value:
            out.update(flatten(value, name))
        else:
            out[name] = _scalar(value)
    return out


def _scalar(value: Any) -> Any:
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


def model_label(model: Any) -> str:
    """The model's display name: checkpoint if known, else its family."""
    if isinstance(model, str):
        return model
    if isinstance(model, dict):
        for key in IDENTITY_KEYS:
            if model.get(key):
                return str(model[key])
    return "unknown"


def model_settings(model: Any) -> dict[str, Any]:
    """The adapter settings of a model dict, without its identity and geometry."""
    if not isinstance(model, dict):
        return {}
    kept = {k: v for k, v in model.items() if k not in _NOT_SETTINGS}
    video = model.get("video_resize")
    if isinstance(video, dict) and video.get("cap_pixels_per_frame"):
        kept["video_resize"] = {k: video.get(k) for k in _VIDEO_CAP}
    return flatten(kept)


def combine(*parts: dict[str, Any]) -> dict[str, Any]:
    """Union of flat settings; a key recorded twice with different values is kept as both."""
    out: dict[str, Any] = {}
    for i, part in enumerate(parts):
        for key, value in part.items():
            if key in out and not same_number(out[key], value):
                out[f"{key}#{i}"] = value
            else:
                out.setdefault(key, value)
    return out


def config_key(config: dict[str, Any]) -> str:
    """Canonical text of a flat settings dict (for grouping and sorting)."""
    return json.dumps(config, sort_keys=True, default=str)


def same_number(a: Any, b: Any) -> bool:
    """Equality that treats NaN == NaN and compares ints and floats by value."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def split_settings(configs: Iterable[dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    """Keys whose values differ between ``configs``, and the settings they all share."""
    configs = list(configs)
    keys = sorted({k for c in configs for k in c})
    differing, common = [], {}
    for key in keys:
        values = [c.get(key) for c in configs]
        if all(key in c for c in configs) and all(same_number(v, values[0]) for v in values):
            common[key] = values[0]
        else:
            differing.append(key)
    return differing, common


def settings_note(common: dict[str, Any]) -> str | None:
    """One-line footnote listing the settings every row shares."""
    items = ", ".join(f"{k}={'null' if v is None else v}" for k, v in common.items())
    return f"Common settings: {items}" if items else None


def settings_row(config: dict[str, Any], differing: Sequence[str]) -> dict[str, Any]:
    """The differing settings of one row as table cells (absent → ``unset``)."""
    text = {k: "null" if config[k] is None else str(config[k]) for k in differing if k in config}
    return {f"set:{k}": text.get(k, "unset") for k in differing}


def check_unique(
    items: Iterable[Any],
    key: Callable[[Any], Any],
    same: Callable[[Any, Any], bool],
    describe: Callable[[Any], str],
) -> list[Any]:
    """Drop exact duplicates; raise :class:`MergeError` on duplicates that disagree."""
    seen: dict[Any, Any] = {}
    for item in items:
        k = key(item)
        if k in seen:
            if not same(seen[k], item):
                raise MergeError(
                    f"{describe(item)} appears twice with different numbers "
                    f"({describe(seen[k])}); pass only one of the two runs"
                )
            continue
        seen[k] = item
    return list(seen.values())


def scoring_of(entry: Any) -> str:
    """The scoring mode of a result entry (:data:`UNRECORDED_SCORING` when it has none)."""
    return str((entry.task_settings or {}).get("scoring", UNRECORDED_SCORING))


def check_scoring(runs: Iterable[Any]) -> None:
    """Refuse inputs that hold one task's numbers under different scoring modes.

    The mode is ``task_settings["scoring"]`` of each entry (:mod:`harness.api.scoring`); results
    without one (written before modes existed, or tasks without modes) count as
    :data:`UNRECORDED_SCORING`. Numbers of different modes are not comparable, so a table
    never puts them side by side.

    Raises:
        MergeError: naming the task, the modes and a file of each.
    """
    found: dict[str, dict[str, str]] = {}
    for run in runs:
        for entry in run.results.entries:
            mode = scoring_of(entry)
            found.setdefault(entry.task, {}).setdefault(mode, str(run.path))
    for task, modes in sorted(found.items()):
        if len(modes) > 1:
            where = "; ".join(f"{m} in {p}" for m, p in sorted(modes.items()))
            raise MergeError(
                f"{task}: results scored under different modes ({where}); pass results of one "
                "mode, or re-score with `headscope rescore DIR --scoring MODE` and pass the "
                "results.scoring-MODE.json files"
            )
