"""Cell-major evaluation, the reference order: one (task, intervention) cell after the other.

Each cell reads, processes and encodes every pending document itself (``--cell-major``);
the default sample-major order (:mod:`harness.run.sample_major`) gives the same rows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from harness.api.specs import RunSpec
from harness.api.task import BadDoc, SampleError, Task
from harness.run.sample_major import (
    CellRun,
    bad_doc_error,
    done_ids,
    log_generations,
    scoring_context,
)
from harness.schema.samples import SampleLog

__all__ = ["run_cell"]


def run_cell(
    task: Task,
    docs: Sequence[Any],
    cell: CellRun,
    adapter: Any,
    spec: RunSpec,
    desc: str,
    shard: tuple[int, int],
) -> None:
    """Evaluate one cell on all its pending documents, its intervention attached once."""
    from harness.attention.dispatch import window_kernels_used

    window_kernels_used(reset=True)
    cell.check()
    with cell.interv.attach(adapter) as resolved:
        cell.check()  # the files it read named this cell's log
        cell.counters = _pending_docs(task, docs, adapter, cell.log, spec, desc, shard)
    cell.add_resolved(resolved)
    cell.kernels.update(window_kernels_used(reset=True))


def _pending_docs(
    task: Task,
    docs: Sequence[Any],
    adapter: Any,
    log: SampleLog,
    spec: RunSpec,
    desc: str,
    shard: tuple[int, int],
) -> dict[str, Any]:
    """One cell, all its pending documents (the cell-major reference order)."""
    from harness.api.progress import Progress

    done = done_ids(log, spec.skip_bad_docs)
    rank, world = shard
    pending = [d for i, d in enumerate(docs) if i % world == rank and d.doc_id not in done]
    ctx = scoring_context(adapter, spec.seed)
    counters = {"skipped": 0, "generated": 0}
    bar = Progress(len(docs), desc, initial=len(docs) - len(pending))  # a line when not a TTY
    try:  # the bar is cleared before any error is printed
        for start in range(0, len(pending), spec.batch_size):
            batch, requests = [], []
            for doc in pending[start : start + spec.batch_size]:
                try:
                    if isinstance(doc, BadDoc):
                        raise SampleError(doc.reason)
                    requests.append(task.request(doc))
                    batch.append(doc)
                except SampleError as exc:
                    if not spec.skip_bad_docs:
                        raise bad_doc_error(task, doc, exc) from None
                    log.append({"doc_id": doc.doc_id, "skipped": str(exc)})
                    counters["skipped"] += 1
                    bar.update(1)
            if batch:
                t0 = time.perf_counter()
                generations = adapter.generate(requests)
                batch_ms = (time.perf_counter() - t0) * 1000.0
                log_generations(
                    task, batch, requests, generations, batch_ms, log, ctx, spec.predict_only
                )
                bar.update(len(batch))
                counters["generated"] += len(batch)
    finally:
        bar.close()
        log.sync()  # what a crash of the machine could still lose
    return counters
