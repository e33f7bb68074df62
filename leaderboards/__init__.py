"""Leaderboards: tables and figures built only from headscope's typed result files.

Nothing here loads a model: the inputs are ``results.json`` (:mod:`harness.schema.results`),
ranking files (:mod:`harness.schema.ranking`), bench files (:mod:`harness.schema.bench`) and
diagnose files (:mod:`harness.schema.diagnostics`); :mod:`leaderboards.sources` finds them and
dispatches on each file's schema tag. Importing this package imports the standard library
only; numpy/scipy (Spearman CIs), tabulate (terminal) and matplotlib (figures) load when used.

Files to touch for a new table:

1. a new kind of input only: its writer tags the file and ``harness/schema/<kind>.py`` reads
   it (tag, version, typed fields; see ``bench.py``); ``leaderboards/sources.py`` maps the tag
   in ``classify``, loads it in ``_add`` into a ``Sources`` field;
2. ``leaderboards/<table>.py`` — a function returning a :class:`~leaderboards.formatting.Table`;
   settings keep rows apart and become ``set:`` columns (``leaderboards.settings``:
   ``split_settings``, ``settings_row``), never averaged together;
3. ``leaderboards/cli.py`` ``build_tables`` (the order of the tables), and
   ``leaderboards/figures.py`` for a figure;
4. ``tests/data/leaderboards/regen.py`` — an input for it, then rerun it to rewrite the inputs
   and the goldens (its README says how), and a test in ``tests/unit/test_leaderboards*.py``;
5. docs/reference.md ("Probes and benchmarks", where ``headscope leaderboard`` is shown):
   a line on the new table.

Typical use::

    from leaderboards import load_sources, build_tables, write_tables
    sources = load_sources(["runs/qwen", "runs/llava"])
    write_tables(build_tables(sources), "board", ["md", "csv"])
"""

from leaderboards.accuracy import accuracy_draws_table, accuracy_summary_table, accuracy_table
from leaderboards.cli import build_tables, write_tables
from leaderboards.diagnostics import (
    Diagnostics,
    diagnostics_summary_table,
    diagnostics_table,
    parse_diagnostics,
)
from leaderboards.formatting import DECIMALS, FORMATS, Column, Table, format_value
from leaderboards.render import render
from leaderboards.settings import MergeError
from leaderboards.sources import Sources, load_sources
from leaderboards.spearman import spearman_table, universal_table
from leaderboards.speedup import memory_table, speedup_table

__all__ = [
    "DECIMALS",
    "FORMATS",
    "Column",
    "Diagnostics",
    "MergeError",
    "Sources",
    "Table",
    "accuracy_draws_table",
    "accuracy_summary_table",
    "accuracy_table",
    "build_tables",
    "diagnostics_summary_table",
    "diagnostics_table",
    "format_value",
    "load_sources",
    "memory_table",
    "parse_diagnostics",
    "render",
    "spearman_table",
    "speedup_table",
    "universal_table",
    "write_tables",
]
