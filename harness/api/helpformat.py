"""The help layout of every ``headscope`` command and subcommand (argparse only at import)."""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = [
    "HelpFormatter",
    "OneLineParser",
    "VERBOSITY",
    "add_output_argument",
    "add_logging_arguments",
    "add_threads_argument",
]


class OneLineParser(argparse.ArgumentParser):
    """A parser whose usage errors are one line, ``PROG: error: ... (see PROG --help)``, exit 2.

    No usage dump: the line names the flag at fault, and ``--help`` lists them all.
    """

    def error(self, message: str) -> NoReturn:
        """Print the one-line error and exit with code 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every subcommand's help: descriptions as written, and each option's default shown.

    An option's help gets ``(default: X)`` appended unless it already says its default, the
    default is None or False (nothing to show) or the option takes no value.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default is None
            or default is False
            or default is argparse.SUPPRESS
            or not action.option_strings
            or action.nargs == 0
        ):
            return action.help
        return f"{text} (default: %(default)s)"


VERBOSITY = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def add_output_argument(parser: argparse.ArgumentParser, default: str | None, help: str) -> None:
    """``--output`` with lmms-eval's spellings ``--output_path`` / ``--output-path``."""
    parser.add_argument(
        "--output",
        "--output_path",
        "--output-path",
        dest="output",
        default=default,
        metavar="DIR",
        help=help,
    )


def add_logging_arguments(parser: argparse.ArgumentParser) -> None:
    """``--verbosity`` and ``--include-path`` / ``--include_path``, as on ``headscope run``.

    The command line applies both before the subcommand looks up any name
    (``harness.cli.run.setup``).
    """
    group = parser.add_argument_group("logging and plugins")
    group.add_argument(
        "--verbosity",
        type=str.upper,
        choices=VERBOSITY,
        default="INFO",
        help="log level of the 'headscope' logger; progress: bars on a terminal, else one "
        "line per finished (task, intervention) cell; WARNING and above show none",
    )
    group.add_argument(
        "--include-path",
        "--include_path",
        dest="include_path",
        action="append",
        default=None,
        metavar="DIR",
        help="repeatable: import every *.py file of DIR first, so the tasks, model families "
        "and interventions it registers can be named (docs/plugins.md)",
    )


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    """``--threads N``: torch's CPU threads (``harness.api.threads``)."""
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="torch CPU threads (default: torch's, one per core; more than the cores are "
        "capped at them, with a note; idle threads wait passively unless OMP_WAIT_POLICY is "
        "set); recorded in the output files",
    )
