r"""LaTeX form of a table, made to fit a page of a paper.

A leaderboard table can be far wider than a page (eight tasks side by side, fifteen bench
columns, intervention labels of 80 characters) and far longer (one row per task ×
intervention). :func:`to_latex` writes floats that fit an ``article`` page (345 pt wide,
about 550 pt high):

- **labels with a key**: a text cell longer than :data:`KEY_CHARS` characters (intervention
  labels such as ``ablate:k=0.1,mode=zero,ranking=ranking.json,select=top``) is shown as a
  short id (``ablate 1``) and the ids are spelled out in a key table before the data;
- **split by task, then by rows**: a table of more than :data:`MAX_ROWS` rows becomes one
  float per task (when it has a ``task`` column; the task goes into the caption) and a part
  longer than that is cut into floats of at most :data:`MAX_ROWS` rows ("continued");
- **rotated headers**: when the estimated width exceeds the text width, the headers of the
  numeric columns are turned 90° (``\rotatebox``);
- **landscape**: when it is still far wider (more than :data:`LANDSCAPE` × the text width)
  the float is a ``sidewaystable`` (a page of its own, turned);
- **never wider than the line**: the tabular is measured by TeX and scaled down to
  ``\linewidth`` when it is still wider (``\resizebox``), so no estimate can overflow.

Notes go under the last float, set ``\sloppy`` with break points after ``,`` ``/`` ``=`` so a
long label or path in them breaks instead of running into the margin. Packages:
``booktabs``, ``graphicx`` and ``rotating`` (each file's first line says so). Non-ASCII text
becomes LaTeX macros (pylatexenc), so the tables compile with pdflatex.
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from typing import Any

from leaderboards.formatting import Column, Table, cells, format_value

__all__ = ["to_latex", "latex_escape", "PACKAGES", "KEY_CHARS", "MAX_ROWS", "LANDSCAPE"]

#: What a document must load to \\input the tables.
PACKAGES = ("booktabs", "graphicx", "rotating")
#: Text cells longer than this are replaced by a short id and spelled out in a key.
KEY_CHARS = 24
#: Rows per float (an ``article`` page holds about 40 footnotesize rows and the headers).
MAX_ROWS = 30
#: Wider than this many text widths (after rotating headers): a landscape float.
LANDSCAPE = 1.3
#: The page the estimates aim at: ``article``'s text width and height (pt).
TEXT_WIDTH = 345.0
# Footnotesize Computer Modern: a mean character width and the column padding (pt).
_CHAR_PT = 4.4
_PAD_PT = 8.0  # 2 × \tabcolsep (4 pt, set in each float)
_SIZE = r"\footnotesize\setlength{\tabcolsep}{4pt}"
_BOX = r"\headscopetablebox"


@functools.cache
def _unicode_encoder() -> Any:
    from pylatexenc.latexencode import UnicodeToLatexEncoder

    return UnicodeToLatexEncoder(
        non_ascii_only=True,
        replacement_latex_protection="braces-almost-all",
        unknown_char_policy="unihex",  # e.g. CJK: written as <U+4E2D>, never a compile error
        unknown_char_warning=False,
    )


def _latex_unicode(text: str) -> str:
    """Non-ASCII characters as LaTeX macros (pylatexenc), so the tables compile with pdflatex."""
    return _unicode_encoder().unicode_to_latex(text)


def latex_escape(text: str) -> str:
    """Text as LaTeX: tabulate's rules for the ASCII specials, pylatexenc for non-ASCII."""
    from tabulate import LATEX_ESCAPE_RULES

    return _latex_unicode("".join(LATEX_ESCAPE_RULES.get(ch, ch) for ch in str(text)))


def _breakable(latex: str) -> str:
    r"""Break points (``\allowbreak``) after ``,`` ``/`` ``=`` ``;`` not followed by a space."""
    return re.sub(r"([,/=;])(?=\S)", r"\1\\allowbreak{}", latex)


def _key_ids(table: Table) -> dict[str, str]:
    """Long text value → short id (``<name> <n>``, name = the text before ``:``), in row order."""
    ids: dict[str, str] = {}
    counts: dict[str, int] = {}
    for row in table.rows:
        for col in table.shown:
            value = row.get(col.key)
            if col.kind != "text" or not isinstance(value, str) or len(value) <= KEY_CHARS:
                continue
            if value not in ids:
                head = re.match(r"[A-Za-z][A-Za-z0-9_]*", value)
                name = head.group(0)[:10] if head else col.key[:10]
                counts[name] = counts.get(name, 0) + 1
                ids[value] = f"{name} {counts[name]}"
    return ids


def _keyed(table: Table, ids: dict[str, str]) -> Table:
    rows = tuple(
        {k: ids.get(v, v) if isinstance(v, str) else v for k, v in row.items()}
        for row in table.rows
    )
    return replace(table, rows=rows)


def _width(table: Table, rotated: bool) -> float:
    """Estimated natural width of the tabular (pt) at footnotesize."""
    texts = cells(table)
    total = 0.0
    for i, col in enumerate(table.shown):
        longest = max((len(r[i]) for r in texts), default=0)
        head = 2.2 if rotated and col.kind != "text" else len(col.label)  # a rotated line
        total += max(longest, head) * _CHAR_PT + _PAD_PT
    return total


def _parts(table: Table) -> list[tuple[str, tuple[Column, ...], list[dict[str, Any]]]]:
    """(caption suffix, columns, rows) of each float: by task when long, then by MAX_ROWS."""
    cols = table.shown
    groups: list[tuple[str, list[dict[str, Any]]]] = [("", list(table.rows))]
    task = next((c for c in cols if c.key == "task"), None)
    if len(table.rows) > MAX_ROWS and task is not None:
        order: dict[Any, list[dict[str, Any]]] = {}
        for row in table.rows:
            order.setdefault(row.get(task.key), []).append(row)
        groups = [(f"{task.label} {format_value(k, 'text')}", v) for k, v in order.items()]
        cols = tuple(c for c in cols if c is not task)
    parts = []
    for suffix, rows in groups:
        chunks = [rows[i : i + MAX_ROWS] for i in range(0, len(rows), MAX_ROWS)] or [[]]
        for n, chunk in enumerate(chunks):
            more = f" (part {n + 1} of {len(chunks)})" if len(chunks) > 1 else ""
            parts.append((suffix + more, cols, chunk))
    return parts


def _header(col: Column, rotated: bool) -> str:
    text = latex_escape(col.label)
    return r"\rotatebox{90}{" + text + "}" if rotated and col.kind != "text" else text


def _tabular(cols: tuple[Column, ...], rows: list[dict[str, Any]], rotated: bool) -> list[str]:
    spec = "".join("r" if c.kind != "text" else "l" for c in cols)
    sub = Table("part", "", cols, tuple(rows))
    lines = [r"\begin{tabular}{" + spec + "}", r"\toprule"]
    lines.append(" & ".join(_header(c, rotated) for c in cols) + r" \\")
    lines.append(r"\midrule")
    lines += [" & ".join(latex_escape(x) for x in row) + r" \\" for row in cells(sub)]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return lines


def _float(env: str, caption: str, label: str, body: list[str], notes: str | None) -> list[str]:
    lines = [rf"\begin{{{env}}}" + ("[ht]" if env == "table" else ""), r"\centering", _SIZE]
    lines += [r"\caption{" + caption + "}", r"\label{" + label + "}"]
    lines += [r"\sbox{" + _BOX + "}{%", *body, "}%"]
    # the measured width, for a reader of the log (the tests check it against the estimate)
    lines.append(
        r"\typeout{headscope table "
        + label
        + r": \the\wd"
        + _BOX
        + r"\space wide, line \the\linewidth}%"
    )
    lines.append(
        r"\ifdim\wd" + _BOX + r">\linewidth\resizebox{\linewidth}{!}{\usebox{" + _BOX + "}}"
        r"\else\usebox{" + _BOX + r"}\fi"
    )
    if notes:
        lines.append(r"\par\smallskip{\raggedright\sloppy " + notes + r"\par}")
    lines.append(rf"\end{{{env}}}")
    return lines


def _label(table: Table) -> str:
    return "tab:" + "".join(ch if ch.isalnum() else "-" for ch in table.name)


def _key_float(table: Table, ids: dict[str, str]) -> list[str]:
    rows = [
        latex_escape(short) + " & " + _breakable(latex_escape(full)) + r" \\"
        for full, short in ids.items()
    ]
    body = [r"\begin{tabular}{@{}lp{0.8\linewidth}@{}}", r"\toprule", r"id & label \\"]
    body += [r"\midrule", *rows, r"\bottomrule", r"\end{tabular}"]
    caption = "Labels of " + latex_escape(table.title)
    return _float("table", caption, _label(table) + "-key", body, None)


def to_latex(table: Table) -> str:
    """Floats that fit an ``article`` page: keyed labels, split rows, rotated headers, scaling.

    Needs the packages of :data:`PACKAGES`. Each float is a ``table`` (``sidewaystable`` when
    far wider than the page) holding one booktabs ``tabular``; a key table comes first when
    labels were shortened, and the notes follow the last float.
    """
    ids = _key_ids(table)
    shown = _keyed(table, ids)
    rotated = _width(shown, False) > TEXT_WIDTH
    landscape = rotated and _width(shown, True) > LANDSCAPE * TEXT_WIDTH
    env = "sidewaystable" if landscape else "table"
    lines = [
        "% needs \\usepackage{" + ",".join(PACKAGES) + "}",
        r"\ifdefined" + _BOX + r"\else\newsavebox{" + _BOX + r"}\fi",
    ]
    if ids:
        lines += _key_float(table, ids)
    notes = [latex_escape(n) for n in table.notes]
    if ids:
        notes.insert(0, "Labels: Table~\\ref{" + _label(table) + "-key}.")
    parts = _parts(shown)
    for i, (suffix, cols, rows) in enumerate(parts):
        caption = latex_escape(table.title + (f" — {suffix.strip()}" if suffix else ""))
        label = _label(table) + (f"-{i + 1}" if i else "")
        last = i == len(parts) - 1
        note = _breakable(" ".join(notes)) if last and notes else None
        lines += _float(env, caption, label, _tabular(cols, rows, rotated), note)
    return "\n".join(lines) + "\n"
