"""RAM statistics (paper A) and the shared seeded statistics helpers."""

import math

import numpy as np
import pytest
from scipy import stats as sps

import harness.metrics as M
from harness.api.heads import Head


def test_mean_stderr_by_hand_and_edges():
    mean, err = M.mean_stderr([2.0, 4.0, 9.0])
    assert mean == pytest.approx(5.0)
    # deviations (−3, −1, 4): Σ² = 26, sd = √13, stderr = √13/√3
    assert err == pytest.approx(math.sqrt(13 / 3))
    assert math.isnan(M.mean_stderr([1.5])[1])
    with pytest.raises(ValueError):
        M.mean_stderr([])


def test_bootstrap_ci_seeded_and_contains_estimate():
    values = np.random.default_rng(0).normal(1.0, 2.0, size=60)
    a = M.bootstrap_ci(values, n_boot=500, seed=3)
    assert a == M.bootstrap_ci(values, n_boot=500, seed=3)
    assert a != M.bootstrap_ci(values, n_boot=500, seed=4)
    assert a[0] < values.mean() < a[1]
    # Percentile CI of the mean ≈ mean ± 1.96 stderr for a roughly normal sample.
    _, err = M.mean_stderr(values)
    assert (a[1] - a[0]) == pytest.approx(2 * 1.96 * err, rel=0.25)
    med = M.bootstrap_ci(values, stat=np.median, n_boot=300, seed=0)
    assert med[0] <= np.median(values) <= med[1]
    narrow = M.bootstrap_ci(values, n_boot=500, seed=3, alpha=0.5)
    assert a[0] < narrow[0] < narrow[1] < a[1]


def test_bootstrap_counts_match_indices():
    idx = M.bootstrap_indices(7, 20, seed=5)
    counts = M.bootstrap_counts(7, 20, seed=5)
    assert counts.shape == (20, 7)
    np.testing.assert_array_equal(counts.sum(1), np.full(20, 7.0))
    for b in range(20):
        np.testing.assert_array_equal(counts[b], np.bincount(idx[b], minlength=7))


def test_vectorised_mean_ci_equals_reference_loop():
    x = np.random.default_rng(1).uniform(size=(25, 3, 4))
    fast = M.bootstrap_mean_ci(x, n_boot=200, seed=9)
    ref = M.bootstrap_ci(x, stat=lambda v: v.mean(axis=0), n_boot=200, seed=9)
    np.testing.assert_allclose(fast[0], ref[0], rtol=1e-12)
    np.testing.assert_allclose(fast[1], ref[1], rtol=1e-12)


def test_ram_reference_shapes_and_uniform_rows():
    s = 6
    attn = np.tril(np.ones((s, s)))
    attn /= attn.sum(1, keepdims=True)  # causal uniform: row t puts 1/(t+1) on each key ≤ t
    grid = np.broadcast_to(attn, (2, 3, s, s))
    out = M.ram_reference(grid, query_positions=[4, 5], region_positions=[0, 1, 1])
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out, (2 / 5 + 2 / 6) / 2)  # duplicate region index counted once
    with pytest.raises(ValueError):
        M.ram_reference(attn, [], [0])


def test_aggregate_ram_matches_numpy_and_reference_bootstrap():
    ps = np.random.default_rng(2).beta(2, 5, size=(30, 4, 3))
    summ = M.aggregate_ram(ps, n_boot=300, seed=1)
    np.testing.assert_allclose(summ.mean, ps.mean(0))
    np.testing.assert_allclose(summ.stderr, ps.std(0, ddof=1) / math.sqrt(30))
    low, high = M.bootstrap_ci(ps, stat=lambda v: v.mean(0), n_boot=300, seed=1)
    np.testing.assert_allclose(summ.ci_low, low, rtol=1e-12)
    np.testing.assert_allclose(summ.ci_high, high, rtol=1e-12)
    assert (summ.ci_low <= summ.mean).all() and (summ.mean <= summ.ci_high).all()
    assert summ.n == 30
    with pytest.raises(ValueError):
        M.aggregate_ram(np.zeros((4, 3)))
    with pytest.raises(ValueError):
        M.aggregate_ram(np.full((2, 2, 2), np.nan))


def test_spearman_equals_scipy_including_ties():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(6, 4))
    b = a + rng.normal(scale=0.7, size=(6, 4))
    assert M.spearman(a, b) == pytest.approx(sps.spearmanr(a.ravel(), b.ravel())[0], rel=1e-12)
    ta, tb = np.round(a), np.round(b)  # many ties
    assert M.spearman(ta, tb) == pytest.approx(sps.spearmanr(ta.ravel(), tb.ravel())[0])
    assert M.spearman(a, np.exp(a)) == pytest.approx(1.0)  # rank-based: monotone maps ignored
    with pytest.raises(ValueError):
        M.spearman(a, b[:5])


def test_spearman_bootstrap_reproducible_and_brackets_rho():
    rng = np.random.default_rng(4)
    signal = rng.uniform(size=(5, 4))
    pa = signal + rng.normal(scale=0.3, size=(40, 5, 4))
    pb = signal + rng.normal(scale=0.3, size=(35, 5, 4))
    res = M.spearman_bootstrap(pa, pb, n_boot=300, seed=2)
    assert res == M.spearman_bootstrap(pa, pb, n_boot=300, seed=2)
    assert res.rho == pytest.approx(M.spearman(pa.mean(0), pb.mean(0)))
    assert res.ci_low <= res.rho <= res.ci_high <= 1.0
    assert res.n_boot == 300
    # Reference loop over the same draws (task a: seed, task b: seed + 1).
    ia, ib = M.bootstrap_indices(40, 300, 2), M.bootstrap_indices(35, 300, 3)
    rhos = [M.spearman(pa[i].mean(0), pb[j].mean(0)) for i, j in zip(ia, ib)]
    assert res.ci_low == pytest.approx(np.quantile(rhos, 0.025), rel=1e-12)
    assert res.ci_high == pytest.approx(np.quantile(rhos, 0.975), rel=1e-12)
    with pytest.raises(ValueError):
        M.spearman_bootstrap(pa, pb[:, :4])


def test_top_bottom_heads_ties_and_fractions():
    m = np.array([[0.1, 0.9, 0.5], [0.9, 0.2, 0.0]])
    assert M.top_heads(m, 3) == [Head(0, 1), Head(1, 0), Head(0, 2)]  # tie → layer-major
    assert [str(h) for h in M.bottom_heads(m, 2)] == ["L1H2", "L0H0"]
    assert len(M.top_heads(m, 0.5)) == 3 and len(M.top_heads(m, 0.1)) == 1  # ceil(0.6) = 1
    assert M.top_heads(m, 0) == []
    for bad in (7, 2.5, -1):
        with pytest.raises(ValueError):
            M.top_heads(m, bad)


def test_universal_heads_constructed_example():
    base = np.arange(12, dtype=float).reshape(3, 4)  # best heads: L2H3, L2H2, L2H1, L2H0, ...
    other = base.copy()
    other[2, 3], other[0, 0] = -1.0, 100.0  # L2H3 drops out, L0H0 jumps in
    third = base.copy()
    third[2, 2] = -5.0  # L2H2 drops out
    got = M.universal_heads({"a": base, "b": other, "c": third}, 4)
    # top-4 a: {L2H3,L2H2,L2H1,L2H0}; b: {L0H0,L2H2,L2H1,L2H0}; c: {L2H3,L2H1,L2H0,L1H3}
    assert got == [Head(2, 0), Head(2, 1)]
    assert M.universal_heads({"a": base}, 2) == [Head(2, 2), Head(2, 3)]
    with pytest.raises(ValueError):
        M.universal_heads({"a": base, "b": base[:2]}, 2)
    with pytest.raises(ValueError):
        M.universal_heads({}, 2)


def test_layer_distribution():
    m = np.zeros((4, 3))
    m[3] = [5, 6, 7]
    m[1, 0] = 4
    counts = M.layer_distribution(m, 4)
    np.testing.assert_array_equal(counts, [0, 1, 0, 3])
    assert counts.sum() == 4


def test_key_region_degree_ratio_and_groups():
    region = np.array([[0.1, 0.0], [0.2, 0.1]])
    total = np.array([[0.5, 0.5], [0.5, 0.5]])
    assert M.key_region_degree_ratio(region, total) == pytest.approx(0.4 / 2.0)
    for r, t in (([0.6], [0.5]), ([-0.1], [0.5]), ([0.0], [0.0]), ([0.1, 0.1], [0.5])):
        with pytest.raises(ValueError):
            M.key_region_degree_ratio(r, t)
    groups = M.ratio_by_correctness([0.1, 0.2, 0.05, 0.03], [True, True, False, False])
    assert groups["correct"]["mean"] == pytest.approx(0.15)
    assert groups["wrong"]["mean"] == pytest.approx(0.04)
    assert groups["wrong"]["n"] == 2
    assert groups["correct"]["stderr"] == pytest.approx(0.05)  # sd √0.005 / √2
    empty = M.ratio_by_correctness([0.1], [True])["wrong"]
    assert empty["n"] == 0 and math.isnan(empty["mean"])
