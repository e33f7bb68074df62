"""Probe plumbing shared by ``rank`` and ``diagnose``: spans → masks, one recorded prefill.

Every probe runs one sample per forward (batch 1, no padding), so token positions from
:meth:`~harness.api.model.ModelAdapter.token_spans` index the model input directly. The
attention mass is recorded by the dispatch (:class:`~harness.attention.plan.RecordSpec`): logits
only for the query rows, ``(1, H, n_q, S)`` per layer, never ``S × S``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import torch

    from harness.api.model import TokenSpans

__all__ = [
    "ProbeError",
    "prepare_single",
    "span_masks",
    "recording",
    "masses_of",
    "prefill",
    "record_masses",
]


class ProbeError(RuntimeError):
    """A probe could not measure what it was asked to (names the sample and the cause)."""


def prepare_single(adapter: Any, request: Any, spans: TokenSpans | None = None) -> dict[str, Any]:
    """Model inputs of one request; checks they match the spans' unpadded length."""
    inputs = adapter.prepare([request])
    length = int(inputs["input_ids"].shape[1])
    if spans is not None and length != spans.seq_len:
        raise ProbeError(
            f"model input has {length} tokens but token_spans counted {spans.seq_len} "
            "(the adapter's prepare and token_spans disagree)"
        )
    return inputs


def span_masks(
    length: int, query: Sequence[int], keys: Mapping[str, Sequence[int]]
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``(1, length)`` bool masks: the query rows and one key-column mask per name.

    Raises:
        ProbeError: An empty query or key set, or a position outside ``[0, length)``.
    """
    import torch

    def mask(positions: Sequence[int], what: str) -> torch.Tensor:
        pos = torch.as_tensor(list(positions), dtype=torch.long)
        if pos.numel() == 0:
            raise ProbeError(f"no {what} tokens")
        if int(pos.min()) < 0 or int(pos.max()) >= length:
            raise ProbeError(f"{what} positions fall outside the {length}-token input")
        out = torch.zeros(1, length, dtype=torch.bool)
        out[0, pos] = True
        return out

    return mask(query, "query"), {name: mask(pos, name) for name, pos in keys.items()}


@contextmanager
def recording(
    model: Any,
    query_mask: torch.Tensor,
    key_masks: Mapping[str, torch.Tensor],
    *,
    layers: Sequence[int] | None = None,
    keep_mean: bool = False,
) -> Iterator[dict[str, Any]]:
    """Record, in every decoder layer, the mass of the query rows on each key-column set.

    The recording plan is merged into any plan already installed (an attached intervention
    stays active; the record then sees that intervention's windows).

    Args:
        model: A model whose text decoder is on the dispatch.
        query_mask: (1, S) query rows.
        key_masks: Name → (1, S) key columns.
        layers: Record only these layers (default: every attention layer).
        keep_mean: Also keep the rows' mean distribution per head (``(1, H, S)`` per layer,
            :attr:`~harness.attention.plan.AttentionRecorder.mean_row`).

    Yields:
        Name → :class:`~harness.attention.record.AttentionRecorder`, filled by forwards run
        inside the block; read them with :func:`masses_of`.
    """
    from harness.api.anatomy import geometry_of
    from harness.attention.dispatch import (
        AttentionRecorder,
        LayerPlan,
        Plan,
        RecordSpec,
        current_plan,
        merge_plans,
        plan_scope,
    )

    if layers is None:  # every attention layer (linear/conv layers of hybrids have no heads)
        layers = geometry_of(model).head_layers
    recorders = {name: AttentionRecorder() for name in key_masks}
    specs = tuple(
        RecordSpec(recorders[n], query_mask, m, keep_mean=keep_mean) for n, m in key_masks.items()
    )
    plan = Plan({layer: LayerPlan(record=specs) for layer in layers})
    base = current_plan(model)
    with plan_scope(model, plan if base is None else merge_plans(base, plan)):
        yield recorders


def masses_of(
    recorders: Mapping[str, Any], num_layers: int, layers: Sequence[int] | None = None
) -> dict[str, np.ndarray]:
    """``[L, H]`` float64 masses of sample 0 from filled recorders.

    ``layers`` are the layers that must have recorded (default: all); the rows of the others
    (layers without heads, e.g. Qwen3.5's linear-attention layers) are 0: no head, no mass.

    Raises:
        ProbeError: A layer recorded nothing (its attention did not go through the dispatch).
    """
    import numpy as np

    expected = set(range(num_layers) if layers is None else layers)
    out = {}
    for name, rec in recorders.items():
        if not rec.mass:
            raise ProbeError("no layer recorded attention (is the decoder on the dispatch?)")
        arr = rec.matrix(num_layers)[0].double().numpy()
        missing = sorted({int(i) for i in np.argwhere(np.isnan(arr))[:, 0]} & expected)
        if missing:
            raise ProbeError(f"layers {missing} recorded no attention mass")
        arr[sorted(set(range(num_layers)) - expected)] = 0.0
        out[name] = arr
    return out


def prefill(model: Any, inputs: Mapping[str, Any]) -> None:
    """One no-grad forward without cache; logits only for the last position when supported.

    ``logits_to_keep=1`` spares the ``S × vocab`` logits (gigabytes for long real inputs).
    """
    import torch

    with torch.no_grad():
        try:
            model(**inputs, use_cache=False, logits_to_keep=1)
        except TypeError as exc:
            if "logits_to_keep" not in str(exc):
                raise
            model(**inputs, use_cache=False)


def record_masses(
    model: Any,
    inputs: Mapping[str, Any],
    query: Sequence[int],
    keys: Mapping[str, Sequence[int]],
) -> dict[str, np.ndarray]:
    """Per head, the mean over ``query`` rows of the attention mass on each key set.

    Args:
        model: A model whose text decoder is on the headscope dispatch.
        inputs: Inputs of one sample (batch 1, unpadded).
        query: Query-row positions (e.g. the instruction tokens).
        keys: Name → key-column positions (e.g. ``{"evidence": Ω(V*), "visual": ...}``).

    Returns:
        Name → ``[L, H]`` float64 array.
    """
    from harness.api.anatomy import geometry_of

    length = int(inputs["input_ids"].shape[1])
    qmask, kmasks = span_masks(length, query, keys)
    with recording(model, qmask, kmasks) as recorders:
        prefill(model, inputs)
    return masses_of(recorders, geometry_of(model).num_layers)
