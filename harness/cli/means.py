"""``headscope means``: per-head mean outputs over a reference set, for ``ablate:mode=mean``.

Example::

    headscope means --model qwen2_5_vl --model-args '{"dtype": "bfloat16", "device": "cuda"}'
        --tasks pope --limit 200 --output means/qwen25_pope.pt

(one command line) writes the ``[L, H, head_dim]`` means over every real token of the tasks'
prompts (with their media), and what they were measured on, for
``--interventions 'ablate:...,mode=mean,mean_reference=means/qwen25_pope.pt'``.
Light at import: argparse only.
"""

from __future__ import annotations

import argparse

from harness.api.helpformat import add_logging_arguments

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``means`` flags."""
    from harness.api.helpformat import add_threads_argument
    from harness.cli._args import limit_value
    from harness.cli._probe_args import add_task_args_argument

    parser.add_argument("--model", default=None, help="model family (default: toy)")
    parser.add_argument(
        "--model-args",
        "--model_args",
        dest="model_args",
        default=None,
        help="JSON object or key=value,key=value (as for 'headscope run')",
    )
    parser.add_argument("--device", default=None, help="cpu, cuda or cuda:N")
    parser.add_argument(
        "--tasks",
        required=True,
        help="the reference set: comma-separated task names or JSON task objects",
    )
    add_task_args_argument(parser)
    parser.add_argument(
        "--limit", type=limit_value, default=None, help="documents per task: a count or a fraction"
    )
    parser.add_argument(
        "--batch-size",
        "--batch_size",
        dest="batch_size",
        type=int,
        default=1,
        metavar="N",
        help="requests per forward pass",
    )
    add_threads_argument(parser)
    parser.add_argument(
        "--output",
        "--output_path",
        "--output-path",
        dest="output",
        required=True,
        metavar="FILE",
        help="the mean reference: a .pt or .npz file",
    )
    add_logging_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Measure the means, write the file, print where it went."""
    from harness.api.errors import UsageError
    from harness.api.task import build_task
    from harness.cli._probe_args import load_model, task_specs_from_args
    from harness.probes.means import check_means_path, save_head_means, task_head_means
    from harness.schema.writes import check_writable

    if args.batch_size < 1:
        raise UsageError(f"--batch-size must be ≥ 1, got {args.batch_size}")
    target = check_means_path(args.output)
    check_writable(target.parent, "--output folder")
    tspecs = task_specs_from_args(args)
    for spec in tspecs:  # unknown names / arguments: usage errors before the model loads
        build_task(spec.name, spec.args)
    adapter = load_model(args)
    means, reference = task_head_means(adapter, tspecs, args.batch_size)
    save_head_means(target, means, reference)
    print(
        f"wrote {target}: {tuple(means.shape)} per-head means over "
        f"{reference['n_tokens']} tokens of {reference['n_docs']} documents"
    )
    return 0
