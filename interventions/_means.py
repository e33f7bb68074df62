"""Loading the per-head mean reference of ``ablate:mode=mean``.

A mean reference is an ``[L, H, head_dim]`` tensor: for each decoder head, the mean of its
attention output over every real token of a reference set. Files: ``.pt`` (``torch.save`` of
the tensor, or of ``{"mean": tensor, ...}``) or ``.npz`` (array under ``"mean"``). Computing on
the fly inside ``attach`` is not supported on purpose: the reference set must be fixed and
recorded, so build the file once with ``headscope means`` (:mod:`harness.probes.means`) and
pass its path.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.api.intervention import InterventionError

if TYPE_CHECKING:
    import torch

    from harness.api.heads import Geometry

__all__ = ["load_head_means"]


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
