"""``headscope diagnose``: eRank / ΔS / ΔD / RID / TME / MixIG per layer and module (paper B).

Example::

    headscope diagnose --model qwen2_5_vl --tasks refcocog --limit 32 --output out/diag

writes ``out/diag/diagnostics_paper.json`` and ``out/diag/diagnostics_code.json`` (the
``headscope.diagnostics`` schema of :mod:`harness.schema.diagnostics`, read by ``headscope
leaderboard``) and
``out/diag/plots/diagnostics_<variant>.png``. Light at import: argparse only.
"""

from __future__ import annotations

import argparse

from harness.api.errors import UsageError
from harness.cli._probe_args import add_common_arguments

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``diagnose`` flags."""
    add_common_arguments(parser, "refcocog_mini", "headscope_diagnose")
    parser.set_defaults(limit=8)
    parser.add_argument("--energy", type=float, default=0.99, help="subspace energy threshold")
    parser.add_argument(
        "--baselines",
        default="noise_delta,noise_qkv",
        help="comma-separated stochastic baselines ('' for none)",
    )
    parser.add_argument(
        "--baseline-layers",
        default="each",
        help="'each' (one noised layer per forward, clean input; default) or the "
        "interventions' layers spec for one noised forward ('all', '0-3', ...)",
    )
    parser.add_argument("--no-erope", action="store_true", help="skip the ε_RoPE floor")
    parser.add_argument(
        "--no-key-region", action="store_true", help="skip the key-region degree ratio"
    )
    parser.add_argument(
        "--no-generate",
        action="store_true",
        help="do not generate/score answers (key-region ratio without the correct/wrong split)",
    )
    parser.add_argument(
        "--scoring",
        default=None,
        metavar="MODE",
        help="scoring mode of the answers (the correct/wrong split): official, lmms_eval or "
        "lenient; a JSON task object's own 'scoring' wins, a task without MODE is refused "
        "before the model loads; not with --no-generate",
    )
    parser.add_argument(
        "--correct-threshold",
        type=float,
        default=0.5,
        help="an answer is correct when the task's first metric reaches this (default 0.5)",
    )


def run(args: argparse.Namespace) -> int:
    """Diagnose, write the files, print the table."""
    import sys

    from harness.api.registry import INTERVENTIONS
    from harness.api.task import build_task
    from harness.cli._probe_args import load_model, task_specs_from_args
    from harness.probes.diagnose_run import run_diagnose, table
    from harness.probes.record import ProbeError
    from harness.schema.writes import OutputLock, check_writable

    if not 0 < args.energy <= 1:
        raise UsageError(f"--energy must be in (0, 1], got {args.energy}", hint="e.g. 0.99")
    tspecs = task_specs_from_args(args)
    if args.scoring is not None:
        from dataclasses import replace

        from harness.cli._args import apply_scoring

        if args.no_generate:
            raise UsageError("--scoring: nothing is scored under --no-generate; drop one")
        new = apply_scoring(args.scoring, [(s.name, dict(s.args)) for s in tspecs])
        tspecs = [replace(s, args=a) for s, a in zip(tspecs, new, strict=True)]
    for spec in tspecs:
        build_task(spec.name, spec.args)
    baselines = tuple(b.strip() for b in args.baselines.split(",") if b.strip())
    for name in baselines:
        INTERVENTIONS.get(name)  # unknown baseline: usage error before loading the model
    check_writable(args.output)
    adapter = load_model(args)
    try:
        with OutputLock(args.output, "diagnose output directory"):  # one diagnose per directory
            report = run_diagnose(
                adapter,
                tspecs,
                args.output,
                seed=args.seed,
                energy=args.energy,
                baselines=baselines,
                baseline_layers=args.baseline_layers,
                erope=not args.no_erope,
                key_region=not args.no_key_region,
                generate=not args.no_generate,
                threshold=args.correct_threshold,
                progress=not args.no_progress,
                plots=not args.no_figures,
            )
    except ProbeError as exc:  # a TaskLoadError is a usage error: exit 2
        print(f"headscope diagnose: {exc}", file=sys.stderr)
        return 1
    print(table(report.docs))
    if report.skipped:
        print(f"\nskipped: {len(report.skipped)} (" + "; ".join(
            sorted({s["reason"] for s in report.skipped})[:3]) + ")")  # fmt: skip
    print()
    for path in report.files:
        print(f"wrote {path}")
    return 0
