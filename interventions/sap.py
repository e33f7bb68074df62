"""SAP (paper B): learned attention over visual tokens replaced by a predefined prior.

In the selected decoder layers every head gets a :class:`~harness.attention.plan.VisualPrior`
through the headscope dispatch. ``semantics`` chooses the variant (recorded in the results):

- ``code`` (paper B's code): only the last query row; only heads whose mean pre-softmax logit
  over non-visual keys lies within the ``lo``–``hi`` quantiles (per sample); their visual
  logits become (1 − λ)·logit + λ·prior.
- ``distribution``: every query row after the visual span mixes log(prior) into its visual
  log-probabilities (weight λ), keeping the row's visual mass.

Per-batch design: the prior depends on each request's images, so ``attach`` installs

1. a static plan whose prior heads carry a *placeholder* prior (so nested interventions that
   write the same heads fail at attach time, in either nesting order);
2. hooks on the model's top-level forward (:class:`~interventions._common.ForwardTap`)
   that record ``input_ids``, ``attention_mask`` and pixel inputs of each call;
3. a forward pre-hook on the first decoder layer — it runs after the vision tower, so the
   ``vision`` prior can use the ViT attention of this very forward — that builds the batch's
   prior (prefill) or reuses it (decode steps of ``generate``), substitutes it for the
   placeholder in the active plan and enters a plan scope, closed when the forward ends
   (also when it raises).

Priors and supported families: see :mod:`interventions._priors`.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from harness.api.intervention import Intervention, InterventionError
from harness.api.registry import intervention
from interventions._common import (
    ForwardTap,
    check_choice,
    installed,
    parse_attention_layers,
)

__all__ = ["SAP"]

Prior = Literal["vision", "complexity", "gaussian", "dirichlet", "uniform"]


@intervention("sap")
@dataclass(frozen=True)
class SAP(Intervention):
    """Replace learned visual attention by a prior in selected layers.

    Attributes:
        prior: ``vision`` (last ViT layer attention), ``complexity`` (patch grey-level
            gradient + variance), ``gaussian``, ``dirichlet`` or ``uniform``.
        layers: ``"all_but_first"`` (default), ``"all"``, ``"a-b"``, an index, or a list.
        semantics: ``code`` or ``distribution`` (see the module docstring).
        lam: λ in [0, 1].
        lo: Lower quantile of the ``code`` head band.
        hi: Upper quantile of the ``code`` head band.
        seed: Seed of the ``gaussian``/``dirichlet`` priors.
    """

    prior: Prior = "vision"
    layers: str | int | list[int] = "all_but_first"
    semantics: Literal["code", "distribution"] = "code"
    lam: float = 1.0
    lo: float = 0.3
    hi: float = 0.9
    seed: int = 0

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for key in ("prior", "semantics"):
            check_choice("sap", key, getattr(self, key), typing.get_args(hints[key]))
        if isinstance(self.layers, list):
            object.__setattr__(self, "layers", tuple(self.layers))
        if not 0.0 <= self.lam <= 1.0:
            raise InterventionError(f"sap: lam must lie in [0, 1], got {self.lam}")
        if not 0.0 <= self.lo <= self.hi <= 1.0:
            raise InterventionError(f"sap: need 0 ≤ lo ≤ hi ≤ 1, got lo={self.lo}, hi={self.hi}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise InterventionError(f"sap: seed must be an integer ≥ 0, got {self.seed!r}")

    resolved_counters = ("forwards",)

    def vision_use(self) -> Literal["none", "reads", "writes"]:
        """``reads`` for the pixel priors (they hook the vision tower's pass), else ``none``."""
        from interventions._priors import PIXEL_PRIOR_FAMILIES

        return "reads" if self.prior in PIXEL_PRIOR_FAMILIES else "none"

    def make_prior(self, keys: Any, prior: Any, valid: Any) -> Any:
        """A :class:`VisualPrior` with this spec's semantics, λ and band."""
        from harness.attention.dispatch import VisualPrior

        return VisualPrior(
            keys, prior, self.semantics, float(self.lam), (float(self.lo), float(self.hi)), valid
        )

    @contextmanager
    def attach(self, adapter: Any) -> Iterator[dict[str, Any]]:
        """Apply the prior on every forward inside the ``with`` block.

        Yields:
            ``{"name", "prior", "semantics", "lam", "band", "layers", "seed", "model_type",
            "forwards"}``; ``forwards`` counts the forwards that applied a prior (updated live).
        """
        import torch

        from harness.api.anatomy import decoder_layers
        from harness.api.heads import Head
        from harness.attention.dispatch import Plan, plan_scope
        from interventions import _priors

        model = adapter.model
        geometry = adapter.geometry
        layers = parse_attention_layers(self.layers, geometry, "sap")
        _priors.check_support(self.prior, model)
        placeholder = self.make_prior(torch.zeros(1, 0, dtype=torch.long), torch.zeros(1, 0), None)
        heads = [Head(la, h) for la in layers for h in range(geometry.num_heads)]
        static = Plan.build(prior=dict.fromkeys(heads, placeholder))
        info: dict[str, Any] = {
            "name": "sap",
            "prior": self.prior,
            "semantics": self.semantics,
            "lam": self.lam,
            "band": [self.lo, self.hi],
            "layers": layers,
            "seed": self.seed,
            "model_type": getattr(model.config, "model_type", None),
            "forwards": 0,
        }
        scope: dict[str, ExitStack | None] = {"stack": None}

        def end() -> None:
            stack, scope["stack"] = scope["stack"], None
            if stack is not None:
                stack.close()

        tap = ForwardTap(model, on_end=end)
        # Vision-encoder inputs/states since the last prefill. Under ``generate`` the encoder
        # runs *before* the prefill forward (which then gets ``mm_encoder_outputs``).
        pending: dict[str, Any] = {"pixels": [], "vit": None}
        handles: list[Any] = []

        def before_decoder(_module: Any, _args: Any, _kwargs: Any) -> None:
            state = tap.state
            if scope["stack"] is not None:
                return  # already applied in this forward
            if state.continuing:
                built = state.extra.get("sap_prior")
            else:
                built = self._build(model, state, pending)
                state.extra["sap_prior"] = built
            plan = _substitute(_current(model), placeholder, built)
            stack = ExitStack()
            stack.enter_context(plan_scope(model, plan))
            scope["stack"] = stack
            if built is not None:
                info["forwards"] += 1

        def top_level(_module: Any, _args: Any, kwargs: dict) -> None:
            if any(kwargs.get(k) is not None for k in ("pixel_values", "pixel_values_videos")):
                pending["pixels"], pending["vit"] = [], None  # this forward encodes its own

        with installed(model, static, "sap"):
            try:
                first = decoder_layers(model)[0]
                handles.append(first.register_forward_pre_hook(before_decoder, with_kwargs=True))
                if self.prior in _priors.PIXEL_PRIOR_FAMILIES:
                    tower = _priors.vision_tower_module(model)
                    handles.append(
                        tower.register_forward_pre_hook(_capture(pending), with_kwargs=True)
                    )
                    handles.append(model.register_forward_pre_hook(top_level, with_kwargs=True))
                if self.prior == "vision":
                    vit = _priors.vision_attention_module(model)
                    handles.append(
                        vit.register_forward_pre_hook(_capture_vit(pending), with_kwargs=True)
                    )
                with tap:
                    yield info
            finally:
                for handle in handles:
                    handle.remove()
                end()

    def _build(self, model: Any, state: Any, pending: dict[str, Any]) -> Any:
        from interventions import _priors

        ids = state.input_ids
        if ids is None:
            return None
        token_ids = _priors.visual_token_ids(model)
        present = [k for k in ("image", "video") if k in token_ids and (ids == token_ids[k]).any()]
        scores = None
        if self.prior == "complexity":
            captured = pending["pixels"]
            if present and len(captured) != len(present):
                raise InterventionError(
                    f"sap: the batch has {present} tokens but the vision encoder ran "
                    f"{len(captured)} time(s) since the last prefill"
                )
            # Qwen encodes images before videos; LLaVA has images only.
            scores = {
                k: _priors.complexity_scores(model, px, sizes)
                for k, (px, sizes) in zip(present, captured)
            }
        elif self.prior == "vision":
            scores = {}
            if pending["vit"] is not None:
                attn = _priors.vision_attention_module(model)
                scores["image"] = _priors.vision_scores(attn, pending["vit"])
        pending["pixels"], pending["vit"] = [], None
        built = _priors.sample_priors(self.prior, ids, token_ids, state.row_keys, self.seed, scores)
        return None if built is None else self.make_prior(*built)


def _capture(pending: dict[str, Any]) -> Any:
    def hook(_module: Any, args: tuple, kwargs: dict) -> None:
        pixels = args[0] if args else kwargs.get("pixel_values", kwargs.get("hidden_states"))
        sizes = kwargs.get("image_sizes")  # Pixtral: each padded image's own (h, w)
        pending["pixels"].append((pixels.detach(), sizes))

    return hook


def _capture_vit(pending: dict[str, Any]) -> Any:
    def hook(_module: Any, args: tuple, kwargs: dict) -> None:
        hidden = kwargs.get("hidden_states", args[0] if args else None)
        pending["vit"] = hidden.detach()

    return hook


def _current(model: Any) -> Any:
    from harness.attention.dispatch import Plan, current_plan

    plan = current_plan(model)
    return plan if plan is not None else Plan()


def _substitute(plan: Any, placeholder: Any, prior: Any) -> Any:
    """``plan`` with ``placeholder`` priors replaced by ``prior`` (or dropped when None)."""
    from harness.attention.dispatch import Plan

    layers = {}
    for idx, lp in plan.layers.items():
        if any(p is placeholder for p in lp.prior.values()):
            swapped = {h: (prior if p is placeholder else p) for h, p in lp.prior.items()}
            lp = dataclasses.replace(lp, prior={h: p for h, p in swapped.items() if p is not None})
        layers[idx] = lp
    return Plan(layers)
