"""Loading the per-head mean reference of ``ablate:mode=mean``.

A mean reference is an ``[L, H, head_dim]`` tensor: for each decoder head, the mean of its
attention output over every real token of a reference set. Files: ``.pt`` (``torch.save`` of
the tensor, or of ``{"mean": tensor, ...}``) or ``.npz`` (array under ``"mean"``). Computing on
the fly inside ``attach`` is not supported on purpose: the reference set must be fixed and
recorded, so build the file once with ``headscope means`` (:mod:`harness.probes.means`) and
pass its path.
"""

from __future__ import annotations

import pickle
import zipfile
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from harness.api.intervention import InterventionError

if TYPE_CHECKING:
    import torch

    from harness.api.heads import Geometry

__all__ = ["load_head_means"]

_DAMAGED = (pickle.UnpicklingError, zipfile.BadZipFile, zlib.error)


def load_head_means(path: str, geometry: Geometry, who: str = "ablate") -> torch.Tensor:
    """Load an ``[L, H, head_dim]`` mean reference and check it against ``geometry``."""
    import numpy as np
    import torch

    target = Path(path)
    if not target.is_file():
        raise InterventionError(f"{who}: mean_reference {path!r} does not exist")
    if target.suffix not in (".pt", ".npz"):
        raise InterventionError(f"{who}: mean_reference must be a .pt or .npz file")
    hint = "build it with `headscope means ... --output FILE`"
    if not zipfile.is_zipfile(target):  # what torch.save and numpy.savez write
        raise InterventionError(
            f"{who}: mean_reference {path!r} is not a zip archive as torch.save / numpy.savez "
            "write (truncated, garbage, or a plain pickle)",
            hint=hint,
        )
    try:
        if target.suffix == ".npz":
            with np.load(target) as data:
                value = torch.from_numpy(np.asarray(data["mean"]))
        else:
            value = torch.load(target, map_location="cpu", weights_only=True)
            value = value["mean"] if isinstance(value, dict) else value
    except (KeyError, OSError, ValueError, RuntimeError, EOFError, *_DAMAGED) as err:
        # What numpy's and torch's readers raise for an archive that is not what it claims: a
        # damaged member (BadZipFile, zlib.error, EOFError), pickled objects that weights_only
        # refuses (UnpicklingError), object arrays (ValueError).
        why = f"{type(err).__name__}: {err}"
        if isinstance(err, pickle.UnpicklingError):  # torch's message is a page long
            why = "pickled objects that torch.load(weights_only=True) refuses"
        raise InterventionError(
            f"{who}: cannot read mean_reference {path!r}: {why}", hint=hint
        ) from None
    want = (geometry.num_layers, geometry.num_heads, geometry.head_dim)
    if not isinstance(value, torch.Tensor) or tuple(value.shape) != want:
        shape = tuple(value.shape) if hasattr(value, "shape") else type(value).__name__
        raise InterventionError(
            f"{who}: mean_reference {path!r} has shape {shape}, expected [L, H, head_dim] = {want}"
        )
    return value.float()
