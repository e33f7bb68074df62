"""Arguments shared by ``headscope rank`` and ``headscope diagnose`` (argparse only at import)."""

from __future__ import annotations

import argparse
from typing import Any

from harness.api.helpformat import (
    add_logging_arguments,
    add_output_argument,
    add_threads_argument,
)
from harness.cli._args import add_no_figures_argument, limit_value

__all__ = [
    "add_common_arguments",
    "add_task_args_argument",
    "load_model",
    "model_spec_from_args",
    "task_args_from_text",
    "task_specs_from_args",
]


def add_common_arguments(
    parser: argparse.ArgumentParser, default_tasks: str | None, default_output: str
) -> None:
    """``--model``, ``--model-args``, ``--tasks``, ``--limit``, ``--seed``, ``--output``...

    ``default_tasks`` None means the grounded mini tasks (resolved from the task registry
    when the command runs, so the list is never written out here).
    """
    parser.add_argument("--model", default=None, help="model family (default: toy)")
    parser.add_argument(
        "--model-args",
        "--model_args",
        dest="model_args",
        default=None,
        help="JSON object or key=value,key=value (as for 'headscope run'), e.g. "
        "pretrained=/ckpt/qwen25vl,dtype=bfloat16",
    )
    parser.add_argument("--device", default=None, help="cpu, cuda or cuda:N")
    parser.add_argument(
        "--tasks",
        default=default_tasks,
        help="comma-separated task names or JSON task objects (default: "
        + (default_tasks or "the grounded mini tasks")
        + ")",
    )
    add_task_args_argument(parser)
    parser.add_argument(
        "--limit", type=limit_value, default=None, help="samples per task: a count or a fraction"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed (bootstrap, generation)")
    add_threads_argument(parser)
    add_output_argument(parser, default_output, "output directory")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_no_figures_argument(parser)
    add_logging_arguments(parser)


def add_task_args_argument(parser: argparse.ArgumentParser) -> None:
    """``--task-args`` / ``--task_args``: per-task arguments, as ``headscope run`` takes them."""
    parser.add_argument(
        "--task-args",
        "--task_args",
        dest="task_args",
        default=None,
        metavar="JSON",
        help="JSON object of per-task arguments, as for 'headscope run', e.g. '{\"refcocog\": "
        '{"data_dir": "data/refcocog"}}\'',
    )


def model_spec_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~harness.api.specs.ModelSpec` of ``--model``, ``--model-args``, ``--device``."""
    from harness.cli.run import model_from_args

    return model_from_args(args)


def task_specs_from_args(args: argparse.Namespace) -> list[Any]:
    """Task specs from ``--tasks`` with ``--limit`` applied.

    Tasks are split on commas outside JSON objects, so ``{"name": ..., "args": {...}}`` works.
    """
    from dataclasses import replace

    from harness.api.specs import SpecError, parse_task

    text = args.tasks
    if text is None:  # the grounded mini tasks, in the toy's order
        from harness.api.task import grounded_tasks
        from harness.run.main_job import mini_tasks

        text = ",".join(grounded_tasks(mini_tasks()))
    from harness.api.kv import split_top_level

    specs = [parse_task(item) for item in split_top_level(text) if item.strip()]
    if not specs:
        raise SpecError("--tasks names no task")
    if getattr(args, "task_args", None) is not None:
        per_task = task_args_from_text(args.task_args, [s.name for s in specs])
        specs = [replace(s, args={**s.args, **per_task.get(s.name, {})}) for s in specs]
    if args.limit is not None:
        specs = [replace(s, limit=args.limit) for s in specs]
    return specs


def task_args_from_text(text: str, names: list[str]) -> dict[str, dict[str, Any]]:
    """``--task-args`` JSON text → ``{task: {arg: value}}`` for the tasks ``names``.

    Raises:
        SpecError: malformed JSON, not an object of objects, or a task not in ``names``.
    """
    import json

    from harness.api.specs import SpecError, check_task_args
    from harness.api.strict_yaml import RunFileError, load_json

    try:
        value = load_json(text)
    except (json.JSONDecodeError, RunFileError) as exc:
        raise SpecError(f"--task-args: malformed JSON ({exc})") from None
    return check_task_args(value, names)


def load_model(args: argparse.Namespace) -> Any:
    """Validate the names, then load the adapter (the slow part comes last)."""
    from harness.api import model as base
    from harness.api.registry import MODEL_FAMILIES

    spec = model_spec_from_args(args)
    MODEL_FAMILIES.get(spec.name)  # unknown family: a usage error before any loading
    return base.load_adapter(spec)
