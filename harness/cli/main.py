"""The ``headscope`` command line.

Subcommands: ``list``, ``run``, and the ones living in their own modules
(``rank``, ``diagnose``, ``bench``, ``leaderboard``), each loaded only when used.
Usage errors (unknown names, malformed run files, bad arguments) print one clear
message and exit with code 2; a run that fails midway exits with code 1 and can
be resumed by rerunning the same command.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

from harness.cli import run as run_command

__all__ = ["main", "build_parser", "USAGE_ERRORS"]

# Subcommands implemented elsewhere: name -> (module, help). Each module provides
# ``add_arguments(parser)`` and ``run(args) -> int``.
EXTERNAL_COMMANDS: dict[str, tuple[str, str]] = {
    "rank": ("harness.cli.rank", "rank heads by Retrieval Attention Mass (CoRe heads)"),
    "diagnose": ("harness.cli.diagnose", "eRank / RID / MixIG / TME module diagnostics"),
    "bench": (
        "harness.cli.bench",
        "benchmarks: 'bench hybrid' (prefill speed), 'bench masks', 'bench ram', 'bench ttft'",
    ),
    "leaderboard": ("leaderboards.cli", "merge results directories into leaderboards"),
    "rescore": ("harness.cli.rescore", "score a run's logged replies again under --scoring MODE"),
}


def _usage_errors() -> tuple[type[BaseException], ...]:
    from harness.api.intervention import InterventionError
    from harness.api.registry import RegistryError
    from harness.api.specs import SpecError
    from harness.schema.results import ResultsError

    return (
        SpecError,
        RegistryError,
        InterventionError,
        ResultsError,
        ValueError,
        FileNotFoundError,
        # A path the user gave that cannot be used (output is a file, no permission...).
        FileExistsError,
        NotADirectoryError,
        IsADirectoryError,
        PermissionError,
    )


USAGE_ERRORS = _usage_errors


class _Parser(argparse.ArgumentParser):
    """Usage errors on one line (``headscope run: error: ...``), exit code 2, no usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The top-level argument parser."""
    parser = _Parser(
        prog="headscope",
        description="Head-level mechanistic interventions on multimodal LLMs.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p_list = sub.add_parser("list", help="list registered tasks, models or interventions")
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
    )
    run_command.add_arguments(p_run)
    for name, (module, help_text) in EXTERNAL_COMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(_external=module)
        try:
            importlib.import_module(module).add_arguments(p)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise
            p.set_defaults(_missing=f"'{name}' is not available in this installation")
    return parser


def _cmd_list(args: argparse.Namespace) -> int:
    from harness.api.registry import INTERVENTIONS, MODEL_FAMILIES, TASKS

    registry = {"tasks": TASKS, "models": MODEL_FAMILIES, "interventions": INTERVENTIONS}[args.kind]
    for name in registry.names():
        obj = registry.get(name)
        doc = (obj.__doc__ or "").strip().splitlines()
        print(f"{name:24s} {doc[0] if doc else ''}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``headscope`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if getattr(args, "_missing", None):
            raise ValueError(args._missing)
        if args.command == "list":
            run_command.setup(args)
            return _cmd_list(args)
        if args.command == "run":
            return run_command.run(args)
        return int(importlib.import_module(args._external).run(args) or 0)
    except _usage_errors() as exc:
        print(f"headscope: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("headscope: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    except Exception as exc:
        from harness.run.evaluator import EvaluationError

        if isinstance(exc, EvaluationError):
            print(f"headscope: run failed: {exc}", file=sys.stderr)
            print("rerun the same command to resume", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
