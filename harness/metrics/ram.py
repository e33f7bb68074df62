"""Retrieval Attention Mass (paper A, CoRe heads): statistics over heads, samples and tasks.

``RAM(h) = mean over query tokens x of Σ_{y ∈ Ω(V*)} A_h(x → y)``. The model side (hooks that
record query rows of the attention) lives elsewhere; here are the pure-numpy pieces:

- :func:`ram_reference`: RAM from explicit attention probabilities (the eager reference any
  fast recording path is checked against);
- :func:`aggregate_ram`: per-sample ``[N, L, H]`` values → mean, stderr and bootstrap CI per head;
- :func:`spearman` / :func:`spearman_bootstrap`: cross-task agreement of L×H matrices;
- :func:`top_heads`, :func:`bottom_heads`, :func:`universal_heads`, :func:`layer_distribution`;
- :func:`key_region_degree_ratio` and :func:`ratio_by_correctness` (paper B's 4.2 % vs 13.1 %).

Head order ties are broken layer-major (``L0H0 < L0H1 < … < L1H0``) so rankings are stable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as _scipy_stats

from harness.api.heads import Head
from harness.metrics.stats import bootstrap_counts, bootstrap_mean_ci, mean_stderr

__all__ = [
    "RamSummary",
    "SpearmanResult",
    "ram_reference",
    "aggregate_ram",
    "spearman",
    "spearman_bootstrap",
    "head_count",
    "top_heads",
    "bottom_heads",
    "universal_heads",
    "layer_distribution",
    "key_region_degree_ratio",
    "ratio_by_correctness",
]


def ram_reference(
    attn: Any, query_positions: Sequence[int], region_positions: Sequence[int]
) -> Any:
    """RAM from full post-softmax attention probabilities (reference, materialises rows).

    Args:
        attn: ``[..., S_q, S_k]`` attention probabilities (e.g. ``[L, H, S, S]``).
        query_positions: Row indices of the instruction/question tokens.
        region_positions: Key indices of the evidence tokens ``Ω(V*)`` (duplicates count once).

    Returns:
        ``[...]`` array (a float for a single head): per head, the mean over query rows of the
        mass on the region keys.
    """
    arr = np.asarray(attn, dtype=np.float64)
    q = np.asarray(query_positions, dtype=np.int64)
    r = np.unique(np.asarray(region_positions, dtype=np.int64))
    if q.size == 0 or r.size == 0:
        raise ValueError("RAM needs at least one query token and one region token")
    mass = arr[..., q, :][..., r].sum(axis=-1)
    out = mass.mean(axis=-1)
    return float(out) if out.ndim == 0 else out


def _per_sample(values: Any, name: str = "per_sample") -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 3 or arr.shape[0] == 0:
        raise ValueError(f"{name} must be [N ≥ 1, layers, heads], got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} has NaN or infinite values")
    return arr


@dataclass(frozen=True)
class RamSummary:
    """Per-head RAM statistics over the samples of one task (all arrays ``[L, H]``).

    Attributes:
        mean: Mean RAM per head.
        stderr: Standard error of the mean (NaN with one sample).
        ci_low: Lower percentile-bootstrap bound.
        ci_high: Upper percentile-bootstrap bound.
        n: Number of samples.
    """

    mean: np.ndarray
    stderr: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n: int


def aggregate_ram(
    per_sample: Any, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05
) -> RamSummary:
    """Mean, stderr and bootstrap CI of RAM per head from ``[N, L, H]`` per-sample values.

    The same resamples are used for every head (a joint bootstrap over samples).
    """
    arr = _per_sample(per_sample)
    n = arr.shape[0]
    stderr = np.full(arr.shape[1:], math.nan)
    if n > 1:
        stderr = arr.std(axis=0, ddof=1) / math.sqrt(n)
    low, high = bootstrap_mean_ci(arr, n_boot=n_boot, seed=seed, alpha=alpha)
    return RamSummary(mean=arr.mean(axis=0), stderr=stderr, ci_low=low, ci_high=high, n=n)


def spearman(a: Any, b: Any) -> float:
    """Spearman ρ between two equally shaped matrices, flattened (average ranks for ties)."""
    x, y = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape or x.size < 2:
        raise ValueError(
            f"need two matrices of the same size ≥ 2, got {np.shape(a)}, {np.shape(b)}"
        )
    rx, ry = _scipy_stats.rankdata(x), _scipy_stats.rankdata(y)
    return float(_pearson_rows(rx[None, :], ry[None, :])[0])


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    denom = np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (xc * yc).sum(axis=1) / denom, np.nan)


@dataclass(frozen=True)
class SpearmanResult:
    """Spearman ρ between two tasks' mean RAM matrices, with a bootstrap CI.

    Attributes:
        rho: ρ of the full-sample mean matrices.
        ci_low: Lower percentile bound.
        ci_high: Upper percentile bound.
        n_boot: Replicates used (replicates with a constant matrix are dropped).
    """

    rho: float
    ci_low: float
    ci_high: float
    n_boot: int


def spearman_bootstrap(
    per_sample_a: Any, per_sample_b: Any, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05
) -> SpearmanResult:
    """Spearman ρ of two tasks' mean ``[L, H]`` RAM, CI by resampling each task's samples.

    The two tasks are resampled independently (seeds ``seed`` and ``seed + 1``).
    """
    a, b = _per_sample(per_sample_a, "per_sample_a"), _per_sample(per_sample_b, "per_sample_b")
    if a.shape[1:] != b.shape[1:]:
        raise ValueError(f"head grids differ: {a.shape[1:]} vs {b.shape[1:]}")
    rho = spearman(a.mean(axis=0), b.mean(axis=0))
    means_a = bootstrap_counts(a.shape[0], n_boot, seed) @ a.reshape(a.shape[0], -1) / a.shape[0]
    means_b = bootstrap_counts(b.shape[0], n_boot, seed + 1) @ b.reshape(b.shape[0], -1)
    means_b /= b.shape[0]
    ranks_a = _scipy_stats.rankdata(means_a, axis=1)
    ranks_b = _scipy_stats.rankdata(means_b, axis=1)
    rhos = _pearson_rows(ranks_a, ranks_b)
    rhos = rhos[np.isfinite(rhos)]
    if rhos.size == 0:
        return SpearmanResult(rho=rho, ci_low=math.nan, ci_high=math.nan, n_boot=0)
    low, high = np.quantile(rhos, [alpha / 2.0, 1.0 - alpha / 2.0])
    return SpearmanResult(rho=rho, ci_low=float(low), ci_high=float(high), n_boot=int(rhos.size))


def head_count(k: float, total: int) -> int:
    """Turn ``k`` (a whole count ≥ 0, or a fraction in (0, 1), rounded up) into a count.

    Same rule as :meth:`harness.api.heads.Geometry.count`.
    """
    if k < 0:
        raise ValueError(f"k must be ≥ 0, got {k}")
    if 0 < k < 1:
        return min(total, math.ceil(k * total))
    if k != int(k):
        raise ValueError(f"k must be a whole count or a fraction in (0, 1), got {k}")
    if k > total:
        raise ValueError(f"k={int(k)} exceeds the {total} heads")
    return int(k)


def _matrix2d(matrix: Any) -> np.ndarray:
    arr = np.asarray(matrix, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"expected an [L, H] matrix, got shape {arr.shape}")
    return arr


def _ordered(matrix: Any, descending: bool) -> list[Head]:
    arr = _matrix2d(matrix)
    flat = -arr.ravel() if descending else arr.ravel()
    order = np.argsort(flat, kind="stable")  # stable: ties keep layer-major order
    n_heads = arr.shape[1]
    return [Head(int(i) // n_heads, int(i) % n_heads) for i in order]


def top_heads(matrix: Any, k: float) -> list[Head]:
    """Return the ``k`` heads (count or fraction) with the largest values, best first."""
    arr = _matrix2d(matrix)
    return _ordered(arr, True)[: head_count(k, arr.size)]


def bottom_heads(matrix: Any, k: float) -> list[Head]:
    """Return the ``k`` heads (count or fraction) with the smallest values, lowest first."""
    arr = _matrix2d(matrix)
    return _ordered(arr, False)[: head_count(k, arr.size)]


def universal_heads(matrices: Mapping[str, Any], k: float) -> list[Head]:
    """Heads in the top-``k`` of every task, sorted layer-major.

    Args:
        matrices: Task name → ``[L, H]`` mean RAM (all the same shape, at least one task).
        k: Count or fraction of heads taken per task.
    """
    if not matrices:
        raise ValueError("universal_heads needs at least one task")
    shapes = {name: np.shape(m) for name, m in matrices.items()}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"tasks have different head grids: {shapes}")
    common = set.intersection(*(set(top_heads(m, k)) for m in matrices.values()))
    return sorted(common)


def layer_distribution(matrix: Any, k: float) -> np.ndarray:
    """How many of the top-``k`` heads sit in each layer: integer array ``[L]``."""
    arr = _matrix2d(matrix)
    counts = np.zeros(arr.shape[0], dtype=np.int64)
    for head in top_heads(arr, k):
        counts[head.layer] += 1
    return counts


def key_region_degree_ratio(region_mass: Any, total_mass: Any) -> float:
    """Share of recorded attention mass routed to the question-relevant evidence.

    Both arguments are masses recorded for the same (layer, head, query-token) entries of one
    sample; the ratio is ``Σ region_mass / Σ total_mass``. Use as ``total_mass`` the mass from
    the question tokens to all visual tokens (paper B's interaction mass) and record that
    choice next to the number.

    Raises:
        ValueError: On shape mismatch, negative masses, region > total, or zero total.
    """
    region = np.asarray(region_mass, dtype=np.float64)
    total = np.asarray(total_mass, dtype=np.float64)
    if region.shape != total.shape:
        raise ValueError(f"region {region.shape} and total {total.shape} shapes differ")
    if (region < 0).any() or (total < 0).any():
        raise ValueError("attention masses must be ≥ 0")
    if (region > total * (1 + 1e-9) + 1e-12).any():
        raise ValueError("region mass exceeds the total mass it is a part of")
    denom = float(total.sum())
    if denom <= 0.0:
        raise ValueError("total mass is zero: the ratio is undefined")
    return float(region.sum()) / denom


def ratio_by_correctness(ratios: Sequence[float], correct: Sequence[bool]) -> dict[str, dict]:
    """Mean ± stderr of per-sample ratios, split into correct and wrong samples.

    Returns:
        ``{"correct": {"mean", "stderr", "n"}, "wrong": {...}}``; a group without samples has
        NaN mean and stderr and ``n == 0``.
    """
    vals = np.asarray(ratios, dtype=np.float64)
    mask = np.asarray(correct, dtype=bool)
    if vals.shape != mask.shape or vals.ndim != 1:
        raise ValueError(f"ratios {vals.shape} and correct {mask.shape} must be equal 1-D")
    out: dict[str, dict] = {}
    for name, sel in (("correct", mask), ("wrong", ~mask)):
        group = vals[sel]
        mean, err = mean_stderr(group) if group.size else (math.nan, math.nan)
        out[name] = {"mean": mean, "stderr": err, "n": int(group.size)}
    return out
