"""Representation-geometry metrics (paper B), plus every data-driven case in tests/data/metrics."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

import harness.metrics as M
from harness.metrics import geometry as G

DATA = Path(__file__).resolve().parents[1] / "data" / "metrics"


def _cases():
    for path in sorted(DATA.glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            yield pytest.param(case, id=f"{path.stem}:{case['name']}")


@pytest.mark.parametrize("case", list(_cases()))
def test_data_driven_case(case):
    assert case["provenance"].strip(), "every case says how its expected value was derived"
    fn = getattr(M, case["function"])
    got = fn(**case["args"], **case.get("kwargs", {}))
    tol = case["tolerance"]
    expected = case["expected"]
    if isinstance(expected, dict):
        assert set(got) == set(expected)
        pairs = [(got[k], expected[k]) for k in expected]
    elif isinstance(expected, list):
        pairs = list(zip(got, expected, strict=True))
    else:
        pairs = [(got, expected)]
    for g, e in pairs:
        assert isinstance(g, float)
        assert g == pytest.approx(e, abs=tol.get("abs", 0.0), rel=tol.get("rel", 0.0))


def test_data_files_exist():
    assert len(list(DATA.glob("*.json"))) >= 3


def _rand(s, h, seed=0):
    return np.random.default_rng(seed).normal(size=(s, h))


@pytest.mark.parametrize("shape", [(5, 12), (12, 5), (7, 7), (1, 4), (4, 1)])
def test_singular_values_match_full_svd(shape):
    x = _rand(*shape)
    ref = np.linalg.svd(x, compute_uv=False)
    np.testing.assert_allclose(M.singular_values(x), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(6, 15), (15, 6)])
@pytest.mark.parametrize("energy", [0.5, 0.9, 0.99, 1.0])
def test_subspaces_match_svd_projectors(shape, energy):
    x = _rand(*shape, seed=1)
    sub = M.subspaces(x, energy)
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    r = M.energy_rank(s, energy)
    assert sub.sigma.size == r
    np.testing.assert_allclose(sub.col.T @ sub.col, np.eye(r), atol=1e-10)
    np.testing.assert_allclose(sub.row.T @ sub.row, np.eye(r), atol=1e-10)
    np.testing.assert_allclose(sub.col @ sub.col.T, u[:, :r] @ u[:, :r].T, atol=1e-9)
    np.testing.assert_allclose(sub.row @ sub.row.T, vt[:r].T @ vt[:r], atol=1e-9)


def test_energy_rank_by_hand():
    assert M.energy_rank([3.0, 1.0], 0.9) == 1  # 9/10 of the energy in σ_1
    assert M.energy_rank([3.0, 1.0], 0.95) == 2
    assert M.energy_rank([1.0, 1.0], 0.5) == 1  # exactly half; round-off must not push to 2
    assert M.energy_rank([2.0, 1.0, 0.0], 1.0) == 2
    assert M.energy_rank([0.0, 0.0], 0.99) == 0
    with pytest.raises(ValueError):
        M.energy_rank([1.0], 0.0)


@pytest.mark.parametrize("n", [1, 3, 8])
def test_erank_identity_is_n_and_rank_one_is_one(n):
    assert M.erank(np.eye(n)) == pytest.approx(n, abs=1e-12)
    assert M.erank(np.eye(n, 2 * n)) == pytest.approx(n, abs=1e-12)  # S < H
    rng = np.random.default_rng(n)
    assert M.erank(np.outer(rng.normal(size=n + 2), rng.normal(size=40))) == pytest.approx(1.0)


def test_erank_bounds_and_invariances():
    x = _rand(9, 20, seed=2)
    e = M.erank(x)
    assert 1.0 <= e <= 9.0
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.normal(size=(20, 20)))
    assert M.erank(-3.7 * x) == pytest.approx(e, rel=1e-12)  # any nonzero scale
    assert M.erank(x[rng.permutation(9)]) == pytest.approx(e, rel=1e-12)  # token order
    assert M.erank(x[:, rng.permutation(20)]) == pytest.approx(e, rel=1e-12)
    assert M.erank(x @ q) == pytest.approx(e, rel=1e-10)  # rotations of the hidden space
    assert M.erank(x.astype(np.float32)) == pytest.approx(e, rel=1e-5)


def _block_update(s, h, k, scale, seed=0):
    """X supported on the first k rows/cols; ΔX on the complementary block."""
    rng = np.random.default_rng(seed)
    x = np.zeros((s, h))
    x[:k, :k] = rng.normal(size=(k, k)) + 3 * np.eye(k)
    dx = np.zeros((s, h))
    dx[k:, k:] = scale * rng.normal(size=(s - k, h - k))
    return x, dx


def test_delta_d_zero_inside_and_known_outside():
    x, dx = _block_update(6, 10, 3, 1.0)
    rng = np.random.default_rng(5)
    inside = x.copy()
    inside[:3, :3] += rng.normal(size=(3, 3))  # stays in span(e1..e3) on both sides
    for variant in ("paper", "code"):
        assert M.delta_d(x, inside, variant, energy=1.0) == pytest.approx(0.0, abs=1e-12)
    x_new = x + dx
    # Both residuals equal ‖ΔX‖/‖X'‖: paper gives r, code √2·r.
    r = np.linalg.norm(dx) / np.linalg.norm(x_new)
    assert M.delta_d(x, x_new, "paper", 1.0) == pytest.approx(r, rel=1e-12)
    assert M.delta_d(x, x_new, "code", 1.0) == pytest.approx(math.sqrt(2) * r, rel=1e-12)
    assert r > 0


def test_delta_d_tiny_orthogonal_update_keeps_relative_accuracy():
    # A difference-of-squares residual would return ~1e-8 noise (or 0) here, not 1e-10.
    x, dx = _block_update(8, 16, 4, 1e-10, seed=7)
    x_new = x + dx
    r = np.linalg.norm(dx) / np.linalg.norm(x_new)
    assert r < 1e-9
    assert M.delta_d(x, x_new, "paper", 1.0) == pytest.approx(r, rel=1e-6)


def test_s_less_than_h_column_space_is_everything():
    x = _rand(3, 10, seed=8)  # full row rank: C(X) = R^3, so r_col = 0 and code = 2 · paper
    x_new = x + _rand(3, 10, seed=9)
    paper, code = M.delta_d(x, x_new, "paper", 1.0), M.delta_d(x, x_new, "code", 1.0)
    assert paper > 0
    assert code == pytest.approx(2 * paper, rel=1e-10)
    diag = M.module_diagnostics(x, x_new, "paper", energy=1.0)
    assert diag["dS"] == pytest.approx(abs(M.erank(x_new) - M.erank(x)) / 3, rel=1e-12)


def test_geometry_invariances():
    x, x_new = _rand(7, 11, seed=10), _rand(7, 11, seed=11)
    perm = np.random.default_rng(0).permutation(7)
    for variant in ("paper", "code"):
        base = M.rid(x, x_new, variant)
        assert M.rid(2.5 * x, 2.5 * x_new, variant) == pytest.approx(base, rel=1e-10)
        assert M.rid(x[perm], x_new[perm], variant) == pytest.approx(base, rel=1e-10)
        assert M.delta_d(4.0 * x, x_new, variant) == pytest.approx(M.delta_d(x, x_new, variant))


@pytest.mark.parametrize("variant", ["paper", "code"])
@pytest.mark.parametrize("energy", [0.9, 0.99])
def test_module_diagnostics_agrees_with_single_functions(variant, energy):
    x = _rand(10, 6, seed=12)
    x_new = x + 0.3 * _rand(10, 6, seed=13)
    d = M.module_diagnostics(x, x_new, variant, energy)
    assert d["eRank_in"] == pytest.approx(M.erank(x))
    assert d["eRank_out"] == pytest.approx(M.erank(x_new))
    assert d["dS"] == pytest.approx(M.delta_s(x, x_new))
    assert d["dD"] == pytest.approx(M.delta_d(x, x_new, variant, energy))
    assert d["RID"] == pytest.approx(M.rid(x, x_new, variant, energy))
    assert d["TME_in"] == pytest.approx(M.tme(x, variant))
    assert d["MixIG"] == pytest.approx(M.mixig(x, x_new, variant))
    assert all(isinstance(v, float) for v in d.values())


def _tme_paper_reference(x):
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    w = (unit @ unit.T + 1) / 2
    p = w / w.sum(1, keepdims=True)
    return float(np.mean(-np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0), 1)))


@pytest.mark.parametrize("s", [2, 5, 9])
def test_tme_orthogonal_tokens_closed_form(s):
    x = np.eye(s, s + 3)  # S orthogonal unit tokens: P = 2/(S+1) on self, 1/(S+1) elsewhere
    expected = math.log(s + 1) - 2 / (s + 1) * math.log(2)
    assert M.tme(x, "paper") == pytest.approx(expected, abs=1e-12)
    assert M.tme(np.tile([[0.3, -1.0, 2.0]], (s, 1)), "paper") == pytest.approx(math.log(s))
    assert M.tme(np.tile([[0.3, -1.0, 2.0]], (s, 1)), "code") == pytest.approx(1.0)


def test_tme_chunked_equals_reference(monkeypatch):
    x = _rand(23, 5, seed=14)
    ref = _tme_paper_reference(x)
    assert M.tme(x, "paper") == pytest.approx(ref, rel=1e-12)
    monkeypatch.setattr(G, "_ROW_CHUNK", 4)
    assert M.tme(x, "paper") == pytest.approx(ref, rel=1e-12)


def test_tme_permutation_and_scale_behaviour():
    x = _rand(8, 5, seed=15)
    rng = np.random.default_rng(1)
    perm = rng.permutation(8)
    scales = rng.uniform(0.1, 10.0, size=(8, 1))
    paper = M.tme(x, "paper")
    assert 0.0 <= paper <= math.log(8)
    assert M.tme(x[perm], "paper") == pytest.approx(paper, rel=1e-12)
    assert M.tme(x * scales, "paper") == pytest.approx(paper, rel=1e-12)
    code = M.tme(x, "code")
    assert 0.0 <= code <= 1.0
    assert M.tme(x * scales, "code") == pytest.approx(code, rel=1e-12)
    first = np.r_[rng.permutation(7), 7]  # keep the last token where it is
    assert M.tme(x[first], "code") == pytest.approx(code, rel=1e-12)
    moved = np.r_[7, np.arange(7)]  # a different token last: a different value
    assert M.tme(x[moved], "code") != pytest.approx(code, rel=1e-6)
    assert M.tme(x[:1], "code") == 0.0


def test_mixig_and_erope_floor():
    x, y = _rand(6, 4, seed=16), _rand(6, 4, seed=17)
    assert M.mixig(x, y, "code") == pytest.approx(M.tme(y, "code") - M.tme(x, "code"))
    assert M.erope_floor(x, x) == pytest.approx(0.0, abs=1e-12)
    assert M.erope_floor(y, x, "code") == pytest.approx(M.rid(x, y, "code"))  # old = no RoPE


@pytest.mark.parametrize(
    "call",
    [
        lambda: M.erank(np.zeros((3, 4))),
        lambda: M.erank(np.ones((2, 3, 4))),
        lambda: M.erank([[1.0, np.nan]]),
        lambda: M.delta_d(np.eye(3), np.eye(4)),
        lambda: M.delta_d(np.eye(3), np.zeros((3, 3))),
        lambda: M.tme(np.eye(3), variant="both"),
        lambda: M.module_diagnostics(np.eye(3), np.eye(3), variant="Paper"),
    ],
)
def test_bad_inputs_raise(call):
    with pytest.raises(ValueError):
        call()
