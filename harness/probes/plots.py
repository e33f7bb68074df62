"""Figures of the probes, and the conventions every headscope figure follows.

Optional: needs matplotlib (``headscope[plot]``). Figures are drawn on a bare
:class:`matplotlib.figure.Figure` (Agg canvas), so no pyplot state or global backend is
touched. The conventions (shared with :mod:`leaderboards.figures`):

- a layer × head heatmap has layer 0 at the bottom, heads left to right, integer ticks and a
  labelled colour bar (:func:`draw_heatmap`);
- a legend sits outside the axes, below them, so it never covers data (:func:`legend_below`);
- every figure is written twice, as PNG and as vector PDF beside it (:func:`save_figure`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "plotting_available",
    "new_figure",
    "draw_heatmap",
    "figures_missing",
    "legend_below",
    "save_figure",
    "heatmap_figure",
    "heatmap",
    "draw_layer_lines",
    "layer_lines_figure",
    "layer_lines",
]

#: Resolution of the PNG files (the PDF is vector).
DPI = 110


def plotting_available() -> bool:
    """True when matplotlib can be imported."""
    return importlib.util.find_spec("matplotlib") is not None


def new_figure(rows: int = 1, cols: int = 1, size: tuple[float, float] = (6.0, 4.0)) -> tuple:
    """A constrained-layout figure and its ``rows × cols`` axes (always a 2-D array)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.subplots(rows, cols, squeeze=False)


def integer_ticks(*axes: Any) -> None:
    """Only whole-number ticks on the given axis objects (``ax.xaxis`` ...)."""
    from matplotlib.ticker import MaxNLocator

    for axis in axes:
        axis.set_major_locator(MaxNLocator(integer=True))


def draw_heatmap(ax: Any, matrix: Any, *, title: str, label: str) -> Any:
    """Draw a ``[layers, heads]`` matrix on ``ax`` by the heatmap convention.

    Args:
        ax: The axes.
        matrix: Values, row = layer, column = head.
        title: Axes title.
        label: Colour bar label (what the colour measures, e.g. ``"mean RAM"``).

    Returns:
        The image artist.
    """
    import numpy as np

    arr = np.asarray(matrix, dtype=np.float64)
    image = ax.imshow(arr, aspect="auto", origin="lower", cmap="viridis", interpolation="nearest")
    integer_ticks(ax.xaxis, ax.yaxis)
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title(title, fontsize=9)
    ax.figure.colorbar(image, ax=ax, label=label)
    return image


def legend_below(fig: Any, axes: Sequence[Any], *, fontsize: float = 7) -> Any:
    """One legend for ``axes`` (labels deduplicated), outside and below them; None if empty."""
    handles, labels = [], []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if not handles:
        return None
    # As many columns as fit the figure's width (about 14 characters per inch at this size).
    width = fig.get_figwidth() * 14
    ncols = max(1, min(3, len(labels), int(width // (max(len(x) for x in labels) + 8))))
    return fig.legend(handles, labels, loc="outside lower center", ncols=ncols, fontsize=fontsize)


def save_figure(fig: Any, png: str | Path) -> list[Path]:
    """Write ``fig`` as ``png`` and as a vector PDF beside it; returns both paths.

    Each file is written whole or not at all (a temporary file beside it, then renamed), so a
    run killed while drawing leaves no half figure for a resume to take as drawn.
    """
    import os

    out = Path(png)
    out.parent.mkdir(parents=True, exist_ok=True)
    pdf = out.with_suffix(".pdf")
    for path, kwargs in ((out, {"dpi": DPI}), (pdf, {})):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            fig.savefig(tmp, format=path.suffix[1:], **kwargs)
            os.replace(tmp, path)
        except OSError as exc:
            from harness.schema.results import name_path

            raise name_path(exc, path) from None
        finally:
            tmp.unlink(missing_ok=True)
    return [out, pdf]


def figures_missing(pngs: Sequence[str | Path]) -> bool:
    """True when any of the PNGs, or the PDF beside it, is not on disk."""
    return any(not Path(p).is_file() or not Path(p).with_suffix(".pdf").is_file() for p in pngs)


def heatmap_figure(matrix: Any, title: str, label: str = "mean RAM") -> Any:
    """A figure holding one layer × head heatmap of ``matrix`` (``[L, H]``)."""
    import numpy as np

    layers, heads = np.asarray(matrix).shape
    fig, axes = new_figure(size=(max(4.0, 0.25 * heads + 2.0), max(3.0, 0.2 * layers + 1.5)))
    draw_heatmap(axes[0][0], matrix, title=title, label=label)
    return fig


def heatmap(matrix: Any, title: str, path: str | Path, label: str = "mean RAM") -> Path:
    """Write :func:`heatmap_figure` to ``path`` (PNG) and a PDF beside it; returns the PNG."""
    return save_figure(heatmap_figure(matrix, title, label), path)[0]


def draw_layer_lines(
    fig: Any,
    axes: Sequence[Any],
    series: Mapping[str, Mapping[str, Sequence[float] | Mapping[int, float]]],
    hlines: Mapping[str, Mapping[str, float]] | None = None,
) -> None:
    """One panel per metric: a line per module over layers, dashed labelled reference levels.

    A module's values are a sequence (index = layer) or a mapping layer → value.
    """
    for ax, metric in zip(axes, series):
        for module, values in series[metric].items():
            if isinstance(values, Mapping):
                xs, ys = list(values), list(values.values())
            else:
                xs, ys = list(range(len(values))), list(values)
            ax.plot(xs, ys, marker="o", label=module, zorder=2)
        levels = (hlines or {}).get(metric, {})
        for i, (label, level) in enumerate(levels.items()):
            style = ("--", ":", "-.")[i % 3]
            ax.axhline(level, linestyle=style, linewidth=1, color="grey", label=label, zorder=1)
        integer_ticks(ax.xaxis)
        ax.set_xlabel("layer")
        ax.set_ylabel(metric)
    legend_below(fig, axes)


def diagnostic_levels(
    baselines: Mapping[str, Mapping[str, float | None]], erope_floor: float | None
) -> dict[str, dict[str, float]]:
    """Reference levels of the diagnostics figures (``headscope diagnose``, the leaderboard).

    Each noise baseline's RID and MixIG, and the ε_RoPE floor on the RID panel.
    """
    levels: dict[str, dict[str, float]] = {"RID": {}, "MixIG": {}}
    for name, vals in baselines.items():
        for metric in ("RID", "MixIG"):
            if vals.get(metric) is not None:
                levels[metric][name] = float(vals[metric])
    if erope_floor is not None:
        levels["RID"]["ε_RoPE"] = float(erope_floor)
    return levels


def layer_lines_figure(
    series: Mapping[str, Mapping[str, Sequence[float]]],
    title: str,
    hlines: Mapping[str, Mapping[str, float]] | None = None,
) -> Any:
    """A figure of :func:`draw_layer_lines`, one panel per metric, titled ``title``."""
    fig, axes = new_figure(1, len(series), size=(5.0 * len(series), 4.0))
    draw_layer_lines(fig, axes[0], series, hlines)
    fig.suptitle(title)
    return fig


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
        path: PNG path (a PDF is written beside it).
        hlines: Metric → label → constant level (e.g. the Noise-Δ baseline).

    Returns:
        The PNG path.
    """
    return save_figure(layer_lines_figure(series, title, hlines), path)[0]
