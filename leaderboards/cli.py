"""``headscope leaderboard RESULTS_DIR... [--format md,csv,json,latex] [--output DIR]``.

Loads every headscope output under the given paths (see :mod:`leaderboards.sources`), builds
the tables the inputs allow, prints their terminal form, and with ``--output`` writes each
table as ``DIR/<table>.<ext>`` per format (plus ``DIR/leaderboard.md`` joining the headline
tables when Markdown is written) and the figures as ``DIR/figures/*.png`` and ``*.pdf``
when matplotlib is installed. Detail tables (``accuracy_draws``: every random draw) are
written to their own files only, never printed nor joined into ``leaderboard.md``.

``--output`` must be a directory of its own: one holding another command's files (a run's
``results.json``, a ranking's ``spearman.json``, sample logs, ...) is refused before anything
is read, so that no table overwrites or mixes with them (``D/leaderboards`` is the usual
place). Each table is written atomically (temp file + rename); a full or read-only disk
stops the command with one line naming the file, and a rerun rewrites every table. One
leaderboard writes into a directory at a time: it holds ``.leaderboard.lock`` there (an
``flock``, :class:`harness.schema.writes.OutputLock`) from before it reads its inputs until its
last file is written, and a second one is refused naming the first, writing nothing. Each one
lists what it wrote in ``.leaderboard.json``, and the next one into the same directory removes
the listed files it does not write again: the directory holds the tables of one leaderboard.
``--scoring MODE`` reads each run's ``results.scoring-MODE.json`` (``headscope rescore``)
where there is one, see :mod:`leaderboards.sources`.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.api.errors import UsageError
from harness.api.helpformat import add_logging_arguments, add_output_argument
from harness.schema.writes import LOCK_FILE, OutputLock
from leaderboards.formatting import FORMATS, LEADERBOARD_SCHEMA, Table, to_markdown
from leaderboards.render import render
from leaderboards.settings import MergeError
from leaderboards.sources import OWN_FILES, Sources, classify, load_sources

__all__ = [
    "add_arguments",
    "run",
    "build_tables",
    "write_tables",
    "parse_formats",
    "check_output",
]

DEFAULT_FORMATS = "md,csv,json,latex"
#: The lock file a leaderboard holds in its ``--output`` while it writes (not a run's lock:
#: a stale one left by a killed leaderboard is taken over, not read as another command's).
LOCK_NAME = ".leaderboard.lock"
#: The list of the files a leaderboard wrote into its ``--output`` (the next one removes those
#: it does not write again).
MANIFEST = ".leaderboard.json"


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
        parser,
        None,
        "directory of its own for tables and figures, not a run's (e.g. D/leaderboards; "
        "default: print the tables only)",
    )
    parser.add_argument(
        "--scoring",
        default=None,
        metavar="MODE",
        help="read each run's results.scoring-MODE.json (headscope rescore) where there is "
        "one, and refuse results scored under another mode (default: each run's own "
        "results.json; a run folder that also holds rescored copies is refused)",
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
        "--heads-k",
        type=float,
        default=0.05,
        help="top-k (count or fraction) compared in the head-sets table (default 0.05)",
    )
    parser.add_argument(
        "--n-boot", type=int, default=1000, help="bootstrap replicates of Spearman CIs"
    )
    parser.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    parser.add_argument("--quiet", action="store_true", help="do not print the tables")
    add_logging_arguments(parser)


def build_tables(
    sources: Sources,
    all_metrics: bool = False,
    universal_k: float = 0.05,
    n_boot: int = 1000,
    heads_k: float = 0.05,
) -> list[Table]:
    """Every table the loaded inputs allow, in a fixed order.

    Args:
        sources: From :func:`leaderboards.sources.load_sources`.
        all_metrics: Accuracy rows for every declared metric, not only the primary one.
        universal_k: Top-k of the universal-heads table.
        n_boot: Bootstrap replicates of the Spearman CIs.
        heads_k: Top-k of the head-sets table (drawn when head-set files are given).
    """
    from leaderboards import accuracy, diagnostics, headsets, profiles, spearman, speedup

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
    if sources.bench_decode:
        from leaderboards.decode import decode_table

        tables.append(decode_table(sources.bench_decode))
    if sources.rankings:
        tables.append(spearman.spearman_table(sources.rankings, n_boot=n_boot))
        tables.append(spearman.universal_table(sources.rankings, k=universal_k))
        tables += profiles.sparsity_tables(sources.rankings, n_boot=n_boot)
    if sources.head_sets:
        tables.append(headsets.head_sets_table(sources.head_sets, sources.rankings, k=heads_k))
    if sources.diagnostics:
        tables.append(diagnostics.diagnostics_summary_table(sources.diagnostics))
        tables.append(diagnostics.diagnostics_table(sources.diagnostics))
    return tables


def write_tables(
    tables: Sequence[Table], out_dir: str | Path, formats: Sequence[str]
) -> list[Path]:
    """Write each table in each format, each file atomically; returns the files written.

    Raises:
        harness.schema.writes.OutputDirError: a file cannot be written (disk full, read-only),
            naming it; the files written before it are whole, the rest are not touched.
    """
    from harness.schema.results import replace_atomically
    from harness.schema.writes import writing

    out = Path(out_dir)
    with writing(out, "leaderboard directory"):
        out.mkdir(parents=True, exist_ok=True)
    written = []

    def put(path: Path, text: str) -> None:
        with writing(path, "leaderboard table"):
            replace_atomically(path, lambda fh: fh.write(text))
        written.append(path)

    for fmt in formats:
        for table in tables:
            put(out / f"{table.name}.{FORMATS[fmt]}", render(table, fmt))
        if fmt == "md":
            heads = [to_markdown(t, heading_level=2) for t in tables if not t.detail]
            put(out / "leaderboard.md", "\n".join(["# Leaderboard", "", *heads]))
    return written


#: A run's subdirectories of sample logs and plots (grid run, rank, diagnose).
_SUBDIRS = ("samples", "heatmaps", "plots")
#: Names of what a run of another command holds besides its JSON files.
_RUN_NAMES = (LOCK_FILE, *_SUBDIRS)


def check_output(out: str | Path) -> None:
    """Refuse, writing nothing, an ``--output`` that holds another command's files.

    A run's directory or one of its own subdirectories (``D/rank`` holds ``ranking.json``
    and ``spearman.json``, ``D/samples`` the sample logs) would get tables overwriting or
    mixing with its files; a leaderboard's own earlier output is fine (it is rewritten).

    Raises:
        leaderboards.settings.MergeError: naming the directory and the file found.
    """
    from harness.schema.writes import check_writable

    out = Path(out)
    check_writable(out, "leaderboard --output")
    if not out.is_dir():
        return
    found = None
    if out.name in _SUBDIRS and any((out.parent / n).exists() for n in OWN_FILES):
        found = f"the sample logs or plots of the run in {str(out.parent)!r}"
    for entry in [] if found else sorted(out.iterdir()):
        if entry.suffix == ".json" and entry.is_file():
            found = entry.name if _not_ours(entry) else None
        elif entry.name in _RUN_NAMES or entry.suffix == ".jsonl":
            found = entry.name
        if found:
            break
    if found:
        raise MergeError(
            f"--output {str(out)!r} is another command's directory (it holds {found}); "
            "tables would overwrite or mix with its files: choose a directory of its own, "
            "e.g. a new leaderboards/ folder"
        )


def _check_k_fits(sources: Sources, k: float) -> None:
    """Refuse a ``--universal-k`` count above the heads of a ranking read."""
    for f in sources.rankings if k >= 1 else ():
        total = f.ranking.num_layers * f.ranking.num_heads
        if k > total:
            raise UsageError(
                f"--universal-k {int(k)} exceeds the {total} heads of the ranking {f.path}",
                hint=f"give a count ≤ {total} or a fraction in (0, 1)",
            )


def _not_ours(path: Path) -> bool:
    """A JSON file a leaderboard did not write: another command's output, or unreadable."""
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True  # unreadable: not ours to overwrite
    if isinstance(doc, dict) and doc.get("schema") == LEADERBOARD_SCHEMA:
        return False  # a table of an earlier leaderboard (spearman.json is one too)
    return path.name in OWN_FILES or classify(doc) is not None


def run(args: argparse.Namespace) -> int:
    """Run ``headscope leaderboard``; returns the exit code."""
    formats = parse_formats(args.format or [DEFAULT_FORMATS])
    if args.n_boot < 1:
        raise UsageError(f"--n-boot must be ≥ 1, got {args.n_boot}")
    for flag, k in (("--heads-k", args.heads_k), ("--universal-k", args.universal_k)):
        if not math.isfinite(k) or not (k == int(k) >= 1 or 0 < k < 1):
            raise UsageError(
                f"{flag} must be a whole count ≥ 1 or a fraction in (0, 1), got {k}",
                hint=f"e.g. {flag} 0.05",
            )
    if args.scoring is not None:
        from harness.api.scoring import check_scoring

        check_scoring("leaderboard --scoring", args.scoring)
    lock = None
    if args.output is not None:
        check_output(args.output)  # before anything is read or written
        lock = OutputLock(args.output, "leaderboard --output", LOCK_NAME).acquire()
    try:
        return _load_and_write(args, formats)
    finally:
        if lock is not None:
            lock.release(remove_if_unused=True)


def _load_and_write(args: argparse.Namespace, formats: list[str]) -> int:
    sources = load_sources(args.inputs, scoring=args.scoring)
    _check_k_fits(sources, args.universal_k)
    for warning in sources.warnings:
        print(f"headscope: warning: {warning}", file=sys.stderr)
    tables = build_tables(sources, args.all_metrics, args.universal_k, args.n_boot, args.heads_k)
    if not args.quiet:
        print("\n".join(render(t, "terminal") for t in tables if not t.detail))
    if args.output is None:
        return 0
    written = write_tables(tables, args.output, formats)
    if not args.no_figures:
        from harness.schema.writes import writing
        from leaderboards.figures import PlotUnavailableError, write_figures

        figures = Path(args.output) / "figures"
        try:
            with writing(figures, "leaderboard figures in"):
                written += write_figures(sources, figures)
        except PlotUnavailableError as exc:
            print(f"headscope: note: {exc}; tables were written", file=sys.stderr)
    _replace_manifest(Path(args.output), written)
    print(f"wrote {len(written)} files to {args.output}", file=sys.stderr)
    return 0


def _replace_manifest(out: Path, written: list[Path]) -> None:
    """Remove the files of the earlier leaderboard in ``out`` that this one did not write.

    Each leaderboard records what it wrote in :data:`MANIFEST`; the next one into the same
    directory removes the recorded files it did not write again (tables of inputs it lacks,
    formats or figures it was not asked for), so the directory holds one leaderboard, never
    tables of two. Only recorded paths inside ``out`` are touched.
    """
    import json

    from harness.schema.results import write_json_atomic
    from harness.schema.writes import writing

    root = out.resolve()
    try:
        doc = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        earlier = doc["files"] if doc.get("schema") == LEADERBOARD_SCHEMA else []
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        earlier = []
    now = {p.resolve() for p in written}
    with writing(out / MANIFEST, "leaderboard file list"):
        for name in earlier if isinstance(earlier, list) else []:
            path = out / str(name)
            real = path.resolve()
            ours = real.is_relative_to(root) and path.is_file() and not path.is_symlink()
            if ours and real not in now:
                path.unlink()
        names = sorted(p.resolve().relative_to(root).as_posix() for p in written)
        write_json_atomic(out / MANIFEST, {"schema": LEADERBOARD_SCHEMA, "files": names})
