"""Head ablation (paper A's causal test) through the headscope attention dispatch.

Select ``k`` units (query heads, or KV groups with ``granularity="kv_group"``) — the top or
bottom of a ranking file (``headscope rank``), a seeded random draw, or an explicit list — and
ablate every selected query head with an explicit mode (metrics.md):

- ``zero``: the head's output (its slice of the ``o_proj`` input) is zeroed;
- ``mean``: replaced by its mean over a reference set (``mean_reference``: a ``.pt``/``.npz``
  ``[L, H, head_dim]`` file built with ``headscope means``, :mod:`harness.probes.means`);
- ``uniform``: uniform attention over the keys the model's mask allows (the causal,
  non-padding span of a causal decoder);
- ``bos``: all attention on the first real token.

Random-k: one ``attach`` applies ONE draw (``draw``); a protocol runs ``draw=0..draws-1`` as
separate specs (see :meth:`Ablate.draw_variants`) and averages. ``k=0`` selects nothing, which
is exactly the baseline.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.api.intervention import Intervention, InterventionError
from harness.api.registry import intervention
from interventions._common import check_choice, installed
from interventions._selection import (
    expand_units,
    load_scores,
    model_of,
    parse_head_list,
    select_units,
)

__all__ = ["Ablate"]

Select = Literal["top", "bottom", "random", "heads"]
Mode = Literal["zero", "mean", "uniform", "bos"]
Granularity = Literal["head", "kv_group"]


@intervention("ablate")
@dataclass(frozen=True)
class Ablate(Intervention):
    """Ablate selected heads.

    Attributes:
        select: ``top``/``bottom`` by ranking, ``random`` (seeded), or ``heads`` (explicit).
        k: Units to ablate: a count ≥ 1, a fraction in (0, 1) of all units (rounded up), or 0.
        mode: ``zero``, ``mean``, ``uniform`` or ``bos``.
        granularity: ``head`` (query heads) or ``kv_group`` (whole GQA groups).
        ranking: Path of a ranking file, or of any head-set file (``headscope heads``);
            required for ``top``/``bottom``.
        ranking_task: Task of the ranking to use; None = the combined ranking.
        heads: Explicit heads (``["L12H3", ...]``, or one string separated by ``;``/``+``/
            spaces) for ``select="heads"``.
        seed: Seed of the random draws.
        draws: How many random draws the protocol averages (recorded; one attach = one draw).
        draw: Which draw this spec applies (0 ≤ draw < draws).
        mean_reference: ``.pt``/``.npz`` per-head means for ``mode="mean"``.
        foreign_ranking: Apply a ranking made for another model (other family or checkpoint,
            same L×H shape); by default such a ranking is refused.
    """

    select: Select = "top"
    k: float = 0.05
    mode: Mode = "zero"
    granularity: Granularity = "head"
    ranking: str | None = None
    ranking_task: str | None = None
    heads: list[str] | str | None = field(default=None)
    seed: int = 0
    draws: int = 1
    draw: int = 0
    mean_reference: str | None = None
    foreign_ranking: bool = False

    def __post_init__(self) -> None:
        for key in ("select", "mode", "granularity"):
            hint = typing.get_type_hints(type(self))[key]
            check_choice("ablate", key, getattr(self, key), typing.get_args(hint))
        if isinstance(self.heads, list):
            object.__setattr__(self, "heads", tuple(self.heads))  # hashable, still a sequence
        if isinstance(self.k, bool) or not isinstance(self.k, int | float) or self.k < 0:
            raise InterventionError(f"ablate: k must be a number ≥ 0, got {self.k!r}")
        if self.select in ("top", "bottom") and not self.ranking:
            raise InterventionError(f"ablate: select={self.select!r} needs ranking=<ranking file>")
        if self.select == "heads" and not self.heads:
            raise InterventionError("ablate: select='heads' needs heads=['L12H3', ...]")
        if self.select != "heads" and self.heads:
            raise InterventionError("ablate: heads=... is only used with select='heads'")
        if (self.mode == "mean") != (self.mean_reference is not None):
            raise InterventionError(
                "ablate: mode='mean' needs mean_reference=<.pt/.npz of per-head means>, "
                "and mean_reference is only used with mode='mean'",
                hint="`headscope means --model ... --tasks ... --output means.pt` builds one",
            )
        if self.draws < 1 or not 0 <= self.draw < self.draws:
            raise InterventionError(
                f"ablate: need draws ≥ 1 and 0 ≤ draw < draws, got draw={self.draw}, "
                f"draws={self.draws}"
            )

    def draw_variants(self) -> list[Ablate]:
        """One spec per random draw (``draw=0..draws-1``); a single spec otherwise."""
        if self.select != "random":
            return [self]
        return [dataclasses.replace(self, draw=d) for d in range(self.draws)]

    def resolve(self, geometry: Any, model: dict | None = None) -> tuple[list[Any], list[Any]]:
        """(units, query heads) this spec selects on a model of ``geometry``.

        ``model`` (family, checkpoint) is compared with the ranking's unless
        ``foreign_ranking``.
        """
        scores = None
        if self.select in ("top", "bottom"):
            scores = load_scores(
                self.ranking, self.ranking_task, geometry, "ablate", model, self.foreign_ranking
            )
        explicit = (
            parse_head_list(self.heads, geometry, "ablate") if self.select == "heads" else None
        )
        units = select_units(
            geometry,
            self.select,
            self.k,
            granularity=self.granularity,
            scores=scores,
            heads=explicit,
            seed=self.seed,
            draw=self.draw,
            who="ablate",
        )
        return units, expand_units(units, geometry, self.granularity)

    def vision_use(self) -> Literal["none", "reads", "writes"]:
        """It acts on text-decoder heads only: vision features are reused (``"none"``)."""
        return "none"

    @contextmanager
    def attach(self, adapter: Any) -> Iterator[dict[str, Any]]:
        """Ablate the selected heads for the ``with`` block.

        Yields:
            ``{"name", "select", "k", "mode", "granularity", "ranking", "ranking_task",
            "seed", "draw", "draws", "mean_reference", "units", "heads", "n_heads"}`` —
            ``units`` are heads (``L3H1``) or KV groups (``L3G0``), ``heads`` the ablated
            query heads.
        """
        from harness.attention.dispatch import Ablation, Plan

        geometry = adapter.geometry
        units, heads = self.resolve(geometry, model_of(adapter))
        effects: dict[Any, Ablation] = {}
        if self.mode == "mean" and heads:
            from interventions._means import load_head_means

            means = load_head_means(self.mean_reference, geometry)
            effects = {h: Ablation("mean", mean=means[h.layer, h.head]) for h in heads}
        elif heads:
            shared = Ablation(self.mode)
            effects = dict.fromkeys(heads, shared)
        info = {
            "name": "ablate",
            "select": self.select,
            "k": self.k,
            "mode": self.mode,
            "granularity": self.granularity,
            "ranking": self.ranking,
            "ranking_task": self.ranking_task,
            "seed": self.seed,
            "draw": self.draw,
            "draws": self.draws,
            "mean_reference": self.mean_reference,
            "units": [_unit_label(u, self.granularity) for u in units],
            "heads": [str(h) for h in heads],
            "n_heads": len(heads),
        }
        with installed(adapter.model, Plan.build(ablate=effects), "ablate"):
            yield info


def _unit_label(unit: Any, granularity: str) -> str:
    return str(unit) if granularity == "head" else f"L{unit.layer}G{unit.head}"
