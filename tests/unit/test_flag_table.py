"""One flag vocabulary: docs/reference.md's table of flags × subcommands equals the parsers.

Each row is one concept with its spellings (the lmms-eval underscore alias beside the dashed
one); a ✓ says the subcommand takes every spelling, an empty cell that it does not. For
``bench`` and ``heads`` a ✓ means every benchmark or action. Every flag that two subcommands
share is a row.
"""

import argparse
import contextlib
import io
import re
from pathlib import Path

import pytest

from harness.cli import main as cli
from harness.cli.bench import BENCHES

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference.md"
#: Old spellings: accepted where they were, listed in no --help, in no documented command.
OLD = {"--no-plots": ("rank", "diagnose")}


def _table() -> tuple[list[str], list[tuple[list[str], set[str]]]]:
    text = PAGE.read_text(encoding="utf-8")
    body = text.split("<!-- flags:start -->")[1].split("<!-- flags:end -->")[0].strip()
    lines = body.splitlines()
    columns = [c.strip() for c in lines[0].strip("|").split("|")][1:]
    rows = []
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        spellings = re.findall(r"`(--[a-z_-]+)`", cells[0])
        rows.append((spellings, {c for c, v in zip(columns, cells[1:], strict=True) if v}))
    return columns, rows


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def _listed(parser: argparse.ArgumentParser) -> list[list[str]]:
    return [
        a.option_strings
        for a in parser._actions
        if a.option_strings and a.help != argparse.SUPPRESS
    ]


def _help(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main(argv)
    return out.getvalue()


def _bench_flags(name: str) -> set[str]:
    return set(re.findall(r"(--[a-z][a-z0-9_-]*)", _help(["bench", name, "--help"])))


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser] | None:
    """The action parsers of a subcommand with actions (``heads export``...), else None."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return None


def _flag_sets(command: str, parser: argparse.ArgumentParser) -> list[set[str]]:
    """The flags of ``command``, or of each of its benchmarks or actions."""
    if command == "bench":
        return [_bench_flags(b) for b in BENCHES]
    actions = _actions(parser)
    parsers = list(actions.values()) if actions else [parser]
    return [{f for option in _listed(p) for f in option} for p in parsers]


def test_the_table_is_the_parsers():
    columns, rows = _table()
    subs = _subparsers()
    assert set(columns) == set(subs)
    for spellings, ticked in rows:
        for command in columns:
            sets = _flag_sets(command, subs[command])
            for flags in sets:
                have = [f in flags for f in spellings]
                assert all(have) or not any(have), (command, spellings, "partly")
            on_all = all(set(spellings) <= flags for flags in sets)
            assert on_all == (command in ticked), (command, spellings)


def test_every_shared_flag_is_a_row_with_all_its_spellings():
    _, rows = _table()
    in_table = {tuple(spellings) for spellings, _ in rows}
    seen: dict[tuple[str, ...], set[str]] = {}
    for command, parser in _subparsers().items():
        if command == "bench":
            continue
        for option in _listed(parser):
            seen.setdefault(tuple(option), set()).add(command)
    shared = {o for o, where in seen.items() if len(where) > 1} - {("-h", "--help"), ("--debug",)}
    assert shared <= in_table, sorted(shared - in_table)


def test_old_spellings_are_accepted_unlisted_and_undocumented():
    subs = _subparsers()
    for old, commands in OLD.items():
        for command in commands:
            assert old not in {f for o in _listed(subs[command]) for f in o}
            assert subs[command].parse_args([old]).no_figures is True
    from tests.integration.test_doc_commands import COMMANDS

    for doc, argv in COMMANDS:  # every documented command, README and docs/
        assert not set(OLD) & set(argv), (doc, argv)


def test_headscope_help_names_every_bench():
    text = re.sub(r"\s+", " ", _help(["--help"]))
    for name in BENCHES:
        assert f"'bench {name}'" in text, name
