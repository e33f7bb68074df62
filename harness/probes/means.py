"""Per-head mean outputs over a reference set: the file ``ablate:mode=mean`` reads.

A mean reference is an ``[L, H, head_dim]`` tensor: for each decoder head, the mean of its
attention output (its slice of the ``o_proj`` input) over every real (non-padding) token of a
reference set. ``headscope means`` builds it from tasks' prompts (:func:`task_head_means`);
:func:`compute_head_means` takes any model inputs. Files: ``.pt`` (``{"mean": tensor,
"reference": {...}}``) or ``.npz`` (arrays ``mean`` and ``reference``, the latter a JSON
string); ``interventions.ablate`` reads the ``mean`` of either (and a bare ``.pt`` tensor).
The reference set is fixed and recorded (model, tasks, documents, tokens), never computed
on the fly inside ``attach``.

Importing this module imports nothing heavy (torch loads inside the functions).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.api.errors import UsageError

if TYPE_CHECKING:
    import torch

    from harness.api.model import ModelAdapter
    from harness.api.specs import TaskSpec

__all__ = [
    "compute_head_means",
    "save_head_means",
    "task_head_means",
    "check_means_path",
    "is_means_file",
    "MEAN_SUFFIXES",
]

#: File suffixes a mean reference may have.
MEAN_SUFFIXES = (".pt", ".npz")


def compute_head_means(model: Any, batches: Iterable[dict[str, Any]]) -> torch.Tensor:
    """Mean per-head attention output over the real tokens of ``batches``.

    Args:
        model: A HF model (any attention implementation; the dispatch with an empty plan
            gives the same numbers as sdpa).
        batches: Model inputs (e.g. ``adapter.prepare(requests)``), each with
            ``attention_mask`` when padded.

    Returns:
        ``[L, H, head_dim]`` float32 tensor on the CPU.

    Raises:
        ValueError: ``batches`` held no token.
    """
    import torch

    from harness.api.anatomy import attention_modules, geometry_of

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

    handles = [  # attention layers only: a linear-attention layer has no heads (rows stay 0)
        attn.o_proj.register_forward_pre_hook(grab(i))
        for i, attn in attention_modules(model).items()
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


def check_means_path(path: str | Path) -> Path:
    """``path`` as a :class:`~pathlib.Path`, refused unless headscope may write a means file there.

    It must end in ``.pt`` or ``.npz``; a path that exists must be a means file (an earlier
    ``headscope means`` output, :func:`is_means_file`), which is replaced: anything else there
    (a checkpoint, a folder, another program's file) is never overwritten.
    """
    target = Path(path)
    if target.suffix not in MEAN_SUFFIXES:
        raise UsageError(
            f"mean reference must end in .pt or .npz, got {target.name!r}",
            hint="e.g. --output means/toy.pt",
        )
    if (target.exists() or target.is_symlink()) and not is_means_file(target):
        raise UsageError(
            f"--output {str(target)!r} exists and is not a means file headscope wrote; "
            "it is not overwritten",
            hint="choose another --output, or remove that file yourself",
        )
    return target


def is_means_file(path: str | Path) -> bool:
    """True for a regular file :func:`save_head_means` wrote: a ``mean`` and a ``reference``."""
    import zipfile

    target = Path(path)
    if target.is_symlink() or not target.is_file() or not zipfile.is_zipfile(target):
        return False
    try:
        if target.suffix == ".npz":
            import numpy as np

            with np.load(target, allow_pickle=False) as data:
                return set(data.files) == {"mean", "reference"}
        import torch

        saved = torch.load(target, map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001 - whatever the readers raise, it is not a means file
        return False
    return isinstance(saved, dict) and set(saved) == {"mean", "reference"}


def save_head_means(
    path: str | Path, means: torch.Tensor, reference: dict[str, Any] | None = None
) -> Path:
    """Write ``means`` (``[L, H, head_dim]``) and what it was measured on; returns the path.

    Args:
        path: A ``.pt`` or ``.npz`` file (its folder is created).
        means: The tensor of :func:`compute_head_means`.
        reference: Plain-JSON description of the reference set (recorded in the file).

    Raises:
        UsageError: ``path`` ends in neither ``.pt`` nor ``.npz``, or holds another file.
    """
    import numpy as np
    import torch

    from harness.schema.results import replace_atomically

    target = check_means_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    mean = means.detach().cpu()

    def write(fh: Any) -> None:
        if target.suffix == ".npz":
            np.savez(fh, mean=mean.numpy(), reference=np.array(json.dumps(reference or {})))
        else:
            torch.save({"mean": mean, "reference": reference or {}}, fh)

    replace_atomically(target, write, binary=True)  # a stop leaves the old file or none
    return target


def task_head_means(
    adapter: ModelAdapter, tspecs: Sequence[TaskSpec], batch_size: int = 1
) -> tuple[torch.Tensor, dict[str, Any]]:
    """Per-head means over the prompts (with their media) of ``tspecs``' documents.

    Each document's request is prepared by the adapter as for generation, ``batch_size``
    requests at a time; padding tokens do not count.

    Returns:
        The ``[L, H, head_dim]`` means and the reference record: the model's settings, the
        tasks (name, split, limit, args), documents and tokens counted.

    Raises:
        UsageError: a task with no documents; ``batch_size`` < 1.
    """
    from harness.api.task import build_task

    if batch_size < 1:
        raise UsageError(f"--batch-size must be ≥ 1, got {batch_size}")
    requests, tasks = [], []
    for tspec in tspecs:
        task = build_task(tspec.name, tspec.args)
        docs = tspec.take(task.load(split=tspec.split, limit=tspec.load_limit))
        if not docs:
            raise UsageError(f"task {tspec.name!r} has no documents to measure")
        requests += [task.request(doc) for doc in docs]
        split = tspec.split or task.default_split
        tasks.append(
            {
                "name": tspec.name,
                "split": split,
                "limit": tspec.limit,
                "args": dict(tspec.args),
                "n_docs": len(docs),
            }
        )
    counted = {"tokens": 0}

    def batches() -> Iterable[dict[str, Any]]:
        for start in range(0, len(requests), batch_size):
            batch = adapter.prepare(requests[start : start + batch_size])
            mask = batch.get("attention_mask")
            ids = batch["input_ids"]
            counted["tokens"] += int(mask.sum()) if mask is not None else ids.numel()
            yield batch

    means = compute_head_means(adapter.model, batches())
    reference = {
        "model": adapter.settings(),
        "tasks": tasks,
        "n_docs": len(requests),
        "n_tokens": counted["tokens"],
        "batch_size": batch_size,
    }
    return means, reference
