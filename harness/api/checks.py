"""One typed validation layer for values that come from users and files.

Run files (YAML/JSON), ``--task-args``, intervention arguments and results files all arrive as
plain JSON-like values. :func:`matches` checks one value against a type hint strictly (a bool
is not an int, a string is not a bool, ``2.5`` is not an int, ``inf``/``nan`` are not numbers,
a list is accepted where a tuple is declared), and :func:`check_fields` checks every field of a
dataclass, naming the first offending field in a :class:`TypeMismatch` message.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import difflib
import math
import types
import typing
from typing import Any

from harness.api.errors import UsageError

__all__ = [
    "TypeMismatch",
    "matches",
    "describe",
    "check_value",
    "check_fields",
    "check_finite",
    "hints_of",
    "one_line",
]


class TypeMismatch(UsageError):
    """A value whose type does not match the declared one (the message names the field)."""


def _options(hint: Any) -> tuple[Any, ...]:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(hint)
    return (hint,)


def matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` is an instance of the type ``hint`` (strict JSON-value semantics)."""
    if hint is Any or hint is object or hint is None and value is None:
        return True
    if isinstance(hint, typing.TypeVar | str):  # unresolved: cannot check
        return True
    for opt in _options(hint):
        if _matches_one(value, opt):
            return True
    return False


def _matches_one(value: Any, hint: Any) -> bool:
    if hint is Any or hint is object:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin = typing.get_origin(hint) or hint
    args = typing.get_args(hint)
    if origin is typing.Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if origin is typing.Union or origin is types.UnionType:
        return matches(value, hint)
    if origin is bool:
        return isinstance(value, bool)
    if origin is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is float:
        return (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(float(value))
        )
    if origin is str:
        return isinstance(value, str)
    if origin in (dict, cabc.Mapping, cabc.MutableMapping):
        if not isinstance(value, cabc.Mapping):
            return False
        if len(args) == 2:
            return all(matches(k, args[0]) and matches(v, args[1]) for k, v in value.items())
        return True
    if origin in (tuple, list, cabc.Sequence, cabc.MutableSequence):
        if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
            return False
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return all(matches(v, args[0]) for v in value)
        if origin is tuple and args:
            return len(value) == len(args) and all(map(matches, value, args))
        if args:
            return all(matches(v, args[0]) for v in value)
        return True
    if isinstance(origin, type):
        return isinstance(value, origin)
    return True  # a hint this checker does not understand is not enforced


def describe(hint: Any) -> str:
    """A short human form of a type hint (``int or null``, ``list of str`` ...)."""
    if hint is Any:
        return "any value"
    parts = []
    for opt in _options(hint):
        origin = typing.get_origin(opt) or opt
        args = typing.get_args(opt)
        if opt is None or opt is type(None):
            parts.append("null")
        elif origin is typing.Literal:
            parts.append(" or ".join(repr(a) for a in args))
        elif origin in (dict, cabc.Mapping, cabc.MutableMapping):
            parts.append("a mapping")
        elif origin in (tuple, list, cabc.Sequence, cabc.MutableSequence):
            inner = args[0] if args else Any
            parts.append("a list" + (f" of {describe(inner)}" if inner is not Any else ""))
        elif origin is float:
            parts.append("a finite number")
        elif origin is int:
            parts.append("an integer")
        elif origin is bool:
            parts.append("true/false")
        elif origin is str:
            parts.append("a string")
        elif isinstance(origin, type):
            parts.append(origin.__name__)
        else:
            parts.append(str(opt))
    return " or ".join(dict.fromkeys(parts))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_value(value: Any, hint: Any, where: str) -> None:
    """Raise :class:`TypeMismatch` ``"<where> must be <type>, got <value> (<type name>)"``."""
    if not matches(value, hint):
        raise TypeMismatch(
            f"{where} must be {describe(hint)}, got {_shown(value)} ({type(value).__name__})"
            + _did_you_mean(value, hint)
        )


def _did_you_mean(value: Any, hint: Any) -> str:
    """The "; did you mean 'x'?" of a string close to a Literal's strings, else ""."""
    if not isinstance(value, str):
        return ""
    options = [
        arg
        for opt in _options(hint)
        if typing.get_origin(opt) is typing.Literal
        for arg in typing.get_args(opt)
        if isinstance(arg, str)
    ]
    close = difflib.get_close_matches(value, options, n=1, cutoff=0.5)
    return f"; did you mean {close[0]!r}?" if close else ""


def hints_of(obj: Any) -> dict[str, Any]:
    """Resolved type hints of a class, dataclass or function ({} when they cannot resolve)."""
    try:
        return typing.get_type_hints(obj)
    except Exception:  # noqa: BLE001 - a hint naming an unimportable type is not enforced
        return {}


def check_fields(obj: Any, where: str) -> None:
    """Check every init field of the dataclass instance ``obj`` against its declared type."""
    hints = hints_of(type(obj))
    for f in dataclasses.fields(obj):
        if f.init and f.name in hints:
            check_value(getattr(obj, f.name), hints[f.name], f"{where}: {f.name}")


def check_finite(value: Any, where: str) -> None:
    """Refuse NaN / ±inf anywhere in a spec: they are not JSON, so a run could not resume."""
    if isinstance(value, float) and not math.isfinite(value):
        raise TypeMismatch(f"{where} holds the non-finite number {value}")
    if isinstance(value, dict):
        for key, item in value.items():
            check_finite(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            check_finite(item, f"{where}[{i}]")


def one_line(exc: Exception) -> str:
    """A parser error on one line (YAML's own message spans several, with a caret)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is not None and problem:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(exc).split())
