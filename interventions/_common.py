"""Shared machinery of the interventions: plan installation, layer specs, per-forward taps.

Every attention intervention installs its effects through the single headscope dispatch
(:mod:`harness.attention.dispatch`): :func:`installed` merges the intervention's plan into the
plan that is already active (so nested ``attach`` contexts compose) and raises
:class:`InterventionConflictError` when two interventions write the same head.

:class:`ForwardTap` follows the model's top-level forwards (prefill and decode steps of
``generate``): it records the inputs of each call for interventions whose effect depends on
the batch (SAP priors, seeded per-sample noise) and runs a clean-up at the end of every
forward, also when the forward raises.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.api.intervention import InterventionError
from harness.attention.plan import PlanConflictError

if TYPE_CHECKING:
    from harness.attention.plan import Plan

__all__ = [
    "InterventionConflictError",
    "installed",
    "parse_layers",
    "CallState",
    "ForwardTap",
    "check_choice",
]


class InterventionConflictError(InterventionError, PlanConflictError):
    """Two attached interventions write the same head in incompatible ways."""


def check_choice(name: str, key: str, value: Any, choices: tuple[Any, ...]) -> None:
    """Raise :class:`InterventionError` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise InterventionError(
            f"intervention {name!r}: {key}={value!r} is not one of {list(choices)}"
        )


@contextmanager
def installed(model: Any, plan: Plan, who: str) -> Iterator[Plan]:
    """Install ``plan`` merged into the active plan for the ``with`` block.

    Args:
        model: A model whose text decoder is on the headscope dispatch.
        plan: This intervention's plan.
        who: The intervention's name, for error messages.

    Raises:
        InterventionConflictError: ``plan`` writes a head that an outer intervention
            already writes differently.
    """
    from harness.attention.dispatch import current_plan, merge_plans, plan_scope

    base = current_plan(model)
    try:
        merged = plan if base is None else merge_plans(base, plan)
    except PlanConflictError as err:
        raise InterventionConflictError(
            f"intervention {who!r} conflicts with an intervention already attached: {err}"
        ) from None
    with plan_scope(model, merged):
        yield merged


def parse_layers(spec: Any, num_layers: int, who: str = "intervention") -> list[int]:
    """Resolve a layer spec to sorted layer indices.

    Args:
        spec: ``"all"``, ``"all_but_first"``, ``"a-b"`` (inclusive range), a single
            index (int or digit string), or a list of indices.
        num_layers: Decoder layers of the model.
        who: Intervention name for messages.

    Raises:
        InterventionError: malformed spec, empty selection or index outside the model.
    """
    if isinstance(spec, bool):
        raise InterventionError(f"{who}: layers={spec!r} is not a layer spec")
    if isinstance(spec, int):
        chosen = [spec]
    elif isinstance(spec, list | tuple):
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in spec):
            raise InterventionError(f"{who}: layers list must hold integers, got {spec!r}")
        chosen = list(spec)
    elif spec == "all":
        chosen = list(range(num_layers))
    elif spec == "all_but_first":
        chosen = list(range(1, num_layers))
    elif isinstance(spec, str) and spec.strip().isdigit():
        chosen = [int(spec)]
    elif isinstance(spec, str) and "-" in spec:
        lo, _, hi = spec.partition("-")
        if not (lo.strip().isdigit() and hi.strip().isdigit()) or int(lo) > int(hi):
            raise InterventionError(f"{who}: layer range {spec!r} must look like '2-5'")
        chosen = list(range(int(lo), int(hi) + 1))
    else:
        raise InterventionError(
            f"{who}: layers={spec!r} must be 'all', 'all_but_first', 'a-b', an index or a list"
        )
    bad = [x for x in chosen if not 0 <= x < num_layers]
    if bad:
        raise InterventionError(f"{who}: layers {bad} outside the model ({num_layers} layers)")
    if not chosen:
        raise InterventionError(f"{who}: layers={spec!r} selects no layer")
    return sorted(set(chosen))


def parse_attention_layers(spec: Any, geometry: Any, who: str = "intervention") -> list[int]:
    """:func:`parse_layers` over the layers that have attention (``geometry.head_layers``).

    On a decoder whose every layer is an attention layer this is :func:`parse_layers`. Where
    some have none (Qwen3.5's linear-attention layers), ``all`` and ``all_but_first`` mean
    the attention layers, and naming another layer is refused.
    """
    chosen = parse_layers(spec, geometry.num_layers, who)
    if geometry.attention_layers is None:
        return chosen
    heads = set(geometry.head_layers)
    if spec in ("all", "all_but_first"):
        kept = [x for x in chosen if x in heads]
        if spec == "all_but_first":
            kept = [x for x in kept if x != min(heads)]
        if not kept:
            raise InterventionError(f"{who}: layers={spec!r} selects no attention layer")
        return kept
    bad = [x for x in chosen if x not in heads]
    if bad:
        raise InterventionError(
            f"{who}: layers {bad} are not attention layers (attention layers: {sorted(heads)})"
        )
    return chosen


@dataclass
class CallState:
    """What :class:`ForwardTap` knows about the forward in progress.

    Attributes:
        kwargs: The top-level forward's keyword arguments (``input_ids`` included).
        input_ids: (B, S_q) ids of this call, or None (``inputs_embeds`` forwards).
        attention_mask: (B, S_kv) 2-D padding mask of this call (1 = real), or None.
        continuing: True for decode steps (a non-empty KV cache is passed).
        row_keys: Per-row content keys (CRC32 of the row's unpadded prompt ids), fixed at
            prefill and kept through decode; used to seed per-sample randomness so that
            results do not depend on how samples are batched.
        extra: Free slots for the interventions (e.g. a prior built at prefill).
    """

    kwargs: dict[str, Any] = field(default_factory=dict)
    input_ids: Any = None
    attention_mask: Any = None
    continuing: bool = False
    row_keys: list[int] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


def _cache_length(cache: Any) -> int:
    if cache is None:
        return 0
    try:
        return int(cache.get_seq_length())
    except (AttributeError, TypeError):
        return 0


def _row_keys(input_ids: Any, attention_mask: Any) -> list[int]:
    keys = []
    for b in range(input_ids.shape[0]):
        row = input_ids[b] if attention_mask is None else input_ids[b][attention_mask[b] > 0]
        keys.append(zlib.crc32(row.detach().cpu().numpy().astype("int64").tobytes()))
    return keys


class ForwardTap:
    """Hooks on the model's top-level forward: capture inputs, always clean up.

    Args:
        model: The HF model.
        on_end: Called after every forward, also when it raised (``always_call``).
    """

    def __init__(self, model: Any, on_end: Callable[[], None] | None = None) -> None:
        self.model = model
        self.state = CallState()
        self._on_end = on_end
        self._handles: list[Any] = []

    def _pre(self, _module: Any, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        mask = kwargs.get("attention_mask")
        continuing = _cache_length(kwargs.get("past_key_values")) > 0
        previous = self.state
        self.state = CallState(dict(kwargs), ids, mask, continuing)
        if continuing and previous.row_keys:
            self.state.row_keys = previous.row_keys
            self.state.extra = previous.extra
        elif ids is not None:
            prompt_mask = None if mask is None else mask[:, -ids.shape[1] :]
            self.state.row_keys = _row_keys(ids, prompt_mask)

    def _post(self, *_: Any) -> None:
        if self._on_end is not None:
            self._on_end()

    def __enter__(self) -> ForwardTap:
        self._handles = [
            self.model.register_forward_pre_hook(self._pre, with_kwargs=True),
            self.model.register_forward_hook(self._post, always_call=True),
        ]
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        if self._on_end is not None:
            self._on_end()
