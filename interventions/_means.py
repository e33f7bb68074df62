"""Per-head mean outputs for ``ablate:mode=mean``: compute, save, load.

A mean reference is an ``[L, H, head_dim]`` tensor: for each decoder head, the mean of its
attention output (its slice of the ``o_proj`` input) over every real (non-padding) token of a
reference set. Files: ``.pt`` (``torch.save`` of the tensor, or of ``{"mean": tensor}``) or
``.npz`` (array under ``"mean"``). Computing on the fly inside ``attach`` is not supported on
purpose: the reference set must be fixed and recorded, so build the file once with
:func:`compute_head_means` and pass its path.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.api.errors import UsageError
from harness.api.intervention import InterventionError

if TYPE_CHECKING:
    import torch

    from harness.api.heads import Geometry

__all__ = ["compute_head_means", "save_head_means", "load_head_means"]


def compute_head_means(model: Any, batches: Iterable[dict[str, Any]]) -> torch.Tensor:
    """Mean per-head attention output over the real tokens of ``batches``.

    Args:
        model: A HF model (any attention implementation; the dispatch with an empty plan
            gives the same numbers as sdpa).
        batches: Model inputs (e.g. ``adapter.prepare(requests)``), each with
            ``attention_mask`` when padded.

    Returns:
        ``[L, H, head_dim]`` float32 tensor on the CPU.
    """
    import torch

    from harness.api.anatomy import decoder_layers, geometry_of

    g = geometry_of(model)
    sums = torch.zeros(g.num_layers, g.num_heads, g.head_dim, dtype=torch.float64)
    count = torch.zeros((), dtype=torch.float64)
    current: dict[str, Any] = {}

    def grab(layer: int):
        def hook(_module, args):
            x = args[0].detach().to(torch.float64)
            x = x.view(x.shape[0], x.shape[1], g.num_heads, g.head_dim)
            mask = current.get("mask")
            if mask is None:
                sums[layer] += x.sum(dim=(0, 1)).cpu()
            else:
                keep = mask[:, -x.shape[1] :].to(x.device, torch.float64)
                sums[layer] += (x * keep[:, :, None, None]).sum(dim=(0, 1)).cpu()

        return hook

    handles = [
        layer.self_attn.o_proj.register_forward_pre_hook(grab(i))
        for i, layer in enumerate(decoder_layers(model))
    ]
    try:
        with torch.no_grad():
            for batch in batches:
                mask = batch.get("attention_mask")
                current["mask"] = mask
                ids = batch.get("input_ids")
                tokens = mask.sum() if mask is not None else ids.shape[0] * ids.shape[1]
                count += float(tokens)
                model(**batch)
    finally:
        for handle in handles:
            handle.remove()
    if count == 0:
        raise ValueError("compute_head_means got no tokens")
    return (sums / count).float()


def save_head_means(path: str | Path, means: torch.Tensor) -> Path:
    """Write ``means`` (``[L, H, head_dim]``) to ``.pt`` or ``.npz``; returns the path."""
    import numpy as np
    import torch

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.suffix == ".npz":
        np.savez(target, mean=means.detach().cpu().numpy())
    elif target.suffix == ".pt":
        torch.save({"mean": means.detach().cpu()}, target)
    else:
        raise UsageError(f"mean reference must end in .pt or .npz, got {target.name!r}")
    return target


def load_head_means(path: str, geometry: Geometry, who: str = "ablate") -> torch.Tensor:
    """Load an ``[L, H, head_dim]`` mean reference and check it against ``geometry``."""
    import numpy as np
    import torch

    target = Path(path)
    if not target.is_file():
        raise InterventionError(f"{who}: mean_reference {path!r} does not exist")
    try:
        if target.suffix == ".npz":
            with np.load(target) as data:
                value = torch.from_numpy(np.asarray(data["mean"]))
        elif target.suffix == ".pt":
            value = torch.load(target, map_location="cpu", weights_only=True)
            value = value["mean"] if isinstance(value, dict) else value
        else:
            raise InterventionError(f"{who}: mean_reference must be a .pt or .npz file")
    except (KeyError, OSError, ValueError, RuntimeError) as err:
        raise InterventionError(f"{who}: cannot read mean_reference {path!r}: {err}") from None
    want = (geometry.num_layers, geometry.num_heads, geometry.head_dim)
    if not isinstance(value, torch.Tensor) or tuple(value.shape) != want:
        shape = tuple(value.shape) if hasattr(value, "shape") else type(value).__name__
        raise InterventionError(
            f"{who}: mean_reference {path!r} has shape {shape}, expected [L, H, head_dim] = {want}"
        )
    return value.float()
