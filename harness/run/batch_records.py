"""Per-batch records of a cell's resolved intervention details: resume keeps counters exact.

Both evaluation orders attach a cell's intervention once per batch. Once a batch's rows are in
the cell's sample log, that attach's record — the resolved dict with its event counters (SAP's
``forwards``, adaptive hybrid's routing counts) and the windowed layer calls per kernel — is
appended to ``samples/batches/<log name>`` (one JSON line per batch: ``doc_id``, the batch's
first document, ``docs``, ``resolved``, ``kernels``). The cell's ``intervention_resolved`` is
merged from the records of every process and every run that wrote the cell, in document order
(:meth:`~harness.api.intervention.Intervention.merge_resolved`), so a cell killed and resumed
reports what a clean run reports.

A batch counts once its record is written. On resume (:meth:`BatchRecords.resume`) generated
rows that no record covers (a stop between a batch's rows and its record) are dropped from the
log, so the batch is generated again whole, and records that name a document missing from the
log are dropped. A log without a records file (written by an earlier headscope) is kept as it
is; its cell keeps the record saved when it ended (:func:`harness.run.cells.previous_resolved`).
A resumed run forms the same batches as a clean one (the pending documents start at a batch
boundary), except after documents skipped with ``--skip-bad-docs``, which shift them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.schema.samples import SampleLog

__all__ = ["BatchRecords", "BATCHES_DIR", "cell_record", "merged_record"]

BATCHES_DIR = "batches"
"""Folder, inside ``samples/``, of the per-batch record files (one per cell and process)."""


class BatchRecords:
    """The per-batch records of one cell written by one process (one shard).

    Args:
        log_path: The cell's sample log in this process (``samples/<name>``).
    """

    def __init__(self, log_path: str | Path) -> None:
        log_path = Path(log_path)
        self.log = SampleLog(log_path.parent / BATCHES_DIR / log_path.name)

    def read(self) -> list[dict[str, Any]]:
        """The committed records (a torn last line repaired)."""
        return self.log.read()

    def resume(self, samples: SampleLog) -> None:
        """Make the cell's log and records agree before the cell goes on (see the module).

        Creates the (empty) records file of a cell that has none and no generated rows, so a
        stop before its first record is recognised on the next resume.
        """
        rows = samples.read()
        generated = [r for r in rows if "skipped" not in r]
        if not self.log.path.exists():
            if not generated:
                self.log.rewrite([])
            return  # an earlier headscope's log: kept as it is
        logged = {r["doc_id"] for r in generated}
        records = self.read()
        kept = [r for r in records if set(r.get("docs") or ()) <= logged]
        if len(kept) != len(records):
            self.log.rewrite(kept)
        covered = {d for r in kept for d in r["docs"]}
        rest = [r for r in rows if "skipped" in r or r["doc_id"] in covered]
        if len(rest) != len(rows):
            samples.rewrite(rest)

    def commit(self, docs: Sequence[Any], resolved: dict[str, Any], kernels: Any) -> None:
        """Append the record of one batch whose rows are logged (fsynced as the log is).

        Args:
            docs: The batch's document ids.
            resolved: Its attach's resolved dict (after the attach ended).
            kernels: Windowed layer calls per kernel during the batch.
        """
        self.log.append(
            {
                "doc_id": docs[0],
                "docs": list(docs),
                "resolved": dict(resolved or {}),
                "kernels": dict(kernels or {}),
            }
        )


def merged_record(
    interv: Any, records: Sequence[dict[str, Any]], docs: Sequence[Any]
) -> tuple[dict[str, Any], Counter] | None:
    """The cell's resolved record and kernel calls from its batch records; None if none.

    Args:
        interv: The cell's intervention (its ``merge_resolved``).
        records: Every record of the cell (all processes).
        docs: The task's documents, in order (the merge follows it, as a clean run's does).
    """
    if not records:
        return None
    where = {d.doc_id: i for i, d in enumerate(docs)}
    first = {id(r): min(where.get(d, len(where)) for d in r["docs"]) for r in records}
    total: dict[str, Any] | None = None
    kernels: Counter = Counter()
    for rec in sorted(records, key=lambda r: first[id(r)]):
        part = dict(rec["resolved"])
        total = part if total is None else interv.merge_resolved(total, part)
        kernels.update(rec.get("kernels") or {})
    return total or {}, kernels


def cell_record(
    cell: Any,
    records: list[dict[str, Any]],
    docs: Sequence[Any],
    adapter: Any,
    saved: dict[str, Any] | None,
) -> dict[str, Any]:
    """The cell's ``intervention_resolved``: merged from its batch records when it has any.

    Args:
        cell: The cell (:class:`~harness.run.sample_major.CellRun`).
        records: Its records from every process.
        docs: The task's documents, in order.
        adapter: The model adapter (for the one attach of a cell that generated nothing).
        saved: The record saved when the cell ended in an earlier run, if any.

    Else (a log of an earlier headscope) the record saved when the cell ended, if nothing was
    generated since; else this run's attaches, or one attach when there were none.
    """
    merged = merged_record(cell.interv, records, docs)
    if merged is not None:
        resolved, kernels = merged
    elif not cell.counters["generated"] and saved is not None:
        return saved
    else:
        if cell.resolved is None:  # nothing generated: the record of one attach
            with cell.interv.attach(adapter) as part:
                pass
            cell.add_resolved(part)
        resolved, kernels = dict(cell.resolved or {}), cell.kernels
    if kernels:  # which window kernel ran, per cell
        resolved["window_kernels"] = dict(kernels)
    return resolved
