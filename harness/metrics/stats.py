"""Small, seeded statistics shared by every metric: mean ± stderr and percentile bootstrap.

Every random draw comes from ``numpy.random.default_rng(seed)``, so the same inputs and seed
give the same interval on every machine. All bootstraps here resample *samples* (the first
axis) with replacement, through :func:`bootstrap_indices`, so a vectorised fast path (see
:func:`bootstrap_mean_ci`) and the generic per-replicate loop (:func:`bootstrap_ci`) draw the
same resamples and can be checked against each other.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "mean_stderr",
    "bootstrap_indices",
    "bootstrap_counts",
    "bootstrap_ci",
    "bootstrap_mean_ci",
]


def _as_samples(values: Any) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0:
        raise ValueError("expected a sequence of values, got a scalar")
    if arr.shape[0] == 0:
        raise ValueError("no values: statistics of an empty sample are undefined")
    return arr


def mean_stderr(values: Any) -> tuple[float, float]:
    """Mean and standard error of the mean of a 1-D sample.

    The standard error uses the unbiased standard deviation (``ddof=1``) divided by ``√n``.

    Args:
        values: One number per sample (any array-like, flattened).

    Returns:
        ``(mean, stderr)`` as plain floats; ``stderr`` is NaN for a single value (undefined).

    Raises:
        ValueError: If ``values`` is empty.
    """
    arr = _as_samples(values).ravel()
    mean = float(arr.mean())
    if arr.size < 2:
        return mean, math.nan
    return mean, float(arr.std(ddof=1) / math.sqrt(arr.size))


def bootstrap_indices(n: int, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """Resample indices for a nonparametric bootstrap.

    Args:
        n: Number of samples.
        n_boot: Number of bootstrap replicates.
        seed: Seed of ``numpy.random.default_rng``.

    Returns:
        Integer array ``[n_boot, n]``; row ``b`` lists the samples drawn in replicate ``b``.
    """
    if n < 1 or n_boot < 1:
        raise ValueError(f"need n ≥ 1 and n_boot ≥ 1, got n={n}, n_boot={n_boot}")
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def bootstrap_counts(n: int, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """How many times each sample is drawn in each replicate of :func:`bootstrap_indices`.

    Returns:
        Float array ``[n_boot, n]`` whose rows sum to ``n`` (same draws, same seed).
    """
    idx = bootstrap_indices(n, n_boot, seed)
    counts = np.zeros((n_boot, n), dtype=np.float64)
    np.add.at(counts, (np.arange(n_boot)[:, None], idx), 1.0)
    return counts


def _percentiles(boot: np.ndarray, alpha: float) -> tuple[Any, Any]:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    low, high = np.quantile(boot, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
    return low, high


def bootstrap_ci(
    values: Any,
    stat: Callable[[np.ndarray], Any] = np.mean,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[Any, Any]:
    """Percentile bootstrap confidence interval of ``stat`` over samples.

    This is the reference implementation: one call of ``stat`` per replicate.

    Args:
        values: Samples along the first axis (``[N]`` or ``[N, ...]``).
        stat: Maps a resample (same shape as ``values``) to a float or an array; for
            ``[N, ...]`` inputs pass e.g. ``lambda v: v.mean(axis=0)``.
        n_boot: Number of replicates.
        seed: Seed of the resampling (deterministic).
        alpha: Two-sided level; ``0.05`` gives a 95 % interval.

    Returns:
        ``(low, high)``: floats for a scalar statistic, arrays for an array statistic.
    """
    arr = _as_samples(values)
    idx = bootstrap_indices(arr.shape[0], n_boot, seed)
    boot = np.stack([np.asarray(stat(arr[row]), dtype=np.float64) for row in idx])
    low, high = _percentiles(boot, alpha)
    if np.ndim(low) == 0:
        return float(low), float(high)
    return low, high


def bootstrap_mean_ci(
    values: Any, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised bootstrap CI of the mean over the first axis, for every trailing entry.

    Equals ``bootstrap_ci(values, lambda v: v.mean(axis=0), n_boot, seed, alpha)`` (same draws)
    but costs one ``[n_boot, N] @ [N, M]`` product instead of ``n_boot`` resamples.

    Args:
        values: ``[N, ...]`` samples (e.g. per-sample ``[N, L, H]`` RAM matrices).
        n_boot: Number of replicates.
        seed: Seed of the resampling.
        alpha: Two-sided level.

    Returns:
        ``(low, high)`` arrays of shape ``values.shape[1:]``.
    """
    arr = _as_samples(values)
    n = arr.shape[0]
    flat = arr.reshape(n, -1)
    boot = bootstrap_counts(n, n_boot, seed) @ flat / n
    low, high = _percentiles(boot, alpha)
    return low.reshape(arr.shape[1:]), high.reshape(arr.shape[1:])
