"""CPU threads: ``--threads N`` and the OpenMP wait policy every command starts with.

torch's CPU kernels run on an OpenMP pool of ``torch.get_num_threads()`` threads (default:
the cores). OpenMP's default lets an idle pool thread spin for a while before it sleeps; when
other processes hold the cores, the spinning threads take the time the working ones need
and a run can become many times slower (docs/performance.md, "CPU threads", has the measurements).
``headscope`` therefore asks for passive waiting (``OMP_WAIT_POLICY=PASSIVE``) unless the
environment says otherwise; it must be set before torch loads, which
:func:`prepare_environment` does first thing in the command line. Light at import: os only.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = [
    "WAIT_POLICY",
    "DEFAULT_WAIT_POLICY",
    "prepare_environment",
    "apply_threads",
    "usable_cores",
    "record",
]

#: The environment variable OpenMP reads once, when its runtime starts (with torch).
WAIT_POLICY = "OMP_WAIT_POLICY"
#: What ``headscope`` sets when the environment does not choose.
DEFAULT_WAIT_POLICY = "PASSIVE"


def prepare_environment() -> None:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless it is set (a no-op once torch is loaded)."""
    os.environ.setdefault(WAIT_POLICY, DEFAULT_WAIT_POLICY)


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask; else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity on this platform
        return os.cpu_count() or 1


def apply_threads(threads: int | None) -> int | None:
    """``torch.set_num_threads(threads)`` when given (None keeps torch's default: the cores).

    More threads than :func:`usable_cores` only makes the pool's threads wait for each other
    (and for other processes): the count is capped at the cores, with a note on stderr.

    Returns:
        The threads set, or None when ``threads`` is None.

    Raises:
        UsageError: ``threads`` below 1.
    """
    if threads is None:
        return None
    if threads < 1:
        from harness.api.errors import UsageError

        raise UsageError(f"--threads {threads}: give a count ≥ 1", hint="e.g. --threads 1")
    cores = usable_cores()
    if threads > cores:
        import sys

        print(
            f"headscope: note: --threads {threads} is more than the {cores} cores this process "
            f"may use; using {cores}",
            file=sys.stderr,
        )
        threads = cores
    import torch

    torch.set_num_threads(threads)
    return threads


def record() -> dict[str, Any]:
    """``{"threads": torch's CPU threads, "omp_wait_policy": the policy in force or None}``."""
    import torch

    return {"threads": torch.get_num_threads(), "omp_wait_policy": os.environ.get(WAIT_POLICY)}
