"""``headscope run``: its flags, the run spec they build, and the main-job entry.

Without ``--tasks`` / ``--config`` it runs the main job (:mod:`harness.run.main_job`);
otherwise it evaluates the model × tasks × interventions grid with
:func:`harness.run.evaluator.run_grid`. Light at import: argparse and json only.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

__all__ = ["add_arguments", "main_job", "run", "spec_from_args"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``headscope run``."""
    p.add_argument("--model", help="model family (default: toy, the bundled model)")
    p.add_argument(
        "--model-args",
        type=json.loads,
        default=None,
        help='JSON object, e.g. \'{"pretrained": "Qwen/Qwen2.5-VL-7B-Instruct", '
        '"dtype": "bfloat16"}\'',
    )
    p.add_argument("--tasks", help="comma-separated task names (see 'headscope list tasks')")
    p.add_argument(
        "--interventions",
        action="append",
        default=None,
        help="repeatable: 'none', 'ablate:select=top,k=0.05,mode=zero' or a JSON object",
    )
    p.add_argument(
        "--task-args",
        type=json.loads,
        default=None,
        help='JSON object of per-task variant arguments, e.g. \'{"vidstg": {"annotation_dir": '
        '"data/vidstg", "video_root": "data/vidor"}, "pope": {"subset": "adversarial"}}\'',
    )
    p.add_argument("--limit", type=int, default=None, help="documents per task")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--output", default=None, help="output directory")
    p.add_argument("--config", default=None, help="YAML/JSON run file (flags override it)")
    p.add_argument(
        "--skip-bad-docs",
        action="store_true",
        default=None,
        help="count and skip samples whose media cannot be read",
    )


def spec_from_args(args: argparse.Namespace) -> Any:
    """Build a RunSpec from a run file (if any) overridden by flags."""
    from dataclasses import asdict

    from harness.api.specs import (
        InterventionSpec,
        ModelSpec,
        RunSpec,
        SpecError,
        check_task_args,
        load_run_file,
        parse_intervention,
        parse_task,
    )

    base: dict[str, Any] = {}
    if args.config:
        base = load_run_file(args.config).to_dict()
    if args.model or args.model_args is not None:
        model = dict(base.get("model", {}))
        if args.model:
            model = {"name": args.model}
        if args.model_args is not None:
            if not isinstance(args.model_args, dict):
                raise SpecError("--model-args must be a JSON object")
            model.update(args.model_args)
        base["model"] = asdict(ModelSpec.from_dict(model, "--model-args"))
    if args.tasks:
        base["tasks"] = [asdict(parse_task(t)) for t in args.tasks.split(",") if t.strip()]
    if args.limit is not None:
        base["tasks"] = [{**t, "limit": args.limit} for t in base.get("tasks", [])]
    if args.task_args is not None:
        per_task = check_task_args(args.task_args, [t["name"] for t in base.get("tasks", [])])
        base["tasks"] = [
            {**t, "args": {**t.get("args", {}), **per_task.get(t["name"], {})}}
            for t in base.get("tasks", [])
        ]
    if args.interventions:
        base["interventions"] = [asdict(parse_intervention(x)) for x in args.interventions]
    elif "interventions" not in base:
        base["interventions"] = [asdict(InterventionSpec())]
    for key, flag in (("batch_size", "batch_size"), ("seed", "seed"), ("output", "output")):
        if getattr(args, flag) is not None:
            base[key] = getattr(args, flag)
    if args.skip_bad_docs:
        base["skip_bad_docs"] = True
    return RunSpec.from_dict(base, where="run arguments")


def run(args: argparse.Namespace) -> int:
    """``headscope run``: the main job without interventions / run file, else the grid."""
    from harness.run.evaluator import run_grid

    if not args.tasks and not args.config:
        return main_job(args)
    spec = spec_from_args(args)
    results = run_grid(spec)
    if results is None:  # a non-zero rank of a sharded run: rank 0 reports
        return 0
    _print_summary(results)
    print(f"\nresults: {spec.output}/results.json")
    return 0


def _print_summary(results: Any) -> None:
    from tabulate import tabulate

    rows = []
    for e in results.entries:
        for m in e.metrics:
            value = "n/a" if m.value is None else f"{m.value:.4f}"
            err = "" if m.stderr is None else f"{m.stderr:.4f}"
            rows.append([e.task, e.intervention, m.name, value, err, m.n])
    print(tabulate(rows, headers=["task", "intervention", "metric", "value", "stderr", "n"]))


def main_job(args: argparse.Namespace) -> int:
    """Entry from ``headscope run`` when no interventions/config are given."""
    from harness.api.specs import ModelSpec, SpecError, check_task_args
    from harness.run.main_job import ProtocolConfig, mini_tasks, run_protocol

    if args.interventions:
        raise SpecError(
            "--interventions needs --tasks or --config: without them `headscope run` starts "
            "the main job, which runs its own interventions"
        )
    model: dict[str, Any] = {"name": args.model or "toy"}
    if args.model_args is not None:
        if not isinstance(args.model_args, dict):
            raise SpecError("--model-args must be a JSON object")
        model.update(args.model_args)
    model_spec = ModelSpec.from_dict(model, "--model-args")
    kwargs: dict[str, Any] = {}
    if args.tasks:
        kwargs["tasks"] = tuple(t.strip() for t in args.tasks.split(",") if t.strip())
    if args.limit is not None:
        kwargs.update(n_eval=args.limit, n_rank=args.limit)
    if args.task_args is not None:
        names = list(kwargs.get("tasks") or mini_tasks())
        kwargs["task_args"] = check_task_args(args.task_args, names)
    if args.seed is not None:
        kwargs["seed"] = args.seed
    if args.batch_size is not None:
        kwargs["batch_size"] = args.batch_size
    if args.skip_bad_docs:
        kwargs["skip_bad_docs"] = True
    cfg = ProtocolConfig(**kwargs)
    t0 = time.perf_counter()
    run_protocol(model_spec, cfg, args.output or "headscope_out")
    print(f"main job finished in {time.perf_counter() - t0:.0f} s")
    return 0
