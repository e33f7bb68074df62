"""Per-layer attention plans read by the ``headscope`` attention function.

A :class:`Plan` maps decoder layer → :class:`LayerPlan`; a layer plan maps query head →
effect. Effects that change what a head computes are mutually exclusive on one head
(:class:`Ablation`, :class:`Window`, :class:`VisualPrior`); :class:`OutputHook` post-processes
a head's output; :class:`RecordSpec` only observes. A layer may carry a
:class:`~harness.attention.route.Route` (input-adaptive hybrid attention) instead of static
windows: it windows a per-input choice of the layer's heads. Plans are frozen values: build
them with :meth:`Plan.build` (from ``Head`` keys) and combine them with :func:`merge_plans`,
which raises :class:`PlanConflictError` when two plans write the same head in conflicting
ways.

Tensor-carrying effects compare by identity (the same object merged twice is not a conflict).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from harness.api.heads import Geometry, Head
from harness.attention.stream import Stream

if TYPE_CHECKING:
    import torch

    from harness.attention.route import Route

__all__ = [
    "ABLATION_MODES",
    "AttentionRecorder",
    "Ablation",
    "Window",
    "VisualPrior",
    "Stream",
    "OutputHook",
    "HookContext",
    "RecordSpec",
    "LayerPlan",
    "Plan",
    "PlanConflictError",
    "merge_plans",
]

ABLATION_MODES = ("zero", "mean", "uniform", "bos")


class AttentionRecorder:
    """Per-layer results of a :class:`~harness.attention.plan.RecordSpec` (float32, CPU).

    Attributes:
        mass: layer → (B, H) mean over the query rows of the attention mass on the key columns.
        rows: layer → (B, H, n_q, S_kv) full row distributions (only with ``keep_rows``);
            rows beyond a sample's own query count are zero.
        row_positions: layer → (B, n_q) absolute query positions (−1 = padding entry).
        mean_row: layer → (B, H, S_kv) mean over the query rows of their distributions (only
            with ``keep_mean``): the instruction-averaged attention on every key.
        calls: Number of layer calls recorded.
    """

    def __init__(self) -> None:
        self.mass: dict[int, torch.Tensor] = {}
        self.rows: dict[int, torch.Tensor] = {}
        self.row_positions: dict[int, torch.Tensor] = {}
        self.mean_row: dict[int, torch.Tensor] = {}
        self.calls = 0

    def clear(self) -> None:
        """Forget everything recorded."""
        self.mass.clear()
        self.rows.clear()
        self.row_positions.clear()
        self.mean_row.clear()
        self.calls = 0

    def matrix(self, num_layers: int) -> torch.Tensor:
        """(B, L, H) stacked masses; layers never recorded are NaN."""
        import torch

        if not self.mass:
            raise ValueError("nothing recorded")
        ref = next(iter(self.mass.values()))
        out = torch.full((ref.shape[0], num_layers, ref.shape[1]), float("nan"))
        for layer, value in self.mass.items():
            out[:, layer] = value
        return out


class PlanConflictError(ValueError):
    """Two plans (or two effects) write the same head in incompatible ways."""


@dataclass(frozen=True, eq=False)
class Ablation:
    """Remove a head's contribution.

    Attributes:
        mode: ``zero`` (output zeroed), ``mean`` (output replaced by ``mean``), ``uniform``
            (uniform attention over every key the model's mask allows: the causal,
            non-padding span of a causal model; a zeroed query), or
            ``bos`` (all attention on the first *real* token: with left padding, the first
            non-padding position, so a padded batch matches running samples one by one).
        mean: Per-head mean output vector (head_dim,) for ``mean`` mode.
    """

    mode: Literal["zero", "mean", "uniform", "bos"]
    mean: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.mode not in ABLATION_MODES:
            raise ValueError(f"unknown ablation mode {self.mode!r} (known: {ABLATION_MODES})")
        if (self.mode == "mean") != (self.mean is not None):
            raise ValueError("Ablation(mode='mean') needs `mean`; other modes take none")


@dataclass(frozen=True)
class Window:
    """Sliding window of ``size`` keys (the query's own position included).

    The window narrows what the model's mask allows: keys at or before p − W go, keys the
    mask lets the query see ahead of it (Gemma3's image block, PaliGemma's prefix) stay, as
    in transformers' own Gemma3 sliding layers (docs/attention_semantics.md).

    Attributes:
        size: W ≥ 1; under a causal mask the query at position p sees keys (p − W, p].
        sinks: Also attend to the first ``sinks`` real tokens (attention sinks).
        in_decode: Apply the window in decode calls (one query row) too; by default only
            prefill is windowed (paper A's hybrid attention) and decode stays dense.
    """

    size: int
    sinks: int = 0
    in_decode: bool = False

    def __post_init__(self) -> None:
        if self.size < 1 or self.sinks < 0:
            raise ValueError(f"invalid window size={self.size} sinks={self.sinks}")


@dataclass(frozen=True, eq=False)
class VisualPrior:
    """Replace a head's learned attention over visual keys by a prior (paper B's SAP).

    Attributes:
        keys: (B, K) long absolute key positions of the visual tokens.
        prior: (B, K) prior probabilities over those keys (rows sum to 1).
        semantics: ``code`` — last query row only; among the layer's prior heads, only those
            whose mean pre-softmax logit over the non-visual keys lies within the ``band``
            quantiles (per sample) change; their visual logits become
            (1 − λ)·logit + λ·prior. ``distribution`` — every query row that sees all visual
            keys gets visual log-probabilities mixed with log(prior) (weight λ), keeping the
            row's total visual mass; rows before the visual span are unchanged.
        lam: λ in [0, 1].
        band: Quantile band for ``code`` head selection.
        valid: Optional (B, K) bool; False marks padding entries of ``keys``.
    """

    keys: torch.Tensor
    prior: torch.Tensor
    semantics: Literal["code", "distribution"] = "code"
    lam: float = 1.0
    band: tuple[float, float] = (0.3, 0.9)
    valid: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.semantics not in ("code", "distribution"):
            raise ValueError(f"unknown prior semantics {self.semantics!r}")
        if not 0.0 <= self.lam <= 1.0 or not 0.0 <= self.band[0] <= self.band[1] <= 1.0:
            raise ValueError(f"invalid lam={self.lam} or band={self.band}")
        if tuple(self.keys.shape) != tuple(self.prior.shape) or self.keys.dim() != 2:
            raise ValueError("VisualPrior.keys and .prior must both be (B, K)")


@dataclass(frozen=True)
class HookContext:
    """What an :class:`OutputHook` is told about the call.

    Attributes:
        layer: Decoder layer index.
        heads: Query heads whose outputs the hook receives (in that order).
        q_offset: Absolute position of the first query row (S_kv − S_q).
        attention_mask: The bool mask HF passed (B, 1, S_q, S_kv), or None.
    """

    layer: int
    heads: tuple[int, ...]
    q_offset: int
    attention_mask: Any


@dataclass(frozen=True, eq=False)
class OutputHook:
    """Post-process per-head attention outputs (before o_proj).

    ``fn(x, ctx)`` receives ``x`` of shape (B, S_q, n_heads, head_dim) for all heads of the
    layer that carry this same hook object, and returns a tensor of the same shape.
    """

    fn: Callable[[Any, HookContext], Any]
    name: str = "hook"


@dataclass(frozen=True, eq=False)
class RecordSpec:
    """Record per-head attention mass of given query rows on given key columns (RAM).

    Attributes:
        recorder: Where results go (see :class:`harness.attention.record.AttentionRecorder`).
        query_mask: (B, S) bool over absolute positions: the query rows.
        key_mask: (B, S) bool over absolute positions: the key columns (e.g. evidence tokens).
        keep_rows: Also store each recorded row's full distribution (B, H, n_q, S_kv).
        keep_mean: Also store the mean of those rows (B, H, S_kv) (attention maps).
    """

    recorder: AttentionRecorder
    query_mask: torch.Tensor
    key_mask: torch.Tensor
    keep_rows: bool = False
    keep_mean: bool = False


def _frozen(mapping: Mapping[int, Any] | None) -> Mapping[int, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class LayerPlan:
    """Effects for the heads of one decoder layer (head index → effect).

    ``route`` (optional) chooses the layer's windowed heads per input at prefill; ablations,
    priors and hooks still apply on top of it (after routing). ``stream`` (optional) streams
    the KV groups it does not keep in decode; it combines with prefill windows only.
    """

    ablate: Mapping[int, Ablation] = field(default_factory=dict)
    window: Mapping[int, Window] = field(default_factory=dict)
    prior: Mapping[int, VisualPrior] = field(default_factory=dict)
    hooks: Mapping[int, tuple[OutputHook, ...]] = field(default_factory=dict)
    record: tuple[RecordSpec, ...] = ()
    route: Route | None = None
    stream: Stream | None = None

    def __post_init__(self) -> None:
        for name in ("ablate", "window", "prior", "hooks"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        object.__setattr__(self, "record", tuple(self.record))
        seen: dict[int, str] = {}
        for name in ("ablate", "window", "prior"):
            for head in getattr(self, name):
                if head in seen:
                    raise PlanConflictError(f"head {head} has both {seen[head]} and {name}")
                seen[head] = name
        if self.route is not None and self.window:
            raise PlanConflictError(f"heads {sorted(self.window)} have both window and a route")
        if self.stream is not None:
            kinds = ("ablate", "prior", "hooks", "record", "route")
            others = [n for n in kinds if getattr(self, n)]
            if others or any(w.in_decode for w in self.window.values()):
                raise PlanConflictError(
                    f"a streamed layer combines with prefill windows only, not with "
                    f"{others or 'decode windows'}"
                )
        for head in self.hooks:
            if seen.get(head) == "ablate" and self.ablate[head].mode in ("zero", "mean"):
                raise PlanConflictError(
                    f"head {head}: output hook on a {self.ablate[head].mode}-ablated head"
                )

    @property
    def changes_output(self) -> bool:
        """Whether any effect changes the attention output."""
        return bool(
            self.ablate or self.window or self.prior or self.hooks or self.route or self.stream
        )

    def heads(self) -> set[int]:
        """All heads with an effect."""
        return set(self.ablate) | set(self.window) | set(self.prior) | set(self.hooks)


@dataclass(frozen=True)
class Plan:
    """Decoder layer → :class:`LayerPlan`. An empty plan leaves the model bit-identical to sdpa."""

    layers: Mapping[int, LayerPlan] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", _frozen(self.layers))

    @classmethod
    def build(
        cls,
        *,
        ablate: Mapping[Head, Ablation] | None = None,
        window: Mapping[Head, Window] | None = None,
        prior: Mapping[Head, VisualPrior] | None = None,
        hooks: Mapping[Head, OutputHook] | None = None,
        record: RecordSpec | None = None,
        record_layers: list[int] | range | None = None,
    ) -> Plan:
        """Build a plan from ``Head``-keyed effects.

        Args:
            ablate: Head → ablation.
            window: Head → sliding window.
            prior: Head → visual prior.
            hooks: Head → output hook.
            record: A record spec applied to ``record_layers``.
            record_layers: Layers to record (required with ``record``).
        """
        per: dict[int, dict[str, dict[int, Any]]] = {}
        for kind, effects in (("ablate", ablate), ("window", window), ("prior", prior)):
            for head, effect in (effects or {}).items():
                per.setdefault(head.layer, {}).setdefault(kind, {})[head.head] = effect
        for head, hook in (hooks or {}).items():
            per.setdefault(head.layer, {}).setdefault("hooks", {})[head.head] = (hook,)
        if record is not None:
            if record_layers is None:
                raise ValueError("record needs record_layers")
            for layer in record_layers:
                per.setdefault(layer, {})["record"] = (record,)  # type: ignore[assignment]
        return cls({layer: LayerPlan(**kinds) for layer, kinds in per.items()})

    def validate(self, geometry: Geometry) -> Plan:
        """Raise if a layer or head lies outside ``geometry`` (or in a layer without heads)."""
        for layer, lp in self.layers.items():
            for head in lp.heads():
                geometry.check(Head(layer, head))
            if not lp.heads() and layer >= geometry.num_layers:
                raise ValueError(f"layer {layer} outside the model ({geometry.num_layers} layers)")
            if layer not in geometry.head_layers:
                raise ValueError(
                    f"layer {layer} is not an attention layer (attention layers: "
                    f"{list(geometry.head_layers)})"
                )
            if lp.route is not None:
                lp.route.check(geometry.num_heads)
            if lp.stream is not None and not lp.stream.kept <= set(range(geometry.num_kv_heads)):
                raise ValueError(f"layer {layer}: stream keeps KV groups outside the model")
        return self


def _same(a: Any, b: Any) -> bool:
    return a is b or (isinstance(a, Window) and a == b)


def _merge_layer(layer: int, a: LayerPlan, b: LayerPlan) -> LayerPlan:
    merged: dict[str, dict[int, Any]] = {}
    for kind in ("ablate", "window", "prior"):
        out = dict(getattr(a, kind))
        for head, effect in getattr(b, kind).items():
            if head in out and not _same(out[head], effect):
                raise PlanConflictError(
                    f"{Head(layer, head)}: two plans set different {kind} effects"
                )
            out[head] = effect
        merged[kind] = out
    hooks = {h: tuple(v) for h, v in a.hooks.items()}
    for head, extra in b.hooks.items():
        hooks[head] = hooks.get(head, ()) + tuple(x for x in extra if x not in hooks.get(head, ()))
    if a.route is not None and b.route is not None and a.route is not b.route:
        raise PlanConflictError(f"layer {layer}: two plans route the layer's heads")
    if a.stream is not None and b.stream is not None and a.stream != b.stream:
        raise PlanConflictError(f"layer {layer}: two plans stream the layer's KV differently")
    try:
        route = a.route if a.route is not None else b.route
        stream = a.stream if a.stream is not None else b.stream
        return LayerPlan(
            **merged, hooks=hooks, record=a.record + b.record, route=route, stream=stream
        )
    except PlanConflictError as err:
        raise PlanConflictError(f"layer {layer}: {err}") from None


def merge_plans(*plans: Plan) -> Plan:
    """Combine plans; raise :class:`PlanConflictError` on conflicting writes to one head.

    Identical effects (the same object, or equal windows) merge silently; hooks and
    records accumulate in order.
    """
    layers: dict[int, LayerPlan] = {}
    for plan in plans:
        for layer, lp in plan.layers.items():
            layers[layer] = _merge_layer(layer, layers[layer], lp) if layer in layers else lp
    return Plan(layers)
