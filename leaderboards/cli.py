"""``headscope leaderboard RESULTS_DIR... [--format md,csv,json,latex] [--output DIR]``.

Loads every headscope output under the given paths (see :mod:`leaderboards.sources`), builds
the tables the inputs allow, prints their terminal form, and with ``--output`` writes each
table as ``DIR/<table>.<ext>`` per format (plus ``DIR/leaderboard.md`` joining the headline
tables when Markdown is written) and the figures as ``DIR/figures/*.png`` and ``*.pdf``
when matplotlib is installed. Detail tables (``accuracy_draws``: every random draw) are
written to their own files only, never printed nor joined into ``leaderboard.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.api.errors import UsageError
from harness.api.helpformat import add_logging_arguments, add_output_argument
from leaderboards.formatting import FORMATS, Table, render, to_markdown
from leaderboards.sources import Sources, load_sources

__all__ = ["add_arguments", "run", "build_tables", "write_tables", "parse_formats"]

DEFAULT_FORMATS = "md,csv,json,latex"


def parse_formats(values: Sequence[str]) -> list[str]:
    """Split ``["md,csv", "latex"]`` into known format names (order kept, no repeats)."""
    out: list[str] = []
    for value in values:
        for name in value.split(","):
            name = name.strip().lower()
            name = {"markdown": "md", "tex": "latex"}.get(name, name)
            if not name:
                continue
            if name not in FORMATS:
                raise UsageError(f"unknown format {name!r}; choose from {sorted(FORMATS)}")
            if name not in out:
                out.append(name)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of the ``leaderboard`` subcommand."""
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="RESULTS_DIR",
        help="run directories, results/ranking/bench/diagnose JSON files, or folders of runs",
    )
    parser.add_argument(
        "--format",
        action="append",
        default=None,
        help=f"output forms, comma-separated or repeated: {', '.join(FORMATS)} "
        f"(default: {DEFAULT_FORMATS})",
    )
    add_output_argument(
        parser, None, "directory for tables and figures (default: print the tables only)"
    )
    parser.add_argument(
        "--all-metrics", action="store_true", help="every metric of a task, not only its first"
    )
    parser.add_argument(
        "--universal-k",
        type=float,
        default=0.05,
        help="top-k (count or fraction) used for universal heads (default 0.05)",
    )
    parser.add_argument(
        "--n-boot", type=int, default=1000, help="bootstrap replicates of Spearman CIs"
    )
    parser.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    parser.add_argument("--quiet", action="store_true", help="do not print the tables")
    add_logging_arguments(parser)


def build_tables(
    sources: Sources, all_metrics: bool = False, universal_k: float = 0.05, n_boot: int = 1000
) -> list[Table]:
    """Every table the loaded inputs allow, in a fixed order.

    Args:
        sources: From :func:`leaderboards.sources.load_sources`.
        all_metrics: Accuracy rows for every declared metric, not only the primary one.
        universal_k: Top-k of the universal-heads table.
        n_boot: Bootstrap replicates of the Spearman CIs.
    """
    from leaderboards import accuracy, diagnostics, profiles, spearman, speedup

    tables: list[Table] = []
    if sources.runs:
        tables.append(accuracy.accuracy_summary_table(sources.runs))
        tables.append(accuracy.accuracy_table(sources.runs, all_metrics=all_metrics))
        draws = accuracy.accuracy_draws_table(sources.runs, all_metrics=all_metrics)
        if draws.rows:
            tables.append(draws)
    if sources.bench_hybrid:
        tables.append(speedup.speedup_table(sources.bench_hybrid, sources.runs))
    if sources.bench_ram:
        tables.append(speedup.memory_table(sources.bench_ram))
    if sources.rankings:
        tables.append(spearman.spearman_table(sources.rankings, n_boot=n_boot))
        tables.append(spearman.universal_table(sources.rankings, k=universal_k))
        tables += profiles.sparsity_tables(sources.rankings, n_boot=n_boot)
    if sources.diagnostics:
        tables.append(diagnostics.diagnostics_summary_table(sources.diagnostics))
        tables.append(diagnostics.diagnostics_table(sources.diagnostics))
    return tables


def write_tables(
    tables: Sequence[Table], out_dir: str | Path, formats: Sequence[str]
) -> list[Path]:
    """Write each table in each format; returns the files written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        for table in tables:
            path = out / f"{table.name}.{FORMATS[fmt]}"
            path.write_text(render(table, fmt), encoding="utf-8")
            written.append(path)
        if fmt == "md":
            heads = [to_markdown(t, heading_level=2) for t in tables if not t.detail]
            parts = ["# Leaderboard", "", *heads]
            path = out / "leaderboard.md"
            path.write_text("\n".join(parts), encoding="utf-8")
            written.append(path)
    return written


def run(args: argparse.Namespace) -> int:
    """Run ``headscope leaderboard``; returns the exit code."""
    formats = parse_formats(args.format or [DEFAULT_FORMATS])
    if args.n_boot < 1:
        raise UsageError(f"--n-boot must be ≥ 1, got {args.n_boot}")
    if args.output is not None:
        from harness.run.outdir import check_writable

        check_writable(args.output, "--output")
    sources = load_sources(args.inputs)
    for warning in sources.warnings:
        print(f"headscope: warning: {warning}", file=sys.stderr)
    tables = build_tables(sources, args.all_metrics, args.universal_k, args.n_boot)
    if not args.quiet:
        print("\n".join(render(t, "terminal") for t in tables if not t.detail))
    if args.output is None:
        return 0
    written = write_tables(tables, args.output, formats)
    if not args.no_figures:
        from leaderboards.figures import PlotUnavailableError, write_figures

        try:
            written += write_figures(sources, Path(args.output) / "figures")
        except PlotUnavailableError as exc:
            print(f"headscope: note: {exc}; tables were written", file=sys.stderr)
    print(f"wrote {len(written)} files to {args.output}", file=sys.stderr)
    return 0
