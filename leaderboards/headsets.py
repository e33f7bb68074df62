"""Head sets compared: Spearman ρ over scores, Jaccard and overlap of the top-``k`` heads.

Inputs: ``headscope.heads`` files (``headscope heads export`` / ``import``: a ranking's or an
intervention cell's heads, SparseMM visual heads, DuoAttention retrieval heads, a plain list)
and every task of the rankings given beside them (each task's mean RAM is a head set named
``ram TASK``). Every pair of sets on the same head grid is one row
(:func:`harness.schema.headsets.compare_head_sets`); sets of different grids (other models)
are never paired. The table is drawn only when at least one head-set file is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import combinations
from typing import Any

from leaderboards.formatting import Column, Table
from leaderboards.sources import HeadSetFile, RankingFile

__all__ = ["head_sets_table"]


def _ranking_sets(files: Sequence[RankingFile]) -> list[tuple[str, Any]]:
    from harness.schema.headsets import HeadSet
    from leaderboards.spearman import ranking_model_names, unique_rankings

    files = unique_rankings(files)
    names = ranking_model_names(files)
    sets = []
    for f in files:
        rk = f.ranking
        for task in rk.task_names:
            name = f"ram {task} ({names[f.model]})"
            head_set = HeadSet(
                name,
                rk.num_layers,
                rk.num_heads,
                scores=rk.matrix(task),
                source={"kind": "ranking"},
            )
            sets.append((str(f.path), head_set))
    return sets


def head_sets_table(
    files: Sequence[HeadSetFile], rankings: Sequence[RankingFile] = (), k: float = 0.05
) -> Table:
    """Every pair of head sets on one grid: ρ, Jaccard@k, overlap@k, shared heads.

    Args:
        files: Loaded head-set files.
        rankings: Rankings whose tasks join the comparison.
        k: Top heads compared: a count, or a fraction of the grid's query heads (rounded
            up); a set without scores is compared through its own selection.
    """
    from harness.metrics.ram import head_count
    from harness.schema.headsets import compare_head_sets

    sets = [(str(f.path), f.head_set) for f in _unique_names(files)] + _ranking_sets(rankings)
    rows = []
    for (path_a, a), (path_b, b) in combinations(sets, 2):
        if a.num_layers != b.num_layers or (
            None not in (a.num_heads, b.num_heads) and a.num_heads != b.num_heads
        ):
            continue
        per_layer = a.num_heads or b.num_heads or a.num_units
        count = head_count(k, a.num_layers * per_layer)
        c = compare_head_sets(a, b, count)
        rows.append(
            {
                "set_a": a.name,
                "set_b": b.name,
                "grid": f"{a.num_layers}×{per_layer}",
                "spearman": c.spearman,
                "k": c.k,
                "jaccard": c.jaccard,
                "overlap": c.overlap,
                "shared": c.shared,
                "path_a": path_a,
                "path_b": path_b,
            }
        )
    columns = (
        Column("set_a", "set A"),
        Column("set_b", "set B"),
        Column("grid", "L×H"),
        Column("spearman", "ρ", "float"),
        Column("k", "k", "int"),
        Column("jaccard", "Jaccard@k", "float"),
        Column("overlap", "overlap@k", "float"),
        Column("shared", "shared", "int"),
        Column("path_a", "file A", machine=True),
        Column("path_b", "file B", machine=True),
    )
    notes = (
        "Spearman ρ of the two sets' L×H query-head scores (— where a set has none: a list); "
        f"Jaccard and overlap (|A∩B| / k) of each set's top-k heads, k = {k:g} "
        f"{'of the grid' if k < 1 else 'heads'}; a set without scores is compared through its "
        "own heads; a KV-group set (DuoAttention) gives each group's score to its query heads.",
    )
    return Table("head_sets", "Head sets compared", columns, tuple(rows), notes)


def _unique_names(files: Sequence[HeadSetFile]) -> list[HeadSetFile]:
    """Files whose set names repeat get their file name appended (rows stay told apart)."""
    names = [f.head_set.name for f in files]
    return [
        f
        if names.count(f.head_set.name) == 1
        else replace(f, head_set=replace(f.head_set, name=f"{f.head_set.name} [{f.path}]"))
        for f in files
    ]
