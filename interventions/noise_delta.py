"""Noise-Δ (paper B's stochastic baseline): the attention update replaced by matched noise.

In each selected decoder layer, the attention block's update ΔX_attn (the ``self_attn``
output after ``o_proj``, which the layer adds to the residual stream) is replaced by Gaussian
noise with ΔX_attn's own mean and standard deviation. Statistics are scalars per sample and
call, over that sample's real (non-padding) tokens of the call and all hidden dimensions.

Why a forward hook on ``self_attn`` and not the dispatch's ``OutputHook``: the dispatch sees
per-head outputs *before* ``o_proj``, and the baseline is defined on the residual update
after it. The hook is a plain module hook, so it applies to every family alike.

Seeding: per sample, from (seed, layer, a CRC32 of the sample's unpadded prompt ids, the
number of real tokens before this call), so a sample gets the same noise whether it runs
alone or in any batch, and every decode step gets fresh noise.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from harness.api.intervention import Intervention, InterventionError
from harness.api.registry import intervention
from interventions._common import ForwardTap, parse_attention_layers

__all__ = ["NoiseDelta"]


@intervention("noise_delta")
@dataclass(frozen=True)
class NoiseDelta(Intervention):
    """Replace ΔX_attn of selected layers by Gaussian noise with matched mean and std.

    Attributes:
        layers: ``"all"``, ``"all_but_first"``, ``"a-b"`` (inclusive), an index, or a list.
        seed: Noise seed (≥ 0).
    """

    layers: str | int | list[int] = "all"
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.layers, list):
            object.__setattr__(self, "layers", tuple(self.layers))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise InterventionError(f"noise_delta: seed must be an integer ≥ 0, got {self.seed!r}")

    def vision_use(self) -> Literal["none", "reads", "writes"]:
        """It hooks text-decoder layers only: vision features are reused (``"none"``)."""
        return "none"

    @contextmanager
    def attach(self, adapter: Any) -> Iterator[dict[str, Any]]:
        """Install the noise hooks for the ``with`` block (removed on exit, also on error).

        Yields:
            ``{"name", "layers", "seed", "stats"}`` (``stats`` names how mean/std are matched).
        """
        from harness.api.anatomy import attention_modules

        model = adapter.model
        modules = attention_modules(model)
        layers = parse_attention_layers(self.layers, adapter.geometry, "noise_delta")
        handles = []
        with ForwardTap(model) as tap:
            try:
                for layer in layers:
                    hook = _make_hook(tap, layer, self.seed)
                    handles.append(modules[layer].register_forward_hook(hook))
                yield {
                    "name": "noise_delta",
                    "layers": layers,
                    "seed": self.seed,
                    "stats": "per sample and call: scalar mean/std over real tokens × hidden",
                }
            finally:
                for handle in handles:
                    handle.remove()


def _make_hook(tap: ForwardTap, layer: int, seed: int) -> Any:
    def hook(_module: Any, _args: Any, output: Any) -> Any:
        delta = output[0] if isinstance(output, tuple) else output
        noisy = noise_like(delta, tap.state.attention_mask, tap.state.row_keys, layer, seed)
        return (noisy, *output[1:]) if isinstance(output, tuple) else noisy

    return hook


def noise_like(delta: Any, attention_mask: Any, row_keys: list[int], layer: int, seed: int) -> Any:
    """Matched Gaussian noise for ΔX_attn ``delta`` (B, S_q, hidden); padding rows kept.

    Args:
        delta: The attention update of one call.
        attention_mask: (B, S_kv) 2-D padding mask of the call (1 = real), or None.
        row_keys: Per-sample content keys (see :class:`interventions._common.CallState`).
        layer: Decoder layer (part of the seed).
        seed: Base seed.
    """
    import numpy as np
    import torch

    batch, q_len, hidden = delta.shape
    if attention_mask is None:
        real = torch.ones(batch, q_len, dtype=torch.bool, device=delta.device)
        past = [delta.new_zeros(()).long()] * batch
    else:
        real = attention_mask[:, -q_len:].bool().to(delta.device)
        past = attention_mask[:, :-q_len].sum(-1)
    out = delta.clone()
    for b in range(batch):
        rows = real[b]
        n = int(rows.sum())
        if n == 0:
            continue
        values = delta[b][rows].float()
        mean, std = values.mean(), values.std(correction=1 if values.numel() > 1 else 0)
        key = row_keys[b] if b < len(row_keys) else 0
        state = np.random.SeedSequence([seed, layer, int(key), int(past[b])]).generate_state(1)
        gen = torch.Generator().manual_seed(int(state[0]))
        noise = torch.randn(n, hidden, generator=gen) * std.cpu() + mean.cpu()
        out[b][rows] = noise.to(delta.device, delta.dtype)
    if not torch.isfinite(out).all():
        raise InterventionError(f"noise_delta: non-finite noise in layer {layer}")
    return out
