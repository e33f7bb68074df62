"""Checks made before a run writes anything: task construction, documents, interventions.

A run that is refused here leaves no trace: no ``run_spec.json``, no sample log, no results
(so the corrected command is never refused as "a different spec").
"""

from __future__ import annotations

from typing import Any

from harness.api.intervention import InterventionError
from harness.api.specs import TaskSpec
from harness.api.task import BadDataError, BadDoc, SampleError, Task, TaskLoadError, build_task

__all__ = ["build_task_for", "load_docs", "check_first_request", "check_interventions"]

FIX = BadDataError.FIX


def build_task_for(tspec: TaskSpec, skip_bad_docs: bool) -> Task:
    """The task of ``tspec``; under ``skip_bad_docs`` its loader keeps malformed rows as BadDoc."""
    task = build_task(tspec.name, tspec.args)
    task.collect_bad_rows = skip_bad_docs
    return task


def load_docs(task: Task, tspec: TaskSpec) -> list[Any]:
    """All documents of one task (BadDoc entries in place of malformed rows when skipping)."""
    try:
        docs = tspec.take(task.load(split=tspec.split, limit=tspec.load_limit))
    except SampleError as exc:
        raise BadDataError(f"task {tspec.name!r}: {exc}; {FIX}") from None
    except TaskLoadError as exc:  # its message names the task already
        raise BadDataError(f"documents failed to load: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - loaders fail in many ways on odd data
        raise BadDataError(
            f"task {tspec.name!r}: documents failed to load ({type(exc).__name__}: {exc}); "
            "check the task's data files and arguments"
        ) from exc  # --debug shows where it came from
    ids = [d.doc_id for d in docs]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise BadDataError(f"task {tspec.name!r}: doc id {dup!r} appears twice in the data")
    return docs


def check_first_request(task: Task, docs: list[Any], tspec: TaskSpec) -> dict[Any, Any]:
    """Build the first document's request (reads its media) before anything is written.

    A wrong media root (``image_root``, ``video_root``, ``doc_dir``) or unreadable media
    fails every document alike; finding it here leaves no run directory behind. Only the
    first document is read, so a bad one further on is still found when its turn comes.
    Skipped under ``--skip-bad-docs`` (that run counts such documents instead).

    Returns:
        ``{doc_id: request}`` of the document read (empty when skipped), so the grid does not
        read and decode it a second time.
    """
    if task.collect_bad_rows:
        return {}
    first = next((d for d in docs if not isinstance(d, BadDoc)), None)
    if first is None:
        return {}
    try:
        return {first.doc_id: task.request(first)}
    except (SampleError, OSError) as exc:
        raise BadDataError(
            f"task {tspec.name!r}: doc {first.doc_id!r}, the first document: {exc}; {FIX}"
        ) from None


def check_interventions(interventions: list[tuple[Any, Any]], adapter: Any) -> None:
    """Attach and detach each intervention once, before anything is written.

    Arguments that only the model can check (layers, head counts, ranking files) fail here.
    """
    for ispec, interv in interventions:
        try:
            with interv.attach(adapter):
                pass
        except (ValueError, OSError, KeyError) as exc:
            hint = getattr(exc, "hint", None)
            raise InterventionError(f"intervention {ispec.label!r}: {exc}", hint=hint) from exc
