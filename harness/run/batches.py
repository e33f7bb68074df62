"""The input side of sample-major evaluation: a batch's documents read, decoded and processed.

:func:`prepare_batch` builds one batch's requests (media read, videos decoded, pages
rendered), takes each document's ``task.sample_log`` right after its request, and builds the
model inputs once (:meth:`ModelAdapter.shared_inputs`: chat template, resize, patchify). It
writes nothing: a document that cannot be read is returned in :attr:`Prepared.skipped` (under
``--skip-bad-docs``) or raises :func:`bad_doc_error`, and the caller logs or raises it when it
takes the batch, in the same order as without prefetching.

:class:`Prefetcher` prepares the next batch in one background thread while the model runs the
current batch's cells (a GPU forward leaves the CPU free; video decoding, PDF rendering and
image resizing release the GIL for most of their time). It is bounded to one batch ahead: the
next batch is started only when the current one is taken, so at most two batches' requests and
inputs are held (the one generating, the one being prepared), against one without prefetch.
An error of the background batch (a bad document, a processor error) is raised when that batch
is taken, so it stops the run at the same point as before, after the previous batch's rows
are written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from harness.api.task import BadDataError, BadDoc, SampleError, Task

__all__ = ["Prepared", "prepare_batch", "bad_doc_error", "takes_inputs", "Prefetcher"]


@dataclass
class Prepared:
    """One batch, ready for the model.

    Attributes:
        docs: The documents whose requests were built, in order.
        requests: Their requests.
        extras: Their ``task.sample_log`` fields, taken right after each request.
        inputs: The batch's shared model inputs (None: the adapter builds its own).
        inputs_ms: Wall time of building all this, per document.
        skipped: ``(doc, error)`` of the documents that could not be read (skip-bad-docs).
    """

    docs: list[Any]
    requests: list[Any]
    extras: list[dict[str, Any]]
    inputs: Any
    inputs_ms: float
    skipped: list[tuple[Any, SampleError]] = field(default_factory=list)


def bad_doc_error(task: Task, doc: Any, exc: Exception) -> BadDataError:
    """The error that stops a run at a bad document (without ``--skip-bad-docs``)."""
    return BadDataError(
        f"task {task.registry_name!r}, doc {doc.doc_id!r}: {exc}; {BadDataError.FIX} "
        "(samples already scored are kept)"
    )


def takes_inputs(adapter: Any) -> bool:
    """Whether ``adapter`` builds shared inputs and its ``generate`` takes them.

    An adapter that overrides ``generate(requests)`` alone builds its own inputs, as before.
    """
    import inspect

    if getattr(adapter, "shared_inputs", None) is None:
        return False
    try:
        return "inputs" in inspect.signature(adapter.generate).parameters
    except (TypeError, ValueError):
        return False


def prepare_batch(
    task: Task,
    docs: Sequence[Any],
    adapter: Any,
    sharing: bool,
    skip_bad_docs: bool,
    ready: dict[Any, Any] | None = None,
) -> Prepared:
    """Requests, sample-log fields and shared inputs of ``docs`` (see the module docstring).

    Args:
        task: The task.
        docs: The batch's documents (BadDoc entries included).
        adapter: The model adapter.
        sharing: Build shared inputs (:func:`takes_inputs`).
        skip_bad_docs: Return unreadable documents in ``skipped`` instead of raising.
        ready: Requests already built (preflight's first document), by doc id; popped.

    Raises:
        BadDataError: A document cannot be read and ``skip_bad_docs`` is off.
    """
    t0 = time.perf_counter()
    prepared = Prepared([], [], [], None, 0.0)
    for doc in docs:
        try:
            if isinstance(doc, BadDoc):
                raise SampleError(doc.reason)
            made = ready.pop(doc.doc_id, None) if ready else None
            prepared.requests.append(made if made is not None else task.request(doc))
            prepared.docs.append(doc)
        except SampleError as exc:
            if not skip_bad_docs:
                raise bad_doc_error(task, doc, exc) from None
            prepared.skipped.append((doc, exc))
    if prepared.docs:
        prepared.extras = [task.sample_log(doc) for doc in prepared.docs]
        prepared.inputs = adapter.shared_inputs(prepared.requests) if sharing else None
        prepared.inputs_ms = (time.perf_counter() - t0) * 1000.0 / len(prepared.docs)
    return prepared


class Prefetcher:
    """Prepared batches in order, the next one prepared in a background thread.

    Use it as a context manager and iterate it inside; leaving the block (also on an error)
    stops waiting for a batch nobody will take.

    Args:
        prepare: Builds one batch from its documents (:func:`prepare_batch` bound to a task).
        batches: The batches' documents, in order.
        enabled: False prepares each batch when it is taken (no thread), as before.
    """

    def __init__(
        self,
        prepare: Callable[[Sequence[Any]], Prepared],
        batches: Sequence[Sequence[Any]],
        enabled: bool = True,
    ) -> None:
        self.prepare = prepare
        self.batches = batches
        self.enabled = enabled and len(batches) > 1
        self._pool: ThreadPoolExecutor | None = None

    def __enter__(self) -> Prefetcher:
        if self.enabled:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="headscope-prefetch")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:  # a batch in progress finishes in the background, unread
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def __iter__(self) -> Iterator[Prepared]:
        if self._pool is None:
            for docs in self.batches:
                yield self.prepare(docs)
            return
        ahead: Future[Prepared] = self._pool.submit(self.prepare, self.batches[0])
        for i in range(len(self.batches)):
            current = ahead.result()  # raises the batch's own error, in batch order
            if i + 1 < len(self.batches):  # one batch ahead, started once this one is taken
                ahead = self._pool.submit(self.prepare, self.batches[i + 1])
            yield current
