"""PNG figures of the leaderboard inputs (optional: needs matplotlib, ``headscope[plot]``).

- ``ram__<model>__<task>.png``: mean RAM heatmap (layer × head) per ranking task;
- ``ablation__<model>__<task>.png``: primary metric vs k for the ``ablate`` selections
  (top / bottom / random, one line per selection and mode) with the ``none`` baseline;
  random-k is the mean over its draws with ± sd error bars;
- ``speedup__<model-or-geometry>__<scope>.png``: measured prefill speedup vs length, one line
  per keep fraction (and window), with the FLOP-model bound dashed;
- ``diagnostics__<model>__<variant>.png``: RID and MixIG per layer, attention vs FFN.

``<model>`` is the short model name (:mod:`leaderboards.labels`). When one model appears
under several settings, the differing settings join the file name (cut and hashed past
96 characters). Figures never mix settings: each settings group gets its own file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from leaderboards.labels import arg_text, file_stem, model_names, unique_names
from leaderboards.settings import config_key, split_settings
from leaderboards.sources import Sources

__all__ = ["PLOT_HINT", "PlotUnavailableError", "matplotlib_available", "write_figures"]

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
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PlotUnavailableError(PLOT_HINT) from exc
    # Figure + savefig uses the Agg canvas directly: no pyplot, no global backend change.
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def _integer_ticks(*axes: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    for axis in axes:
        axis.set_major_locator(MaxNLocator(integer=True))


def _suffix(config: dict[str, Any], differing: Sequence[str]) -> str:
    return "_".join(f"{k.split('.')[-1]}={config.get(k, 'unset')}" for k in differing)


def _save(fig: Any, out: Path, parts: Sequence[str], written: list[Path]) -> None:
    path = out / f"{file_stem(*parts)}.png"
    fig.savefig(path, dpi=110)
    written.append(path)


def _ram_heatmaps(sources: Sources, out: Path, written: list[Path]) -> None:
    from leaderboards.spearman import ranking_model_names, unique_rankings

    files = unique_rankings(sources.rankings)
    names = ranking_model_names(files)
    differing, _ = split_settings(f.config for f in files)
    for f in files:
        for task in f.ranking.task_names:
            fig, axes = _figure(size=(6.0, 4.5))
            ax = axes[0][0]
            image = ax.imshow(f.ranking.matrix(task), aspect="auto", cmap="viridis")
            _integer_ticks(ax.xaxis, ax.yaxis)
            ax.set_xlabel("head")
            ax.set_ylabel("layer")
            ax.set_title(f"RAM — {names[f.model]} — {task}", fontsize=9)
            fig.colorbar(image, ax=ax, label="mean RAM")
            parts = ("ram", names[f.model], _suffix(f.config, differing), task)
            _save(fig, out, parts, written)


def _ablation_groups(sources: Sources) -> list[dict[str, Any]]:
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
        g = groups.setdefault(c.group, {"cell": c, "curves": {}, "base": None})
        metric = primary_metric(c)
        stats = line_stats(line, metric) if metric else None
        if not stats or stats["value"] is None:
            continue
        g["metric"] = metric
        args = dict(c.spec.get("args") or {})
        if is_baseline(c.entry):
            g["base"] = stats["value"]
        elif c.spec.get("name") == "ablate" and "k" in args:
            rest = arg_text(args, paths, drop=("k", "select", "draw", "draws"))
            label = str(args.get("select", "top")) + (f" ({rest})" if rest else "")
            label += ", mean ± sd over draws" if line.draws else ""
            point = (float(args["k"]), stats["value"], stats.get("draw_sd") or 0.0)
            g["curves"].setdefault(label, []).append(point)
    return [g for g in groups.values() if g["curves"]]


def _ablation_curves(sources: Sources, out: Path, written: list[Path]) -> None:
    groups = _ablation_groups(sources)
    names = model_names((r.model, r.results.model) for r in sources.runs)
    differing, _ = split_settings(g["cell"].run.config for g in groups)
    for g in groups:
        c = g["cell"]
        fig, axes = _figure()
        ax = axes[0][0]
        for label, points in sorted(g["curves"].items()):
            xs, ys, errs = zip(*sorted(points))
            yerr = errs if any(errs) else None
            ax.errorbar(xs, ys, yerr=yerr, marker="o", capsize=3, label=label)
        if g["base"] is not None:
            ax.axhline(g["base"], color="grey", linestyle="--", label="none")
        ax.set_xlabel("k (heads ablated: count or fraction)")
        ax.set_ylabel(g["metric"])
        ax.set_title(f"Ablation — {names[c.run.model]} — {c.entry.task}", fontsize=9)
        ax.legend(fontsize=7)
        task = c.entry.task
        same_task = [g2["cell"].task_config for g2 in groups if g2["cell"].entry.task == task]
        suffix = _suffix(c.run.config, differing)
        task_suffix = _suffix(c.task_config, split_settings(same_task)[0])
        _save(fig, out, ("ablation", names[c.run.model], suffix, task_suffix, task), written)


def _speedup_curves(sources: Sources, out: Path, written: list[Path]) -> None:
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
        fig, axes = _figure()
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
        ax.legend(fontsize=7)
        parts = ("speedup", who, str(scope or ""), _suffix(config, differing))
        _save(fig, out, parts, written)


def _diagnostic_curves(sources: Sources, out: Path, written: list[Path]) -> None:
    from leaderboards.diagnostics import MODULES, unique_diagnostics

    files = unique_diagnostics(sources.diagnostics)
    names = model_names((d.model, d.display or d.model) for d in files)
    differing, _ = split_settings(d.config for d in files)
    for d in files:
        fig, axes = _figure(1, 2, size=(9.0, 3.6))
        for ax, metric in zip(axes[0], ("RID", "MixIG")):
            for module in MODULES:
                pts = [(r["layer"], r[metric]) for r in d.layers if r["module"] == module]
                if pts:
                    xs, ys = zip(*pts)
                    ax.plot(xs, ys, marker="o", label=module)
            _integer_ticks(ax.xaxis)
            ax.set_xlabel("layer")
            ax.set_ylabel(metric)
            ax.legend(fontsize=7)
        fig.suptitle(f"{names[d.model]} — variant {d.variant}", fontsize=9)
        parts = ("diagnostics", names[d.model], _suffix(d.config, differing), d.variant)
        _save(fig, out, parts, written)


def write_figures(sources: Sources, out_dir: str | Path) -> list[Path]:
    """Write every figure the inputs allow into ``out_dir``; returns the files written.

    Raises:
        PlotUnavailableError: matplotlib is not installed (message holds the install hint).
    """
    if not matplotlib_available():
        raise PlotUnavailableError(PLOT_HINT)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if sources.rankings:
        _ram_heatmaps(sources, out, written)
        from leaderboards.profiles import sparsity_figure

        sparsity_figure(sources.rankings, out, written)
    if sources.runs:
        _ablation_curves(sources, out, written)
    if sources.bench_hybrid:
        _speedup_curves(sources, out, written)
    if sources.diagnostics:
        _diagnostic_curves(sources, out, written)
    return written
