"""Typed values of the flags lmms-eval users type: ``--model_args``, ``--gen_kwargs``, ``--limit``.

``--model_args`` and ``--gen_kwargs`` take either a JSON object or lmms-eval's
``key=value,key=value`` form, read by :mod:`harness.api.kv` (the same reading as
``--interventions name:key=value``). Light at import: json only.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from harness.api.errors import UsageError
from harness.api.kv import key_values, raw_value
from harness.api.specs import SpecError

__all__ = [
    "parse_mapping",
    "limit_value",
    "count_value",
    "MAPS_DEFAULTS",
    "add_maps_arguments",
    "add_no_figures_argument",
    "maps_config_from_args",
    "prose",
    "SCORING_HELP",
    "apply_scoring",
    "takes_scoring",
]


def parse_mapping(
    text: str | None, flag: str, strings: frozenset[str] | set[str] = frozenset()
) -> dict[str, Any]:
    """``--flag`` text → dict: a JSON object, or ``key=value,...`` with typed values.

    Args:
        text: The flag's text (None or empty: {}).
        flag: The flag's name, for messages.
        strings: Keys whose target is a string: in the ``key=value`` form their value is
            kept exactly as typed (``revision=1.10`` stays ``"1.10"``, never the number 1.1).

    Raises:
        SpecError: malformed JSON, a part without ``=``, an empty or repeated key.
    """
    if text is None:
        return {}
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        from harness.api.strict_yaml import RunFileError, load_json

        try:
            value = load_json(text)
        except (json.JSONDecodeError, RunFileError) as exc:
            raise SpecError(f"{flag}: malformed JSON ({exc})") from None
        if not isinstance(value, dict):
            raise SpecError(f"{flag} must be a JSON object or key=value,key=value")
        return value
    out: dict[str, Any] = {}
    for key, part, value in key_values(text):
        if not key:
            raise SpecError(
                f"{flag}: expected key=value, got {part!r} "
                "(or pass a JSON object, e.g. '{\"key\": value}')"
            )
        if key in out:
            raise SpecError(f"{flag}: key {key!r} given twice")
        out[key] = raw_value(part) if key in strings else value
    return out


def limit_value(text: str) -> int | float:
    """``--limit``: a count ≥ 1 or a fraction 0 < x < 1 of each task's documents."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value >= 1 and value.is_integer():
        return int(value)
    if 0 < value < 1:
        return value
    raise argparse.ArgumentTypeError(
        f"{text!r}: give a count (an integer ≥ 1) or a fraction 0 < x < 1 of the documents"
    )


def count_value(text: str) -> int:
    """A whole count ≥ 0 (e.g. ``--maps``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a count ≥ 0")
    return value


MAPS_DEFAULTS = {"maps": 4, "maps_heads": 4, "maps_random": 2}


def add_maps_arguments(parser: Any) -> None:
    """``--maps N``, ``--maps-heads K``, ``--maps-random R`` (None when not given)."""
    parser.add_argument(
        "--maps",
        type=count_value,
        default=None,
        metavar="N",
        help="attention maps of the first N ranked samples per task: the chosen heads' "
        "instruction-averaged attention on every visual token, with each token's pixel "
        "footprint, the media and the evidence (rank/maps.json + maps.npz); 0: none "
        f"(default {MAPS_DEFAULTS['maps']}; skipped with a note for a model family without "
        "token footprints unless given)",
    )
    parser.add_argument(
        "--maps-heads",
        type=count_value,
        default=None,
        metavar="K",
        help=f"maps of the top-K and bottom-K heads by each task's RAM (default "
        f"{MAPS_DEFAULTS['maps_heads']})",
    )
    parser.add_argument(
        "--maps-random",
        type=count_value,
        default=None,
        metavar="R",
        help=f"and of R other heads drawn with --seed (default {MAPS_DEFAULTS['maps_random']})",
    )


def add_order_arguments(parser: Any) -> None:
    """``--cell-major`` and ``--check-vision-reuse`` (how a grid is evaluated)."""
    parser.add_argument(
        "--cell-major",
        "--cell_major",
        dest="cell_major",
        action="store_true",
        default=False,
        help="evaluate one (task, intervention) cell after the other, each reading and "
        "processing every document itself (the reference order; same outputs, slower). "
        "Default: sample-major, each batch of documents read, processed and vision-encoded "
        "once for all cells",
    )
    parser.add_argument(
        "--check-vision-reuse",
        "--check_vision_reuse",
        dest="check_vision_reuse",
        action="store_true",
        default=False,
        help="recompute every vision pass that sample-major evaluation would reuse "
        "and stop, naming the intervention, unless it is bit-identical: for authors of "
        "interventions that declare vision_use() 'none' (docs/plugins.md); recorded in the "
        "results' settings",
    )


def add_no_figures_argument(parser: Any, extra: str = "") -> None:
    """``--no-figures`` (``--no-plots``, the old spelling, is accepted and not listed)."""
    flag = {"dest": "no_figures", "action": "store_true"}
    parser.add_argument("--no-figures", **flag, help="leave the figures out" + extra)
    parser.add_argument("--no-plots", **flag, help=argparse.SUPPRESS)


def maps_config_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~harness.probes.maps.MapsConfig` of the flags; None for ``--maps 0``."""
    from harness.probes.maps import MapsConfig

    given = {k: getattr(args, k) for k in MAPS_DEFAULTS}
    n, heads, random = (MAPS_DEFAULTS[k] if v is None else v for k, v in given.items())
    if not n:
        return None
    return MapsConfig(n, heads, heads, random, seed=args.seed or 0)


SCORING_HELP = (
    "score every task under MODE: official, lmms_eval or lenient (docs/scoring.md). A task's "
    "own 'scoring' (--task-args, or a JSON task object in --tasks / --config) wins; a task "
    "that has modes but not MODE is refused before anything runs (the error names each such "
    "task and the --task-args that go on); a plugin task with one fixed rule (no 'scoring' "
    "argument) is left as it is; every built-in task has modes. Recorded in each task's "
    "settings, as with --task-args"
)


def takes_scoring(name: str) -> bool:
    """True when task ``name`` has scoring modes (its constructor takes ``scoring``).

    A plugin task with one fixed rule does not: it is scored by that rule under any mode.
    """
    import inspect

    from harness.api.registry import TASKS

    return "scoring" in inspect.signature(TASKS.get(name).__init__).parameters


def _with_mode(mode: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Task ``name``'s ``args`` with ``scoring=mode`` when it takes ``scoring`` and sets none."""
    if "scoring" in args:
        return args  # the task's own mode wins
    if not takes_scoring(name):
        return args  # a task with one fixed rule: nothing to choose
    return {**args, "scoring": mode}


def apply_scoring(mode: str, tasks: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """``--scoring MODE`` over ``(task name, args)`` pairs: each task's new args, in order.

    Every task that takes ``scoring`` and sets none gets ``mode``. Tasks that build with their
    own default but not with ``mode`` are all named in one error, with the ``--task-args``
    that would give each its default mode; other construction errors are left to the run.

    Raises:
        UsageError: an unknown mode (did-you-mean), or tasks without ``mode``.
    """
    import json

    from harness.api.scoring import check_scoring
    from harness.api.task import build_task

    mode = check_scoring("--scoring", mode)
    out, lacking, fix = [], [], {}
    for name, args in tasks:
        new = _with_mode(mode, name, args)
        out.append(new)
        if new is args:
            continue
        try:
            build_task(name, new)
        except UsageError as exc:
            try:
                own = build_task(name, args).settings().get("scoring")
            except Exception:  # noqa: BLE001 - fails without the mode too: the run reports it
                continue
            lacking.append(f"task {name!r}: {str(exc).removeprefix(f'task {name!r}: ')}")
            fix[name] = {"scoring": own}
    if lacking:
        raise UsageError(
            f"--scoring {mode}: {'; '.join(lacking)}",
            hint=f"give each its own mode to go on, e.g. --task-args '{json.dumps(fix)}'",
        )
    return out


def prose(doc: str | None) -> str:
    """A module docstring as plain help text: reStructuredText roles and literals unwrapped.

    ``:class:`~a.b.C``` → ``C``, ``:func:`f``` → ``f``, double backquotes dropped; paragraphs
    and list items keep their lines (use with ``argparse.RawDescriptionHelpFormatter``).
    """
    import re

    text = doc or ""
    text = re.sub(r":[a-z]+:`~?([^`<]*?)(?:\s*<[^>]*>)?`", lambda m: m.group(1).split(".")[-1]
                  if m.group(0).count("~") else m.group(1), text)  # fmt: skip
    text = re.sub(r"``([^`]+)``", r"\1", text)
    text = re.sub(r"`([^`]+)`_?", r"\1", text)
    return text.strip()
