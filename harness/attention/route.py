"""Input-adaptive head routing at prefill: a cheap online estimate picks each layer's full heads.

Paper A's hybrid attention keeps a *static* set of heads (chosen offline from a RAM ranking)
on full attention and windows the rest. A :class:`Route` on a layer plan chooses the set per
input instead, inside the layer's attention call and before its attention runs:

1. **Estimate** (:func:`route_scores`): for the last ``rows`` query rows of the call only,
   logits against every key (``(B, H, rows, S_kv)``: ``O(rows · S)``, never ``S × S``),
   softmax under the call's causal + padding mask, then per head the mean over those rows of

   - ``visual``: the attention mass on the visual tokens (the positions of the model's
     image/video placeholder ids; what the head retrieves from the image right now), or
   - ``far``: the mass on keys the head's window would drop (outside its band and sinks).

   A sample without visual tokens (text-only input, or no id source) falls back to ``far``;
   :class:`RouteLog` counts such samples.
2. **Choice** (:func:`choose_windowed`): per sample, the ``budget`` units (query heads, or
   KV groups scored by the mean of their heads) with the highest estimate keep full
   attention; ties go to the lower index. Every other head gets the causal sliding window.

The fast path (these functions + the dispatch's dense/window kernels, in
:mod:`harness.attention.execute`) is checked against :func:`routed_attention_reference`,
which scores from the *full* eager probability matrix and computes every head with an
explicit masked softmax. Decode calls (one query row) are not routed: they stay dense.

Shapes follow the dispatch: query (B, H, S_q, D); key/value (B, H_kv, S_kv, D); the first
query row is at absolute position ``S_kv − S_q``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from harness.attention.window import (
    capped,
    first_real,
    full_bool_mask,
    masked_softmax,
    window_attention_reference,
)

if TYPE_CHECKING:
    import torch

__all__ = [
    "ESTIMATES",
    "Route",
    "RouteLog",
    "route_scores",
    "route_scores_reference",
    "choose_windowed",
    "select_windowed",
    "group_rows",
    "routed_attention_reference",
]

ESTIMATES = ("visual", "far")


@dataclass
class RouteLog:
    """What routing chose, accumulated over prefill calls (read by the intervention's info).

    Attributes:
        kept: layer → per-head count of samples in which the head kept full attention.
        samples: layer → samples routed.
        fallback: layer → samples scored with ``far`` because they had no visual token.
    """

    kept: dict[int, list[int]] = field(default_factory=dict)
    samples: dict[int, int] = field(default_factory=dict)
    fallback: dict[int, int] = field(default_factory=dict)

    def add(self, layer: int, heads: int, windowed: list[tuple[int, ...]], fallback: int) -> None:
        """Count one call's choice (``windowed``: per sample, the windowed heads)."""
        counts = self.kept.setdefault(layer, [0] * heads)
        for skip in windowed:
            for h in set(range(heads)) - set(skip):
                counts[h] += 1
        self.samples[layer] = self.samples.get(layer, 0) + len(windowed)
        self.fallback[layer] = self.fallback.get(layer, 0) + fallback


@dataclass(frozen=True, eq=False)
class Route:
    """Per-input choice of a layer's full-attention heads (prefill only).

    Attributes:
        budget: Units kept full in this layer (0 … H / unit).
        size: Window W of the other heads (the query's own position included).
        sinks: Attention-sink tokens (first real tokens) the windowed heads also see.
        rows: Estimate query rows: the last ``rows`` rows of the call.
        estimate: ``visual`` or ``far`` (see the module docstring).
        unit: Query heads per unit: 1 (heads) or the KV group size (whole KV groups).
        visual: Called once per layer call; returns this forward's (B, S_ids) bool mask of
            visual-token positions (right-aligned to the keys), or None when unknown.
        log: Where choices are counted (optional).
    """

    budget: int
    size: int
    sinks: int = 0
    rows: int = 8
    estimate: Literal["visual", "far"] = "visual"
    unit: int = 1
    visual: Callable[[], Any] | None = None
    log: RouteLog | None = None

    def __post_init__(self) -> None:
        if self.estimate not in ESTIMATES:
            raise ValueError(f"unknown route estimate {self.estimate!r} (known: {ESTIMATES})")
        if min(self.budget, self.sinks) < 0 or min(self.size, self.rows, self.unit) < 1:
            raise ValueError(
                f"invalid route budget={self.budget} size={self.size} sinks={self.sinks} "
                f"rows={self.rows} unit={self.unit}"
            )

    def check(self, num_heads: int) -> None:
        """Raise ValueError unless the route fits a layer of ``num_heads`` query heads."""
        if num_heads % self.unit or self.budget * self.unit > num_heads:
            raise ValueError(
                f"route keeps {self.budget} units of {self.unit} heads; the layer has "
                f"{num_heads} heads"
            )


def _visual_keys(route: Route, batch: int, kv_len: int, device: Any) -> torch.Tensor | None:
    """(B, S_kv) bool visual-key mask, or None (right-aligned: the ids cover the last keys)."""
    import torch

    ids_mask = route.visual() if route.visual is not None else None
    if ids_mask is None:
        return None
    ids_mask = ids_mask.to(device=device, dtype=torch.bool)
    if ids_mask.shape[0] != batch:
        return None
    n = min(kv_len, ids_mask.shape[1])
    out = torch.zeros(batch, kv_len, dtype=torch.bool, device=device)
    out[:, kv_len - n :] = ids_mask[:, ids_mask.shape[1] - n :]
    return out


def _row_masks(attention_mask, batch: int, q_len: int, kv_len: int, n: int, device) -> Any:
    """(B, 1, n, S_kv) mask of the last ``n`` query rows (never the full S × S mask)."""
    import torch

    if attention_mask is not None:
        return attention_mask[:, :, q_len - n :].expand(batch, 1, n, kv_len)
    q_pos = torch.arange(kv_len - n, kv_len, device=device)
    causal = q_pos[:, None] >= torch.arange(kv_len, device=device)[None, :]
    return causal.view(1, 1, n, kv_len).expand(batch, 1, n, kv_len)


def _far_keys(route: Route, q_pos, start, kv_len: int) -> torch.Tensor:
    """(B, 1, n, S_kv) keys outside the window band and the sinks of rows at ``q_pos``."""
    import torch

    k_pos = torch.arange(kv_len, device=q_pos.device)
    outside = (q_pos[:, None] - k_pos[None, :] >= route.size)[None, None]
    sink = k_pos.view(1, 1, 1, kv_len) < (start.view(-1, 1, 1, 1) + route.sinks)
    return outside & ~sink


def _scores_from_rows(route: Route, probs, mask, visual, attention_mask, q_pos) -> tuple:
    """Per-head estimate (B, H) from row probabilities (B, H, n, S_kv); fallback count."""
    import torch

    batch, _, _, kv_len = probs.shape
    start = first_real(attention_mask, batch, probs.device)
    far = (probs * _far_keys(route, q_pos, start, kv_len)).sum(-1)  # [batch, head, row]
    score_rows, fallback = far, batch
    if route.estimate == "visual" and visual is not None:
        has = visual.any(-1)  # [batch]
        vis = (probs * visual[:, None, None, :]).sum(-1)
        score_rows = torch.where(has[:, None, None], vis, far)
        fallback = int((~has).sum())
    elif route.estimate == "far":
        fallback = 0
    valid = mask.any(-1)  # [batch, 1, n]: rows that see any key
    count = valid.sum(-1).clamp(min=1)
    return (score_rows * valid).sum(-1) / count, fallback


def route_scores(
    route: Route, query, key, attention_mask, scale: float
) -> tuple[torch.Tensor, int]:
    """Fast estimate: logits for the last ``rows`` query rows only.

    Returns:
        ``(scores (B, H) float32, samples that fell back to 'far')``.
    """
    import torch

    batch, heads, q_len, dim = query.shape
    kv_heads, kv_len = key.shape[1], key.shape[2]
    n = min(route.rows, q_len)
    group = heads // kv_heads
    q_rows = query[:, :, q_len - n :]  # [batch, head, row, dim]
    logits = q_rows.reshape(batch, kv_heads, group * n, dim) @ key.transpose(-1, -2)
    logits = logits.view(batch, heads, n, kv_len).float() * scale  # [batch, head, row, key]
    mask = _row_masks(attention_mask, batch, q_len, kv_len, n, query.device)
    probs = masked_softmax(logits, mask)
    visual = _visual_keys(route, batch, kv_len, query.device)
    q_pos = torch.arange(kv_len - n, kv_len, device=query.device)
    return _scores_from_rows(route, probs, mask, visual, attention_mask, q_pos)


def route_scores_reference(
    route: Route, probs: torch.Tensor, attention_mask, visual
) -> tuple[torch.Tensor, int]:
    """Reference estimate from the full (B, H, S_q, S_kv) probability matrix."""
    import torch

    batch, _, q_len, kv_len = probs.shape
    n = min(route.rows, q_len)
    full = full_bool_mask(attention_mask, batch, q_len, kv_len, probs.device)
    q_pos = torch.arange(kv_len - n, kv_len, device=probs.device)
    return _scores_from_rows(
        route, probs[:, :, q_len - n :], full[:, :, q_len - n :], visual, attention_mask, q_pos
    )


def choose_windowed(route: Route, scores: torch.Tensor) -> list[tuple[int, ...]]:
    """Per sample, the windowed heads: all but the ``budget`` best units (ties: lower index)."""
    import torch

    batch, heads = scores.shape
    units = heads // route.unit
    per_unit = scores.view(batch, units, route.unit).mean(-1)
    order = torch.sort(per_unit, dim=1, descending=True, stable=True).indices[:, : route.budget]
    out = []
    for b in range(batch):
        kept = {int(u) * route.unit + j for u in order[b] for j in range(route.unit)}
        out.append(tuple(h for h in range(heads) if h not in kept))
    return out


def select_windowed(
    route: Route, layer: int, query, key, attention_mask, scale: float
) -> list[tuple[int, ...]]:
    """Fast path: estimate, choose and log; returns the windowed heads per sample."""
    batch, heads = query.shape[:2]
    if route.budget == 0:
        windowed, fallback = [tuple(range(heads))] * batch, 0
    else:
        scores, fallback = route_scores(route, query, key, attention_mask, scale)
        windowed = choose_windowed(route, scores)
    if route.log is not None:
        route.log.add(layer, heads, windowed, fallback)
    return windowed


def group_rows(windowed: list[tuple[int, ...]]) -> dict[tuple[int, ...], tuple[int, ...]]:
    """Batch rows grouped by their windowed heads: ``{rows: windowed heads}``."""
    by: dict[tuple[int, ...], list[int]] = {}
    for row, members in enumerate(windowed):
        by.setdefault(members, []).append(row)
    return {tuple(rows): members for members, rows in by.items()}


def routed_attention_reference(
    route: Route, layer: int, query, key, value, attention_mask, scale: float, softcap=None
) -> tuple[torch.Tensor, list[tuple[int, ...]]]:
    """Eager reference of a routed layer: returns ((B, S_q, H, D), windowed heads per sample).

    Materialises the full probability matrix, scores every head from it, ranks with Python's
    ``sorted`` (the fast path uses a stable torch sort), and computes kept heads as
    ``softmax(QKᵀ) V`` and windowed heads with
    :func:`~harness.attention.window.window_attention_reference` (logits softcapped with
    ``softcap``: the dispatch runs this for every routed call of a softcapped model).
    """
    batch, heads, q_len, _ = query.shape
    kv_len = key.shape[2]
    group = heads // key.shape[1]
    k = key.repeat_interleave(group, 1)
    v = value.repeat_interleave(group, 1)
    mask = full_bool_mask(attention_mask, batch, q_len, kv_len, query.device)
    probs = masked_softmax(capped((query @ k.transpose(-1, -2)).float() * scale, softcap), mask)
    visual = _visual_keys(route, batch, kv_len, query.device)
    scores, fallback = route_scores_reference(route, probs, attention_mask, visual)
    out = (probs @ v.float()).to(query.dtype).transpose(1, 2).clone()  # [b, s, h, d]
    windowed = []
    for b in range(batch):
        units = heads // route.unit
        unit_score = [sum(float(scores[b, u * route.unit + j]) for j in range(route.unit))
                      / route.unit for u in range(units)]  # fmt: skip
        best = sorted(range(units), key=lambda u: (-unit_score[u], u))[: route.budget]
        kept = {u * route.unit + j for u in best for j in range(route.unit)}
        skip = [h for h in range(heads) if h not in kept]
        windowed.append(tuple(skip))
        if skip:
            res = window_attention_reference(
                query[b : b + 1, skip], k[b : b + 1, skip], v[b : b + 1, skip],
                None if attention_mask is None else attention_mask[b : b + 1],
                route.size, route.sinks, scale, softcap,
            )  # fmt: skip
            out[b, :, skip] = res[0].transpose(0, 1).to(out.dtype)
    if route.log is not None:
        route.log.add(layer, heads, windowed, fallback if route.budget else 0)
    return out, windowed
