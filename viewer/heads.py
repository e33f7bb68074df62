"""Heads page data: each ranking's per-task L×H RAM matrix, and the saved attention maps.

A ranking (:mod:`harness.schema.ranking`) gives, per task, the mean RAM of every head; the
page draws it as a heatmap (layer 0 at the bottom, as the figures do). Attention maps saved
beside the ranking (``headscope rank --maps N``) are attached per task by :mod:`viewer.maps`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["ranking_views", "DIGITS"]

#: Significant digits kept for RAM values and attention weights in the page data.
DIGITS = 4


def _round(value: float) -> float | None:
    if value != value:  # NaN
        return None
    return float(f"{value:.{DIGITS}g}")


def ranking_views(rankings: Sequence[Any], warnings: list[str]) -> list[dict[str, Any]]:
    """One heads view per ranking file (:class:`leaderboards.sources.RankingFile`).

    Each holds ``id``, ``model``, ``run`` (folder name), ``path``, the geometry, and per task
    ``mean`` (``[L][H]``), ``n`` (samples), ``top`` (the 5 best heads, best first) and
    ``maps`` (the saved attention maps' page data, or None when none were saved).
    """
    from leaderboards.labels import model_display
    from viewer.maps import find_maps, task_maps
    from viewer.samples import run_name

    out = []
    for i, rf in enumerate(rankings):
        ranking = rf.ranking
        maps = find_maps(Path(rf.path), warnings)
        tasks = {}
        for name, task in ranking.tasks.items():
            mean = [[_round(float(v)) for v in row] for row in task.mean.tolist()]
            top = [str(h) for h in ranking.top_heads(name, 5)]
            tasks[name] = {
                "mean": mean,
                "n": int(task.per_sample.shape[0]),
                "top": top,
                "maps": None if maps is None else task_maps(maps, name),
            }
        out.append(
            {
                "id": f"k{i}",
                "model": model_display(ranking.model),
                "run": run_name(Path(rf.path)),
                "path": str(rf.path),
                "num_layers": ranking.num_layers,
                "num_heads": ranking.num_heads,
                "tasks": tasks,
            }
        )
    return out
