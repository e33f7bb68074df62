"""Peak memory of a measured stretch: CUDA's allocator, or the process's resident set (Linux).

:func:`peak_reset` resets the counter and returns the level at that moment;
:func:`peak_since` returns the peak since then above that level. On CPU the resident set is
read from ``/proc/self/status`` (``VmHWM``, reset by writing 5 to ``/proc/self/clear_refs``);
elsewhere both return None.
"""

from __future__ import annotations

__all__ = ["peak_reset", "peak_since"]


def _rss(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def peak_reset(device: str) -> int | None:
    """Reset the peak memory counter; return the current level (peaks are reported above it)."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
        return int(torch.cuda.memory_allocated())
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # Linux: VmHWM := VmRSS
    except OSError:
        return None
    return _rss("VmRSS")


def peak_since(device: str, base: int | None) -> int | None:
    """Peak memory since :func:`peak_reset` above its level, or None where unknown."""
    import torch

    if base is None:
        return None
    if device.startswith("cuda"):
        return int(torch.cuda.max_memory_allocated()) - base
    high = _rss("VmHWM")
    return None if high is None else high - base
