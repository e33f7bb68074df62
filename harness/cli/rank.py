"""``headscope rank``: rank heads by Retrieval Attention Mass on grounded tasks.

Example::

    headscope rank --model qwen2_5_vl --model-args '{"dtype": "bfloat16", "device": "cuda"}'
        --tasks refcocog,vidstg,mmlongbench_doc,mmdocir --limit 200 --output out/rank

(one command line)

writes ``out/rank/ranking.json`` (read by ``ablate`` / ``hybrid`` via ``ranking=...``),
``out/rank/spearman.json``, ``out/rank/heatmaps/*.png`` (+ ``.pdf``) and, unless ``--maps 0``,
the attention maps ``out/rank/maps.json`` + ``maps.npz`` + ``maps/media/``
(:mod:`harness.schema.maps`). Light at import: argparse only.
"""

from __future__ import annotations

import argparse

from harness.cli._args import add_maps_arguments
from harness.cli._probe_args import add_common_arguments

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``rank`` flags."""
    add_common_arguments(parser, None, "headscope_rank")
    parser.add_argument(
        "--top-k",
        type=float,
        default=0.05,
        help="top heads per task: a count (e.g. 30) or a fraction of all heads (default 0.05)",
    )
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates")
    parser.add_argument(
        "--skip-bad-docs",
        "--skip_bad_docs",
        dest="skip_bad_docs",
        action="store_true",
        help="count and skip malformed rows and unreadable media (default: stop, naming them)",
    )
    add_maps_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Probe, write the ranking and the cross-task report, print the summary."""
    import sys
    from pathlib import Path

    from harness.api.errors import UsageError
    from harness.api.model import NoHeadsError
    from harness.api.task import build_task
    from harness.cli._args import maps_config_from_args
    from harness.cli._probe_args import load_model, task_specs_from_args
    from harness.probes.maps import check_maps_support, maps_unsupported, supports_maps
    from harness.probes.rank import format_report, run_rank
    from harness.probes.record import ProbeError
    from harness.run.outdir import check_rank_dir
    from harness.schema.writes import OutputLock

    if args.n_boot < 1:
        raise UsageError(f"--n-boot must be ≥ 1, got {args.n_boot}")
    if args.top_k < 0 or (args.top_k >= 1 and args.top_k != int(args.top_k)):
        raise UsageError(
            f"--top-k must be a whole count or a fraction in (0, 1), got {args.top_k}",
            hint="e.g. --top-k 30 or --top-k 0.05",
        )
    tspecs = task_specs_from_args(args)
    for spec in tspecs:  # unknown names / arguments: usage errors before the model loads
        build_task(spec.name, spec.args)
    check_rank_dir(Path(args.output))  # a grid run's or main job's directory is refused
    maps = maps_config_from_args(args)  # flags that choose no head: refused before loading
    adapter = load_model(args)
    if maps is not None and not supports_maps(adapter):
        if args.maps is not None:  # asked for: refused before probing
            check_maps_support(adapter)
        print(f"note: no attention maps: {maps_unsupported(adapter)}", file=sys.stderr)
        maps = None
    try:
        geometry = adapter.geometry
    except (AttributeError, NoHeadsError):  # a stand-in without one (tests), a rule-based model
        geometry = None
    if geometry is not None and geometry.attention_layers is not None:
        without = sorted(set(range(geometry.num_layers)) - set(geometry.attention_layers))
        raise UsageError(
            f"rank: decoder layers {without} have no attention heads (linear-attention, conv "
            "or MoE layers); ranking files hold RAM for every layer × head, so rank does not "
            "support this decoder yet",
            hint="rank a decoder whose every layer is an attention layer",
        )
    if geometry is not None:  # more heads than the model has: refused before probing
        try:
            geometry.count(args.top_k)
        except UsageError as exc:
            raise UsageError(f"--top-k: {exc}") from None
    try:
        with OutputLock(args.output, "rank output directory"):  # one rank per directory
            report = run_rank(
                adapter,
                tspecs,
                args.output,
                seed=args.seed,
                top_k=args.top_k,
                n_boot=args.n_boot,
                progress=not args.no_progress,
                plots=not args.no_figures,
                skip_bad_docs=args.skip_bad_docs,
                maps=maps,
            )
    except ProbeError as exc:  # a TaskLoadError is a usage error: exit 2
        print(f"headscope rank: {exc}", file=sys.stderr)
        return 1
    print(format_report(report))
    print()
    for path in report.files:
        print(f"wrote {path}")
    return 0
