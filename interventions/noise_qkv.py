"""Noise-QKV (paper B's stochastic baseline): random q/k/v projection weights.

In the selected decoder layers, the weight of each of ``q_proj``, ``k_proj`` and ``v_proj``
is replaced by Gaussian noise with that tensor's own mean and standard deviation (biases are
kept: the baseline is defined on the projection weights). The noise is drawn on the CPU from
``torch.Generator`` seeded per (seed, layer, tensor), so it does not depend on the device or
on the order of layers. The original weights are copied back bit-exactly on exit, also when
the body raises.

This is a weight edit, not an attention-function effect, so it composes with every dispatch
intervention (nest the contexts).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from harness.api.intervention import Intervention, InterventionError
from harness.api.registry import intervention
from interventions._common import parse_attention_layers

__all__ = ["NoiseQKV", "matched_noise"]

_PROJ = ("q_proj", "k_proj", "v_proj")


@intervention("noise_qkv")
@dataclass(frozen=True)
class NoiseQKV(Intervention):
    """Replace q/k/v projection weights of selected layers by matched Gaussian noise.

    Attributes:
        layers: ``"all"``, ``"all_but_first"``, ``"a-b"`` (inclusive), an index, or a list.
        seed: Noise seed.
    """

    layers: str | int | list[int] = "all"
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.layers, list):
            object.__setattr__(self, "layers", tuple(self.layers))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InterventionError(f"noise_qkv: seed must be an integer, got {self.seed!r}")

    def vision_use(self) -> Literal["none", "reads", "writes"]:
        """It edits text-decoder weights only: vision features are reused (``"none"``)."""
        return "none"

    @contextmanager
    def attach(self, adapter: Any) -> Iterator[dict[str, Any]]:
        """Swap in the noise weights for the ``with`` block; restore them exactly on exit.

        Yields:
            ``{"name", "layers", "seed", "tensors", "stats"}`` — ``stats`` maps each
            replaced tensor (``L3.q_proj``) to its original ``[mean, std]``.
        """
        import torch

        from harness.api.anatomy import attention_modules

        modules = attention_modules(adapter.model)
        layers = parse_attention_layers(self.layers, adapter.geometry, "noise_qkv")
        targets = []
        for layer in layers:
            attn = modules[layer]
            missing = [p for p in _PROJ if not hasattr(attn, p)]
            if missing:
                raise InterventionError(
                    f"noise_qkv: layer {layer} attention has no {missing} "
                    f"({type(attn).__name__}; fused projections are not supported)"
                )
            targets.extend((layer, p, getattr(attn, p).weight) for p in _PROJ)
        saved: list[tuple[Any, Any]] = []
        stats: dict[str, list[float]] = {}
        try:
            with torch.no_grad():
                for layer, proj, weight in targets:
                    original = weight.detach().clone()
                    saved.append((weight, original))
                    noise, mean, std = matched_noise(original, _seed(self.seed, layer, proj))
                    weight.copy_(noise)
                    stats[f"L{layer}.{proj}"] = [float(mean), float(std)]
            yield {
                "name": "noise_qkv",
                "layers": layers,
                "seed": self.seed,
                "tensors": sorted(stats),
                "stats": stats,
            }
        finally:
            with torch.no_grad():
                for weight, original in saved:
                    weight.copy_(original)


def matched_noise(weight: Any, seed: int) -> tuple[Any, Any, Any]:
    """Gaussian noise with ``weight``'s mean and std, on its device and in its dtype.

    The draw is made on the CPU with a seeded generator (so the noise is the same on every
    device), then moved to ``weight``'s device; the statistics stay on that device (a CPU
    tensor scaled by a CUDA scalar would fail there).

    Returns:
        ``(noise, mean, std)``; ``mean``/``std`` are float32 0-dim tensors on the device.
    """
    import torch

    values = weight.detach().float()
    mean, std = values.mean(), values.std()
    gen = torch.Generator().manual_seed(int(seed))
    draw = torch.randn(tuple(weight.shape), generator=gen).to(weight.device)
    return (draw * std + mean).to(weight.dtype), mean, std


def _seed(seed: int, layer: int, proj: str) -> int:
    import numpy as np

    seq = np.random.SeedSequence([int(seed), int(layer), _PROJ.index(proj)])
    return int(seq.generate_state(1, dtype=np.uint64)[0] >> 1)
