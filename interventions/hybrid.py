"""CoRe-guided hybrid attention (paper A) through the headscope attention dispatch.

The top ``keep`` units of a ranking file (query heads, or whole KV groups with
``granularity="kv_group"``) keep full causal attention; every other head gets a causal
sliding window of ``window`` keys (plus ``sinks`` attention-sink tokens) during prefill, and
in decode too with ``window_in_decode``. The window runs on the dispatch's window kernel:
the chunked fast path by default, the eager reference with
``harness.attention.dispatch.set_window_kernel("reference")`` (equivalence-tested).

KV-group granularity matters for real memory/time savings: a KV head can only use a smaller
cache when all query heads that read it are windowed.

``select="adaptive"`` needs no ranking: each layer chooses its full heads per input, at
prefill, from a cheap online estimate computed inside the attention call (the last ``rows``
query rows' attention to the visual tokens, ``estimate="visual"``, or the mass the window
would drop, ``estimate="far"``), under the same total budget as ``keep``, spread evenly over
the layers (``layer_budget="even"``) or as the ranking's top ``keep`` units fall over the
layers (``layer_budget="ranking"``: how many heads each layer keeps comes from the ranking,
which heads from the input). See :mod:`interventions._adaptive` and
:mod:`harness.attention.route`.

``decode="stream"`` carries the hybrid into decoding (DuoAttention's streaming heads): the
kept heads, rounded up to whole KV groups, keep the whole KV cache; every other KV group of
a full-attention layer keeps ``sink`` + ``recent`` tokens only, in headscope's streamed cache
(:mod:`harness.attention.stream_cache`). ``decode="stream_reference"`` computes the same on a
dense cache with per-head masks (the eager reference). Prefill is the same as without.
See docs/decode.md.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from harness.api.intervention import Intervention, InterventionError
from harness.api.registry import intervention
from interventions._common import check_choice, installed
from interventions._selection import expand_units, load_scores, model_of, select_units

__all__ = ["Hybrid"]


@intervention("hybrid")
@dataclass(frozen=True)
class Hybrid(Intervention):
    """Full attention for the top-ranked heads, a sliding window for the rest.

    Attributes:
        keep: Units with full attention: a count ≥ 1, a fraction in (0, 1) of all units
            (rounded up), or 0 (every head windowed).
        window: Window size W ≥ 1 (the query's own position included).
        sinks: Attention-sink tokens (the first real tokens) every windowed head also sees.
        window_in_decode: Also window decode steps (default: prefill only, paper A).
        granularity: ``head`` or ``kv_group``.
        ranking: Path of a ranking file (``headscope rank``) or of any head-set file
            (``headscope heads``); required unless ``keep=0`` or ``select="adaptive"`` with
            ``layer_budget="even"``.
        ranking_task: Task of the ranking; None = combined ranking.
        select: ``top`` (static: the ranking's top units) or ``adaptive`` (per input and
            layer, from an online estimate; no ranking).
        rows: Adaptive only: query rows of the estimate (the last ``rows`` of the prompt).
        estimate: Adaptive only: ``visual`` (attention mass on the visual tokens) or ``far``
            (attention mass outside the window).
        layer_budget: Adaptive only: ``even`` (the budget spread evenly over the layers) or
            ``ranking`` (each layer keeps as many units as the ranking's top ``keep`` has in
            it; needs ``ranking``).
        foreign_ranking: Apply a ranking made for another model (other family or checkpoint,
            same L×H shape); by default such a ranking is refused.
        decode: ``dense`` (decode reads the whole cache, paper A), ``stream`` (the KV groups
            without a kept head keep ``sink`` + ``recent`` tokens only) or
            ``stream_reference`` (the same on a dense cache with per-head masks).
        sink: Streamed decode only: sink tokens (each row's first real tokens) kept.
        recent: Streamed decode only: most recent positions kept (the query's own included).
    """

    keep: float = 0.05
    window: int = 512
    sinks: int = 0
    window_in_decode: bool = False
    granularity: Literal["head", "kv_group"] = "head"
    ranking: str | None = None
    ranking_task: str | None = None
    select: Literal["top", "adaptive"] = "top"
    rows: int = 8
    estimate: Literal["visual", "far"] = "visual"
    layer_budget: Literal["even", "ranking"] = "even"
    foreign_ranking: bool = False
    decode: Literal["dense", "stream", "stream_reference"] = "dense"
    sink: int = 64
    recent: int = 256

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for key in ("granularity", "select", "estimate", "layer_budget", "decode"):
            check_choice("hybrid", key, getattr(self, key), typing.get_args(hints[key]))
        if self.select == "adaptive":
            self._check_adaptive()
        elif self.rows != 8 or self.estimate != "visual" or self.layer_budget != "even":
            raise InterventionError(
                "hybrid: rows, estimate and layer_budget apply to select='adaptive' only"
            )
        if isinstance(self.keep, bool) or not isinstance(self.keep, int | float) or self.keep < 0:
            raise InterventionError(f"hybrid: keep must be a number ≥ 0, got {self.keep!r}")
        if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window < 1:
            raise InterventionError(f"hybrid: window must be an integer ≥ 1, got {self.window!r}")
        if isinstance(self.sinks, bool) or not isinstance(self.sinks, int) or self.sinks < 0:
            raise InterventionError(f"hybrid: sinks must be an integer ≥ 0, got {self.sinks!r}")
        self._check_decode()
        if self.keep and not self.ranking and self.select == "top":
            raise InterventionError(
                "hybrid: keep > 0 needs ranking=<ranking file> to choose the full heads"
            )

    def _check_decode(self) -> None:
        if self.decode == "dense":
            if (self.sink, self.recent) != (64, 256):
                raise InterventionError("hybrid: sink and recent apply to decode='stream' only")
            return
        if self.select == "adaptive" or self.window_in_decode:
            raise InterventionError(
                f"hybrid: decode={self.decode!r} streams a static head set; it takes neither "
                "select='adaptive' nor window_in_decode"
            )
        if isinstance(self.sink, bool) or not isinstance(self.sink, int) or self.sink < 0:
            raise InterventionError(f"hybrid: sink must be an integer ≥ 0, got {self.sink!r}")
        if isinstance(self.recent, bool) or not isinstance(self.recent, int) or self.recent < 1:
            raise InterventionError(f"hybrid: recent must be an integer ≥ 1, got {self.recent!r}")

    def _check_adaptive(self) -> None:
        if self.layer_budget == "ranking" and self.keep and not self.ranking:
            raise InterventionError(
                "hybrid: layer_budget='ranking' takes each layer's budget from a ranking; "
                "pass ranking=<ranking file> (or use layer_budget='even')"
            )
        if self.layer_budget == "even" and (self.ranking or self.ranking_task):
            raise InterventionError(
                "hybrid: select='adaptive' chooses heads online and reads no ranking unless "
                "layer_budget='ranking'; drop ranking/ranking_task (or use select='top')"
            )
        if self.window_in_decode:
            raise InterventionError(
                "hybrid: select='adaptive' routes prefill only; window_in_decode is not supported"
            )
        if isinstance(self.rows, bool) or not isinstance(self.rows, int) or self.rows < 1:
            raise InterventionError(f"hybrid: rows must be an integer ≥ 1, got {self.rows!r}")

    def resolve(self, geometry: Any, model: dict | None = None) -> tuple[list[Any], list[Any]]:
        """(kept units, windowed query heads) on a model of ``geometry`` (static select only).

        ``model`` (family, checkpoint) is compared with the ranking's unless
        ``foreign_ranking``.
        """
        if self.select == "adaptive":
            raise InterventionError("hybrid: select='adaptive' chooses its heads per input")
        scores = None
        if self.keep:
            scores = load_scores(
                self.ranking, self.ranking_task, geometry, "hybrid", model, self.foreign_ranking
            )
        units = select_units(
            geometry,
            "top",
            self.keep,
            granularity=self.granularity,
            scores=scores if scores is not None else _zeros(geometry),
            who="hybrid",
        )
        full = set(expand_units(units, geometry, self.granularity))
        windowed = [h for h in geometry.all_heads() if h not in full]
        return units, windowed

    def merge_resolved(self, total: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
        """Adaptive records sum their routing counts (static ones have none)."""
        if self.select != "adaptive":
            return super().merge_resolved(total, part)
        from interventions._adaptive import merge_info

        return merge_info(total, part)

    def vision_use(self) -> Literal["none", "reads", "writes"]:
        """It acts on text-decoder attention only: vision features are reused (``"none"``)."""
        return "none"

    @contextmanager
    def attach(self, adapter: Any) -> Iterator[dict[str, Any]]:
        """Window every head outside the kept set for the ``with`` block.

        With ``select="adaptive"`` the yielded dict is
        :func:`interventions._adaptive.attach_adaptive`'s.

        Yields:
            ``{"name", "keep", "window", "sinks", "window_in_decode", "granularity",
            "ranking", "ranking_task", "full_units", "full_heads", "n_full", "n_windowed",
            "model_windows"}`` (``model_windows``: layer → the model's own sliding window).
        """
        from harness.attention.dispatch import Plan, Window

        if self.select == "adaptive":
            from interventions._adaptive import attach_adaptive

            with attach_adaptive(self, adapter) as info:
                yield info
            return
        geometry = adapter.geometry
        units, windowed = self.resolve(geometry, model_of(adapter))
        win = Window(self.window, self.sinks, self.window_in_decode)
        info = {
            "name": "hybrid",
            "keep": self.keep,
            "window": self.window,
            "sinks": self.sinks,
            "window_in_decode": self.window_in_decode,
            "granularity": self.granularity,
            "ranking": self.ranking,
            "ranking_task": self.ranking_task,
            "full_units": [
                str(u) if self.granularity == "head" else f"L{u.layer}G{u.head}" for u in units
            ],
            "full_heads": [str(h) for h in geometry.all_heads() if h not in set(windowed)],
            "n_full": geometry.num_total_heads - len(windowed),
            "n_windowed": len(windowed),
            "model_windows": _model_windows(adapter.model),
        }
        if self.decode != "dense":
            plan = self._stream(adapter, geometry, windowed, win, info)
        else:
            plan = Plan.build(window=dict.fromkeys(windowed, win))
        with installed(adapter.model, plan, "hybrid"):
            yield info

    def _stream(self, adapter: Any, geometry: Any, windowed: list, win: Any, info: dict) -> Any:
        """The streamed-decode plan; adds what it keeps to ``info``."""
        from harness.attention.stream_cache import stream_plan, streamable_layers

        full_layers = streamable_layers(adapter.model)
        full = set(geometry.all_heads()) - set(windowed)
        reference = self.decode == "stream_reference"
        opts = {"sink": self.sink, "recent": self.recent, "reference": reference}
        plan, kept = stream_plan(geometry, full, win, layers=full_layers, **opts)
        info.update(decode=self.decode, sink=self.sink, recent=self.recent, **kept)
        info["n_extra_heads"] = len(kept["extra_heads"])
        return plan


def _model_windows(model: Any) -> dict[str, int]:
    """Layer → the model's own sliding window, for its sliding layers (Gemma3, AyaVision).

    A windowed head there sees the narrower of the two windows, and a kept head keeps the
    model's window: the mask the model passes is authoritative.
    """
    from harness.api.anatomy import sliding_windows

    return {str(layer): w for layer, w in sliding_windows(model).items()}


def _zeros(geometry: Any) -> Any:
    import numpy as np

    return np.zeros((geometry.num_layers, geometry.num_heads))
