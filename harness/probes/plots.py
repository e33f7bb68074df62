"""Small PNG figures of the probes (optional: needs matplotlib, ``headscope[plot]``).

Figures are drawn on a bare :class:`matplotlib.figure.Figure` (Agg canvas), so no pyplot
state or global backend is touched.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["plotting_available", "heatmap", "layer_lines"]


def plotting_available() -> bool:
    """True when matplotlib can be imported."""
    return importlib.util.find_spec("matplotlib") is not None


def _integer_ticks(*axes: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    for axis in axes:
        axis.set_major_locator(MaxNLocator(integer=True))


def heatmap(matrix: Any, title: str, path: str | Path) -> Path:
    """Write a layer × head heatmap of ``matrix`` (``[L, H]``) to ``path``."""
    import numpy as np
    from matplotlib.figure import Figure

    arr = np.asarray(matrix, dtype=np.float64)
    layers, heads = arr.shape
    fig = Figure(figsize=(max(4.0, 0.25 * heads + 2.0), max(3.0, 0.2 * layers + 1.5)))
    ax = fig.add_subplot()
    image = ax.imshow(arr, aspect="auto", origin="lower", cmap="viridis", interpolation="nearest")
    _integer_ticks(ax.xaxis, ax.yaxis)
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label="RAM")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    return out


def layer_lines(
    series: Mapping[str, Mapping[str, Sequence[float]]],
    title: str,
    path: str | Path,
    hlines: Mapping[str, Mapping[str, float]] | None = None,
) -> Path:
    """One panel per metric: a line per module over layers, dashed reference levels.

    Args:
        series: Metric → module → values per layer (index = layer).
        title: Figure title.
        path: PNG path.
        hlines: Metric → label → constant level (e.g. the Noise-Δ baseline).
    """
    from matplotlib.figure import Figure

    metrics = list(series)
    fig = Figure(figsize=(5.0 * len(metrics), 3.6))
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics):
        for module, values in series[metric].items():
            ax.plot(range(len(values)), values, marker="o", label=module)
        for label, level in (hlines or {}).get(metric, {}).items():
            ax.axhline(level, linestyle="--", linewidth=1, color="grey")
            ax.annotate(label, (0, level), fontsize=7, color="grey")
        _integer_ticks(ax.xaxis)
        ax.set_xlabel("layer")
        ax.set_ylabel(metric)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    return out
