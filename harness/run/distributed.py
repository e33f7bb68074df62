"""Scale-out: shard documents across processes and gather rows on rank 0.

Under ``accelerate launch -m harness run ...`` or ``torchrun -m harness run ...``
the launcher sets ``RANK`` / ``WORLD_SIZE``. Rank r evaluates documents
r, r+W, r+2W, … of every task, logs them to its own per-rank JSONL file (so
resume works per rank), and rank 0 gathers all rows to aggregate and write the
results, which are therefore identical to a single-process run's.
"""

from __future__ import annotations

import os
import time
from typing import Any

from harness.api.errors import UsageError

__all__ = [
    "PeerRefused",
    "PeerFailed",
    "agree",
    "shard_from_env",
    "init_process_group",
    "barrier",
    "gather_rows",
    "device_for_rank",
]


#: Seconds rank 0 (the store host) waits before leaving after a refused start.
STORE_HOST_GRACE_S = 2.0


class PeerRefused(UsageError):
    """Another rank refused the run over a usage error (its message names the rank and why)."""


class PeerFailed(RuntimeError):
    """Another rank failed before the run started, not over a usage error (names rank and why)."""


def shard_from_env() -> tuple[int, int]:
    """``(rank, world_size)`` from the launcher's environment (``(0, 1)`` when absent)."""
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world < 1 or not 0 <= rank < world:
        raise UsageError(f"inconsistent RANK={rank} / WORLD_SIZE={world}")
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


def agree(failure: Exception | None) -> None:
    """Share each rank's setup outcome with every rank; raise on all of them if any failed.

    Every rank calls this once its checks are done (output directory, lock, data, model,
    interventions). Without it a rank refused alone (e.g. rank 0 finding the directory locked)
    leaves the others at the next barrier, where, unless a launcher agent stops them (a
    hand-set ``RANK``/``WORLD_SIZE``, ``srun``), they die with a communication traceback
    (gloo: "Connection closed by peer") or wait until the process group times out (NCCL).

    Raises:
        Exception: this rank's own ``failure``, unchanged.
        PeerRefused: the first failed rank refused over a usage error (names it and why).
        PeerFailed: the first failed rank failed otherwise (a bug; that rank reports its
            own traceback).
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        if failure is not None:
            raise failure
        return
    mine = None
    if failure is not None:
        mine = (f"{type(failure).__name__}: {failure}", isinstance(failure, UsageError))
    outcomes: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(outcomes, mine)
    refused = [(rank, outcome) for rank, outcome in enumerate(outcomes) if outcome is not None]
    if refused:
        # Every rank stops here: leave the group now, so no rank's exit aborts a peer's
        # communication threads (gloo aborts a process whose peer vanished mid-group).
        hosts_store = (
            dist.get_rank() == 0 and os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True"
        )
        dist.destroy_process_group()
        if hosts_store:
            # Rank 0 serves the rendezvous store (env://, no launcher agent): leave last, so
            # a peer still exiting never loses its store connection ("terminate called
            # without an active exception", seen about once in 50 refusals under load).
            time.sleep(STORE_HOST_GRACE_S)
    if failure is not None:
        raise failure
    if refused:
        rank, (text, usage) = refused[0]
        if usage:
            raise PeerRefused(f"rank {rank} refused the run, so this rank stops too: {text}")
        raise PeerFailed(
            f"rank {rank} failed before the run started, so this rank stops too: {text}"
        )


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
