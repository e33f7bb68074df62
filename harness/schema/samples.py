"""Per-sample logs: ``samples/<cell>.jsonl`` of a run directory, one JSON row per line.

The run appends to its logs (:class:`SampleLog`: a batch's rows in one write and flush,
fsynced per batch at most once a second and when a cell ends) and repairs a torn last line
when it resumes; everything else reads them only (:func:`read_sample_rows`), and finds a
result entry's log through :func:`sample_log_path`, which keeps it inside the run directory.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from harness.schema.results import (
    ResultEntry,
    ResultsError,
    _json_default,
    json_safe,
    name_path,
    replace_atomically,
)

__all__ = ["SampleLog", "unique_rows", "read_sample_rows", "sample_log_path"]


class SampleLog:
    """Append-only JSONL log of per-sample rows: one write and flush per batch of rows.

    Durability: :meth:`append_many` writes a batch's rows with one write and flushes them
    (a killed process loses nothing flushed); it fsyncs the file when the last fsync is at
    least :attr:`SYNC_INTERVAL_S` old, and :meth:`sync` fsyncs what is left when a cell or
    task ends. So a machine crash loses at most that interval's rows, or tears the last
    line; resuming recomputes those documents. (An fsync per row cost 5–6 % of the toy's
    accuracy stage, 14–19 % under load; one per batch is still one per row at batch 1.)

    Reading tolerates a torn last line (a crash mid-write): it is dropped and the
    file truncated to the last complete row, so a resumed run appends cleanly. Any other
    line that is not a JSON row with a ``doc_id`` is damage, reported with its line number
    (never truncated away).
    """

    SYNC_INTERVAL_S = 1.0
    """Least time between two fsyncs of one log by :meth:`append_many` (0: every batch)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._synced_at = time.monotonic()
        self._dirty = False

    def read(self) -> list[dict[str, Any]]:
        """All complete rows (repairs a torn tail)."""
        if not self.path.exists():
            return []
        raw = self.path.read_bytes()
        rows, good_end = _parse_rows(raw, self.path, keep_unterminated=False)
        if good_end != len(raw):
            with open(self.path, "r+b") as fh:
                fh.truncate(good_end)
        return rows

    def rewrite(self, rows: list[dict[str, Any]]) -> None:
        """Replace the log by ``rows`` atomically (temp file + rename)."""

        def write(fh: TextIO) -> None:
            for row in rows:
                fh.write(_jsonl(row) + "\n")

        replace_atomically(self.path, write)

    def append(self, row: dict[str, Any]) -> None:
        """Append one row and flush it to disk."""
        self.append_many([row])

    def append_many(self, rows: Sequence[dict[str, Any]]) -> None:
        """Append ``rows`` with one write and flush (fsync: see the class docstring).

        A row that cannot be serialised raises after the rows before it are written (as
        appending them one by one did).
        """
        lines: list[str] = []
        try:
            for row in rows:
                lines.append(_jsonl(row) + "\n")
        finally:
            if lines:
                self._write("".join(lines))

    def sync(self) -> None:
        """Make the rows appended since the last fsync durable (at a cell's or task's end)."""
        if not self._dirty:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise name_path(exc, self.path) from None
        self._synced_at, self._dirty = time.monotonic(), False

    def _write(self, text: str) -> None:
        try:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                self._dirty = True
                if time.monotonic() - self._synced_at >= self.SYNC_INTERVAL_S:
                    os.fsync(fh.fileno())
                    self._synced_at, self._dirty = time.monotonic(), False
        except OSError as exc:  # a torn last line is repaired by the resumed run's read
            raise name_path(exc, self.path) from None


def read_sample_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a sample log, read only: the file is never changed (``headscope rescore``).

    A last line without its newline is kept when it is a whole row (a log ending without a
    final newline), dropped when it does not parse (the torn tail of a crash, which
    :meth:`SampleLog.read` of a resumed run removes). Other damage raises as there.

    Raises:
        ResultsError: a line before the last is not a JSON row with a ``doc_id``.
        OSError: the file cannot be read.
    """
    path = Path(path)
    return _parse_rows(path.read_bytes(), path, keep_unterminated=True)[0]


def _parse_rows(
    raw: bytes, path: Path, *, keep_unterminated: bool
) -> tuple[list[dict[str, Any]], int]:
    """The complete rows of a log's bytes, and the byte offset where they end."""
    rows: list[dict[str, Any]] = []
    good_end = pos = 0
    lines = raw.splitlines(keepends=True)
    for number, line in enumerate(lines, 1):
        pos += len(line)
        last = number == len(lines)
        if last and not line.endswith(b"\n") and not keep_unterminated:
            break  # an unterminated last line: the torn tail of a crash
        try:
            row = json.loads(line)
        except ValueError as exc:  # JSON or UTF-8
            if last:
                break  # the torn tail of a crash
            raise ResultsError(
                f"{path}: line {number} is not valid JSON ({exc}); repair or delete "
                "that line, or delete the file to recompute this cell"
            ) from None
        if not isinstance(row, dict) or "doc_id" not in row:
            if last and not line.endswith(b"\n"):
                break
            raise ResultsError(
                f"{path}: line {number} is not a sample row (no doc_id); repair or "
                "delete that line, or delete the file to recompute this cell"
            )
        rows.append(row)
        good_end = pos
    return rows, good_end


def sample_log_path(run_dir: str | Path, entry: ResultEntry, where: str = "results") -> Path:
    """The sample log of ``entry``: ``run_dir / entry.samples_file``, checked to stay inside.

    Raises:
        ResultsError: the entry names no log, an absolute path, or one that leads out of
            ``run_dir`` (``..``, or a symbolic link to elsewhere).
    """
    at = f"{where}: entry {entry.task}/{entry.intervention}"
    name = entry.samples_file
    if not name:
        raise ResultsError(f"{at} has no samples_file (its sample log is not named)")
    root = Path(run_dir)
    rel = Path(name)
    if rel.is_absolute() or ".." in rel.parts:
        raise ResultsError(
            f"{at}: samples_file {name!r} is not a path inside the run directory "
            f"{str(root)!r}; sample logs are read from the run's own samples/ only"
        )
    path = root / rel
    real, top = path.resolve(), root.resolve()
    if not real.is_relative_to(top):
        raise ResultsError(
            f"{at}: samples_file {name!r} is a link to {str(real)!r}, outside the run "
            f"directory {str(root)!r}; sample logs are read from the run's own samples/ only"
        )
    return path


def _jsonl(row: dict[str, Any]) -> str:
    return json.dumps(json_safe(row), default=_json_default, ensure_ascii=False, allow_nan=False)


def unique_rows(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Rows deduplicated by ``doc_id`` (the last row of a doc wins) and the number dropped."""
    last: dict[Any, dict[str, Any]] = {}
    for row in rows:
        last.pop(row.get("doc_id"), None)  # re-insert: order follows the kept row
        last[row.get("doc_id")] = row
    return list(last.values()), len(rows) - len(last)
