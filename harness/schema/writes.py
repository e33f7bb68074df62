"""Writing into output directories: checks before writing, one line for a failed write, a lock.

:func:`check_writable` finds, without writing, why a directory cannot hold output (a path that
is a file, a parent that is a file, ``/proc`` or ``/sys``, no write permission). :func:`writing` and
:func:`writing_into` turn an ``OSError`` raised while writing (a full disk, a read-only file
system, a refused permission) into one :class:`OutputDirError` line that names the file and
what to do. The writers themselves are atomic (:func:`harness.schema.results.replace_atomically`).

:class:`OutputLock` is held by the process that writes into a directory: a second process is
refused with a message naming the holder (pid, host, start time, command). The lock is an
``flock`` on a lock file (``.headscope.lock`` for runs), so the kernel releases it when its
holder dies; a lock file left behind by a killed process is then recognised as stale and taken
over (the message says so). The new holder also removes the temporary files (``.<name>.*.tmp``)
that a killed writer left in the directory (:func:`remove_stray_temps`).

Every command that writes files uses these, the run layer (:mod:`harness.run.outdir` adds the
checks of what a run directory holds) and the leaderboards alike; they live here, below both.
"""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.api.specs import SpecError
from harness.schema.results import file_mode

__all__ = [
    "LOCK_FILE",
    "OutputDirError",
    "OutputLock",
    "check_writable",
    "held_by",
    "remove_stray_temps",
    "writing",
    "writing_into",
]

#: The lock file of a run's directory (grid run, main job, rank, diagnose).
LOCK_FILE = ".headscope.lock"


class OutputDirError(SpecError):
    """An output directory that cannot be used (usage error: exit code 2)."""


def check_writable(path: str | Path, what: str = "output directory") -> None:
    """Raise :class:`OutputDirError` if ``path`` cannot be created or written; writes nothing.

    The rule is :func:`harness.api.paths.why_unwritable`'s (a file in the way, ``/proc`` or
    ``/sys``, no write permission).
    """
    from harness.api.paths import why_unwritable

    problem = why_unwritable(path, what)
    if problem is not None:
        raise OutputDirError(problem, hint="choose another output directory")


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


def _holder_text(info: dict[str, Any]) -> str:
    started = info.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if started else "?"
    cmd = info.get("command") or "?"
    return f"pid {info.get('pid', '?')} on {info.get('host', '?')}, started {when}: {cmd}"


class OutputLock:
    """An exclusive lock on an output directory (context manager).

    Args:
        directory: The output directory (created on :meth:`acquire` if missing).
        what: How to name the directory in messages.
        name: The lock file's name in ``directory`` (:data:`LOCK_FILE` for runs).

    Attributes:
        stale: Holder info of a dead run whose lock file was taken over, else None.
        created: True when :meth:`acquire` created the directory.
        cleaned: The temporary files of killed writers that :meth:`acquire` removed
            (:func:`remove_stray_temps`).
    """

    def __init__(
        self, directory: str | Path, what: str = "output directory", name: str = LOCK_FILE
    ) -> None:
        self.directory = Path(directory)
        self.what = what
        self.path = self.directory / name
        self.stale: dict[str, Any] | None = None
        self.created = False
        self.cleaned: list[Path] = []
        self._fd: int | None = None

    def acquire(self) -> OutputLock:
        """Take the lock or raise :class:`OutputDirError` naming the holder."""
        import fcntl

        check_writable(self.directory, self.what)
        try:
            if not self.directory.exists():
                self.directory.mkdir(parents=True)
                self.created = True
            while True:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, file_mode())
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    info = _read_info(fd)
                    os.close(fd)
                    raise OutputDirError(
                        f"{self.what} {str(self.directory)!r} is in use by another headscope "
                        f"run ({_holder_text(info)}); wait for it to finish or choose another "
                        "--output"
                    ) from None
                # The holder may have removed the file between our open and our flock.
                try:
                    same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    break
                os.close(fd)
            previous = _read_info(fd)
            if previous and previous.get("pid") is not None:
                self.stale = previous
            os.ftruncate(fd, 0)
            info = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": time.time(),
                "command": " ".join(sys.argv),
            }
            os.pwrite(fd, json.dumps(info).encode(), 0)
            self._fd = fd
            self.cleaned = remove_stray_temps(self.directory)
        except OSError as exc:
            raise OutputDirError(f"{self.what} {str(self.directory)!r}: {exc.strerror}") from None
        return self

    def release(self, remove_if_unused: bool = False) -> None:
        """Drop the lock (and the directory when it was created empty and nothing was written)."""
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)  # closing releases the flock
            self._fd = None
        if remove_if_unused and self.created:
            try:
                self.directory.rmdir()  # only succeeds when empty
            except OSError:
                pass

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release(remove_if_unused=True)


#: The name of a temporary file of :func:`harness.schema.results.replace_atomically` (and of the
#: other atomic writers): ``.<file name>.<8 characters of mkstemp>.tmp``.
_TEMP = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")


def remove_stray_temps(directory: str | Path) -> list[Path]:
    """Remove the temporary files that killed writers left in ``directory`` (not below it).

    An atomic write goes through ``.<name>.XXXXXXXX.tmp`` beside its file and renames it; a
    process killed in between leaves it. Called by the holder of the directory's lock, which
    is the one process writing there, so every such file is a leftover.
    """
    removed = []
    root = Path(directory)
    for path in sorted(root.iterdir()) if root.is_dir() else ():
        if _TEMP.match(path.name) and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def held_by(directory: str | Path, name: str = LOCK_FILE) -> str | None:
    """Who holds the lock of ``directory`` now ("pid 12 on host, started ...: command"), or None.

    Reads only: the lock file is opened read-only and never created, so a read-only directory
    can be asked too. A lock file whose holder died (the kernel released its ``flock``) is not
    held.
    """
    import fcntl

    try:
        fd = os.open(Path(directory) / name, os.O_RDONLY)
    except OSError:
        return None  # no lock file (or none we can open): nobody writes there through headscope
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder_text(_read_info(fd))
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_info(fd: int) -> dict[str, Any]:
    try:
        raw = os.pread(fd, 4096, 0)
        data = json.loads(raw.decode("utf-8")) if raw else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
