"""The ``headscope`` command line.

Subcommands: ``list``, ``run``, and the ones living in their own modules
(``rank``, ``diagnose``, ``bench``, ``leaderboard``, ``rescore``, ``view``, ``means``,
``heads``), each
loaded only when used. Exit codes:

- 0: done;
- 2: a usage error (:class:`harness.api.errors.UsageError`: an unknown name, a
  malformed run file, a bad flag or path): one line with a fix hint;
- 1: a run that failed midway (rerun the same command to resume), or a bug: one
  line naming the exception and the file its traceback was saved to (in the temp
  directory's ``headscope-tracebacks``, private to the user, the newest
  :data:`TRACEBACKS_KEPT` kept; a symlink there is refused and the traceback printed);
- 130: interrupted (rerun the same command to resume).

``--debug`` (before or after the subcommand) prints full tracebacks, usage errors
included.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from harness.api.errors import UsageError, one_line
from harness.cli import run as run_command
from harness.cli.bench import SUMMARY

__all__ = ["main", "build_parser"]

# Subcommands implemented elsewhere: name -> (module, help). Each module provides
# ``add_arguments(parser)`` and ``run(args) -> int``.
EXTERNAL_COMMANDS: dict[str, tuple[str, str]] = {
    "rank": ("harness.cli.rank", "rank heads by Retrieval Attention Mass (CoRe heads)"),
    "diagnose": ("harness.cli.diagnose", "eRank / RID / MixIG / TME module diagnostics"),
    "bench": (
        "harness.cli.bench",
        "benchmarks: " + ", ".join(f"'bench {name}' ({what})" for name, what in SUMMARY.items()),
    ),
    "leaderboard": ("leaderboards.cli", "merge results directories into leaderboards"),
    "view": ("viewer.cli", "a static site of runs: leaderboards, heads' attention, samples"),
    "means": (
        "harness.cli.means",
        "per-head mean outputs over a reference set (the file ablate:mode=mean reads)",
    ),
    "rescore": ("harness.cli.rescore", "score a run's logged replies again under --scoring MODE"),
    "heads": (
        "harness.cli.heads",
        "head sets as files: export a ranking's or a cell's heads, import SparseMM / "
        "DuoAttention / list files, compare sets",
    ),
}


_DEBUG_HELP = "print full tracebacks, usage errors included"
_EXIT_CODES = """exit codes:
  0    done
  2    a usage error: one line naming what to fix, with a hint
  1    a run that failed midway (rerun the same command to resume), or a bug: one line
       and the file its traceback was saved to (--debug prints it)
  130  interrupted (rerun the same command to resume)"""


def build_parser() -> argparse.ArgumentParser:
    """The top-level argument parser."""
    from harness import __version__
    from harness.api.helpformat import HelpFormatter, OneLineParser

    parser = OneLineParser(
        prog="headscope",
        description="Head-level mechanistic interventions on multimodal LLMs.",
        epilog=_EXIT_CODES,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--debug", action="store_true", help=_DEBUG_HELP)
    parser.add_argument("--version", action="version", version=f"headscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p_list = sub.add_parser(
        "list", help="list registered tasks, models or interventions", formatter_class=HelpFormatter
    )
    p_list.add_argument("kind", choices=["tasks", "models", "interventions"],
                        help="which registry to list")  # fmt: skip
    p_list.add_argument(
        "--include-path", "--include_path", dest="include_path", action="append", default=None,
        metavar="DIR", help="repeatable: import the plugins (*.py files) of DIR first",
    )  # fmt: skip
    p_run = sub.add_parser(
        "run",
        help="the full protocol (main job) on --model/--tasks; with --interventions or "
        "--config only that grid",
        formatter_class=HelpFormatter,
    )
    run_command.add_arguments(p_run)
    for name, (module, help_text) in EXTERNAL_COMMANDS.items():
        p = sub.add_parser(name, help=help_text, formatter_class=HelpFormatter)
        p.set_defaults(_external=module)
        try:
            importlib.import_module(module).add_arguments(p)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise
            p.set_defaults(_missing=f"'{name}' is not available in this installation")
    for p in sub.choices.values():  # listed in each subcommand's --help; main() takes it out
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP)
    return parser


def _cmd_list(args: argparse.Namespace) -> int:
    from harness.api.registry import INTERVENTIONS, MODEL_FAMILIES, TASKS

    registry = {"tasks": TASKS, "models": MODEL_FAMILIES, "interventions": INTERVENTIONS}[args.kind]
    for name in registry.names():
        obj = registry.get(name)
        doc = (obj.__doc__ or "").strip().splitlines()
        print(f"{name:24s} {doc[0] if doc else ''}")
        unit = vars(obj).get("unit") if args.kind == "models" and isinstance(obj, type) else None
        if unit is not None:  # the family unit (harness.models.unit): what it can be run on
            tiny = "tiny=true" if unit.tiny is not None else "no tiny recipe"
            can = ", ".join(sorted(unit.capabilities))
            print(f"{'':24s} layout {unit.layout.kind} · {can} · {tiny}")
    return 0


def _take_debug(argv: list[str]) -> bool:
    """Remove every ``--debug`` before a ``--`` from ``argv``; True if there was one.

    Taken out before parsing so that it works anywhere, also among the flags a
    subcommand passes on unparsed (``headscope bench ram ... --debug``).
    """
    end = argv.index("--") if "--" in argv else len(argv)
    found = "--debug" in argv[:end]
    argv[:end] = [a for a in argv[:end] if a != "--debug"]
    return found


#: Traceback files kept in the temp directory's ``headscope-tracebacks``: the newest ones.
TRACEBACKS_KEPT = 50


def _traceback_folder() -> Path:
    """``TMP/headscope-tracebacks``, created private (0700); OSError when it cannot be trusted.

    A symlink (where a traceback would land is another's choice), something that is not a
    folder, or a folder of another user is refused.
    """
    import stat

    folder = Path(tempfile.gettempdir()) / "headscope-tracebacks"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode):
        raise OSError(f"{folder} is a symlink")
    if not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{folder} is not a folder")
    if info.st_uid != os.geteuid():
        raise OSError(f"{folder} belongs to another user")
    return folder


def _prune_tracebacks(folder: Path, keep: int = TRACEBACKS_KEPT) -> None:
    """Remove all but the ``keep`` newest traceback files of ``folder``."""
    files = []
    for path in folder.glob("*.txt"):
        try:
            files.append((path.lstat().st_mtime_ns, path.name, path))
        except OSError:
            continue  # removed meanwhile (another headscope pruning)
    for _, _, path in sorted(files)[:-keep]:
        path.unlink(missing_ok=True)


def _save_traceback(exc: BaseException) -> tuple[Path | None, str | None]:
    """Write ``exc``'s traceback to a new file in the temp directory.

    The folder keeps the :data:`TRACEBACKS_KEPT` newest files; a folder that cannot be
    trusted (:func:`_traceback_folder`) is not written.

    Returns:
        The file, or None and why it could not be written.
    """
    text = "".join(traceback.format_exception(exc))
    try:
        folder = _traceback_folder()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        with tempfile.NamedTemporaryFile(
            "w", dir=folder, prefix=f"{stamp}-", suffix=".txt", delete=False
        ) as f:
            f.write(text)
        _prune_tracebacks(folder)
        return Path(f.name), None
    except OSError as err:
        return None, str(err)


def _report_bug(prog: str, exc: BaseException, debug: bool) -> int:
    """Exit code 1: the traceback, or one line and the file it was saved to."""
    summary = one_line(f"{type(exc).__name__}: {exc}")
    path, problem = (None, None) if debug else _save_traceback(exc)
    if path is None:
        traceback.print_exception(exc, file=sys.stderr)
        if problem is not None:
            print(f"{prog}: traceback not saved: {one_line(problem)}", file=sys.stderr)
        print(f"{prog}: internal error: {summary}", file=sys.stderr)
    else:
        print(
            f"{prog}: internal error: {summary} (traceback saved to {path}; "
            "rerun with --debug to print it)",
            file=sys.stderr,
        )
    return 1


def _report_usage_error(prog: str, exc: UsageError, debug: bool) -> int:
    """Exit code 2: ``PROG: error: MESSAGE (hint: HINT; see PROG --help)``."""
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    hint = f"hint: {one_line(exc.hint)}; " if exc.hint else ""
    print(f"{prog}: error: {one_line(str(exc))} ({hint}see {prog} --help)", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``headscope`` console script (returns the exit code)."""
    from harness.api.threads import prepare_environment

    prepare_environment()  # OpenMP's wait policy: read once, when torch loads
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = _take_debug(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    prog = " ".join(["headscope", args.command, *([args.bench] if args.command == "bench" else [])])
    try:
        if getattr(args, "_missing", None):
            raise UsageError(args._missing, hint="install headscope with all its extras")
        run_command.setup(args)  # --verbosity, --include_path: before any name is looked up
        if args.command == "list":
            return _cmd_list(args)
        if args.command == "run":
            return run_command.run(args)
        return int(importlib.import_module(args._external).run(args) or 0)
    except UsageError as exc:
        return _report_usage_error(prog, exc, debug)
    except KeyboardInterrupt:
        print("headscope: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    except Exception as exc:
        from harness.run.evaluator import EvaluationError

        if isinstance(exc, EvaluationError):
            if debug:
                traceback.print_exception(exc, file=sys.stderr)
            print(f"headscope: run failed: {exc}", file=sys.stderr)
            print("rerun the same command to resume", file=sys.stderr)
            return 1
        return _report_bug(prog, exc, debug)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
