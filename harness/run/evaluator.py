"""The evaluator: runs a model × tasks × interventions grid, resumably.

Flow per (task, intervention) cell: docs → requests → model (batched) → parsed
answers → per-sample scores → aggregates with stderr. The default order is sample-major
(:mod:`harness.run.sample_major`): per task, each batch of documents is read, processed and
vision-encoded once and every cell generates on it; ``order="cell"`` runs one cell after
the other, each reading and processing every document itself (the reference; the outputs are
identical). Every scored sample is appended to its cell's JSONL log right after its
generation, so a run killed midway loses at most one batch; rerunning the same spec into the
same output directory skips the samples already logged and produces the same results as an
uninterrupted run. A different spec into a non-empty directory is refused. ``results.json``
is rewritten once per task (its cells finish together) and at the end.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.api.specs import RunSpec, TaskSpec
from harness.api.task import BadDataError, Task
from harness.run.batch_records import BatchRecords, cell_record
from harness.run.cell_major import run_cell
from harness.run.cells import (
    cell_names,
    file_hashes,
    previous_resolved,
    run_identity,
    samples_filename,
    save_resolved,
)
from harness.run.sample_major import CellRun, run_task
from harness.schema.results import (
    MetricDefRecord,
    MetricRecord,
    ResultEntry,
    RunResults,
    write_json_atomic,
)
from harness.schema.samples import SampleLog, unique_rows

__all__ = ["run_grid", "EvaluationError", "BadDataError", "samples_filename", "ORDERS"]

SPEC_FILE = "run_spec.json"

ORDERS = ("sample", "cell")
"""Evaluation orders: ``sample`` (default; each batch processed once for all cells) and
``cell`` (the reference: each cell reads and processes every document itself)."""


class EvaluationError(RuntimeError):
    """A grid that cannot go on (names the task / document / file at fault)."""


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
    spec: RunSpec,
    adapter: Any = None,
    shard: tuple[int, int] | None = None,
    order: str = "sample",
    check_vision_reuse: bool = False,
    prefetch: bool = True,
) -> RunResults | None:
    """Run the grid described by ``spec`` and write its results.

    Args:
        spec: The run spec.
        adapter: A ready model adapter (tests pass a mock); None loads ``spec.model``.
        shard: ``(rank, world_size)``; default from the launcher's environment
            (see :mod:`harness.run.distributed`). Rank r evaluates docs r, r+W, ...;
            rank 0 gathers the rows and writes the results.
        order: ``"sample"`` (each batch read, processed and vision-encoded once for all
            cells) or ``"cell"`` (the reference: each cell on its own); same outputs.
        check_vision_reuse: (sample-major) recompute every vision pass that would be reused
            and fail, naming the intervention, unless it is bit-identical; recorded in the
            settings.
        prefetch: (sample-major) read and process the next batch in a background thread while
            the model runs the current one (:mod:`harness.run.batches`); same outputs.

    Returns:
        The run's :class:`RunResults` (also saved to ``OUTPUT/results.json``) on
        rank 0; None on other ranks.
    """
    from harness.api.intervention import build_intervention
    from harness.run import distributed as dist
    from harness.run.outdir import check_run_dir
    from harness.run.preflight import (
        build_task_for,
        check_first_request,
        check_interventions,
        load_docs,
    )
    from harness.schema.writes import OutputLock, writing_into

    if order not in ORDERS:
        raise ValueError(f"order must be one of {list(ORDERS)}, not {order!r}")
    rank, world = shard or dist.shard_from_env()
    out = Path(spec.output)
    # Validate everything before anything is written: names, arguments, the output
    # directory, the data; then (model loaded) the interventions against the model.
    tasks = [(t, build_task_for(t, spec.skip_bad_docs)) for t in spec.tasks]
    interventions = [(i, build_intervention(i, spec.seed)) for i in spec.interventions]
    if adapter is None:
        from harness.api.registry import MODEL_FAMILIES

        MODEL_FAMILIES.get(spec.model.name)  # unknown family: fail before touching the disk
        if not spec.model.device_map and world == 1:  # no GPU: say so before reading any data
            from harness.models.loading import check_device

            check_device(spec.model.device)
    if world > 1:
        dist.init_process_group()
    lock = OutputLock(out) if rank == 0 else None
    started = False
    try:
        try:  # checks that can fail on one rank alone: every rank learns the outcome (agree)
            if rank == 0:
                check_run_dir(out, run_identity(spec), SPEC_FILE, legacy=spec.identity())
            docs_of = {id(task): load_docs(task, tspec) for tspec, task in tasks}
            ready = {}  # preflight's first documents, reused by the grid (not read twice)
            for tspec, task in tasks:
                ready[id(task)] = check_first_request(task, docs_of[id(task)], tspec)
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
        with writing_into(out):  # a full or read-only disk: one line naming the file
            if rank == 0:
                write_json_atomic(out / SPEC_FILE, run_identity(spec))
            started = True
            dist.barrier()
            if order == "cell":  # the reference reads every document in every cell
                ready = {}
            return _run(
                spec,
                tasks,
                docs_of,
                ready,
                interventions,
                adapter,
                out,
                (rank, world),
                order,
                check_vision_reuse,
                prefetch,
            )
    finally:
        if lock is not None:
            lock.release(remove_if_unused=not started)


def _run(
    spec: RunSpec,
    tasks: list[tuple[TaskSpec, Task]],
    docs_of: dict[int, list[Any]],
    ready: dict[int, dict[Any, Any]],
    interventions: list[tuple[Any, Any]],
    adapter: Any,
    out: Path,
    shard: tuple[int, int],
    order: str,
    check_vision_reuse: bool = False,
    prefetch: bool = True,
) -> RunResults | None:
    from harness.run.provenance import collect_provenance

    rank, world = shard
    entries: list[ResultEntry] = []
    metric_defs: dict[str, list[MetricDefRecord]] = {}
    provenance = collect_provenance(adapter)
    provenance["settings"]["world_size"] = world
    if spec.gen_kwargs:
        provenance["settings"]["gen_kwargs"] = dict(spec.gen_kwargs)
    if check_vision_reuse:
        provenance["settings"]["check_vision_reuse"] = True
    adapter.gen_kwargs, adapter.gen_seed = dict(spec.gen_kwargs), spec.seed
    names = cell_names(spec.tasks, spec.interventions)
    hashes = [file_hashes(ispec.args) for ispec, _ in interventions]  # the content names used
    before = previous_resolved(out)
    for i, (tspec, task) in enumerate(tasks):
        docs = docs_of[id(task)]
        metric_defs[tspec.name] = [
            MetricDefRecord(m.name, m.higher_is_better, m.description, m.bounds and list(m.bounds))
            for m in task.metrics
        ]
        cells = []
        for j, (ispec, interv) in enumerate(interventions):
            log = SampleLog(out / "samples" / _shard_name(names[(i, j)], shard))
            check = functools.partial(_check_unchanged, ispec, hashes[j])
            cell = CellRun(ispec.label, interv, names[(i, j)], log, check)
            cell.records = BatchRecords(log.path)
            cells.append(cell)
        if order == "cell":
            for cell in cells:
                run_cell(task, docs, cell, adapter, spec, f"{tspec.name} × {cell.label}", shard)
        else:
            first = ready.pop(id(task), {})
            run_task(
                task,
                docs,
                cells,
                adapter,
                spec,
                shard,
                tspec.name,
                first,
                check_vision_reuse,
                prefetch,
            )
        for (ispec, _), cell in zip(interventions, cells, strict=True):
            entry = _entry(tspec, task, ispec, cell, docs, adapter, spec, before, out, shard)
            if entry is not None:
                entries.append(entry)
        if rank == 0:  # once per task: its cells finish together (sample-major)
            _save(out, spec, provenance, metric_defs, entries, adapter, status="partial")
    from harness.run import distributed as dist

    dist.barrier()
    if rank != 0:
        return None
    return _save(out, spec, provenance, metric_defs, entries, adapter, status="complete")


def _entry(
    tspec: TaskSpec,
    task: Task,
    ispec: Any,
    cell: CellRun,
    docs: Sequence[Any],
    adapter: Any,
    spec: RunSpec,
    before: dict[str, dict[str, Any]],
    out: Path,
    shard: tuple[int, int],
) -> ResultEntry | None:
    """The cell's results entry (rank 0; other ranks send their rows and get None)."""
    from harness.run import distributed as dist

    fname = cell.fname
    records = cell.records.read() if cell.records is not None else []
    if shard[1] > 1:  # every process's batches (None on the other ranks)
        records = dist.gather_rows(records)
    if shard[0] == 0:
        resolved = cell_record(cell, records or [], docs, adapter, before.get(f"samples/{fname}"))
        save_resolved(out, f"samples/{fname}", resolved)
    rows = cell.log.read()
    if shard[1] > 1:
        rows = dist.gather_rows(rows)
        if rows is None:
            return None
        _write_merged_log(out / "samples" / fname, docs, rows)
    summary = _summarise(task, docs, rows, spec.predict_only)
    for warning in summary["warnings"]:
        print(f"headscope: warning: {tspec.name} / {ispec.label}: {warning}", file=sys.stderr)
    return ResultEntry(
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
