"""Head-sparsity profile files (``headscope rank`` writes ``OUT/profile.json``).

Layout, version 1 (the numbers are defined in :mod:`harness.probes.profile`)::

    {
      "format": "headscope.profile", "version": 1,
      "model": {...}, "settings": {...},         # as the ranking the profile comes from
      "tasks": {
        "<task>": {
          "n_samples": N, "num_layers": L, "num_heads": H, "top": 0.05, "top_count": k,
          "metrics": {"<metric>": {"value": f|null, "ci_low": f|null, "ci_high": f|null,
                                   "bias": f|null}, ...},   # every name of METRICS
          "cumulative_mass": [f|null, ...],                  # L·H values
          "bootstrap": {"n_boot": B, "seed": s, "alpha": a}
        }, ...
      }
    }

:class:`ProfileFile` reads one and checks that every task holds every metric.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.api.errors import UsageError

__all__ = [
    "METRICS",
    "PROFILE_FORMAT",
    "PROFILE_VERSION",
    "ProfileFile",
    "ProfileFormatError",
    "profile_document",
]

PROFILE_FORMAT = "headscope.profile"
PROFILE_VERSION = 1
METRICS = (
    "heads_for_50",
    "heads_for_80",
    "heads_for_90",
    "gini",
    "entropy",
    "entropy_norm",
    "top_depth_centroid",
    "top_depth_spread",
)
"""The metrics of every task's profile (defined in :mod:`harness.probes.profile`)."""
_STATS = ("value", "ci_low", "ci_high", "bias")


class ProfileFormatError(UsageError):
    """A profile document that does not follow its schema."""


def profile_document(model: Any, settings: Any, tasks: dict[str, Any]) -> dict[str, Any]:
    """The tagged profile document of per-task profiles ``tasks``."""
    return {
        "format": PROFILE_FORMAT,
        "version": PROFILE_VERSION,
        "model": model,
        "settings": settings,
        "tasks": tasks,
    }


def _task(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or not isinstance(raw.get("metrics"), dict):
        raise ProfileFormatError(f"{where}: expected an object with 'metrics'")
    for name in METRICS:
        stats = raw["metrics"].get(name)
        if not isinstance(stats, dict) or any(k not in stats for k in _STATS):
            raise ProfileFormatError(f"{where}: metric {name!r} lacks one of {_STATS}")
        bad = [k for k in _STATS if stats[k] is not None and not isinstance(stats[k], int | float)]
        if bad:
            raise ProfileFormatError(f"{where}: metric {name!r}: {bad} must be numbers or null")
    size = raw.get("num_layers", 0) * raw.get("num_heads", 0)
    if len(raw.get("cumulative_mass") or ()) != size or not size:
        raise ProfileFormatError(f"{where}: cumulative_mass must hold num_layers·num_heads values")
    return raw


@dataclass(frozen=True)
class ProfileFile:
    """One profile file, read and checked.

    Attributes:
        model: The ``model`` object as written.
        settings: The ranking's settings (``{}`` when none).
        tasks: ``{task: profile}`` as written (layout in the module docstring).
    """

    model: Any
    settings: dict[str, Any] = field(default_factory=dict)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, doc: Any, where: str = "profile") -> ProfileFile:
        """Read a profile document.

        Raises:
            ProfileFormatError: Wrong tag or version, no task, or a task that lacks a metric.
        """
        if not isinstance(doc, dict) or doc.get("format") != PROFILE_FORMAT:
            raise ProfileFormatError(f"{where}: not a profile file (format != {PROFILE_FORMAT})")
        if doc.get("version") != PROFILE_VERSION:
            raise ProfileFormatError(
                f"{where}: profile version {doc.get('version')!r} is not supported (expected "
                f"{PROFILE_VERSION})"
            )
        tasks = doc.get("tasks")
        if not isinstance(tasks, dict) or not tasks:
            raise ProfileFormatError(f"{where}: 'tasks' must be a non-empty object")
        checked = {str(t): _task(p, f"{where}: tasks.{t}") for t, p in tasks.items()}
        return cls(model=doc.get("model"), settings=doc.get("settings") or {}, tasks=checked)
