"""Cell-major evaluation, the reference order: one (task, intervention) cell after the other.

Each cell reads, processes and encodes every pending document itself (``--cell-major``);
the default sample-major order (:mod:`harness.run.sample_major`) gives the same rows. As
there, the intervention is attached once per batch and each batch's record is written after
its rows (:mod:`harness.run.batch_records`), so a resumed cell's counters are exact.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from harness.api.specs import RunSpec
from harness.api.task import BadDoc, SampleError, Task
from harness.run.batches import bad_doc_error
from harness.run.sample_major import CellRun, done_ids, log_generations, scoring_context

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
    """Evaluate one cell on all its pending documents (the cell-major reference order)."""
    from harness.api.progress import Progress
    from harness.attention.dispatch import window_kernels_used

    cell.resume()
    done = done_ids(cell.log, spec.skip_bad_docs)
    rank, world = shard
    pending = [d for i, d in enumerate(docs) if i % world == rank and d.doc_id not in done]
    ctx = scoring_context(adapter, spec.seed)
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
                    cell.log.append({"doc_id": doc.doc_id, "skipped": str(exc)})
                    cell.counters["skipped"] += 1
                    bar.update(1)
            if not batch:
                continue
            window_kernels_used(reset=True)
            cell.check()
            with cell.interv.attach(adapter) as resolved:
                cell.check()  # the files it read named this cell's log
                t0 = time.perf_counter()
                generations = adapter.generate(requests)
                batch_ms = (time.perf_counter() - t0) * 1000.0
            kernels = window_kernels_used(reset=True)
            log_generations(
                task, batch, requests, generations, batch_ms, cell.log, ctx, spec.predict_only
            )
            cell.commit(batch, resolved, kernels)
            cell.counters["generated"] += len(batch)
            bar.update(len(batch))
    finally:
        bar.close()
        cell.sync()  # what a crash of the machine could still lose
