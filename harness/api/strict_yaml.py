"""Bounded, unambiguous reading of YAML and JSON run files.

Two things plain ``yaml.safe_load`` lets through are refused here:

- aliases (``*name``, including ``<<: *name`` merges): each is refused where the parser meets
  it, before anything is expanded, so a few hundred bytes of nested aliases ("billion laughs")
  or an alias that refers to itself cost one line of error, not minutes, memory or a
  ``RecursionError``. A run file has no need of them: write the value out;
- a key given twice in one mapping (YAML and JSON alike, run files and the JSON forms of
  ``--task-args``, ``--model-args``, ``--gen_kwargs``, ``--tasks`` and ``--interventions``): the
  parsers silently keep the last, so half of what was written would be ignored.

Light at import (PyYAML is imported when a YAML file is read).
"""

from __future__ import annotations

import json
from typing import Any

from harness.api.errors import UsageError

__all__ = ["RunFileError", "load_json", "load_yaml"]


class RunFileError(UsageError):
    """A run file that is refused before it is read (usage error)."""


def _refuse_duplicates(pairs: list[tuple[Any, int | None]]) -> None:
    """Refuse a key given twice among ``(key, line or None)`` pairs."""
    seen: set[Any] = set()
    for key, line in pairs:
        try:
            if key in seen:
                where = f"line {line}: " if line is not None else ""
                raise RunFileError(f"{where}key {key!r} is given twice in one mapping")
            seen.add(key)
        except TypeError:  # an unhashable key: the YAML constructor refuses it itself
            continue


def load_json(text: str) -> Any:
    """``json.loads`` that refuses a key given twice in one object."""

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        _refuse_duplicates([(k, None) for k, _ in pairs])
        return dict(pairs)

    return json.loads(text, object_pairs_hook=pairs_hook)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` without aliases and without keys given twice.

    Raises:
        RunFileError: an alias (at its line) or a repeated key.
        yaml.YAMLError: malformed YAML.
    """
    import yaml

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise RunFileError(
                    f"line {event.start_mark.line + 1}: YAML aliases (*{event.anchor}) are not "
                    "allowed in a run file; write the value out"
                )
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                keys = [
                    (self.construct_object(k, deep=True), k.start_mark.line + 1)
                    for k, _ in node.value
                ]
                _refuse_duplicates(keys)
            return super().construct_mapping(node, deep=deep)

    return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass
