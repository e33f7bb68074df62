"""``headscope rank``: rank heads by Retrieval Attention Mass on grounded tasks.

Example::

    headscope rank --model qwen2_5_vl --model-args '{"dtype": "bfloat16", "device": "cuda"}'
        --tasks refcocog,vidstg,mmlongbench_doc,mmdocir --limit 200 --output out/rank

(one command line)

writes ``out/rank/ranking.json`` (read by ``ablate`` / ``hybrid`` via ``ranking=...``),
``out/rank/spearman.json`` and ``out/rank/heatmaps/*.png``. Light at import: argparse only.
"""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli._probe_args import add_common_arguments

__all__ = ["add_arguments", "run", "format_report"]

_DEFAULT_TASKS = "refcocog_mini,vidstg_mini,mmlongbench_mini,mmdocir_mini"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``rank`` flags."""
    add_common_arguments(parser, _DEFAULT_TASKS, "headscope_rank")
    parser.add_argument(
        "--top-k",
        type=float,
        default=0.05,
        help="top heads per task: a count (e.g. 30) or a fraction of all heads (default 0.05)",
    )
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates")


def run(args: argparse.Namespace) -> int:
    """Probe, write the ranking and the cross-task report, print the summary."""
    import sys

    from harness.cli._probe_args import load_model, task_specs_from_args
    from harness.probes.rank import run_rank
    from harness.probes.record import ProbeError
    from harness.api.task import TaskLoadError, build_task

    tspecs = task_specs_from_args(args)
    for spec in tspecs:  # unknown names / arguments: usage errors before the model loads
        build_task(spec.name, spec.args)
    adapter = load_model(args)
    try:
        report = run_rank(
            adapter,
            tspecs,
            args.output,
            seed=args.seed,
            top_k=args.top_k,
            n_boot=args.n_boot,
            progress=not args.no_progress,
            plots=not args.no_plots,
        )
    except (ProbeError, TaskLoadError) as exc:
        print(f"headscope rank: {exc}", file=sys.stderr)
        return 1
    print(format_report(report))
    print()
    for path in report.files:
        print(f"wrote {path}")
    return 0


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def format_report(report: Any) -> str:
    """Terminal summary: Spearman table, universal heads, layer distribution, skips."""
    from tabulate import tabulate

    cross = report.cross
    names = cross["tasks"]
    lookup = {}
    for p in cross["spearman"]:
        cell = f"{_fmt(p['rho'])} [{_fmt(p['ci_low'])}, {_fmt(p['ci_high'])}]"
        lookup[(p["a"], p["b"])] = lookup[(p["b"], p["a"])] = cell
    rows = [[a, *("1" if a == b else lookup[(a, b)] for b in names)] for a in names]
    parts = [
        f"Spearman ρ of mean RAM [95% bootstrap CI] (n = {cross['n_samples']})",
        tabulate(rows, headers=["", *names]) if len(names) > 1 else "(one task: no pairs)",
        "",
        f"universal heads (top-{cross['top_k']} = {cross['top_k_count']} heads in every task): "
        + (", ".join(cross["universal_heads"]) or "none"),
        "",
        "layer distribution of the top heads:",
        tabulate(
            [[n, *counts] for n, counts in cross["layer_distribution"].items()],
            headers=["", *(f"L{i}" for i in range(report.ranking.num_layers))],
        ),
    ]
    skips = {n: len(v) for n, v in report.skipped.items() if v}
    if skips:
        parts += ["", "skipped samples: " + ", ".join(f"{n}: {k}" for n, k in skips.items())]
        for name, rows_ in report.skipped.items():
            reasons = sorted({r["reason"] for r in rows_})
            if reasons:
                parts.append(f"  {name}: " + "; ".join(reasons[:3]))
    return "\n".join(parts)
