"""The one error type for what the user must fix.

A :class:`UsageError` is a mistake in the input — a flag, a file, a name, a
path — that the user can correct; the command line prints it as one line with
its fix hint and exits with code 2. Every other exception is a bug (or a broken
environment) and keeps its traceback (exit code 1).

The user-error types of the packages (``SpecError``, ``RegistryError``,
``InterventionError``, ``ResultsError``, ``MergeError``, ...) subclass it, so a
new one only has to pick the right base. ``UsageError`` subclasses
:class:`ValueError` because every user-error type it replaced already did: code
that catches ``ValueError`` around a parse or a lookup keeps working.
"""

from __future__ import annotations

__all__ = ["UsageError", "one_line"]


class UsageError(ValueError):
    """Something the user must fix (exit code 2 on the command line).

    Args:
        message: What is wrong, naming the flag, file or value.
        hint: How to fix it (e.g. "pass --skip-bad-docs to skip such samples");
            a subclass may set a class-level default ``hint``.

    Example:
        >>> raise UsageError("--window must be positive, got -3", hint="e.g. --window 8")
        Traceback (most recent call last):
        ...
        harness.api.errors.UsageError: --window must be positive, got -3
    """

    hint: str | None = None

    def __init__(self, message: object = "", *args: object, hint: str | None = None) -> None:
        super().__init__(message, *args)
        if hint is not None:
            self.hint = hint


def one_line(text: str) -> str:
    """``text`` with its line breaks folded into "; " (a usage error prints on one line)."""
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


class MissingDependency(UsageError, ImportError):
    """An optional package a feature needs is not installed (also an ``ImportError``).

    The message names the package and how to install it.
    """
