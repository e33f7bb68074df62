"""Leaderboards: tables and figures built only from headscope's typed result files.

Nothing here loads a model: the inputs are ``results.json`` (:mod:`harness.schema.results`),
ranking files (:mod:`harness.schema.ranking`), ``bench hybrid`` / ``bench ram`` JSON and diagnose
files (:mod:`leaderboards.diagnostics`). Importing this package imports the standard library
only; numpy/scipy (Spearman CIs), tabulate (terminal) and matplotlib (figures) load when used.

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
from leaderboards.formatting import DECIMALS, FORMATS, Column, Table, format_value, render
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
