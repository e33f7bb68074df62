"""Issue 22 in the leaderboard: sparsity table and figure (recomputed independently from the
ranking), adaptive hybrid rows kept apart from the static bench join."""

import math
from pathlib import Path

import numpy as np
import pytest

from leaderboards import load_sources
from leaderboards.profiles import sparsity_tables

DATA = Path(__file__).resolve().parents[1] / "data" / "leaderboards"


@pytest.fixture(scope="module")
def rankings():
    return load_sources([DATA / "run_a"]).rankings


def _by_hand(matrix):
    """heads_for_50 and Gini from a mean [L, H] matrix, with plain Python loops."""
    xs = [float(x) for x in np.ravel(matrix)]
    total, n = sum(xs), len(xs)
    acc, count = 0.0, 0
    for x in sorted(xs, reverse=True):
        acc, count = acc + x, count + 1
        if acc >= 0.5 * total:
            break
    pairs = sum(abs(a - b) for a in xs for b in xs)
    return count / n, pairs / (2 * n * n * (total / n))


def test_sparsity_table_matches_hand_recomputation(rankings):
    headline, detail = sparsity_tables(rankings, n_boot=50)
    ranking = rankings[0].ranking
    assert [r["task"] for r in headline.rows] == ranking.task_names
    for row in headline.rows:
        mean = ranking.tasks[row["task"]].per_sample.mean(axis=0)
        heads50, gini = _by_hand(mean)
        assert row["heads_for_50"] == heads50
        assert math.isclose(row["gini"], gini, abs_tol=1e-12)
        assert row["n"] == 6 and row["heads"] == 8
    assert not headline.detail and detail.detail
    assert len(detail.rows) == 3 * 8
    for r in detail.rows:
        assert r["ci_low"] <= r["ci_high"]


def test_two_models_side_by_side(tmp_path):
    from harness.schema.ranking import Ranking, load_ranking, save_ranking

    base = load_ranking(DATA / "run_a" / "ranking.json")
    other = Ranking(
        model={**base.model, "name": "other-model", "pretrained": "other-model"},
        settings=base.settings,
        tasks={"refcocog_toy": base.tasks["refcocog_toy"]},
        num_layers=base.num_layers,
        num_heads=base.num_heads,
    )
    save_ranking(tmp_path / "ranking.json", other)
    files = load_sources([DATA / "run_a" / "ranking.json", tmp_path / "ranking.json"]).rankings
    headline, _ = sparsity_tables(files, n_boot=20)
    models = [(r["model"], r["task"]) for r in headline.rows]
    assert len(models) == 4 and len({m for m, _ in models}) == 2
    same = [r for r in headline.rows if r["task"] == "refcocog_toy"]
    assert same[0]["gini"] == same[1]["gini"]  # the same samples give the same profile


def test_sparsity_figure_written(rankings, tmp_path):
    pytest.importorskip("matplotlib")
    from leaderboards.figures import write_figures

    written = write_figures(load_sources([DATA / "run_a"]), tmp_path)
    path = tmp_path / "sparsity.png"
    assert path in written and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_adaptive_hybrid_is_not_joined_to_static_bench_rows():
    from types import SimpleNamespace

    from leaderboards.speedup import hybrid_args

    def entry(args):
        return SimpleNamespace(intervention_spec={"name": "hybrid", "args": args},
                               intervention_resolved={})  # fmt: skip

    assert hybrid_args(entry({"keep": 0.1, "window": 24}))["keep"] == 0.1
    assert hybrid_args(entry({"select": "adaptive", "keep": 0.1, "window": 24})) is None
