"""Cross-task agreement of CoRe-head rankings: Spearman ρ with CIs and universal heads.

Input: ranking files written by :mod:`harness.schema.ranking` (``"format": "headscope.ranking"``),
one per model and settings, each holding per-task ``[N, L, H]`` per-sample RAM. ρ is computed
between two tasks' mean L×H matrices with :func:`harness.metrics.ram.spearman_bootstrap`
(the CI resamples each task's samples; the seed is the ranking's bootstrap seed). Universal
heads (:meth:`harness.schema.ranking.Ranking.universal_heads`) are those in the top-``k`` of every
task of a ranking.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations

from leaderboards.formatting import Column, Table
from leaderboards.labels import MODEL_COLUMNS, model_cells, model_names
from leaderboards.settings import (
    check_unique,
    config_key,
    settings_note,
    settings_row,
    split_settings,
)
from leaderboards.sources import RankingFile

__all__ = ["spearman_table", "universal_table", "unique_rankings", "ranking_model_names"]


def _same(a: RankingFile, b: RankingFile) -> bool:
    return a.ranking.to_dict() == b.ranking.to_dict()


def unique_rankings(files: Sequence[RankingFile]) -> list[RankingFile]:
    """Rankings with duplicates (same model and settings) dropped or refused.

    Raises:
        leaderboards.sources.MergeError: Two rankings of one model and settings that differ.
    """
    return sorted(
        check_unique(
            files,
            lambda f: (f.model, config_key(f.config)),
            _same,
            lambda f: f"ranking of {f.model} in {f.path}",
        ),
        key=lambda f: (f.model, config_key(f.config)),
    )


def ranking_model_names(files: Sequence[RankingFile]) -> dict[str, str]:
    """Model identity → short display name for ``files``."""
    return model_names((f.model, f.ranking.model) for f in files)


def spearman_table(files: Sequence[RankingFile], n_boot: int = 1000) -> Table:
    """Task × task Spearman ρ of mean RAM with percentile bootstrap CIs.

    Args:
        files: Loaded rankings.
        n_boot: Bootstrap replicates per pair.
    """
    from harness.metrics.ram import spearman_bootstrap

    files = unique_rankings(files)
    differing, common = split_settings(f.config for f in files)
    rows, names = [], ranking_model_names(files)
    for f in files:
        rk = f.ranking
        for a, b in combinations(rk.task_names, 2):
            ta, tb = rk.tasks[a], rk.tasks[b]
            seed = int(ta.bootstrap.get("seed", 0))
            alpha = float(ta.bootstrap.get("alpha", 0.05))
            res = spearman_bootstrap(ta.per_sample, tb.per_sample, n_boot, seed, alpha)
            rows.append(
                {
                    **model_cells(f.model, names),
                    **settings_row(f.config, differing),
                    "task_a": a,
                    "task_b": b,
                    "rho": res.rho,
                    "ci_low": res.ci_low,
                    "ci_high": res.ci_high,
                    "n_a": ta.per_sample.shape[0],
                    "n_b": tb.per_sample.shape[0],
                }
            )
    columns = [*MODEL_COLUMNS, *(Column(f"set:{key}", key) for key in differing)]
    columns += [
        Column("task_a", "task A"),
        Column("task_b", "task B"),
        Column("rho", "ρ", "float"),
        Column("ci_low", "CI low", "float"),
        Column("ci_high", "CI high", "float"),
        Column("n_a", "n A", "int"),
        Column("n_b", "n B", "int"),
    ]
    notes = [
        f"Spearman ρ between the tasks' mean L×H RAM matrices; percentile bootstrap CI over "
        f"samples ({n_boot} replicates, the ranking's seed and alpha)."
    ]
    notes += [n for n in [settings_note(common)] if n]
    return Table(
        "spearman", "Cross-task agreement (Spearman ρ)", tuple(columns), tuple(rows), tuple(notes)
    )


def universal_table(files: Sequence[RankingFile], k: float = 0.05) -> Table:
    """Universal heads per ranking: in the top-``k`` (count or fraction) of every task."""
    files = unique_rankings(files)
    differing, common = split_settings(f.config for f in files)
    rows, names = [], ranking_model_names(files)
    for f in files:
        rk = f.ranking
        heads = rk.universal_heads(k)
        layers = Counter(h.layer for h in heads)
        rows.append(
            {
                **model_cells(f.model, names),
                **settings_row(f.config, differing),
                "tasks": len(rk.task_names),
                "k": k,
                "top_per_task": len(rk.top_heads(rk.task_names[0], k)),
                "count": len(heads),
                "layers": " ".join(f"L{layer}×{n}" for layer, n in sorted(layers.items())),
                "heads": " ".join(str(h) for h in heads),
            }
        )
    columns = [*MODEL_COLUMNS, *(Column(f"set:{key}", key) for key in differing)]
    columns += [
        Column("tasks", kind="int"),
        Column("k", "k", "float"),
        Column("top_per_task", "top-k heads", "int"),
        Column("count", "universal", "int"),
        Column("layers"),
        Column("heads"),
    ]
    notes = ["Universal heads: in the top-k (by mean RAM) of every task of the ranking."]
    notes += [n for n in [settings_note(common)] if n]
    return Table(
        "universal_heads", "Universal CoRe heads", tuple(columns), tuple(rows), tuple(notes)
    )
