"""Sample-major evaluation: each batch of documents is read and processed once for every cell.

For one task, the documents still pending in any cell (intervention) are taken in document
order, ``batch_size`` at a time. For each such batch the requests are built once (media read,
videos decoded, pages rendered), the model inputs once (:meth:`ModelAdapter.shared_inputs`:
processor, resize, patchify), and every cell whose log lacks those documents generates on
them with its intervention attached, vision features reused across the cells
(:meth:`ModelAdapter.reuse_vision`). Each cell's rows are appended to its own log after its
generation, exactly as the cell-major reference does, so resume, per-cell files,
``--skip-bad-docs`` and sharding behave the same; on a fresh run every cell sees the same
batches as cell-major does, hence the same outputs.

While the cells run on one batch, the next batch is read and processed in the background
(:mod:`harness.run.batches`), so at most two batches' requests and inputs, and one batch's
vision features, are held at a time.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from harness.api.task import ScoringContext, Task
from harness.run.batches import Prefetcher, Prepared, prepare_batch, takes_inputs
from harness.schema.samples import SampleLog, unique_rows

__all__ = ["CellRun", "done_ids", "scoring_context", "log_generations", "run_task"]

#: Cells run in this order inside a batch: a cell that reads the vision pass computes it for
#: the ones after it; a cell that changes it, or does not declare, comes last (its pass is
#: never shared).
_VISION_ORDER = {"reads": 0, "none": 1, "writes": 2, None: 2}


@dataclass
class CellRun:
    """One (task, intervention) cell of a run in progress.

    Attributes:
        label: The intervention's label (progress lines).
        interv: The built intervention.
        fname: The cell's sample-log file name (merged log).
        log: This process's sample log of the cell.
        check: Raises when a file the intervention reads changed since the run started
            (called before and inside every attach).
        counters: ``skipped`` and ``generated`` documents in this run.
        resolved: The merged ``intervention_resolved`` of this run's attaches (None: none).
        kernels: Windowed layer calls per kernel in this run.
        records: The cell's per-batch records in this process
            (:class:`~harness.run.batch_records.BatchRecords`; None: none kept).
    """

    label: str
    interv: Any
    fname: str
    log: SampleLog
    check: Callable[[], None] = lambda: None
    counters: dict[str, int] = field(default_factory=lambda: {"skipped": 0, "generated": 0})
    resolved: dict[str, Any] | None = None
    kernels: Counter = field(default_factory=Counter)
    records: Any = None

    def add_resolved(self, part: dict[str, Any] | None) -> None:
        """Merge one attach's record into :attr:`resolved`."""
        part = dict(part or {})
        self.resolved = (
            part if self.resolved is None else self.interv.merge_resolved(self.resolved, part)
        )

    def resume(self) -> None:
        """Drop logged rows of batches whose record was not written (before ``done_ids``)."""
        if self.records is not None:
            self.records.resume(self.log)

    def sync(self) -> None:
        """Make the log's and the records' appended lines durable (a cell's or task's end)."""
        self.log.sync()
        if self.records is not None:
            self.records.log.sync()

    def commit(self, docs: Sequence[Any], part: dict[str, Any] | None, kernels: Counter) -> None:
        """One batch done, its rows logged: count its attach and record it."""
        self.add_resolved(part)
        self.kernels.update(kernels)
        if self.records is not None:
            self.records.commit([d.doc_id for d in docs], part or {}, kernels)


def done_ids(log: SampleLog, skip_bad_docs: bool) -> set[Any]:
    """Doc ids already in the log (deduplicated on disk first).

    Skipped rows count as done only under ``skip_bad_docs``: a run resumed without the flag
    retries them, so a fixed file is scored and a still-broken one stops the run.
    """
    rows, dropped = unique_rows(log.read())
    if dropped:
        log.rewrite(rows)
    return {r["doc_id"] for r in rows if skip_bad_docs or "skipped" not in r}


def scoring_context(adapter: Any, seed: int) -> ScoringContext:
    """The scoring context of ``adapter``'s family."""
    return ScoringContext(
        adapter.parse_box,
        seed,
        family=adapter.registry_name or None,
        parse_video_box=getattr(adapter, "parse_video_box", None),
    )


def log_generations(
    task: Task,
    batch: Sequence[Any],
    requests: Sequence[Any],
    generations: Sequence[Any],
    batch_ms: float,
    log: SampleLog,
    ctx: ScoringContext,
    predict_only: bool,
    inputs_ms: float | None = None,
    sample_logs: Sequence[dict[str, Any]] | None = None,
) -> None:
    """Score each generation and append its row to ``log``.

    Args:
        task: The task (scores, sample-log fields).
        batch: The documents generated on.
        requests: Their requests.
        generations: The model's generations, one per document.
        batch_ms: Wall time of the generate call (``total_ms`` when a generation has none).
        log: The cell's sample log.
        ctx: The scoring context.
        predict_only: Log outputs without scores.
        inputs_ms: (sample-major) this batch's request building and processing time per row,
            spent once for all cells.
        sample_logs: (sample-major) each document's ``task.sample_log``, taken once right
            after its request was built (a task may hand over request-time details, such as
            the shown frames, only once); None: asked here.
    """
    if sample_logs is None:
        sample_logs = [task.sample_log(doc) for doc in batch]
    if not predict_only:
        task.prepare_scoring(batch, generations)
    rows: list[dict[str, Any]] = []
    try:
        for doc, req, gen, extra in zip(batch, requests, generations, sample_logs, strict=True):
            share_ms = batch_ms / len(batch)
            rows.append(_row(task, doc, req, gen, extra, share_ms, inputs_ms, ctx, predict_only))
    finally:  # the rows scored so far are kept, in one write and one fsync
        log.append_many(rows)


def _row(task, doc, req, gen, extra, share_ms, inputs_ms, ctx, predict_only) -> dict[str, Any]:
    """One document's sample-log row (scored unless ``predict_only``)."""
    timing = {
        "prefill_ms": gen.prefill_ms,
        "total_ms": gen.total_ms if gen.total_ms is not None else share_ms,
        "prompt_tokens": gen.prompt_tokens,
        "output_tokens": gen.output_tokens,
    }
    if inputs_ms is not None:
        timing["inputs_ms"] = inputs_ms
    row: dict[str, Any] = {
        "doc_id": doc.doc_id,
        "prompt": req.text,
        "output": gen.text,
        "timing": timing,
        **extra,
    }
    try:
        if not predict_only:
            row["scores"] = task.score(doc, gen, ctx)
    except Exception as exc:  # noqa: BLE001 - counted and reported, never swallowed
        row["error"] = f"{type(exc).__name__}: {exc}"
    return row


def run_task(
    task: Task,
    docs: Sequence[Any],
    cells: list[CellRun],
    adapter: Any,
    spec: Any,
    shard: tuple[int, int],
    name: str,
    ready: dict[Any, Any] | None = None,
    check_vision_reuse: bool = False,
    prefetch: bool = True,
) -> None:
    """Evaluate every cell of one task, batch by batch (see the module docstring).

    Args:
        task: The task.
        docs: All its documents (this process takes its shard).
        cells: The task's cells, in grid order; their counters, records and logs are filled.
        adapter: The model adapter.
        spec: The run spec (batch size, seed, ``skip_bad_docs``, ``predict_only``).
        shard: ``(rank, world_size)``.
        name: The task's name (progress line).
        ready: Requests already built (preflight's first document), by doc id; used once.
        check_vision_reuse: Recompute every reused vision pass and fail on a difference
            (:class:`~harness.models.vision_memo.VisionMemo`).
        prefetch: Prepare the next batch in the background while the cells run
            (:class:`~harness.run.batches.Prefetcher`); False: each when its turn comes.
    """
    from harness.api.progress import Progress

    rank, world = shard
    mine = [d for i, d in enumerate(docs) if i % world == rank]
    for cell in cells:
        cell.resume()
    done = [done_ids(c.log, spec.skip_bad_docs) for c in cells]
    pending = [d for d in mine if any(d.doc_id not in ids for ids in done)]
    order = sorted(range(len(cells)), key=lambda k: _VISION_ORDER[_vision_use(cells[k])])
    left = sum(1 for d in mine for ids in done if d.doc_id not in ids)
    total = len(docs) * len(cells)
    # a terminal shows one bar for the task; a log gets one line per cell when the task ends
    bar = Progress(total, f"{name} × {len(cells)} interventions", initial=total - left, line=False)
    lines = []
    for cell, ids in zip(cells, done, strict=True):
        todo = sum(1 for d in mine if d.doc_id not in ids)
        lines.append(
            Progress(len(docs), f"{name} × {cell.label}", initial=len(docs) - todo, bar=False)
        )
    prepare = functools.partial(
        prepare_batch,
        task,
        adapter=adapter,
        sharing=takes_inputs(adapter),
        skip_bad_docs=spec.skip_bad_docs,
        ready=ready,
    )
    size = spec.batch_size
    chunks = [pending[s : s + size] for s in range(0, len(pending), size)]
    try:
        with Prefetcher(prepare, chunks, enabled=prefetch) as prepared:
            for batch in prepared:
                for doc, exc in batch.skipped:  # logged when taken, as before prefetch
                    for cell, ids, line in zip(cells, done, lines, strict=True):
                        if doc.doc_id not in ids:
                            cell.log.append({"doc_id": doc.doc_id, "skipped": str(exc)})
                            cell.counters["skipped"] += 1
                            line.update(1)
                            bar.update(1)
                if batch.docs:
                    progress = [*lines, bar]
                    _run_cells(
                        batch,
                        task,
                        cells,
                        done,
                        order,
                        adapter,
                        spec,
                        progress,
                        check_vision_reuse,
                    )
    finally:
        bar.close()
        for line in lines:
            line.close()
        for cell in cells:  # what a crash of the machine could still lose
            cell.sync()


def _run_cells(
    batch: Prepared,
    task: Task,
    cells: list[CellRun],
    done: list[set[Any]],
    order: list[int],
    adapter: Any,
    spec: Any,
    progress: list[Any],
    check_vision_reuse: bool,
) -> None:
    """Every cell that lacks some of ``batch``'s documents generates on them and logs them.

    ``progress``: each cell's progress line, then the task's bar.
    """
    from harness.attention.dispatch import window_kernels_used

    ctx = scoring_context(adapter, spec.seed)
    docs = batch.docs
    reuse = getattr(adapter, "reuse_vision", None)
    if not _may_reuse(cells, done, docs):  # one sharing cell: the memo only costs
        reuse = None
    kw = {"check": True} if check_vision_reuse else {}  # an adapter's own may lack it
    with reuse(**kw) if reuse is not None else nullcontext() as memo:
        for k in order:
            cell, ids = cells[k], done[k]
            keep = [i for i, d in enumerate(docs) if d.doc_id not in ids]
            if not keep:
                continue
            sub = [docs[i] for i in keep]
            reqs = [batch.requests[i] for i in keep]
            extra = [batch.extras[i] for i in keep]
            inputs = batch.inputs if len(keep) == len(docs) else None  # a resumed cell
            window_kernels_used(reset=True)
            use = _vision_use(cell)
            cell.check()
            with cell.interv.attach(adapter) as resolved:
                cell.check()  # the files it read named this cell's log
                with memo.using(use, cell.label) if memo is not None else nullcontext():
                    t1 = time.perf_counter()
                    if inputs is None:
                        gens = adapter.generate(reqs)
                    else:
                        gens = adapter.generate(reqs, inputs=inputs)
                    batch_ms = (time.perf_counter() - t1) * 1000.0
            kernels = window_kernels_used(reset=True)
            log_generations(
                task,
                sub,
                reqs,
                gens,
                batch_ms,
                cell.log,
                ctx,
                spec.predict_only,
                batch.inputs_ms,
                extra,
            )
            cell.commit(sub, resolved, kernels)
            cell.counters["generated"] += len(sub)
            progress[k].update(len(sub))
            progress[-1].update(len(sub))


def _may_reuse(cells: list[CellRun], done: list[set[Any]], batch: list[Any]) -> bool:
    """Whether two cells that may share a vision pass (``reads``, ``none``) run on ``batch``.

    With fewer there is nothing to reuse, and the memo's key of the vision side (hashed per
    call) would cost ~6 % of a one-cell toy run at batch 1.
    """
    sharing = 0
    for cell, ids in zip(cells, done, strict=True):
        if _vision_use(cell) in ("reads", "none") and any(d.doc_id not in ids for d in batch):
            sharing += 1
    return sharing >= 2


def _vision_use(cell: CellRun) -> str | None:
    """The cell's declared ``vision_use()`` (None: not declared), checked."""
    from harness.api.intervention import InterventionError

    use = cell.interv.vision_use()
    if use not in _VISION_ORDER:
        raise InterventionError(
            f"intervention {cell.label!r}: vision_use() returned {use!r}",
            hint="return 'none', 'reads' or 'writes', or do not override it",
        )
    return use
