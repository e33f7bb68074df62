"""Figures of the leaderboard inputs (optional: needs matplotlib, ``headscope[plot]``).

Each figure is written as PNG and as vector PDF beside it (same stem):

- ``ram__<model>__<task>``: mean RAM heatmap per ranking task, by the heatmap convention of
  :mod:`harness.probes.plots` (layer 0 at the bottom, heads left to right, labelled colour
  bar) — the same as ``headscope rank``'s heatmaps;
- ``ablation__<model>__<task>``: primary metric vs k for the ``ablate`` selections (top /
  bottom / random, one line per selection and mode) with error bars — random-k: mean ± sd
  over its draws; top/bottom-k: ± the per-sample stderr — and the ``none`` baseline drawn
  over the curves (black, dashed) with its ± stderr band. The x ticks are the k values run
  (a single k shows one tick, not a meaningless range);
- ``speedup__<model-or-geometry>__<scope>``: measured prefill speedup vs length, one line
  per keep fraction (and window), with the FLOP-model bound dashed (bench rows carry no
  stderr, so no error bars);
- ``diagnostics__<model>__<variant>``: RID and MixIG per layer, attention vs FFN (per-layer
  means; the files carry no stderr).

Legends sit below the axes, outside them, so they cover no data. ``<model>`` is the short
model name (:mod:`leaderboards.labels`). When one model appears under several settings,
the differing settings join the file name (cut and hashed past 96 characters). Figures
never mix settings: each settings group gets its own file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from leaderboards.labels import arg_text, file_stem, model_names, unique_names
from leaderboards.settings import config_key, split_settings
from leaderboards.sources import Sources

__all__ = [
    "PLOT_HINT",
    "PlotUnavailableError",
    "matplotlib_available",
    "build_figures",
    "write_figures",
]

PLOT_HINT = "figures need matplotlib: pip install 'headscope[plot]' (or pip install matplotlib)"
# Named in speedup file names already, or derived from the geometry.
_SPEEDUP_NAMED = ("geometry", "preset", "scope", "arch")


class PlotUnavailableError(RuntimeError):
    """matplotlib is not installed."""


def matplotlib_available() -> bool:
    """True when matplotlib can be imported."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def _figure(rows: int = 1, cols: int = 1, size: tuple[float, float] = (6.0, 4.0)) -> tuple:
    try:
        from harness.probes.plots import new_figure
    except ImportError as exc:  # matplotlib missing
        raise PlotUnavailableError(PLOT_HINT) from exc
    return new_figure(rows, cols, size)


def _suffix(config: dict[str, Any], differing: Sequence[str]) -> str:
    return "_".join(f"{k.split('.')[-1]}={config.get(k, 'unset')}" for k in differing)


Built = list[tuple[str, Any]]  # (file stem, figure)


def _ram_heatmaps(sources: Sources, built: Built) -> None:
    from harness.probes.plots import draw_heatmap
    from leaderboards.spearman import ranking_model_names, unique_rankings

    files = unique_rankings(sources.rankings)
    names = ranking_model_names(files)
    differing, _ = split_settings(f.config for f in files)
    for f in files:
        for task in f.ranking.task_names:
            fig, axes = _figure(size=(6.0, 4.5))
            title = f"RAM — {names[f.model]} — {task}"
            draw_heatmap(axes[0][0], f.ranking.matrix(task), title=title, label="mean RAM")
            parts = ("ram", names[f.model], _suffix(f.config, differing), task)
            built.append((file_stem(*parts), fig))


def _ablation_groups(sources: Sources) -> list[dict[str, Any]]:
    """Per (model, settings, task): curves ``label → [(k, value, error)]`` and the baseline.

    The error is the sd over draws for a random-k line, else the per-sample stderr (None
    when the results hold none); ``base_err`` is the baseline's stderr.
    """
    from leaderboards.cells import (
        build_lines,
        collect_cells,
        is_baseline,
        line_stats,
        primary_metric,
        ranking_names,
    )

    cells = collect_cells(sources.runs)
    paths = ranking_names(cells)
    groups: dict[tuple, dict[str, Any]] = {}
    for line in build_lines(cells):
        c = line.first
        g = groups.setdefault(c.group, {"cell": c, "curves": {}, "base": None, "base_err": None})
        metric = primary_metric(c)
        stats = line_stats(line, metric) if metric else None
        if not stats or stats["value"] is None:
            continue
        g["metric"] = metric
        args = dict(c.spec.get("args") or {})
        if is_baseline(c.entry):
            g["base"], g["base_err"] = stats["value"], stats.get("stderr")
        elif c.spec.get("name") == "ablate" and "k" in args:
            rest = arg_text(args, paths, drop=("k", "select", "draw", "draws"))
            label = str(args.get("select", "top")) + (f" ({rest})" if rest else "")
            label += ", mean ± sd over draws" if line.draws else ", ± stderr"
            error = stats.get("draw_sd") if line.draws else stats.get("stderr")
            g["curves"].setdefault(label, []).append((float(args["k"]), stats["value"], error))
    return [g for g in groups.values() if g["curves"]]


def _bounds(group: dict[str, Any]) -> tuple[float, float]:
    """The range error bars are clipped to.

    [0, 1] when every value plotted lies in it (an accuracy, a recall, an IoU...), else
    unbounded.
    """
    values = [v for pts in group["curves"].values() for _, v, _ in pts]
    values += [] if group["base"] is None else [group["base"]]
    if all(0.0 <= v <= 1.0 for v in values):
        return 0.0, 1.0
    return -math.inf, math.inf


def _k_axis(ax: Any, ks: Sequence[float]) -> None:
    """Ticks at exactly the k values run; a margin that keeps a single k in the middle."""
    ks = sorted(set(ks))
    lo, hi = ks[0], ks[-1]
    pad = (hi - lo) * 0.1 if hi > lo else (abs(lo) * 0.5 or 0.5)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_xticks(ks, labels=[f"{k:g}" for k in ks])
    ax.minorticks_off()


def _ablation_curves(sources: Sources, built: Built) -> None:
    import numpy as np
    from matplotlib.transforms import ScaledTranslation

    from harness.probes.plots import legend_below

    groups = _ablation_groups(sources)
    names = model_names((r.model, r.results.model) for r in sources.runs)
    differing, _ = split_settings(g["cell"].run.config for g in groups)
    for g in groups:
        c = g["cell"]
        fig, axes = _figure(size=(6.0, 4.6))
        ax = axes[0][0]
        curves = sorted(g["curves"].items())
        lo, hi = _bounds(g)
        for i, (label, points) in enumerate(curves):
            xs, ys, errs = zip(*sorted(points))
            y = np.asarray(ys, dtype=float)
            e = np.nan_to_num(np.asarray([math.nan if x is None else x for x in errs], float))
            # A bar never leaves the metric's range: mean ± sd of an accuracy near 1 stops at 1.
            below, above = np.minimum(e, y - lo), np.minimum(e, hi - y)
            # Side by side by a few points, so error bars at one k do not hide each other.
            shift = ScaledTranslation((i - (len(curves) - 1) / 2) * 0.05, 0, fig.dpi_scale_trans)
            ax.errorbar(
                xs,
                ys,
                yerr=np.vstack([below, above]),
                marker="o",
                capsize=3,
                label=label,
                zorder=2,
                transform=ax.transData + shift,
            )
            # A shifted transform is not data-only, so autoscaling skips it: add the limits.
            ax.update_datalim(np.column_stack([[*xs, *xs], [*(y - below), *(y + above)]]))
        if g["base"] is not None:
            err = g["base_err"]
            label = "none (no ablation)" + (", ± stderr" if err else "")
            ax.axhline(
                g["base"], color="black", linestyle="--", linewidth=1.3, zorder=4, label=label
            )
            if err:
                band = (max(g["base"] - err, lo), min(g["base"] + err, hi))
                ax.axhspan(*band, color="black", alpha=0.08, linewidth=0, zorder=1)
        ax.autoscale_view()
        _k_axis(ax, [p[0] for _, points in curves for p in points])
        ax.set_xlabel("k (heads ablated: count or fraction)")
        ax.set_ylabel(g["metric"])
        ax.set_title(f"Ablation — {names[c.run.model]} — {c.entry.task}", fontsize=9)
        legend_below(fig, [ax])
        task = c.entry.task
        same_task = [g2["cell"].task_config for g2 in groups if g2["cell"].entry.task == task]
        suffix = _suffix(c.run.config, differing)
        task_suffix = _suffix(c.task_config, split_settings(same_task)[0])
        parts = ("ablation", names[c.run.model], suffix, task_suffix, task)
        built.append((file_stem(*parts), fig))


def _speedup_curves(sources: Sources, built: Built) -> None:
    from harness.probes.plots import legend_below

    items = [(f, i) for f in sources.bench_hybrid for i in range(len(f.rows))]
    names = unique_names((f.models[i], f.display(i)) for f, i in items if f.models[i])
    differing, _ = split_settings(f.configs[i] for f, i in items)
    differing = [k for k in differing if k not in _SPEEDUP_NAMED]
    groups: dict[tuple, list] = {}
    for f, i in items:
        groups.setdefault((f.models[i] or "", config_key(f.configs[i])), []).append((f, i))
    for (model, _), members in sorted(groups.items()):
        f0, i0 = members[0]
        config = f0.configs[i0]
        who = names.get(model) or f0.geometry(i0) or "bench"
        shown = names.get(model) or f"geometry {who}"
        windows = {f.rows[i]["window"] for f, i in members}
        fig, axes = _figure(size=(6.0, 4.6))
        ax = axes[0][0]
        lines: dict[tuple, list] = {}
        for f, i in members:
            r = f.rows[i]
            measured = r.get("speedup") or (r["dense_ms"] / r["hybrid_ms"])
            key = (float(r["keep"]), r["window"], r.get("kept_fraction"))
            lines.setdefault(key, []).append((r["length"], measured, r["bound"]))
        for (keep, window, kept), pts in sorted(lines.items(), key=lambda kv: kv[0][:2]):
            xs, ys, bounds = zip(*sorted(pts))
            label = f"keep={keep:g}" + (f" ({kept:g} kept)" if kept is not None else "")
            label += f", W={window}" if len(windows) > 1 else ""
            (line,) = ax.plot(xs, ys, marker="o", label=label)
            color = line.get_color()
            ax.plot(xs, bounds, linestyle="--", color=color, label=f"FLOP bound, {label}")
        ax.set_xscale("log", base=2)
        lengths = sorted({f.rows[i]["length"] for f, i in members})
        ax.set_xticks(lengths, labels=[str(n) for n in lengths])
        ax.minorticks_off()
        ax.set_xlabel("context length (tokens)")
        ax.set_ylabel("prefill speedup ×")
        scope = config.get("scope")
        title = f"Hybrid attention — {shown}" + (f" — scope {scope}" if scope else "")
        if len(windows) == 1:
            title += f" — W={next(iter(windows))}"
        ax.set_title(title, fontsize=9)
        ax.axhline(1.0, color="grey", linewidth=0.8)
        legend_below(fig, [ax])
        parts = ("speedup", who, str(scope or ""), _suffix(config, differing))
        built.append((file_stem(*parts), fig))


def _diagnostic_curves(sources: Sources, built: Built) -> None:
    from harness.probes.plots import diagnostic_levels, draw_layer_lines
    from harness.schema.diagnostics import MODULES
    from leaderboards.diagnostics import unique_diagnostics

    files = unique_diagnostics(sources.diagnostics)
    names = model_names((d.model, d.display or d.model) for d in files)
    differing, _ = split_settings(d.config for d in files)
    for d in files:
        fig, axes = _figure(1, 2, size=(9.0, 4.0))
        series = {}
        for metric in ("RID", "MixIG"):
            per_module = {}
            for module in MODULES:
                rows = sorted((r["layer"], r[metric]) for r in d.layers if r["module"] == module)
                if rows:
                    per_module[module] = dict(rows)
            series[metric] = per_module
        # the noise baselines and ε_RoPE as reference levels, as headscope diagnose draws them
        draw_layer_lines(fig, axes[0], series, diagnostic_levels(d.baselines, d.erope_floor))
        fig.suptitle(f"{names[d.model]} — variant {d.variant}", fontsize=9)
        parts = ("diagnostics", names[d.model], _suffix(d.config, differing), d.variant)
        built.append((file_stem(*parts), fig))


def build_figures(sources: Sources) -> list[tuple[str, Any]]:
    """Every figure the inputs allow, as ``(file stem, matplotlib Figure)`` pairs.

    Raises:
        PlotUnavailableError: matplotlib is not installed (message holds the install hint).
    """
    if not matplotlib_available():
        raise PlotUnavailableError(PLOT_HINT)
    built: Built = []
    if sources.rankings:
        _ram_heatmaps(sources, built)
        from leaderboards.profiles import sparsity_figure

        sparsity = sparsity_figure(sources.rankings)
        if sparsity is not None:
            built.append((file_stem("sparsity"), sparsity))
    if sources.runs:
        _ablation_curves(sources, built)
    if sources.bench_hybrid:
        _speedup_curves(sources, built)
    if sources.diagnostics:
        _diagnostic_curves(sources, built)
    return built


def write_figures(sources: Sources, out_dir: str | Path) -> list[Path]:
    """Write every figure the inputs allow into ``out_dir`` as PNG + PDF; returns the files.

    Raises:
        PlotUnavailableError: matplotlib is not installed (message holds the install hint).
    """
    from harness.probes.plots import save_figure

    built = build_figures(sources)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for stem, fig in built:
        written += save_figure(fig, out / f"{stem}.png")
    return written
