"""Peak memory of a measured stretch: CUDA's allocator, or the process's resident set (Linux).

:func:`peak_reset` resets the counter and returns the level at that moment;
:func:`peak_since` returns the peak since then above that level. On CPU the resident set is
read from ``/proc/self/status`` (``VmHWM``, reset by writing 5 to ``/proc/self/clear_refs``);
elsewhere both return None. So that freed tensors leave the resident set (and a later peak is
not hidden in reused heap), large allocations are made with ``mmap`` (glibc's
``M_MMAP_THRESHOLD`` set to 64 KiB on the first reset) and the heap is trimmed before each reset.
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


_STATE = {"mallopt": False}


def _return_freed_memory() -> None:
    """Large blocks by mmap (returned on free) and the heap trimmed now (glibc only)."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        if not _STATE["mallopt"]:
            libc.mallopt(-3, 64 * 1024)  # M_MMAP_THRESHOLD
            _STATE["mallopt"] = True
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


def peak_reset(device: str) -> int | None:
    """Reset the peak memory counter; return the current level (peaks are reported above it)."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
        return int(torch.cuda.memory_allocated())
    _return_freed_memory()
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
