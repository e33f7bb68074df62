"""Head-sparsity profiles of a RAM distribution (paper A's sparse / moderate / dense contrast).

Paper A contrasts architectures (Qwen3-VL: a few concentrated CoRe heads; LLaVA-OneVision:
moderate; InternVL3.5: dense) and scales (4B → 32B: CoRe heads move into deep layers). A
profile puts numbers on that for one model and task, from the heads' mean RAM ``x`` (L·H
values, ≥ 0):

- ``heads_for_50`` / ``_80`` / ``_90``: the smallest fraction of heads whose RAM (largest
  first) sums to at least 50 / 80 / 90 % of the total RAM;
- ``gini``: Gini coefficient of ``x`` (0: every head equal; (n − 1)/n: one head has all),
  ``Σ_i (2i − n − 1) x_(i) / (n Σ x)`` with ``x`` sorted ascending, i = 1…n;
- ``entropy``: Shannon entropy (nats) of ``p = x / Σ x`` (0 · log 0 = 0), and
  ``entropy_norm`` = entropy / log n in [0, 1], comparable across head counts;
- ``top_depth_centroid`` / ``top_depth_spread``: mean and population standard deviation of
  the depth ``(layer + 0.5) / L`` of the top heads (``top`` = 5 % of heads, rounded up; ties
  layer-major, as :func:`harness.metrics.ram.top_heads`), so models of different depth
  compare.

Confidence intervals: percentile bootstrap over samples — each replicate resamples the
task's samples with replacement (:func:`harness.metrics.stats.bootstrap_counts`), averages
them into ``x`` and recomputes every metric. All metrics of one replicate share the draw.
A profile is undefined (NaN) when the total RAM is 0.

Bias: these are concentration statistics of a *mean* over samples. Sampling noise makes a
mean of few samples look sparser than the population (higher Gini, lower entropy); bootstrap
replicates add that noise again, so their interval can sit beside the estimate. Each metric
therefore also reports ``bias`` = mean of the replicates − estimate: compare models at
similar sample counts, and read a large bias as "needs more samples".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from harness.metrics.ram import head_count
from harness.metrics.stats import bootstrap_counts
from harness.schema.profile import METRICS, profile_document

__all__ = [
    "MASS_LEVELS",
    "METRICS",
    "profile_metrics",
    "heads_for_mass",
    "gini",
    "entropy",
    "top_depth",
    "cumulative_mass",
    "task_profile",
    "ranking_profiles",
    "format_profile",
]

MASS_LEVELS = (0.5, 0.8, 0.9)


def _rows(values: Any) -> np.ndarray:
    """``[R, n]`` float64 rows of head values (one row per replicate).

    ``[n]`` is one row, ``[R, n]`` R rows, ``[R, L, H]`` R rows of L·H: pass one ``[L, H]``
    matrix as ``matrix[None]`` or ``matrix.ravel()`` (a 2-D array is read as rows).
    """
    arr = np.asarray(values, dtype=np.float64)
    arr = arr.reshape(1, -1) if arr.ndim == 1 else arr.reshape(arr.shape[0], -1)
    if arr.shape[1] == 0:
        raise ValueError("a profile needs at least one head")
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise ValueError("RAM values must be finite and ≥ 0")
    return arr


def heads_for_mass(values: Any, level: float) -> np.ndarray:
    """Smallest fraction of heads (largest RAM first) holding ≥ ``level`` of the total, per row.

    Args:
        values: ``[n]`` or ``[R, n]`` head values (≥ 0).
        level: Mass level in (0, 1].
    """
    if not 0.0 < level <= 1.0:
        raise ValueError(f"mass level must lie in (0, 1], got {level}")
    arr = _rows(values)
    n = arr.shape[1]
    total = arr.sum(axis=1)
    cum = np.cumsum(-np.sort(-arr, axis=1), axis=1)
    # Relative tolerance: a level reached up to float rounding counts as reached.
    reached = cum >= level * total[:, None] * (1.0 - 1e-12)
    count = reached.argmax(axis=1) + 1
    return np.where(total > 0, count / n, math.nan)


def gini(values: Any) -> np.ndarray:
    """Gini coefficient per row: ``Σ_i (2i − n − 1) x_(i) / (n Σ x)``, x ascending."""
    arr = np.sort(_rows(values), axis=1)
    n = arr.shape[1]
    total = arr.sum(axis=1)
    weights = 2.0 * np.arange(1, n + 1) - n - 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (arr * weights).sum(axis=1) / (n * total), math.nan)


def entropy(values: Any, normalised: bool = False) -> np.ndarray:
    """Shannon entropy (nats) of ``x / Σ x`` per row; ``normalised`` divides by log n."""
    arr = _rows(values)
    n = arr.shape[1]
    total = arr.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = arr / total
        terms = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    out = np.where(total[:, 0] > 0, terms.sum(axis=1), math.nan)
    if normalised:
        out = out / math.log(n) if n > 1 else np.where(np.isnan(out), math.nan, 0.0)
    return out


def top_depth(values: Any, num_layers: int, top: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """(centroid, spread) of the top heads' depth ``(layer + 0.5) / L``, per row.

    Args:
        values: ``[L·H]`` (layer-major) or ``[R, L·H]`` / ``[R, L, H]`` head values.
        num_layers: L.
        top: Top heads: a count ≥ 1 or a fraction of all heads (rounded up).
    """
    arr = _rows(values)
    n = arr.shape[1]
    if num_layers < 1 or n % num_layers:
        raise ValueError(f"{n} heads do not split into {num_layers} layers")
    k = head_count(top, n)
    order = np.argsort(-arr, axis=1, kind="stable")[:, :k]  # ties: lower (layer-major) index
    depth = (order // (n // num_layers) + 0.5) / num_layers
    defined = arr.sum(axis=1) > 0
    return (
        np.where(defined, depth.mean(axis=1), math.nan),
        np.where(defined, depth.std(axis=1), math.nan),
    )


def profile_metrics(values: Any, num_layers: int, top: float = 0.05) -> dict[str, np.ndarray]:
    """Every metric of :data:`METRICS` per row of ``values`` (``[R, L·H]`` or ``[R, L, H]``)."""
    arr = _rows(values)
    out = {f"heads_for_{round(level * 100)}": heads_for_mass(arr, level) for level in MASS_LEVELS}
    out["gini"] = gini(arr)
    out["entropy"] = entropy(arr)
    out["entropy_norm"] = entropy(arr, normalised=True)
    out["top_depth_centroid"], out["top_depth_spread"] = top_depth(arr, num_layers, top)
    return out


def cumulative_mass(values: Any) -> list[float]:
    """Cumulative share of the total RAM of the heads sorted by RAM (largest first)."""
    arr = _rows(values)[0]
    total = arr.sum()
    if total <= 0:
        return [math.nan] * arr.size
    return (np.cumsum(np.sort(arr)[::-1]) / total).tolist()


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def task_profile(
    per_sample: Any, *, top: float = 0.05, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05
) -> dict[str, Any]:
    """Profile of one task from its ``[N, L, H]`` per-sample RAM, with bootstrap CIs.

    Returns:
        ``{"n_samples", "num_layers", "num_heads", "top", "top_count", "metrics": {name:
        {"value", "ci_low", "ci_high", "bias"}}, "cumulative_mass": [...], "bootstrap": {"n_boot",
        "seed", "alpha"}}`` (undefined numbers are None).
    """
    arr = np.asarray(per_sample, dtype=np.float64)
    if arr.ndim != 3 or arr.shape[0] == 0:
        raise ValueError(f"per_sample must be [N ≥ 1, layers, heads], got shape {arr.shape}")
    n, layers, heads = arr.shape
    flat = arr.reshape(n, -1)
    point = profile_metrics(flat.mean(axis=0), layers, top)
    boot = profile_metrics(bootstrap_counts(n, n_boot, seed) @ flat / n, layers, top)
    metrics = {}
    for name in METRICS:
        vals = boot[name][~np.isnan(boot[name])]
        low, high = np.quantile(vals, [alpha / 2, 1 - alpha / 2]) if vals.size else (math.nan,) * 2
        metrics[name] = {
            "value": _num(point[name][0]),
            "ci_low": _num(low),
            "ci_high": _num(high),
            "bias": _num(vals.mean() - point[name][0]) if vals.size else None,
        }
    return {
        "n_samples": n,
        "num_layers": layers,
        "num_heads": heads,
        "top": top,
        "top_count": head_count(top, layers * heads),
        "metrics": metrics,
        "cumulative_mass": [_num(x) for x in cumulative_mass(flat.mean(axis=0))],
        "bootstrap": {"n_boot": n_boot, "seed": seed, "alpha": alpha},
    }


def ranking_profiles(ranking: Any, *, top: float = 0.05, n_boot: int = 1000) -> dict[str, Any]:
    """Profiles of every task of a ranking (seed and α from each task's bootstrap record).

    Returns:
        A ``headscope.profile`` document (:mod:`harness.schema.profile`): ``{"format",
        "version", "model", "settings", "tasks": {task: task_profile(...)}}``.
    """
    tasks = {}
    for name in ranking.task_names:
        t = ranking.tasks[name]
        boot = t.bootstrap or {}
        tasks[name] = task_profile(
            t.per_sample,
            top=top,
            n_boot=n_boot,
            seed=int(boot.get("seed", 0)),
            alpha=float(boot.get("alpha", 0.05)),
        )
    return profile_document(ranking.model, ranking.settings, tasks)


def format_profile(profile: dict[str, Any]) -> str:
    """Terminal table of a :func:`ranking_profiles` document: value [CI] per metric and task."""
    from tabulate import tabulate

    def cell(stats: dict[str, Any]) -> str:
        if stats["value"] is None:
            return "n/a"
        low, high = (
            f"{x:.3f}" if x is not None else "n/a" for x in (stats["ci_low"], stats["ci_high"])
        )
        return f"{stats['value']:.3f} [{low}, {high}]"

    tasks = profile["tasks"]
    rows = [[name, *(cell(tasks[t]["metrics"][name]) for t in tasks)] for name in METRICS]
    title = "head-sparsity profile of RAM (value [95% bootstrap CI]):"
    return "\n".join([title, tabulate(rows, headers=["", *tasks])])
