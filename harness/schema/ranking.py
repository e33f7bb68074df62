"""The ranking file: per-task L×H head scores (RAM) with their samples, CIs and settings.

One JSON document, typed and versioned::

    {"format": "headscope.ranking", "version": 1, "metric": "ram",
     "geometry": {"num_layers": L, "num_heads": H},
     "model": {...}, "settings": {"attn_implementation": ..., "dtype": ..., "seed": ..., ...},
     "tasks": {name: {"spec": {...}, "n_samples": N, "sample_ids": [...] | null,
                      "bootstrap": {"n_boot": B, "seed": s, "alpha": a},
                      "mean": [L][H], "stderr": [L][H] (null where undefined),
                      "ci_low": [L][H], "ci_high": [L][H], "per_sample": [N][L][H]}}}

Matrices are indexed ``[layer][head]``; heads print as ``L12H3``. Floats are written with
``repr`` precision, so a save/load round trip is exact. The file is written atomically (temp
file in the same folder, then ``os.replace``), so a crash never leaves half a ranking.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.api.errors import UsageError
from harness.api.heads import Head
from harness.metrics import ram as _ram

__all__ = [
    "RANKING_FORMAT",
    "RANKING_VERSION",
    "REQUIRED_SETTINGS",
    "RankingFormatError",
    "TaskRam",
    "Ranking",
    "save_ranking",
    "load_ranking",
]

RANKING_FORMAT = "headscope.ranking"
RANKING_VERSION = 1
#: Settings that change RAM values and must be recorded with every ranking.
REQUIRED_SETTINGS = ("attn_implementation", "dtype", "seed")
_MATRICES = ("mean", "stderr", "ci_low", "ci_high")


class RankingFormatError(UsageError):
    """A ranking (in memory or on disk) that does not follow the format."""


def _check_version(version: Any) -> None:
    if version != RANKING_VERSION:
        raise RankingFormatError(
            f"unsupported ranking version {version!r} (this headscope reads {RANKING_VERSION})"
        )


def _jsonable(value: Any, what: str) -> dict:
    if not isinstance(value, dict):
        raise RankingFormatError(f"{what} must be a plain dict, got {type(value).__name__}")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise RankingFormatError(f"{what} is not plain JSON: {err}") from err
    return value


@dataclass(frozen=True, eq=False)
class TaskRam:
    """RAM of every head on one task.

    Attributes:
        spec: The task's spec as a plain dict (name, split, arguments...).
        per_sample: ``[N, L, H]`` RAM of each sample.
        mean: ``[L, H]`` mean over samples.
        stderr: ``[L, H]`` standard error (NaN with a single sample).
        ci_low: ``[L, H]`` lower bootstrap bound; ci_high: upper bound.
        sample_ids: One id per sample, or None.
        bootstrap: ``{"n_boot", "seed", "alpha"}`` used for the CIs.
    """

    spec: dict
    per_sample: np.ndarray
    mean: np.ndarray
    stderr: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    sample_ids: tuple[str, ...] | None = None
    bootstrap: dict = field(default_factory=lambda: {"n_boot": 1000, "seed": 0, "alpha": 0.05})

    def __post_init__(self) -> None:
        for key in (*_MATRICES, "per_sample"):
            object.__setattr__(self, key, np.asarray(getattr(self, key), dtype=np.float64))

    @classmethod
    def from_samples(
        cls,
        spec: dict,
        per_sample: Any,
        sample_ids: list[str] | None = None,
        n_boot: int = 1000,
        seed: int = 0,
        alpha: float = 0.05,
    ) -> TaskRam:
        """Summarise ``[N, L, H]`` per-sample RAM (mean, stderr, percentile bootstrap CI)."""
        summary = _ram.aggregate_ram(per_sample, n_boot=n_boot, seed=seed, alpha=alpha)
        return cls(
            spec=spec,
            per_sample=np.asarray(per_sample, dtype=np.float64),
            mean=summary.mean,
            stderr=summary.stderr,
            ci_low=summary.ci_low,
            ci_high=summary.ci_high,
            sample_ids=None if sample_ids is None else tuple(str(s) for s in sample_ids),
            bootstrap={"n_boot": int(n_boot), "seed": int(seed), "alpha": float(alpha)},
        )

    def validate(self, name: str, num_layers: int, num_heads: int) -> None:
        """Raise :class:`RankingFormatError` if shapes or values are inconsistent."""
        _jsonable(self.spec, f"task {name!r} spec")
        grid = (num_layers, num_heads)
        ps = self.per_sample
        if ps.ndim != 3 or ps.shape[1:] != grid or ps.shape[0] == 0:
            raise RankingFormatError(
                f"task {name!r}: per_sample has shape {ps.shape}, expected [N ≥ 1, {grid[0]}, "
                f"{grid[1]}] (model geometry)"
            )
        for key in _MATRICES:
            arr = getattr(self, key)
            if arr.shape != grid:
                raise RankingFormatError(
                    f"task {name!r}: {key} has shape {arr.shape}, expected {grid} (model geometry)"
                )
            finite = np.isfinite(arr) | (np.isnan(arr) if key == "stderr" else False)
            if not finite.all():
                raise RankingFormatError(f"task {name!r}: {key} has NaN or infinite values")
        if not np.isfinite(ps).all():
            raise RankingFormatError(f"task {name!r}: per_sample has NaN or infinite values")
        if not np.allclose(self.mean, ps.mean(axis=0), rtol=1e-9, atol=1e-12):
            raise RankingFormatError(f"task {name!r}: mean does not match the per-sample values")
        if self.sample_ids is not None and len(self.sample_ids) != ps.shape[0]:
            raise RankingFormatError(
                f"task {name!r}: {len(self.sample_ids)} sample ids for {ps.shape[0]} samples"
            )


@dataclass(frozen=True, eq=False)
class Ranking:
    """Head scores of one model over several tasks.

    Attributes:
        model: The model spec as a plain dict (family, checkpoint, revision...).
        settings: Everything that changes the numbers (must include ``REQUIRED_SETTINGS``;
            e.g. frames, resolution, formula variant).
        tasks: Task name → :class:`TaskRam`.
        num_layers: Decoder layers ``L``.
        num_heads: Query heads per layer ``H``.
        metric: What the matrices hold (``"ram"``).
        version: Format version (:data:`RANKING_VERSION`).
    """

    model: dict
    settings: dict
    tasks: dict[str, TaskRam]
    num_layers: int
    num_heads: int
    metric: str = "ram"
    version: int = RANKING_VERSION

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise :class:`RankingFormatError` on any inconsistency."""
        _check_version(self.version)
        if self.num_layers < 1 or self.num_heads < 1:
            raise RankingFormatError(f"bad geometry {self.num_layers}×{self.num_heads}")
        _jsonable(self.model, "model spec")
        _jsonable(self.settings, "settings")
        missing = [k for k in REQUIRED_SETTINGS if k not in self.settings]
        if missing:
            raise RankingFormatError(f"settings lack {missing} (required: {REQUIRED_SETTINGS})")
        if not self.tasks:
            raise RankingFormatError("a ranking needs at least one task")
        for name, task in self.tasks.items():
            task.validate(name, self.num_layers, self.num_heads)

    @property
    def task_names(self) -> list[str]:
        """Tasks in insertion order."""
        return list(self.tasks)

    def combined(self, tasks: list[str] | None = None) -> np.ndarray:
        """Mean of the per-task mean matrices (each task weighs the same), ``[L, H]``."""
        names = self.task_names if tasks is None else tasks
        return np.mean([self.matrix(n) for n in names], axis=0)

    def matrix(self, task: str | None) -> np.ndarray:
        """Mean ``[L, H]`` matrix of ``task``; ``None`` means the combined ranking."""
        if task is None:
            return self.combined()
        if task not in self.tasks:
            raise KeyError(f"no task {task!r} in this ranking (has {self.task_names})")
        return self.tasks[task].mean

    def top_heads(self, task: str | None, k: float) -> list[Head]:
        """Best ``k`` heads (count or fraction) of ``task`` (``None``: combined), best first."""
        return _ram.top_heads(self.matrix(task), k)

    def bottom_heads(self, task: str | None, k: float) -> list[Head]:
        """Lowest ``k`` heads of ``task`` (``None``: combined), lowest first."""
        return _ram.bottom_heads(self.matrix(task), k)

    def universal_heads(self, k: float) -> list[Head]:
        """Heads in the top-``k`` of every task, layer-major."""
        return _ram.universal_heads({n: t.mean for n, t in self.tasks.items()}, k)

    def spearman(self, task_a: str, task_b: str) -> float:
        """Spearman ρ between two tasks' mean matrices."""
        return _ram.spearman(self.matrix(task_a), self.matrix(task_b))

    def to_dict(self) -> dict:
        """Build the JSON document (plain lists; NaN stderr written as null)."""
        tasks = {
            name: {
                "spec": t.spec,
                "n_samples": int(t.per_sample.shape[0]),
                "sample_ids": None if t.sample_ids is None else list(t.sample_ids),
                "bootstrap": dict(t.bootstrap),
                **{k: _nulls(getattr(t, k)) for k in _MATRICES},
                "per_sample": t.per_sample.tolist(),
            }
            for name, t in self.tasks.items()
        }
        return {
            "format": RANKING_FORMAT,
            "version": self.version,
            "metric": self.metric,
            "geometry": {"num_layers": self.num_layers, "num_heads": self.num_heads},
            "model": self.model,
            "settings": self.settings,
            "tasks": tasks,
        }

    @classmethod
    def from_dict(cls, doc: Any) -> Ranking:
        """Parse and validate a JSON document (raises :class:`RankingFormatError`)."""
        if not isinstance(doc, dict) or doc.get("format") != RANKING_FORMAT:
            raise RankingFormatError(f"not a headscope ranking (need format={RANKING_FORMAT!r})")
        _check_version(doc.get("version"))  # before parsing: other versions may differ in layout
        try:
            geometry = doc["geometry"]
            tasks = {name: _task_from_dict(name, e) for name, e in doc["tasks"].items()}
            return cls(
                model=doc["model"],
                settings=doc["settings"],
                tasks=tasks,
                num_layers=int(geometry["num_layers"]),
                num_heads=int(geometry["num_heads"]),
                metric=str(doc.get("metric", "ram")),
                version=doc["version"],
            )
        except KeyError as err:
            raise RankingFormatError(f"ranking lacks the field {err}") from err
        except (TypeError, AttributeError) as err:
            raise RankingFormatError(f"malformed ranking: {err}") from err


def _nulls(arr: np.ndarray) -> list:
    return [[None if math.isnan(v) else v for v in row] for row in arr.tolist()]


def _array(value: Any, what: str) -> np.ndarray:
    try:
        return np.array(value, dtype=np.float64)  # null → NaN
    except (TypeError, ValueError) as err:
        raise RankingFormatError(f"{what} is not a regular numeric array: {err}") from err


def _task_from_dict(name: str, entry: dict) -> TaskRam:
    arrays = {k: _array(entry[k], f"task {name!r} {k}") for k in (*_MATRICES, "per_sample")}
    if int(entry["n_samples"]) != len(arrays["per_sample"]):
        raise RankingFormatError(f"task {name!r}: n_samples differs from the per-sample rows")
    ids = entry.get("sample_ids")
    return TaskRam(
        spec=entry["spec"],
        sample_ids=None if ids is None else tuple(ids),
        bootstrap=dict(entry["bootstrap"]),
        **arrays,
    )


def save_ranking(path: str | os.PathLike, ranking: Ranking) -> Path:
    """Validate and write ``ranking`` to ``path`` atomically (strict JSON); returns the path."""
    from harness.schema.results import write_json_atomic

    ranking.validate()
    target = Path(path)
    write_json_atomic(target, ranking.to_dict(), indent=None, allow_nan=False)
    return target


def load_ranking(path: str | os.PathLike) -> Ranking:
    """Read and validate a ranking file; errors name the file and what is wrong."""
    target = Path(path)
    try:
        doc = json.loads(target.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise RankingFormatError(f"{target}: not valid JSON ({err})") from err
    try:
        return Ranking.from_dict(doc)
    except RankingFormatError as err:
        raise RankingFormatError(f"{target}: {err}") from err
