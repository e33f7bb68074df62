"""Tables and their five output forms: terminal, Markdown, CSV, JSON, LaTeX.

The rounding rule (one rule for every number in every human-readable form):

- a real number is shown rounded once, at output time, to **3 decimal places**, starting
  from its shortest decimal form (Python's ``repr``, i.e. what the JSON input files hold)
  with ties rounded away from zero: ``0.4875 → 0.488``, ``0.0625 → 0.063``,
  ``-0.0125 → -0.013``. So a reader rounding the numbers of a results file by hand gets
  the same text;
- derived quantities are computed from the raw values first and rounded only on output;
  differences (Δ) are computed exactly on the decimal forms (:func:`decimal_diff`), so
  ``0.4875 − 0.5`` is ``-0.0125``, not ``-0.01250000000000001``;
- a ``signed`` column (a difference such as Δ) always carries its sign: ``+0.013``;
- whole numbers (counts ``n``, sequence lengths, layers) are shown whole;
- a value that rounds to zero is ``0.000`` (``+0.000`` when signed), never ``-0.000``;
- a missing value (``None`` or NaN) is ``—`` (an em dash in LaTeX, an empty cell in CSV).

Terminal, Markdown, LaTeX and CSV apply the rule; JSON keeps the raw full-precision
values (``null`` when missing), since it is the machine-readable form. Machine-only
columns (full paths, raw identities) appear in CSV and JSON only.

tabulate writes the terminal and Markdown tables; this module adds only what it cannot do:
the rounding rule and ``|`` and HTML (``<``, ``>``, ``&``: shown as text, never rendered)
inside Markdown cells. The LaTeX form (floats that fit a page, non-ASCII text as macros) is
:mod:`leaderboards.latex`.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any, Literal

__all__ = [
    "DECIMALS",
    "FORMATS",
    "Column",
    "Table",
    "format_value",
    "decimal_diff",
    "to_terminal",
    "to_markdown",
    "to_csv",
    "to_json",
    "cells",
]

#: Decimal places of every real number shown (the rounding rule above).
DECIMALS = 3
#: Output forms: name → file extension (``terminal`` is printed, never written).
FORMATS = {"md": "md", "csv": "csv", "json": "json", "latex": "tex", "terminal": "txt"}
LEADERBOARD_SCHEMA = "headscope.leaderboard"

Kind = Literal["text", "int", "float", "signed"]
_MISSING = "—"
# Enough digits for any finite double at DECIMALS places (the default context has 28).
_WIDE = Context(prec=400)


@dataclass(frozen=True)
class Column:
    """One column of a table.

    Attributes:
        key: ASCII identifier (CSV header, JSON key).
        title: Display title (may hold Unicode such as Δ or ρ).
        kind: ``text``, ``int``, ``float`` or ``signed`` (a float shown with its sign).
        machine: Only in the machine-readable forms (CSV, JSON): full paths, raw identities.
    """

    key: str
    title: str = ""
    kind: Kind = "text"
    machine: bool = False

    @property
    def label(self) -> str:
        """The title, or the key when no title was given."""
        return self.title or self.key


@dataclass(frozen=True)
class Table:
    """A leaderboard table holding raw values (formatting happens on output).

    Attributes:
        name: File stem (``accuracy``, ``speedup`` ...).
        title: Human-readable caption.
        columns: Column definitions, in display order.
        rows: One dict per row, keyed by column key (missing keys are missing values).
        notes: Footnotes (common settings, provenance, caveats).
        detail: A detail table (e.g. per-draw values): written to its own files but left out
            of ``leaderboard.md`` and the terminal printout.
    """

    name: str
    title: str
    columns: tuple[Column, ...]
    rows: tuple[dict[str, Any], ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    detail: bool = False

    @property
    def shown(self) -> tuple[Column, ...]:
        """The columns of the human-readable forms (machine-only columns left out)."""
        return tuple(c for c in self.columns if not c.machine)


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def format_value(value: Any, kind: Kind = "float", missing: str = _MISSING) -> str:
    """Apply the rounding rule to one value.

    Args:
        value: The raw value.
        kind: How the column shows numbers (see :class:`Column`).
        missing: Text of a missing value.

    Returns:
        The displayed text.
    """
    if _is_missing(value):
        return missing
    if kind == "text" or isinstance(value, str) or isinstance(value, bool):
        return str(value)
    if kind == "int" and float(value) == int(value):
        return str(int(value))
    number = float(value)
    if math.isinf(number):
        return ("+" if kind == "signed" and number > 0 else "") + ("inf" if number > 0 else "-inf")
    quantum = Decimal(1).scaleb(-DECIMALS)
    exact = Decimal(repr(number)).quantize(quantum, ROUND_HALF_UP, _WIDE)
    text = format(exact, "f")
    if Decimal(text) == 0:
        text = text.lstrip("-")
    if kind == "signed" and not text.startswith("-"):
        text = "+" + text
    return text


def decimal_diff(a: float, b: float) -> float:
    """``a − b`` computed exactly on the shortest decimal forms of ``a`` and ``b``."""
    return float(_WIDE.subtract(Decimal(repr(float(a))), Decimal(repr(float(b)))))


def cells(
    table: Table, missing: str = _MISSING, columns: tuple[Column, ...] | None = None
) -> list[list[str]]:
    """Each row's displayed text per column (the rounding rule; ``missing`` for no value)."""
    cols = table.shown if columns is None else columns
    return [[format_value(row.get(c.key), c.kind, missing) for c in cols] for row in table.rows]


def _numeric(col: Column) -> bool:
    return col.kind != "text"


def _align(table: Table) -> list[str]:
    return ["right" if _numeric(c) else "left" for c in table.shown]


def to_terminal(table: Table) -> str:
    """Plain-text table for the terminal (tabulate's ``simple`` style)."""
    from tabulate import tabulate

    body = tabulate(
        cells(table),
        headers=[c.label for c in table.shown],
        tablefmt="simple",
        disable_numparse=True,
        colalign=_align(table),
    )
    lines = [table.title, "=" * len(table.title), body or "(no rows)"]
    lines += [f"* {note}" for note in table.notes]
    return "\n".join(lines) + "\n"


def _md_escape(text: str) -> str:
    # Names and paths come from the input files: HTML in them (<script>, <img ...>) is shown
    # as text, never rendered. tabulate's pipe format leaves a "|" in a cell as it is, which
    # would split the cell.
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ")


def to_markdown(table: Table, heading_level: int = 2) -> str:
    """GitHub-flavoured Markdown: a heading, a pipe table (tabulate) and the notes as a list."""
    from tabulate import tabulate

    body = tabulate(
        [[_md_escape(x) for x in row] for row in cells(table)],
        headers=[_md_escape(c.label) for c in table.shown],
        tablefmt="pipe",
        disable_numparse=True,
        colalign=_align(table),
    )
    out = [f"{'#' * heading_level} {_md_escape(table.title)}", "", body]
    if not table.rows:
        out += ["", "_(no rows)_"]
    if table.notes:
        out.append("")
        out += [f"- {_md_escape(n)}" for n in table.notes]
    return "\n".join(out) + "\n"


def to_csv(table: Table) -> str:
    """CSV with the column keys as header; numbers follow the rounding rule, missing is empty."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.key for c in table.columns])
    writer.writerows(cells(table, missing="", columns=table.columns))
    return buf.getvalue()


def _json_value(value: Any) -> Any:
    infinite = isinstance(value, float) and math.isinf(value)
    return None if _is_missing(value) or infinite else value


def to_json(table: Table) -> str:
    """JSON document with raw (unrounded) values; ``null`` for missing values."""
    doc = {
        "schema": LEADERBOARD_SCHEMA,
        "schema_version": 1,
        "table": table.name,
        "title": table.title,
        "detail": table.detail,
        "columns": [
            {"key": c.key, "title": c.label, "kind": c.kind, "machine": c.machine}
            for c in table.columns
        ],
        "rows": [{c.key: _json_value(r.get(c.key)) for c in table.columns} for r in table.rows],
        "notes": list(table.notes),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
