"""Arguments shared by ``headscope rank`` and ``headscope diagnose`` (argparse only at import)."""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["add_common_arguments", "model_spec_from_args", "task_specs_from_args", "load_model"]


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
        type=json.loads,
        default=None,
        help='JSON object, e.g. \'{"pretrained": "Qwen/Qwen2.5-VL-7B-Instruct", '
        '"dtype": "bfloat16"}\'',
    )
    parser.add_argument(
        "--tasks",
        default=default_tasks,
        help="comma-separated task names or JSON task objects (default: "
        + (default_tasks or "the grounded mini tasks")
        + ")",
    )
    parser.add_argument("--limit", type=int, default=None, help="samples per task")
    parser.add_argument("--seed", type=int, default=0, help="seed (bootstrap, generation)")
    parser.add_argument("--output", default=default_output, help="output directory")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG figures")


def model_spec_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~harness.api.specs.ModelSpec` named by ``--model`` / ``--model-args``."""
    from harness.api.specs import ModelSpec, SpecError

    data: dict[str, Any] = {"name": args.model} if args.model else {}
    if args.model_args is not None:
        if not isinstance(args.model_args, dict):
            raise SpecError("--model-args must be a JSON object")
        data.update(args.model_args)
    return ModelSpec.from_dict(data, "--model-args")


def task_specs_from_args(args: argparse.Namespace) -> list[Any]:
    """Task specs from ``--tasks`` with ``--limit`` applied.

    Tasks are split on commas outside JSON objects, so ``{"name": ..., "args": {...}}`` works.
    """
    from dataclasses import replace

    from harness.api.specs import SpecError, parse_task

    text = args.tasks
    if text is None:  # the grounded mini tasks, in the toy's order
        from harness.api.registry import TASKS
        from harness.run.main_job import mini_tasks

        text = ",".join(n for n in mini_tasks() if TASKS.get(n).grounded)
    items, depth, current = [], 0, ""
    for char in text:
        depth += char == "{"
        depth -= char == "}"
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    specs = [parse_task(item) for item in items if item.strip()]
    if not specs:
        raise SpecError("--tasks names no task")
    if args.limit is not None:
        specs = [replace(s, limit=args.limit) for s in specs]
    return specs


def load_model(args: argparse.Namespace) -> Any:
    """Validate the names, then load the adapter (the slow part comes last)."""
    from harness.api import model as base
    from harness.api.registry import MODEL_FAMILIES

    spec = model_spec_from_args(args)
    MODEL_FAMILIES.get(spec.name)  # unknown family: a usage error before any loading
    return base.load_adapter(spec)
