"""Harness overhead: ``run_grid`` against a bare processor + generate loop on the toy.

    python scripts/bench_overhead.py [--batch 1,16] [--docs 32] [--repeats 3] [--json OUT]

Both sides load the toy untimed, then time the same work on the same documents (the eight
mini tasks' first ``--docs`` documents each, greedy, each request's own token budget):

- ``bare``: build the task and its documents, then per batch ``task.request`` (the
  scene image), the chat template + processor (``adapter.prepare``), ``model.generate``
  and decoding the new tokens. Nothing scored, nothing written.
- ``harness``: ``run_grid`` with the baseline cell into a fresh directory (checks, the
  preflight request, sample logs, scoring, results file, provenance).

Variants run interleaved in fresh processes (:mod:`harness.bench.interleave`); the ratio is
harness / bare per round, median and spread, of wall time and of the process's CPU time
(which the load of a shared machine moves less; it leaves out waiting on the disk).
``--profile`` runs the harness side once in
this process under cProfile and prints where its time goes beyond the bare loop's calls.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _setup(docs: int) -> tuple[Any, list[Any]]:
    from harness.api.model import load_adapter
    from harness.api.specs import ModelSpec
    from harness.run.protocol import mini_tasks, task_spec

    adapter = load_adapter(ModelSpec(name="toy"))
    return adapter, [task_spec(t, docs) for t in mini_tasks()]


def bare(adapter: Any, tspecs: list[Any], batch: int) -> int:
    """The bare loop; returns the number of generations."""
    import torch

    from harness.api.task import build_task

    model, tok = adapter.model, adapter.tokenizer
    eos = model.generation_config.eos_token_id
    pad = model.generation_config.pad_token_id
    n = 0
    for tspec in tspecs:
        task = build_task(tspec.name, tspec.args)
        docs = tspec.take(task.load(split=tspec.split, limit=tspec.load_limit))
        for start in range(0, len(docs), batch):
            reqs = [task.request(d) for d in docs[start : start + batch]]
            inputs = adapter.prepare(reqs)
            with torch.inference_mode():
                out = model.generate(
                    **inputs,
                    max_new_tokens=max(r.max_new_tokens for r in reqs),
                    do_sample=False,
                    pad_token_id=pad if pad is not None else tok.pad_token_id,
                    eos_token_id=eos if eos is not None else tok.eos_token_id,
                )
            tok.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
            n += len(reqs)
    return n


def harness(adapter: Any, tspecs: list[Any], batch: int, out: Path) -> int:
    """``run_grid`` with the baseline cell; returns the number of scored samples."""
    from harness.api.specs import InterventionSpec, ModelSpec, RunSpec
    from harness.run.evaluator import run_grid

    spec = RunSpec(
        model=ModelSpec(name="toy"),
        tasks=tuple(tspecs),
        interventions=(InterventionSpec("none"),),
        batch_size=batch,
        output=str(out),
    )
    results = run_grid(spec, adapter)
    return sum(e.n_samples for e in results.entries)


def worker(kind: str, batch: int, docs: int) -> dict[str, Any]:
    """One timed run of ``kind`` (a fresh process each)."""
    adapter, tspecs = _setup(docs)
    work = Path(tempfile.mkdtemp(prefix="bench_overhead_"))
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        if kind == "bare":
            n = bare(adapter, tspecs, batch)
        else:
            n = harness(adapter, tspecs, batch, work / "out")
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "kind": kind,
        "batch": batch,
        "docs": n,
        "wall_s": round(wall, 4),
        "cpu_s": round(cpu, 4),
    }


def profile(batch: int, docs: int, top: int) -> None:
    """cProfile of one harness run (after a warm-up run), cumulative time."""
    import cProfile
    import pstats

    adapter, tspecs = _setup(docs)
    work = Path(tempfile.mkdtemp(prefix="bench_overhead_"))
    try:
        harness(adapter, tspecs, batch, work / "warm")
        prof = cProfile.Profile()
        prof.enable()
        harness(adapter, tspecs, batch, work / "out")
        prof.disable()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", default="1,16", help="batch sizes, comma-separated")
    p.add_argument("--docs", type=int, default=32, help="documents per mini task")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None, help="write the results here")
    p.add_argument("--worker", choices=("bare", "harness"), help=argparse.SUPPRESS)
    p.add_argument("--profile", action="store_true", help="cProfile one harness run instead")
    args = p.parse_args(argv)
    batches = [int(b) for b in args.batch.split(",")]
    if args.worker:
        print(json.dumps(worker(args.worker, batches[0], args.docs)))
        return 0
    if args.profile:
        profile(batches[0], args.docs, 40)
        return 0
    from harness.bench.interleave import paired_ratio, python_worker, run_interleaved, summary_line

    results = []
    for b in batches:
        common = ("--batch", str(b), "--docs", str(args.docs))
        runs = run_interleaved(
            {k: python_worker(__file__, "--worker", k, *common) for k in ("harness", "bare")},
            repeats=args.repeats,
        )
        label = f"toy, 8 mini tasks x {args.docs} docs, batch {b}"
        wall = paired_ratio(runs, "harness", "bare", "wall_s")
        cpu = paired_ratio(runs, "harness", "bare", "cpu_s")
        print(summary_line(f"{label}, wall", wall, "harness", "bare"))
        print(summary_line(f"{label}, CPU time", cpu, "harness", "bare"))
        results.append(
            {"batch": b, "docs_per_task": args.docs, "wall": wall, "cpu": cpu, "runs": runs}
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
