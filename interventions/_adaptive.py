"""``hybrid:select=adaptive``: per-input, per-layer choice of the full-attention heads.

Paper A names static head sets (chosen offline from a RAM ranking that needs ground-truth
evidence annotations) as a limitation; this routes each input instead. Every decoder layer
gets a :class:`~harness.attention.route.Route` through the headscope dispatch: inside the
layer's attention call, before its attention runs, a cheap estimate from the last ``rows``
query rows (attention mass on the visual tokens, or mass the window would drop) picks the
layer's ``budget`` units; the other heads are windowed. No ranking file is read.

Budget: the same total as static ``hybrid`` at the same ``keep`` — ``n`` units
(:meth:`harness.api.heads.Geometry.count` of the unit grid). A layer must decide before the
later layers have run, so the split over layers is fixed in advance: ``layer_budget="even"``
spreads it evenly (layer ``l`` keeps ``⌊(l+1)·n/L⌋ − ⌊l·n/L⌋`` units; static top-k may put
several kept heads in one layer, even adaptive never does); ``layer_budget="ranking"`` gives
each layer as many units as the ranking's static top ``n`` has in it (the ranking says how
many per layer, the input says which).

Visual tokens are the positions of the model's image/video placeholder ids in this
forward's ``input_ids`` (captured by :class:`~interventions._common.ForwardTap`); a sample
without any (text-only, or an ``inputs_embeds`` forward) is scored with ``far`` instead and
counted in ``fallback_samples``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness.api.intervention import InterventionError
from interventions._common import ForwardTap, installed
from interventions._selection import _unit_geometry

__all__ = ["layer_budgets", "ranked_layer_budgets", "attach_adaptive"]


def layer_budgets(total: int, num_layers: int) -> list[int]:
    """``total`` units spread evenly over ``num_layers`` layers (sums to ``total``)."""
    return [(i + 1) * total // num_layers - i * total // num_layers for i in range(num_layers)]


def ranked_layer_budgets(spec: Any, geometry: Any, model: dict | None = None) -> list[int]:
    """Per layer, how many of the ranking's top ``spec.keep`` units lie in it (static top-k).

    ``model`` (family, checkpoint) is compared with the ranking's unless
    ``spec.foreign_ranking``.
    """
    from interventions._selection import load_scores, select_units

    budgets = [0] * geometry.num_layers
    if not spec.keep:
        return budgets
    scores = load_scores(
        spec.ranking, spec.ranking_task, geometry, "hybrid", model, spec.foreign_ranking
    )
    units = select_units(
        geometry, "top", spec.keep, granularity=spec.granularity, scores=scores, who="hybrid"
    )
    for unit in units:
        budgets[unit.layer] += 1
    return budgets


def _visual_source(model: Any, tap: ForwardTap, estimate: str) -> Any:
    """A callable giving this forward's (B, S) visual-token mask, or None."""
    import torch

    from interventions._priors import visual_token_ids

    try:
        ids = sorted(set(visual_token_ids(model).values()))
    except InterventionError:
        if estimate == "visual":
            raise InterventionError(
                f"hybrid: select='adaptive' with estimate='visual' needs the model's image/"
                f"video token id; {type(model).__name__} has none (use estimate='far')"
            ) from None
        return None
    cache: dict[str, Any] = {"ids": None, "mask": None}

    def visual() -> Any:
        input_ids = tap.state.input_ids
        if input_ids is None:
            return None
        if cache["ids"] is not input_ids:
            wanted = torch.tensor(ids, device=input_ids.device)
            cache["ids"], cache["mask"] = input_ids, torch.isin(input_ids, wanted)
        return cache["mask"]

    return visual


@contextmanager
def attach_adaptive(spec: Any, adapter: Any) -> Iterator[dict[str, Any]]:
    """Install routing for every decoder layer (``spec`` is a ``Hybrid`` with select=adaptive).

    Yields:
        ``{"name", "select", "keep", "window", "sinks", "granularity", "rows", "estimate",
        "layer_budget", "ranking", "ranking_task", "budget_per_layer", "n_full", "n_windowed",
        "routed_samples", "fallback_samples", "kept_share"}``; the last three are filled
        when the block ends: samples routed (per layer), samples scored with ``far`` for lack
        of visual tokens, and per layer and head the share of routed samples in which the
        head kept full attention.
    """
    from harness.attention.plan import LayerPlan, Plan
    from harness.attention.route import Route, RouteLog

    model, geometry = adapter.model, adapter.geometry
    units = _unit_geometry(geometry, spec.granularity)
    try:
        total = units.count(spec.keep)
    except ValueError as err:
        raise InterventionError(f"hybrid: {err} ({spec.granularity} units)") from None
    if spec.layer_budget == "ranking":
        from interventions._selection import model_of

        budgets = ranked_layer_budgets(spec, geometry, model_of(adapter))
    else:  # spread over the attention layers (Qwen3.5's linear layers have no heads)
        budgets = [0] * geometry.num_layers
        layers = geometry.head_layers
        for layer, budget in zip(layers, layer_budgets(total, len(layers)), strict=True):
            budgets[layer] = budget
    unit = 1 if spec.granularity == "head" else geometry.group_size
    tap = ForwardTap(model)
    visual = _visual_source(model, tap, spec.estimate)
    log = RouteLog()
    plan = Plan(
        {
            layer: LayerPlan(
                route=Route(
                    budget, spec.window, spec.sinks, spec.rows, spec.estimate, unit, visual, log
                )  # fmt: skip
            )
            for layer, budget in enumerate(budgets)
            if layer in geometry.head_layers
        }
    )
    n_full = total * unit
    info: dict[str, Any] = {
        "name": "hybrid",
        "select": "adaptive",
        "keep": spec.keep,
        "window": spec.window,
        "sinks": spec.sinks,
        "granularity": spec.granularity,
        "rows": spec.rows,
        "estimate": spec.estimate,
        "layer_budget": spec.layer_budget,
        "ranking": spec.ranking,
        "ranking_task": spec.ranking_task,
        "budget_per_layer": budgets,
        "n_full": n_full,
        "n_windowed": geometry.num_total_heads - n_full,
    }
    with installed(model, plan, "hybrid"):
        try:
            with tap:
                yield info
        finally:
            info["routed_samples"] = log.samples.get(0, 0)
            info["fallback_samples"] = log.fallback.get(0, 0)
            info["kept_counts"] = [log.kept.get(la) for la in range(geometry.num_layers)]
            info["layer_samples"] = [log.samples.get(la, 0) for la in range(geometry.num_layers)]
            info["kept_share"] = _shares(info["kept_counts"], info["layer_samples"])


def _shares(counts: list[list[int] | None], samples: list[int]) -> list[list[float] | None]:
    """Per layer, the share of routed samples in which each head kept full attention."""
    return [
        None if c is None else [round(k / max(1, n), 4) for k in c]
        for c, n in zip(counts, samples, strict=True)
    ]


def merge_info(total: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    """The adaptive record of two attaches of one cell: counts summed, shares recomputed."""
    out = dict(total)
    for key in ("routed_samples", "fallback_samples"):
        out[key] = total.get(key, 0) + part.get(key, 0)
    counts = [
        a if b is None else b if a is None else [x + y for x, y in zip(a, b, strict=True)]
        for a, b in zip(total["kept_counts"], part["kept_counts"], strict=True)
    ]
    samples = [a + b for a, b in zip(total["layer_samples"], part["layer_samples"], strict=True)]
    out.update(kept_counts=counts, layer_samples=samples, kept_share=_shares(counts, samples))
    return out
