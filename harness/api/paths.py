"""Why a folder cannot be created or written, found without writing anything.

:func:`why_unwritable` is the one rule that output directories (:func:`harness.run.outdir.
check_writable`) and files the tasks write (MMLongBench-Doc's ``extractor_cache``) are checked
by: a path or a parent that is a file, a kernel file system (``/proc``, ``/sys``: even root
cannot create a folder there, and ``os.access`` says yes to root), no write permission.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["kernel_filesystem", "why_unwritable"]

#: Pseudo file systems the kernel fills: nothing a user names can be created in them.
KERNEL_MOUNTS = ("/proc", "/sys")


def kernel_filesystem(path: str | Path) -> str | None:
    """The kernel mount (``/proc``, ``/sys``) ``path`` lies on, or None.

    ``path`` must exist. Both its resolved name and its device are compared, so that a
    symlink into ``/proc`` (or ``/proc/self/...``) is recognised too.
    """
    resolved = Path(path).resolve()
    try:
        device = os.stat(resolved).st_dev
    except OSError:
        device = None
    for mount in KERNEL_MOUNTS:
        root = Path(mount)
        if resolved == root or root in resolved.parents:
            return mount
        try:  # a mount point only: an empty /proc folder shares the root file system's device
            if device is not None and os.path.ismount(root) and os.stat(root).st_dev == device:
                return mount
        except OSError:
            continue
    return None


def why_unwritable(path: str | Path, what: str) -> str | None:
    """Why the folder ``path`` (which may not exist yet) cannot be created or written.

    Args:
        path: The folder.
        what: How to name it in the message (e.g. "output directory").

    Returns:
        One line naming ``what`` and the reason, or None when the folder can be used.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        return f"{what} {str(path)!r} is a file, not a directory"
    probe = path
    while not probe.exists():
        parent = probe.parent
        if parent == probe:
            break
        probe = parent
    if probe.exists() and not probe.is_dir():
        return f"{what} {str(path)!r}: {str(probe)!r} is a file, not a directory"
    if probe.exists():
        mount = kernel_filesystem(probe)
        if mount is not None:
            return f"{what} {str(path)!r} is on {mount}, a file system the kernel fills"
    if probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
        who = "" if probe == path else f" (its parent {str(probe)!r} is not writable)"
        return f"{what} {str(path)!r} is not writable{who}"
    return None
