"""The evaluator: runs a model × tasks × interventions grid, resumably.

Flow per (task, intervention) cell: docs → requests → model (batched) → parsed
answers → per-sample scores → aggregates with stderr. Every scored sample is
appended to the cell's JSONL log before the next batch starts, so a run killed
midway loses at most one batch; rerunning the same spec into the same output
directory skips the samples already logged and produces the same results as an
uninterrupted run. A different spec into a non-empty directory is refused.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.api.specs import RunSpec, TaskSpec
from harness.api.task import (
    BadDataError,
    BadDoc,
    SampleError,
    ScoringContext,
    Task,
)
from harness.run.cells import (
    cell_names,
    file_hashes,
    previous_resolved,
    run_identity,
    samples_filename,
    save_resolved,
)
from harness.schema.results import (
    MetricDefRecord,
    MetricRecord,
    ResultEntry,
    RunResults,
    write_json_atomic,
)
from harness.schema.samples import SampleLog, unique_rows

__all__ = ["run_grid", "EvaluationError", "BadDataError", "samples_filename"]

SPEC_FILE = "run_spec.json"


class EvaluationError(RuntimeError):
    """A grid that cannot go on (names the task / document / file at fault)."""


_FIX = BadDataError.FIX


def _done_ids(log: SampleLog, skip_bad_docs: bool) -> set[Any]:
    """Doc ids already in the log (deduplicated on disk first).

    Skipped rows count as done only under ``skip_bad_docs``: a run resumed without the flag
    retries them, so a fixed file is scored and a still-broken one stops the run.
    """
    rows, dropped = unique_rows(log.read())
    if dropped:
        log.rewrite(rows)
    return {r["doc_id"] for r in rows if skip_bad_docs or "skipped" not in r}


def _run_cell(
    task: Task,
    docs: Sequence[Any],
    adapter: Any,
    log: SampleLog,
    spec: RunSpec,
    desc: str,
    shard: tuple[int, int],
) -> dict[str, Any]:
    from harness.api.progress import Progress

    done = _done_ids(log, spec.skip_bad_docs)
    rank, world = shard
    pending = [d for i, d in enumerate(docs) if i % world == rank and d.doc_id not in done]
    ctx = ScoringContext(
        adapter.parse_box,
        spec.seed,
        family=adapter.registry_name or None,
        parse_video_box=getattr(adapter, "parse_video_box", None),
    )
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
                        raise BadDataError(
                            f"task {task.registry_name!r}, doc {doc.doc_id!r}: {exc}; {_FIX} "
                            "(samples already scored are kept)"
                        ) from None
                    log.append({"doc_id": doc.doc_id, "skipped": str(exc)})
                    counters["skipped"] += 1
                    bar.update(1)
            if batch:
                _score_batch(task, batch, requests, adapter, log, ctx, bar, spec.predict_only)
                counters["generated"] += len(batch)
    finally:
        bar.close()
    return counters


def _score_batch(
    task: Task,
    batch: list[Any],
    requests: list[Any],
    adapter: Any,
    log: SampleLog,
    ctx: ScoringContext,
    bar: Any,
    predict_only: bool = False,
) -> None:
    t0 = time.perf_counter()
    generations = adapter.generate(requests)
    batch_ms = (time.perf_counter() - t0) * 1000.0
    if not predict_only:
        task.prepare_scoring(batch, generations)
    for doc, req, gen in zip(batch, requests, generations, strict=True):
        row: dict[str, Any] = {
            "doc_id": doc.doc_id,
            "prompt": req.text,
            "output": gen.text,
            "timing": {
                "prefill_ms": gen.prefill_ms,
                "total_ms": gen.total_ms if gen.total_ms is not None else batch_ms / len(batch),
                "prompt_tokens": gen.prompt_tokens,
                "output_tokens": gen.output_tokens,
            },
            **task.sample_log(doc),
        }
        try:
            if not predict_only:
                row["scores"] = task.score(doc, gen, ctx)
        except Exception as exc:  # noqa: BLE001 - counted and reported, never swallowed
            row["error"] = f"{type(exc).__name__}: {exc}"
        log.append(row)
        bar.update(1)


def _summarise(
    task: Task, docs: Sequence[Any], rows: list[dict[str, Any]], predict_only: bool = False
) -> dict[str, Any]:
    order = {d.doc_id: i for i, d in enumerate(docs)}
    rows, _ = unique_rows(rows)
    rows = sorted((r for r in rows if r["doc_id"] in order), key=lambda r: order[r["doc_id"]])
    failures = [{"doc_id": r["doc_id"], "error": r["error"]} for r in rows if "error" in r]
    skipped = sum(1 for r in rows if "skipped" in r)
    if predict_only:  # outputs only: no scores, no metrics
        scored = [r for r in rows if "output" in r and "error" not in r]
        metrics, warnings = [], []
    else:
        scored = [r for r in rows if "scores" in r]
        aggregated = task.aggregate([r["scores"] for r in scored])
        metrics = [MetricRecord(m.name, _finite(m.value), m.stderr, m.n) for m in aggregated]
        warnings = task.reply_warnings(aggregated)
    timing = _timing_summary(scored)
    return {
        "warnings": warnings,
        "metrics": metrics,
        "n_samples": len(scored),
        "n_skipped": skipped,
        "failures": failures,
        "timing": timing,
    }


def _finite(value: float) -> float | None:
    return None if value != value else float(value)  # NaN → None (JSON has no NaN)


def _timing_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    import statistics

    out: dict[str, Any] = {}
    for key in ("prefill_ms", "total_ms"):
        vals = [r["timing"][key] for r in rows if r.get("timing", {}).get(key) is not None]
        if vals:
            out[f"{key}_median"] = statistics.median(vals)
    return out


def run_grid(
    spec: RunSpec, adapter: Any = None, shard: tuple[int, int] | None = None
) -> RunResults | None:
    """Run the grid described by ``spec`` and write its results.

    Args:
        spec: The run spec.
        adapter: A ready model adapter (tests pass a mock); None loads ``spec.model``.
        shard: ``(rank, world_size)``; default from the launcher's environment
            (see :mod:`harness.run.distributed`). Rank r evaluates docs r, r+W, ...;
            rank 0 gathers the rows and writes the results.

    Returns:
        The run's :class:`RunResults` (also saved to ``OUTPUT/results.json``) on
        rank 0; None on other ranks.
    """
    from harness.api.intervention import build_intervention
    from harness.run import distributed as dist
    from harness.run.outdir import OutputLock, check_run_dir
    from harness.run.preflight import (
        build_task_for,
        check_first_request,
        check_interventions,
        load_docs,
    )

    rank, world = shard or dist.shard_from_env()
    out = Path(spec.output)
    # Validate everything before anything is written: names, arguments, the output
    # directory, the data; then (model loaded) the interventions against the model.
    tasks = [(t, build_task_for(t, spec.skip_bad_docs)) for t in spec.tasks]
    interventions = [(i, build_intervention(i, spec.seed)) for i in spec.interventions]
    if adapter is None:
        from harness.api.registry import MODEL_FAMILIES

        MODEL_FAMILIES.get(spec.model.name)  # unknown family: fail before touching the disk
    if world > 1:
        dist.init_process_group()
    lock = OutputLock(out) if rank == 0 else None
    started = False
    try:
        try:  # checks that can fail on one rank alone: every rank learns the outcome (agree)
            if rank == 0:
                check_run_dir(out, run_identity(spec), SPEC_FILE, legacy=spec.identity())
            docs_of = {id(task): load_docs(task, tspec) for tspec, task in tasks}
            for tspec, task in tasks:
                check_first_request(task, docs_of[id(task)], tspec)
            if lock is not None:
                lock.acquire()
                if lock.stale:
                    print(f"headscope: note: taking over the lock of a run that did not finish "
                          f"(pid {lock.stale.get('pid')}); resuming", file=sys.stderr)  # fmt: skip
                # again, now that we hold the lock
                check_run_dir(out, run_identity(spec), SPEC_FILE, legacy=spec.identity())
            if adapter is None:
                from harness.api.model import load_adapter

                model_spec = spec.model
                if world > 1:  # one GPU per process: "cuda" means this rank's cuda:LOCAL_RANK
                    model_spec = replace(model_spec, device=dist.device_for_rank(model_spec.device))
                adapter = load_adapter(model_spec)
            check_interventions(interventions, adapter)
        except Exception as exc:
            dist.agree(exc)
        dist.agree(None)
        if rank == 0:
            write_json_atomic(out / SPEC_FILE, run_identity(spec))
        started = True
        dist.barrier()
        return _run(spec, tasks, docs_of, interventions, adapter, out, (rank, world))
    finally:
        if lock is not None:
            lock.release(remove_if_unused=not started)


def _run(
    spec: RunSpec,
    tasks: list[tuple[TaskSpec, Task]],
    docs_of: dict[int, list[Any]],
    interventions: list[tuple[Any, Any]],
    adapter: Any,
    out: Path,
    shard: tuple[int, int],
) -> RunResults | None:
    from harness.attention.dispatch import window_kernels_used
    from harness.run import distributed as dist
    from harness.run.provenance import collect_provenance

    rank, world = shard
    entries: list[ResultEntry] = []
    metric_defs: dict[str, list[MetricDefRecord]] = {}
    provenance = collect_provenance(adapter)
    provenance["settings"]["world_size"] = world
    if spec.gen_kwargs:
        provenance["settings"]["gen_kwargs"] = dict(spec.gen_kwargs)
    adapter.gen_kwargs, adapter.gen_seed = dict(spec.gen_kwargs), spec.seed
    names = cell_names(spec.tasks, spec.interventions)
    hashes = [file_hashes(ispec.args) for ispec, _ in interventions]  # the content names used
    before = previous_resolved(out)
    for i, (tspec, task) in enumerate(tasks):
        docs = docs_of[id(task)]
        metric_defs[tspec.name] = [
            MetricDefRecord(m.name, m.higher_is_better, m.description) for m in task.metrics
        ]
        for j, (ispec, interv) in enumerate(interventions):
            fname = names[(i, j)]
            log = SampleLog(out / "samples" / _shard_name(fname, (rank, world)))
            desc = f"{tspec.name} × {ispec.label}"
            window_kernels_used(reset=True)
            _check_unchanged(ispec, hashes[j])
            with interv.attach(adapter) as resolved:
                _check_unchanged(ispec, hashes[j])  # the files it read named this cell's log
                counters = _run_cell(task, docs, adapter, log, spec, desc, (rank, world))
            resolved = dict(resolved or {})
            if used := window_kernels_used(reset=True):  # which window kernel ran, per cell
                resolved["window_kernels"] = used
            if not counters["generated"] and f"samples/{fname}" in before:
                resolved = before[f"samples/{fname}"]  # resumed, nothing new: keep the record
            elif rank == 0:
                save_resolved(out, f"samples/{fname}", resolved)
            rows = log.read()
            if world > 1:
                rows = dist.gather_rows(rows)
                if rows is None:
                    continue
                _write_merged_log(out / "samples" / fname, docs, rows)
            summary = _summarise(task, docs, rows, spec.predict_only)
            for warning in summary["warnings"]:
                print(
                    f"headscope: warning: {tspec.name} / {ispec.label}: {warning}", file=sys.stderr
                )
            entries.append(
                ResultEntry(
                    task=tspec.name,
                    task_args=dict(tspec.args),
                    split=tspec.split or task.default_split,
                    task_settings=task.settings(),
                    intervention=ispec.label,
                    intervention_spec={"name": ispec.name, "args": dict(ispec.args)},
                    intervention_resolved=resolved,
                    samples_file=f"samples/{fname}",
                    **summary,
                )
            )
            _save(out, spec, provenance, metric_defs, entries, adapter, status="partial")
    dist.barrier()
    if rank != 0:
        return None
    return _save(out, spec, provenance, metric_defs, entries, adapter, status="complete")


def _check_unchanged(ispec: Any, hashes: dict[str, str | None]) -> None:
    """Refuse to go on when a file argument's content differs from the run's start."""
    now = file_hashes(ispec.args, keys=hashes)
    for key, digest in hashes.items():
        if now.get(key) != digest:
            raise EvaluationError(
                f"intervention {ispec.label!r}: the {key} file {ispec.args[key]!r} changed "
                "since this run started; rerun the same command: the cells that use it start "
                "again under the new content's name (rows made with the old content are kept "
                "apart)"
            )


def _write_merged_log(path: Path, docs: Sequence[Any], rows: list[dict[str, Any]]) -> None:
    """Rank 0's merged sample log, in document order (written atomically)."""
    order = {d.doc_id: i for i, d in enumerate(docs)}
    SampleLog(path).rewrite(sorted(rows, key=lambda r: order.get(r["doc_id"], len(order))))


def _shard_name(fname: str, shard: tuple[int, int]) -> str:
    if shard == (0, 1):
        return fname
    return fname.replace(".jsonl", f".rank{shard[0]}of{shard[1]}.jsonl")


def _save(
    out: Path,
    spec: RunSpec,
    provenance: dict[str, Any],
    metric_defs: dict[str, list[MetricDefRecord]],
    entries: list[ResultEntry],
    adapter: Any,
    status: str,
) -> RunResults:
    resolved = spec.to_dict()
    resolved["model"]["pretrained"] = adapter.settings().get("pretrained")
    results = RunResults(
        spec_passed=spec.to_dict(),
        spec_resolved=resolved,
        metric_defs=metric_defs,
        entries=list(entries),
        status=status,
        **provenance,
    )
    results.save(out / "results.json")
    return results
