"""``headscope view DIR... [--output OUT] [--serve] [--host H] [--port P]``.

Writes one static site for the given run directories (grid runs, main-job directories, or
several runs shown side by side) into ``OUT`` (default ``DIR/view`` for a single ``DIR``) and,
with ``--serve``, serves it on ``--host`` (127.0.0.1 by default; the port is bound before the
site is built, so a busy port fails at once). A site whose inputs are unchanged since its
last build is served without rebuilding (:mod:`viewer.stamp`). The site also opens from
``file://`` directly.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.api.errors import UsageError
from harness.api.helpformat import add_logging_arguments, add_output_argument
from harness.api.paths import why_unwritable

__all__ = ["add_arguments", "build", "run", "default_output"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of the ``view`` subcommand."""
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="DIR",
        help="run directories (grid run, main job) or folders of runs; several side by side",
    )
    add_output_argument(parser, None, "site folder (default: DIR/view for a single DIR)")
    parser.add_argument(
        "--serve",
        action="store_true",
        help="serve the site (see --host); a site whose inputs are unchanged is not rebuilt",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address --serve binds (default 127.0.0.1: this machine only; 0.0.0.0: all)",
    )
    parser.add_argument("--port", type=int, default=8000, help="port of --serve (default 8000)")
    parser.add_argument("--no-figures", action="store_true", help="leave the figures out")
    parser.add_argument(
        "--scoring",
        default=None,
        metavar="MODE",
        help="read each run's results.scoring-MODE.json (headscope rescore) where there is one, "
        "as leaderboard --scoring does (default: each run's own results.json; a run folder "
        "that also holds rescored copies is refused)",
    )
    parser.add_argument(
        "--no-media",
        action="store_true",
        help="leave the sample pages' media out (rebuilt by each task: slow on long videos)",
    )
    parser.add_argument(
        "--task-paths",
        action="store_true",
        help="let tasks rebuild media from data folders that a run's task arguments name "
        "outside the run (off: those samples show none; use it for runs you trust)",
    )
    parser.add_argument(
        "--n-boot",
        type=int,
        default=1000,
        help="bootstrap replicates of the overview's Spearman CIs (default 1000)",
    )
    add_logging_arguments(parser)


def default_output(inputs: list[str]) -> Path:
    """``DIR/view`` for one input directory; several inputs need ``--output``."""
    if len(inputs) != 1:
        raise UsageError(
            f"{len(inputs)} inputs and no --output", hint="give the site's folder: --output OUT"
        )
    return Path(inputs[0]) / "view"


def build(args: argparse.Namespace, out: Path) -> None:
    """Build the site of ``args.inputs`` into ``out``; print its warnings and a summary."""
    from viewer.collect import collect
    from viewer.site import build_site

    t0 = time.perf_counter()
    data = collect(args.inputs, n_boot=args.n_boot, scoring=args.scoring)
    index = build_site(
        data,
        out,
        figures=not args.no_figures,
        media=not args.no_media,
        task_paths=args.task_paths,
    )
    for warning in data.warnings:
        print(f"headscope: warning: {warning}", file=sys.stderr)
    n = sum(len(t.table["samples"]) for t in data.tasks)
    print(
        f"wrote {index} ({len(data.tasks)} tasks, {n} samples, {len(data.heads)} rankings) "
        f"in {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )


def run(args: argparse.Namespace) -> int:
    """Run ``headscope view``; returns the exit code.

    With ``--serve``, a site whose inputs, options and viewer code are unchanged since it was
    built (:mod:`viewer.stamp`) is served as it is; otherwise it is rebuilt first.
    """
    from viewer.stamp import fingerprint, is_current, write_stamp

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be in 0..65535, got {args.port}", hint="e.g. --port 8000")
    if args.n_boot < 1:
        raise UsageError(f"--n-boot must be ≥ 1, got {args.n_boot}", hint="e.g. --n-boot 1000")
    if args.scoring is not None:
        from harness.api.scoring import check_scoring

        check_scoring("view --scoring", args.scoring)
    out = Path(args.output) if args.output else default_output(args.inputs)
    problem = why_unwritable(out, "--output")  # a file, /proc, no permission: before any work
    if problem is not None:
        raise UsageError(problem, hint="give a folder that can be written")
    server = None
    if args.serve:
        from viewer.serve import make_server

        server = make_server(out, args.port, args.host)
    options = {"n_boot": args.n_boot, "figures": not args.no_figures, "scoring": args.scoring}
    options.update(media=not args.no_media, task_paths=args.task_paths)
    stamp = fingerprint(args.inputs, out, options)
    if server is not None and is_current(out, stamp):
        print(f"{out}: up to date with its inputs, not rebuilt", file=sys.stderr)
    else:
        build(args, out)
        write_stamp(out, stamp)
    if server is not None:
        from viewer.serve import serve

        serve(server, out)
    return 0
