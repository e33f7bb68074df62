"""Scale-out: shard documents across processes and gather rows on rank 0.

Under ``accelerate launch -m harness run ...`` or ``torchrun -m harness run ...``
the launcher sets ``RANK`` / ``WORLD_SIZE``. Rank r evaluates documents
r, r+W, r+2W, … of every task, logs them to its own per-rank JSONL file (so
resume works per rank), and rank 0 gathers all rows to aggregate and write the
results, which are therefore identical to a single-process run's.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["shard_from_env", "init_process_group", "barrier", "gather_rows", "device_for_rank"]


def shard_from_env() -> tuple[int, int]:
    """``(rank, world_size)`` from the launcher's environment (``(0, 1)`` when absent)."""
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"inconsistent RANK={rank} / WORLD_SIZE={world}")
    return rank, world


def init_process_group() -> None:
    """Join the process group once (gloo on CPU, nccl with CUDA)."""
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend)


def barrier() -> None:
    """Wait for every rank (no-op in a single process)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def gather_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Gather every rank's rows on rank 0 (returns None on other ranks)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return rows
    gathered: list[Any] | None = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
    dist.gather_object(rows, gathered, dst=0)
    if gathered is None:
        return None
    return [row for part in gathered for row in part]


def device_for_rank(device: str) -> str:
    """Map ``cuda`` to this process's local GPU (``cuda:LOCAL_RANK``); other devices unchanged."""
    if device == "cuda" and "LOCAL_RANK" in os.environ:
        return f"cuda:{int(os.environ['LOCAL_RANK'])}"
    return device
