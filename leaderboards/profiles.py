"""Head-sparsity profiles side by side: one table and one figure over every loaded ranking.

Each ranking file holds per-task ``[N, L, H]`` per-sample RAM; the profile of every task is
recomputed here with :func:`harness.probes.profile.task_profile` (the ranking's bootstrap
seed and α, ``--n-boot`` replicates), the same function ``headscope rank`` writes
``profile.json`` with, so the two agree.

- ``sparsity`` (headline): per model, settings and task, the fraction of heads carrying
  50 / 80 / 90 % of the RAM, Gini, normalised entropy, depth centroid and spread of the top
  5 % heads;
- ``sparsity_ci`` (detail): every metric with its percentile bootstrap CI and bias;
- figure ``sparsity.png``: heads sorted by RAM (share of the total, log scale) and the
  cumulative mass curve, one line per model and task, x = fraction of heads so models with
  different head counts share the axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from leaderboards.formatting import Column, Table
from leaderboards.labels import MODEL_COLUMNS, model_cells
from leaderboards.settings import settings_note, settings_row, split_settings
from leaderboards.sources import RankingFile

__all__ = ["profile_rows", "sparsity_tables", "sparsity_figure"]

_HEADLINE = (
    ("heads_for_50", "heads 50%"),
    ("heads_for_80", "heads 80%"),
    ("heads_for_90", "heads 90%"),
    ("gini", "Gini"),
    ("entropy_norm", "entropy/log n"),
    ("top_depth_centroid", "top-5% depth"),
    ("top_depth_spread", "depth spread"),
)


def profile_rows(files: Sequence[RankingFile], n_boot: int = 1000) -> list[dict[str, Any]]:
    """One ``{"file", "task", "profile"}`` per ranking task (unique rankings, sorted)."""
    from harness.probes.profile import task_profile
    from leaderboards.spearman import unique_rankings

    out = []
    for f in unique_rankings(files):
        for task in f.ranking.task_names:
            t = f.ranking.tasks[task]
            boot = t.bootstrap or {}
            prof = task_profile(
                t.per_sample,
                n_boot=n_boot,
                seed=int(boot.get("seed", 0)),
                alpha=float(boot.get("alpha", 0.05)),
            )
            out.append({"file": f, "task": task, "profile": prof})
    return out


def sparsity_tables(files: Sequence[RankingFile], n_boot: int = 1000) -> list[Table]:
    """The headline ``sparsity`` table and the ``sparsity_ci`` detail table."""
    from leaderboards.spearman import ranking_model_names

    items = profile_rows(files, n_boot)
    differing, common = split_settings(it["file"].config for it in items)
    names = ranking_model_names([it["file"] for it in items])
    head_rows, ci_rows = [], []
    for it in items:
        f, prof = it["file"], it["profile"]
        base = {
            **model_cells(f.model, names),
            **settings_row(f.config, differing),
            "task": it["task"],
            "n": prof["n_samples"],
            "heads": prof["num_layers"] * prof["num_heads"],
        }
        head_rows.append({**base, **{k: prof["metrics"][k]["value"] for k, _ in _HEADLINE}})
        for metric, stats in prof["metrics"].items():
            ci_rows.append({**base, "metric": metric, **stats})
    lead = [*MODEL_COLUMNS, *(Column(f"set:{key}", key) for key in differing)]
    lead += [Column("task"), Column("n", "n", "int"), Column("heads", "heads", "int")]
    notes = [
        "Fractions of heads (largest mean RAM first) holding 50/80/90 % of the total RAM; "
        "Gini and entropy of the heads' RAM shares; depth = (layer + 0.5) / L of the top 5 % "
        "heads (mean and population sd). Bootstrap CIs: table sparsity_ci "
        f"({n_boot} replicates over samples)."
    ]
    notes += [n for n in [settings_note(common)] if n]
    headline = Table(
        "sparsity",
        "Head-sparsity profile of RAM",
        (*lead, *(Column(k, title, "float") for k, title in _HEADLINE)),
        tuple(head_rows),
        tuple(notes),
    )
    detail = Table(
        "sparsity_ci",
        "Head-sparsity profile with bootstrap CIs",
        (
            *lead,
            Column("metric"),
            Column("value", "value", "float"),
            Column("ci_low", "CI low", "float"),
            Column("ci_high", "CI high", "float"),
            Column("bias", "boot bias", "signed"),
        ),
        tuple(ci_rows),
        tuple(notes[1:])
        + ("bias = mean of the bootstrap replicates − estimate (few samples look sparser).",),
        detail=True,
    )
    return [headline, detail]


def sparsity_figure(files: Sequence[RankingFile]) -> Any:
    """The ``sparsity`` figure: sorted RAM shares and cumulative mass per model and task.

    Returns:
        A matplotlib Figure, or None without rankings (written by
        :func:`leaderboards.figures.write_figures` as PNG + PDF).
    """
    import numpy as np

    from harness.probes.plots import legend_below, new_figure
    from harness.probes.profile import cumulative_mass
    from leaderboards.spearman import ranking_model_names, unique_rankings

    files = unique_rankings(files)
    if not files:
        return None
    differing, _ = split_settings(f.config for f in files)
    names = ranking_model_names(files)
    fig, axes = new_figure(1, 2, size=(10.0, 4.8))
    left, right = axes[0]
    models = sorted({f.model for f in files})
    tasks = sorted({t for f in files for t in f.ranking.task_names})
    styles = ("-", "--", ":", "-.")
    for f in files:
        for task in f.ranking.task_names:
            cum = np.asarray(cumulative_mass(f.ranking.tasks[task].per_sample.mean(axis=0)[None]))
            x = np.arange(1, cum.size + 1) / cum.size
            share = np.diff(np.concatenate([[0.0], cum]))
            rest = 1.0 - cum  # RAM outside the top heads: separates tasks whose cumulative
            # curves all reach ~1 within a few heads (the toy's two reading heads)
            label = " ".join([names[f.model], *(f"{k}={f.config.get(k)}" for k in differing), task])
            style = {
                "color": f"C{tasks.index(task) % 10}",  # a colour per task
                "linestyle": styles[models.index(f.model) % len(styles)],  # a line per model
                "marker": "o",
                "markersize": 2.5,
                "label": label,
            }
            left.plot(x, np.where(share > 0, share, np.nan), **style)
            right.plot(x, np.where(rest > 1e-12, rest, np.nan), **style)
    left.set_yscale("log")
    left.set_ylabel("share of the total RAM")
    right.set_yscale("log")
    right.set_ylabel("RAM outside the top heads (1 − cumulative share)")
    for ax in (left, right):
        ax.set_xlabel("heads sorted by RAM, largest first (fraction of all heads)")
    for level, covered in ((0.5, "50 %"), (0.2, "80 %"), (0.1, "90 %")):
        right.axhline(level, color="grey", linewidth=0.6, linestyle=":")
        right.annotate(
            f"{covered} covered",
            (1.0, level),
            xycoords=("axes fraction", "data"),
            ha="right",
            va="bottom",
            fontsize=7,
            color="grey",
        )
    legend_below(fig, [right])
    fig.suptitle("Head-sparsity profile: RAM over heads, per model and task", fontsize=10)
    return fig
