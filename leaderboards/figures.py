"""PNG figures of the leaderboard inputs (optional: needs matplotlib, ``headscope[plot]``).

- ``ram__<model>__<task>.png``: mean RAM heatmap (layer × head) per ranking task;
- ``ablation__<model>__<task>.png``: primary metric vs k for the ``ablate`` selections
  (top / bottom / random, one line per selection and mode) with the ``none`` baseline;
- ``speedup__<model>.png``: measured prefill speedup vs length per (keep, window), with the
  FLOP-model bound dashed;
- ``diagnostics__<model>__<variant>.png``: RID and MixIG per layer, attention vs FFN.

When one model appears under several settings, the differing settings join the file name.
Figures never mix settings: each settings group gets its own file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from leaderboards.merge import Sources, config_key, split_settings

__all__ = ["PLOT_HINT", "PlotUnavailableError", "matplotlib_available", "write_figures"]

PLOT_HINT = "figures need matplotlib: pip install 'headscope[plot]' (or pip install matplotlib)"


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


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", str(text)).strip("_") or "x"


def _suffix(config: dict[str, Any], differing: Sequence[str]) -> str:
    if not differing:
        return ""
    return "__" + _slug("_".join(f"{k.split('.')[-1]}={config.get(k, 'unset')}" for k in differing))


def _save(fig: Any, path: Path, written: list[Path]) -> None:
    fig.savefig(path, dpi=110)
    written.append(path)


def _ram_heatmaps(sources: Sources, out: Path, written: list[Path]) -> None:
    from leaderboards.spearman import unique_rankings

    files = unique_rankings(sources.rankings)
    differing, _ = split_settings(f.config for f in files)
    for f in files:
        for task in f.ranking.task_names:
            fig, axes = _figure(size=(6.0, 4.5))
            ax = axes[0][0]
            image = ax.imshow(f.ranking.matrix(task), aspect="auto", cmap="viridis")
            _integer_ticks(ax.xaxis, ax.yaxis)
            ax.set_xlabel("head")
            ax.set_ylabel("layer")
            ax.set_title(f"RAM — {f.model} — {task}", fontsize=9)
            fig.colorbar(image, ax=ax, label="mean RAM")
            name = f"ram__{_slug(f.model)}{_suffix(f.config, differing)}__{_slug(task)}.png"
            _save(fig, out / name, written)


def _ablation_curves(sources: Sources, out: Path, written: list[Path]) -> None:
    from leaderboards.accuracy import collect_cells, is_baseline, primary_metric

    cells = collect_cells(sources.runs)
    differing, _ = split_settings(c.run.config for c in cells)
    groups: dict[tuple, dict[str, Any]] = {}
    for c in cells:
        g = groups.setdefault(c.group, {"cell": c, "lines": {}, "base": None})
        metric = primary_metric(c)
        try:
            value = c.entry.metric(metric).value
        except KeyError:
            continue
        g["metric"] = metric
        spec = c.entry.intervention_spec or {}
        args = dict(spec.get("args") or {})
        if is_baseline(c.entry):
            g["base"] = value
        elif spec.get("name") == "ablate" and "k" in args and value is not None:
            k = float(args.pop("k"))
            select = str(args.pop("select", "top"))
            rest = ", ".join(f"{a}={args[a]}" for a in sorted(args))
            label = select + (f" ({rest})" if rest else "")
            g["lines"].setdefault(label, []).append((k, value))
    for g in groups.values():
        if not g["lines"]:
            continue
        c = g["cell"]
        fig, axes = _figure()
        ax = axes[0][0]
        for label, points in sorted(g["lines"].items()):
            xs, ys = zip(*sorted(points))
            ax.plot(xs, ys, marker="o", label=label)
        if g["base"] is not None:
            ax.axhline(g["base"], color="grey", linestyle="--", label="none")
        ax.set_xlabel("k (heads ablated: count or fraction)")
        ax.set_ylabel(g["metric"])
        ax.set_title(f"Ablation — {c.run.model} — {c.entry.task}", fontsize=9)
        ax.legend(fontsize=7)
        same_task = [
            g2["cell"].task_config
            for g2 in groups.values()
            if g2["cell"].entry.task == c.entry.task
        ]
        suffix = _suffix(c.run.config, differing)
        suffix += _suffix(c.task_config, split_settings(same_task)[0])
        name = f"ablation__{_slug(c.run.model)}{suffix}__{_slug(c.entry.task)}.png"
        _save(fig, out / name, written)


def _speedup_curves(sources: Sources, out: Path, written: list[Path]) -> None:
    items = [(f, i) for f in sources.bench_hybrid for i in range(len(f.rows))]
    differing, _ = split_settings(f.configs[i] for f, i in items)
    groups: dict[tuple, list] = {}
    for f, i in items:
        groups.setdefault((f.models[i] or "model", config_key(f.configs[i])), []).append((f, i))
    for (model, _), members in sorted(groups.items()):
        fig, axes = _figure()
        ax = axes[0][0]
        lines: dict[tuple, list] = {}
        for f, i in members:
            r = f.rows[i]
            measured = r.get("speedup") or (r["dense_ms"] / r["hybrid_ms"])
            lines.setdefault((r["keep"], r["window"]), []).append(
                (r["length"], measured, r["bound"])
            )
        for (keep, window), pts in sorted(lines.items()):
            xs, ys, bounds = zip(*sorted(pts))
            (line,) = ax.plot(xs, ys, marker="o", label=f"keep={keep}, W={window}")
            bound_label = f"FLOP bound, keep={keep}, W={window}"
            ax.plot(xs, bounds, linestyle="--", color=line.get_color(), label=bound_label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("context length (tokens)")
        ax.set_ylabel("prefill speedup ×")
        ax.set_title(f"Hybrid attention — {model}", fontsize=9)
        ax.legend(fontsize=7)
        name = f"speedup__{_slug(model)}{_suffix(members[0][0].configs[members[0][1]], differing)}"
        _save(fig, out / f"{name}.png", written)


def _diagnostic_curves(sources: Sources, out: Path, written: list[Path]) -> None:
    from leaderboards.diagnostics import MODULES, unique_diagnostics

    files = unique_diagnostics(sources.diagnostics)
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
        fig.suptitle(f"{d.model} — variant {d.variant}", fontsize=9)
        name = f"diagnostics__{_slug(d.model)}{_suffix(d.config, differing)}__{d.variant}.png"
        _save(fig, out / name, written)


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
    if sources.runs:
        _ablation_curves(sources, out, written)
    if sources.bench_hybrid:
        _speedup_curves(sources, out, written)
    if sources.diagnostics:
        _diagnostic_curves(sources, out, written)
    return written
