"""Representation geometry of residual updates (paper B, "LVLMs Get Lost in Attention").

A hidden-state matrix ``X`` is ``[S, H]`` (tokens × hidden size); an update is
``X' = X + ΔX``. Everything is computed in float64 numpy; callers convert tensors with
``t.float().cpu().numpy()``. Definitions (see ``shared/design/metrics.md``):

- ``eRank(X) = exp(−Σ p_i log p_i)``, ``p_i = σ_i / Σ σ_j`` (singular values, not squared).
- ``ΔS = |eRank(X') − eRank(X)| / min(S, H)``.
- ``ΔD``: how much of ``X'`` lies outside the column subspace ``C(X) ⊂ R^S`` and the row
  subspace ``R(X) ⊂ R^H`` of the *old* ``X``; subspaces keep the leading singular directions
  that hold ``energy`` (default 0.99) of ``Σ σ²``. With ``r_col = ‖(I − P_C) X'‖_F / ‖X'‖_F``
  and ``r_row = ‖X' (I − P_R)‖_F / ‖X'‖_F``: paper ``(r_col + r_row) / 2``; code
  ``√(r_col² + r_row²)``.
- ``RID = ΔS + ΔD``; ``MixIG = TME(X') − TME(X)``.
- Token Mixing Entropy: cosine similarities of token rows mapped to weights ``(cos + 1) / 2``;
  paper: each row normalised to a distribution over all tokens (self included), entropy in nats,
  mean over rows; code: weights to the power 8, last token's row only, entropy / ``log S``.

Singular values come from ``eigh`` of the smaller Gram matrix (``X Xᵀ`` or ``XᵀX``) in
float64: ``min(S, H)³`` work, and ``S < H`` needs no special case. Eigenvalues below
``max(S, H) · ε · λ_max`` are Gram round-off and set to zero (a rank-1 matrix has eRank 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = [
    "Variant",
    "Subspaces",
    "singular_values",
    "energy_rank",
    "subspaces",
    "erank",
    "delta_s",
    "delta_d",
    "rid",
    "tme",
    "mixig",
    "erope_floor",
    "module_diagnostics",
]

Variant = Literal["paper", "code"]
_VARIANTS = ("paper", "code")
_ROW_CHUNK = 1024  # rows of the S×S similarity matrix built at a time (bounds memory)


def _matrix(x: Any, name: str = "x") -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D [tokens, hidden] matrix, got {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} has NaN or infinite entries")
    return arr


def _pair(x: Any, x_new: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = _matrix(x, "x"), _matrix(x_new, "x_new")
    if a.shape != b.shape:
        raise ValueError(f"x {a.shape} and x_new {b.shape} must have the same shape")
    return a, b


def _check_variant(variant: str) -> None:
    if variant not in _VARIANTS:
        raise ValueError(f"variant must be 'paper' or 'code', got {variant!r}")


def _gram_eigh(x: np.ndarray, vectors: bool = True) -> tuple[np.ndarray, Any, bool]:
    """Eigen-decomposition of the smaller Gram matrix, descending, round-off zeroed.

    Returns (λ = σ², eigenvectors or None, on_columns); ``on_columns`` means the eigenvectors
    are left singular vectors in R^S (S ≤ H), otherwise right singular vectors in R^H.
    """
    s, h = x.shape
    on_columns = s <= h
    gram = x @ x.T if on_columns else x.T @ x
    if vectors:
        lam, vecs = np.linalg.eigh(gram)
        vecs = vecs[:, ::-1]
    else:  # eigvalsh skips the eigenvectors: several times cheaper for large S or H
        lam, vecs = np.linalg.eigvalsh(gram), None
    lam = lam[::-1]
    floor = max(s, h) * np.finfo(np.float64).eps * max(float(lam[0]), 0.0)
    lam = np.where(lam > floor, lam, 0.0)
    return lam, vecs, on_columns


def singular_values(x: Any) -> np.ndarray:
    """The ``min(S, H)`` singular values of ``[S, H]`` ``x``, descending; round-off ones are 0."""
    lam, _, _ = _gram_eigh(_matrix(x), vectors=False)
    return np.sqrt(lam)


def energy_rank(sigma: Any, energy: float = 0.99) -> int:
    """Smallest ``r`` whose leading (descending) ``sigma`` hold ``energy`` of ``Σ σ²``.

    ``energy`` is in ``(0, 1]``; ``1.0`` keeps every nonzero direction. Returns 0 only for an
    all-zero spectrum.
    """
    if not 0.0 < energy <= 1.0:
        raise ValueError(f"energy must be in (0, 1], got {energy}")
    sq = np.asarray(sigma, dtype=np.float64) ** 2
    total = float(sq.sum())
    if total <= 0.0:
        return 0
    if energy == 1.0:
        return int(np.count_nonzero(sq))
    cum = np.cumsum(sq) / total
    # A relative slack keeps e.g. energy=0.5 with two equal values at r=1 despite round-off.
    return int(np.searchsorted(cum, energy * (1.0 - 1e-12)) + 1)


@dataclass(frozen=True)
class Subspaces:
    """Energy-truncated singular subspaces of an ``[S, H]`` matrix.

    Attributes:
        col: ``[S, r]`` orthonormal basis of the column subspace ``C(X) ⊂ R^S``.
        row: ``[H, r]`` orthonormal basis of the row subspace ``R(X) ⊂ R^H``.
        sigma: ``[r]`` the singular values kept.
    """

    col: np.ndarray
    row: np.ndarray
    sigma: np.ndarray


def subspaces(x: Any, energy: float = 0.99) -> Subspaces:
    """Column and row subspaces of ``x`` holding ``energy`` of its squared singular values.

    The side with the smaller Gram matrix comes from ``eigh``; the other side is mapped through
    ``x`` and re-orthonormalised (QR), which is accurate because only large σ are kept.

    Args:
        x: ``[S, H]`` matrix, not all zero.
        energy: Fraction of ``Σ σ²`` to keep, in ``(0, 1]``.
    """
    arr = _matrix(x)
    lam, vecs, on_columns = _gram_eigh(arr)
    sigma = np.sqrt(lam)
    r = energy_rank(sigma, energy)
    if r == 0:
        raise ValueError("x is all zero: its subspaces are empty")
    sigma, basis = sigma[:r], vecs[:, :r]
    other = arr.T @ basis / sigma if on_columns else arr @ basis / sigma
    other, _ = np.linalg.qr(other)
    col, row = (basis, other) if on_columns else (other, basis)
    return Subspaces(col=col, row=row, sigma=sigma)


def _erank_from_sigma(sigma: np.ndarray) -> float:
    sigma = sigma[sigma > 0.0]
    if sigma.size == 0:
        raise ValueError("eRank of an all-zero matrix is undefined")
    p = sigma / sigma.sum()
    return float(math.exp(-np.sum(p * np.log(p))))


def erank(x: Any) -> float:
    """Effective rank ``exp(H(p))``, ``p_i = σ_i / Σ σ_j``, in ``[1, min(S, H)]``.

    Invariant to nonzero scaling, token permutation and rotations of the hidden space.
    """
    return _erank_from_sigma(singular_values(x))


def delta_s(x: Any, x_new: Any) -> float:
    """Spectral-complexity change ``|eRank(x_new) − eRank(x)| / min(S, H)``."""
    a, b = _pair(x, x_new)
    return abs(erank(b) - erank(a)) / min(a.shape)


def _residuals(old: Subspaces, x_new: np.ndarray) -> tuple[float, float]:
    norm = float(np.linalg.norm(x_new))
    if norm == 0.0:
        raise ValueError("x_new is all zero: ΔD (normalised by ‖x_new‖_F) is undefined")
    # Residuals are formed explicitly, not as ‖Y‖² − ‖UᵀY‖², which cancels catastrophically
    # when the update lies almost inside the old subspace (the common case for attention).
    col_res = x_new - old.col @ (old.col.T @ x_new)
    row_res = x_new - (x_new @ old.row) @ old.row.T
    return float(np.linalg.norm(col_res)) / norm, float(np.linalg.norm(row_res)) / norm


def _combine(r_col: float, r_row: float, variant: str) -> float:
    _check_variant(variant)
    if variant == "paper":
        return (r_col + r_row) / 2.0
    return math.hypot(r_col, r_row)


def delta_d(x: Any, x_new: Any, variant: Variant = "paper", energy: float = 0.99) -> float:
    """Support novelty of ``x_new`` against the subspaces of ``x``.

    Args:
        x: ``[S, H]`` old state (its subspaces are the reference).
        x_new: ``[S, H]`` updated state ``x + Δx``.
        variant: ``"paper"``: mean of the two residual fractions, in ``[0, 1]``;
            ``"code"``: their Euclidean norm, in ``[0, √2]``.
        energy: Energy threshold of the old subspaces.
    """
    _check_variant(variant)
    a, b = _pair(x, x_new)
    return _combine(*_residuals(subspaces(a, energy), b), variant)


def rid(x: Any, x_new: Any, variant: Variant = "paper", energy: float = 0.99) -> float:
    """Representation Information Discrepancy ``ΔS + ΔD`` (innovation) of ``x → x_new``."""
    return delta_s(x, x_new) + delta_d(x, x_new, variant, energy)


def _row_entropies(p: np.ndarray) -> np.ndarray:
    logp = np.log(np.where(p > 0.0, p, 1.0))  # 0 · log 0 = 0
    return -np.sum(p * logp, axis=-1)


def _unit_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    # A zero token has no direction: its cosine with everything is taken as 0.
    return x / np.where(norms > 0.0, norms, 1.0)


def tme(x: Any, variant: Variant = "paper", code_power: float = 8.0) -> float:
    """Token Mixing Entropy of ``[S, H]`` hidden states ``x``.

    ``variant="paper"``: mean over rows of the entropy (nats) of ``P_tj ∝ (cos(x_t, x_j)+1)/2``,
    in ``[0, log S]``; invariant to token permutation and positive per-token scale.
    ``"code"``: entropy of the last row with weights ``((cos + 1) / 2) ** code_power`` over
    ``log S``, in ``[0, 1]`` (0 when ``S == 1``); only the first ``S − 1`` tokens may be permuted.
    """
    _check_variant(variant)
    unit = _unit_rows(_matrix(x))
    s = unit.shape[0]
    if variant == "code":
        if s == 1:
            return 0.0
        w = np.clip((unit @ unit[-1] + 1.0) / 2.0, 0.0, None) ** code_power
        return float(_row_entropies(w / w.sum())) / math.log(s)
    total = 0.0
    for start in range(0, s, _ROW_CHUNK):
        w = np.clip((unit[start : start + _ROW_CHUNK] @ unit.T + 1.0) / 2.0, 0.0, None)
        total += float(_row_entropies(w / w.sum(axis=1, keepdims=True)).sum())
    return total / s


def mixig(x: Any, x_new: Any, variant: Variant = "paper") -> float:
    """Mixing Information Gain ``TME(x_new) − TME(x)`` (reconfiguration)."""
    a, b = _pair(x, x_new)
    return tme(b, variant) - tme(a, variant)


def erope_floor(
    x_with_rope: Any, x_without_rope: Any, variant: Variant = "paper", energy: float = 0.99
) -> float:
    """ε_RoPE: RID of the same states with vs without RoPE (old = without, new = with)."""
    return rid(x_without_rope, x_with_rope, variant, energy)


def module_diagnostics(
    x_in: Any, x_out: Any, variant: Variant = "paper", energy: float = 0.99
) -> dict[str, float]:
    """All diagnostics of one residual update ``x_in → x_out`` (each spectrum computed once).

    Args:
        x_in: ``[S, H]`` state before the module (e.g. the block input).
        x_out: ``[S, H]`` state after adding the module's update.
        variant: Formula variant of ΔD and TME (``"paper"`` or ``"code"``).
        energy: Energy threshold of the subspaces of ``x_in``.

    Returns:
        Floats under ``eRank_in, eRank_out, dS, dD, RID, TME_in, TME_out, MixIG``.
    """
    _check_variant(variant)
    a, b = _pair(x_in, x_out)
    old = subspaces(a, 1.0)  # one eigendecomposition; truncated below
    e_in = _erank_from_sigma(old.sigma)
    e_out = erank(b)
    r = energy_rank(old.sigma, energy)
    trunc = Subspaces(col=old.col[:, :r], row=old.row[:, :r], sigma=old.sigma[:r])
    d_s = abs(e_out - e_in) / min(a.shape)
    d_d = _combine(*_residuals(trunc, b), variant)
    t_in, t_out = tme(a, variant), tme(b, variant)
    return {
        "eRank_in": e_in,
        "eRank_out": e_out,
        "dS": d_s,
        "dD": d_d,
        "RID": d_s + d_d,
        "TME_in": t_in,
        "TME_out": t_out,
        "MixIG": t_out - t_in,
    }
