"""Output directories: checks before anything is written, and a lock held while a run writes.

:func:`check_run_dir` and its kin refuse, without writing, a directory that holds another
command's files (the write checks themselves live in :mod:`harness.schema.writes`, below the
leaderboards that share them). :class:`OutputLock` is held by the
process that writes into a directory: a second process is refused with a message naming the
holder (pid, host, start time, command). The lock is an ``flock`` on ``.headscope.lock``, so
the kernel releases it when its holder dies; a lock file left behind by a killed run is then
recognised as stale and taken over (the message says so).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from harness.schema.results import file_mode
from harness.schema.writes import OutputDirError, check_writable

__all__ = [
    "LOCK_FILE",
    "OutputDirError",
    "OutputLock",
    "check_writable",
    "check_run_dir",
    "check_main_job_dir",
    "check_rank_dir",
]

LOCK_FILE = ".headscope.lock"


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

    Attributes:
        stale: Holder info of a dead run whose lock file was taken over, else None.
        created: True when :meth:`acquire` created the directory.
    """

    def __init__(self, directory: str | Path, what: str = "output directory") -> None:
        self.directory = Path(directory)
        self.what = what
        self.path = self.directory / LOCK_FILE
        self.stale: dict[str, Any] | None = None
        self.created = False
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


def _read_info(fd: int) -> dict[str, Any]:
    try:
        raw = os.pread(fd, 4096, 0)
        data = json.loads(raw.decode("utf-8")) if raw else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def check_run_dir(
    out: Path, identity: dict[str, Any], spec_file: str, legacy: dict[str, Any] | None = None
) -> None:
    """Refuse a directory that holds another run, or files of something else; writes nothing.

    Args:
        out: The output directory (may not exist yet).
        identity: The run's identity (:func:`harness.run.cells.run_identity`).
        spec_file: Name of the file recording the identity of the run in ``out``.
        legacy: The same run's identity as older headscope recorded it (full paths), also
            accepted.
    """
    check_writable(out)
    spec_path = out / spec_file
    if spec_path.is_file():
        try:
            previous = json.loads(spec_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise OutputDirError(
                f"output directory {str(out)!r}: {spec_file} is unreadable ({exc}); "
                "choose a new --output directory"
            ) from None
        if isinstance(previous, dict):
            previous = {k: v for k, v in previous.items() if k not in NOT_IDENTITY}
        if previous != identity and (legacy is None or previous != legacy):
            raise OutputDirError(
                f"output directory {str(out)!r} holds a run with a different spec; "
                "use a new --output directory (or the same spec to resume)"
            )
    elif out.is_dir() and any(p.name != LOCK_FILE for p in out.iterdir()):
        raise OutputDirError(
            f"output directory {str(out)!r} is not empty and holds no headscope run; "
            "choose an empty or new directory"
        )


#: Keys older run_spec.json files recorded that no longer define a run's identity.
NOT_IDENTITY = ("skip_bad_docs",)


#: What the main job writes at the top of its directory.
MAIN_JOB_ENTRIES = (
    "main_job.json",
    "timings.json",
    "sequence_lengths.json",
    "rank",
    "accuracy",
    "bench_hybrid.json",
    "diagnose",
    "leaderboards",
    "summary.json",
)


def check_main_job_dir(out: Path, spec_file: str) -> None:
    """Refuse a grid directory, or a non-empty one that holds no main-job output; no writes."""
    check_writable(out, "main job directory")
    if (out / spec_file).exists() or (out / "results.json").exists():
        raise OutputDirError(
            f"{str(out)!r} holds a grid run ({spec_file}); the main job writes its stages "
            "(rank/, accuracy/, ...) into a directory of its own: choose another --output"
        )
    if out.is_dir():
        names = {p.name for p in out.iterdir()} - {LOCK_FILE}
        if names and not names & set(MAIN_JOB_ENTRIES):
            raise OutputDirError(
                f"main job directory {str(out)!r} is not empty and holds no main-job output; "
                "choose an empty or new directory"
            )


#: Files whose presence marks a directory as a run of another command (grid or main job).
_RUN_MARKERS = ("run_spec.json", "results.json", "summary.json", "samples")


def check_rank_dir(out: Path) -> None:
    """Refuse, writing nothing, an output directory that holds a grid run or a main job.

    ``headscope rank`` writes ``ranking.json``, ``spearman.json`` and ``heatmaps/``; inside a
    grid run's directory (``run_spec.json``, ``results.json``, ``samples/``) or at the top of
    a main job's (``summary.json``, whose ranking lives in its own ``rank/``) those files
    would sit among another command's outputs, and that run would no longer resume or be
    read as one run.
    """
    check_writable(out, "rank output directory")
    found = [name for name in _RUN_MARKERS if (out / name).exists()]
    if found:
        raise OutputDirError(
            f"rank output directory {str(out)!r} holds another command's run ({found[0]}); "
            "choose a directory of its own for --output, e.g. a new rank/ folder"
        )
