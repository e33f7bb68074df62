"""``key=value,key=value`` text: the short form of specs and flags, with typed values.

Used by ``--interventions name:key=value,...`` (:func:`harness.api.specs.parse_intervention`)
and by the lmms-eval style flags ``--model_args`` / ``--gen_kwargs`` / ``--task-args``
(:func:`harness.cli._args.parse_mapping`), so both read the same text the same way. Commas
inside brackets, braces or quotes do not split (``layers=[1,2]``, ``family_args={"a":1,"b":2}``),
and each value is typed: ``true`` / ``false`` (any case) are booleans, numbers are ints or
floats, ``null`` is None, a JSON list or object is that list or object, a bracketed list of bare
words (``[a,b]``) is a list of typed items, and anything else is a string. Light: json only.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["split_top_level", "typed_value", "key_values", "raw_value", "text_fields", "text_args"]


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` at ``sep`` outside brackets, braces and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def typed_value(text: str) -> Any:
    """One ``key=value`` value with its type (see the module docstring)."""
    text = text.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [typed_value(x) for x in split_top_level(inner)] if inner else []
    return text


def raw_value(part: str) -> str:
    """The value of one ``key=value`` part exactly as typed: no typing, outer quotes removed.

    For a target whose type is a string (a revision ``1.10``, a checkpoint ``2024.10``), where
    :func:`typed_value` would turn the text into a number and lose how it was written.
    """
    text = part.partition("=")[2].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def key_values(text: str) -> list[tuple[str, str, Any]]:
    """``(key, part, typed value)`` for each ``key=value`` part of ``text``, in order.

    ``key`` is "" when the part has no ``=`` or no key; callers name the offending ``part``.
    """
    out = []
    for part in split_top_level(text):
        key, eq, value = part.partition("=")
        out.append((key.strip() if eq else "", part.strip(), typed_value(value)))
    return out


def text_fields(cls: type) -> frozenset[str]:
    """Fields of ``cls`` whose declared type is text: ``str``, ``str | None``, a Literal of strings.

    Their ``key=value`` values are taken as typed (:func:`raw_value`): the target asks for text,
    so ``revision=1.10`` or ``ranking=2024.10`` must not become a number first.
    """
    import typing

    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - unresolvable hints: nothing is known to be text
        return frozenset()

    import types

    def is_text(hint: Any) -> bool:
        if hint is str:
            return True
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin is typing.Literal:
            return all(isinstance(a, str) for a in args)
        if origin in (typing.Union, types.UnionType):  # str | None: text; list[str] | str: not
            return str in args and all(a is type(None) or is_text(a) for a in args)
        return False

    return frozenset(name for name, hint in hints.items() if is_text(hint))


def text_args(intervention: str) -> frozenset[str]:
    """:func:`text_fields` of the registered intervention ``intervention`` (none if unknown)."""
    from harness.api.registry import INTERVENTIONS

    try:
        return text_fields(INTERVENTIONS.get(intervention))
    except Exception:  # noqa: BLE001 - an unknown name is reported where it is built
        return frozenset()
