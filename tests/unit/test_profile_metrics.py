"""Head-sparsity profile metrics: hand-derived cases (tests/data/profile/profile.json) + CIs.

The cases live apart from tests/data/metrics/ (whose runner calls harness.metrics functions
with ``args``): each case gives ``values``, ``num_layers``, ``top`` and per-metric expectations.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from harness.metrics.stats import bootstrap_ci
from harness.probes import profile

CASES = json.loads(
    (Path(__file__).parents[1] / "data" / "profile" / "profile.json").read_text(encoding="utf-8")
)["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_profile_metrics_hand_cases(case):
    got = profile.profile_metrics(case["values"], case["num_layers"], case["top"])
    tol = case["tolerance"]["abs"]
    for name, expected in case["expected"].items():
        value = float(got[name][0])
        if expected is None:
            assert math.isnan(value), name
        else:
            assert abs(value - expected) <= tol, (name, value, expected)


def test_rows_are_independent_and_shapes_accepted():
    rows = np.array([[4, 3, 2, 1], [1, 1, 1, 1]], dtype=float)
    both = profile.profile_metrics(rows, 2)
    for i in range(2):
        one = profile.profile_metrics(rows[i], 2)
        assert {k: v[i] for k, v in both.items()} == {k: v[0] for k, v in one.items()}
    cube = profile.profile_metrics(rows.reshape(2, 2, 2), 2)  # [R, L, H]
    assert all(np.array_equal(cube[k], both[k], equal_nan=True) for k in both)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="≥ 0"):
        profile.profile_metrics([1, -0.5, 1, 1], 2)
    with pytest.raises(ValueError, match="finite"):
        profile.profile_metrics([1, math.nan, 1, 1], 2)
    with pytest.raises(ValueError, match="layers"):
        profile.top_depth([1, 2, 3], 2)
    with pytest.raises(ValueError, match="mass level"):
        profile.heads_for_mass([1, 2], 0.0)
    with pytest.raises(ValueError, match="N ≥ 1"):
        profile.task_profile(np.zeros((0, 2, 2)))


def test_bootstrap_ci_equals_reference_loop():
    rng = np.random.default_rng(3)
    per_sample = rng.random((9, 3, 4)) ** 3
    prof = profile.task_profile(per_sample, top=2, n_boot=200, seed=5)

    def stat(v):
        m = profile.profile_metrics(v.mean(axis=0).ravel(), 3, 2)  # one row of L·H
        return np.array([m[name][0] for name in profile.METRICS])

    low, high = bootstrap_ci(per_sample, stat, n_boot=200, seed=5)
    for i, name in enumerate(profile.METRICS):
        assert prof["metrics"][name]["ci_low"] == pytest.approx(low[i], abs=1e-12)
        assert prof["metrics"][name]["ci_high"] == pytest.approx(high[i], abs=1e-12)
    point = profile.profile_metrics(per_sample.mean(axis=0)[None], 3, 2)
    assert prof["metrics"]["gini"]["value"] == pytest.approx(point["gini"][0], abs=1e-15)
    assert prof["top_count"] == 2 and prof["n_samples"] == 9
    assert prof["bootstrap"] == {"n_boot": 200, "seed": 5, "alpha": 0.05}


def test_sparse_model_profiles_sparser_than_dense_model():
    rng = np.random.default_rng(0)
    dense = rng.random((30, 4, 8)) * 0.1 + 0.05
    sparse = rng.random((30, 4, 8)) * 0.01
    sparse[:, 3, 2] += 0.8  # one deep head holds most of the mass
    ps, pd = (profile.task_profile(x, n_boot=100, top=1) for x in (sparse, dense))
    ms, md = ps["metrics"], pd["metrics"]
    assert ms["heads_for_50"]["value"] == pytest.approx(1 / 32)
    assert md["heads_for_50"]["value"] > 0.3
    assert ms["gini"]["value"] > 0.7 > 0.3 > md["gini"]["value"]
    assert ms["entropy_norm"]["value"] < md["entropy_norm"]["value"]
    assert ms["top_depth_centroid"]["value"] == 0.875  # the top head L3H2: (3 + 0.5) / 4
    for m in (ms, md):
        for stats in m.values():
            assert stats["ci_low"] <= stats["ci_high"]


def test_cumulative_mass_curve():
    assert profile.cumulative_mass([1, 3, 4, 2]) == pytest.approx([0.4, 0.7, 0.9, 1.0])
    assert all(math.isnan(x) for x in profile.cumulative_mass([0, 0]))
