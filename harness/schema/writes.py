"""Writing into output directories: checks before writing, and one line for a failed write.

:func:`check_writable` finds, without writing, why a directory cannot hold output (a path that
is a file, a parent that is a file, no write permission). :func:`writing` and
:func:`writing_into` turn an ``OSError`` raised while writing (a full disk, a read-only file
system, a refused permission) into one :class:`OutputDirError` line that names the file and
what to do. The writers themselves are atomic (:func:`harness.schema.results.replace_atomically`).

Every command that writes files uses these, the run layer (:mod:`harness.run.outdir`, which adds
the directory lock) and the leaderboards alike; they live here, below both.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.api.specs import SpecError

__all__ = ["OutputDirError", "check_writable", "writing", "writing_into"]


class OutputDirError(SpecError):
    """An output directory that cannot be used (usage error: exit code 2)."""


def check_writable(path: str | Path, what: str = "output directory") -> None:
    """Raise :class:`OutputDirError` if ``path`` cannot be created or written; writes nothing."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputDirError(f"{what} {str(path)!r} is a file, not a directory")
    probe = path
    while not probe.exists():
        parent = probe.parent
        if parent == probe:
            break
        probe = parent
    if probe.exists() and not probe.is_dir():
        raise OutputDirError(f"{what} {str(path)!r}: {str(probe)!r} is a file, not a directory")
    if probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
        who = "" if probe == path else f" (its parent {str(probe)!r} is not writable)"
        raise OutputDirError(f"{what} {str(path)!r} is not writable{who}")


#: errno values that mean "the disk is full" and "this place cannot be written".
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)


@contextmanager
def writing(path: str | Path, what: str = "output") -> Iterator[None]:
    """Turn an ``OSError`` raised while writing ``path`` into one :class:`OutputDirError` line.

    The line names the path, the system's reason and what to do: a full disk (free space,
    then rerun the same command) or a place that cannot be written (read-only file system,
    no permission: choose another output). Other ``OSError``s are named the same way.
    Writers used inside should be atomic (temp file + rename), so that the rerun finds
    either the old file or none, never a part.

    Example:
        >>> with writing(out / "table.md", "leaderboard table"):  # doctest: +SKIP
        ...     replace_atomically(out / "table.md", write)
    """
    try:
        yield
    except OSError as exc:
        raise _write_error(exc, path, what) from None


def _write_error(
    exc: OSError, path: str | Path, what: str, again: str = "it rewrites this file"
) -> OutputDirError:
    reason = exc.strerror or str(exc)
    if exc.errno in _FULL:
        hint = f"free disk space there, then rerun the same command ({again})"
    elif exc.errno in _DENIED:
        hint = "make it writable or choose another output directory, then rerun"
    else:
        hint = f"fix the cause, then rerun the same command ({again})"
    return OutputDirError(f"cannot write {what} {str(path)!r}: {reason}; {hint}")


@contextmanager
def writing_into(out: str | Path, what: str = "output file") -> Iterator[None]:
    """:func:`writing` for a whole run that writes many files under ``out``.

    A full disk, a read-only file system or a refused permission while the run writes becomes
    one :class:`OutputDirError` line naming the file (as the writers of
    :mod:`harness.schema.results` record it; ``out`` when none is known). Denied permission on
    a file outside ``out`` (an input) and every other ``OSError`` pass through unchanged. The
    run's writers are atomic or append whole rows (a torn last row is dropped on resume), so
    rerunning the same command repairs what the stop left.
    """
    try:
        yield
    except OSError as exc:
        name = exc.filename
        full = exc.errno in _FULL or exc.errno == errno.EROFS
        mine = name is None or Path(str(name)).resolve().is_relative_to(Path(out).resolve())
        if not (full or exc.errno in _DENIED and mine):
            raise
        again = "it resumes where this run stopped"
        raise _write_error(exc, name if name is not None else out, what, again) from None
