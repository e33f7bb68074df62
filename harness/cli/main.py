"""The ``headscope`` command line.

Subcommands: ``list``, ``run``, and the ones living in their own modules
(``rank``, ``diagnose``, ``bench``, ``leaderboard``), each loaded only when used.
Usage errors (unknown names, malformed run files, bad arguments) print one clear
message and exit with code 2; a run that fails midway exits with code 1 and can
be resumed by rerunning the same command.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any

__all__ = ["main", "build_parser", "USAGE_ERRORS"]

# Subcommands implemented elsewhere: name -> (module, help). Each module provides
# ``add_arguments(parser)`` and ``run(args) -> int``.
EXTERNAL_COMMANDS: dict[str, tuple[str, str]] = {
    "rank": ("harness.cli.rank", "rank heads by Retrieval Attention Mass (CoRe heads)"),
    "diagnose": ("harness.cli.diagnose", "eRank / RID / MixIG / TME module diagnostics"),
    "bench": ("harness.cli.bench", "benchmarks: 'bench hybrid' (prefill speed), 'bench ram'"),
    "leaderboard": ("leaderboards.cli", "merge results directories into leaderboards"),
}


def _usage_errors() -> tuple[type[BaseException], ...]:
    from harness.api.intervention import InterventionError
    from harness.api.registry import RegistryError
    from harness.schema.results import ResultsError
    from harness.api.specs import SpecError

    return (
        SpecError,
        RegistryError,
        InterventionError,
        ResultsError,
        ValueError,
        FileNotFoundError,
    )


USAGE_ERRORS = _usage_errors


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
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


def build_parser() -> argparse.ArgumentParser:
    """The top-level argument parser."""
    parser = argparse.ArgumentParser(
        prog="headscope",
        description="Head-level mechanistic interventions on multimodal LLMs.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p_list = sub.add_parser("list", help="list registered tasks, models or interventions")
    p_list.add_argument("kind", choices=["tasks", "models", "interventions"])
    p_run = sub.add_parser(
        "run",
        help="evaluate a model × tasks × interventions grid (no arguments: the main job)",
    )
    _add_run_arguments(p_run)
    for name, (module, help_text) in EXTERNAL_COMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(_external=module)
        try:
            importlib.import_module(module).add_arguments(p)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise
            p.set_defaults(_missing=f"'{name}' is not available in this installation")
    return parser


def _cmd_list(args: argparse.Namespace) -> int:
    from harness.api.registry import INTERVENTIONS, MODEL_FAMILIES, TASKS

    registry = {"tasks": TASKS, "models": MODEL_FAMILIES, "interventions": INTERVENTIONS}[args.kind]
    for name in registry.names():
        obj = registry.get(name)
        doc = (obj.__doc__ or "").strip().splitlines()
        print(f"{name:24s} {doc[0] if doc else ''}")
    return 0


def check_task_args(task_args: Any, names: list[str]) -> dict[str, dict[str, Any]]:
    """Validate ``--task-args``: a JSON object mapping task names (of this run) to objects."""
    from harness.api.specs import SpecError

    if not isinstance(task_args, dict) or not all(isinstance(v, dict) for v in task_args.values()):
        raise SpecError('--task-args must be a JSON object like {"task": {"arg": value}}')
    unknown = sorted(set(task_args) - set(names))
    if unknown:
        raise SpecError(f"--task-args names task(s) {unknown} that are not in --tasks {names}")
    return task_args


def spec_from_args(args: argparse.Namespace) -> Any:
    """Build a RunSpec from a run file (if any) overridden by flags."""
    from dataclasses import asdict

    from harness.api.specs import (
        InterventionSpec,
        ModelSpec,
        RunSpec,
        SpecError,
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


def _cmd_run(args: argparse.Namespace) -> int:
    from harness.run.evaluator import run_grid

    if not args.tasks and not args.config:
        from harness.run.main_job import main_job

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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``headscope`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if getattr(args, "_missing", None):
            raise ValueError(args._missing)
        if args.command == "list":
            return _cmd_list(args)
        if args.command == "run":
            return _cmd_run(args)
        return int(importlib.import_module(args._external).run(args) or 0)
    except _usage_errors() as exc:
        print(f"headscope: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("headscope: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    except Exception as exc:
        from harness.run.evaluator import EvaluationError

        if isinstance(exc, EvaluationError):
            print(f"headscope: run failed: {exc}", file=sys.stderr)
            print("rerun the same command to resume", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
