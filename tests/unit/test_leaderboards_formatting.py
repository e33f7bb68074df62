"""The rounding rule and the five output forms of leaderboard tables."""

import csv
import io
import json
import math
import re

import pytest

from leaderboards.cli import parse_formats
from leaderboards.formatting import (
    Column,
    Table,
    decimal_diff,
    format_value,
    to_csv,
    to_json,
    to_markdown,
    to_terminal,
)
from leaderboards.latex import to_latex
from leaderboards.render import render

# (raw value, column kind, expected text): the rule of leaderboards/formatting.py.
ROUNDING_CASES = [
    (0.4875, "float", "0.488"),  # tie on the decimal form → away from zero
    (0.0625, "float", "0.063"),
    (0.9375, "float", "0.938"),
    (0.12345, "float", "0.123"),
    (0.1 + 0.2, "float", "0.300"),  # 0.30000000000000004
    (1234.5678, "float", "1234.568"),
    (-0.0125, "signed", "-0.013"),
    (0.0125, "signed", "+0.013"),
    (0.0, "signed", "+0.000"),
    (-0.0004, "float", "0.000"),  # never "-0.000"
    (-0.0004, "signed", "+0.000"),
    (40, "int", "40"),
    (40.0, "int", "40"),
    (2.5, "int", "2.500"),  # a non-whole value in an int column keeps its decimals
    (None, "float", "—"),
    (math.nan, "signed", "—"),
    (math.inf, "float", "inf"),
    ("sdpa", "float", "sdpa"),
    (1e300, "float", "1" + "0" * 300 + ".000"),
]


@pytest.mark.parametrize("value, kind, expected", ROUNDING_CASES)
def test_rounding_rule(value, kind, expected):
    assert format_value(value, kind) == expected


def test_differences_are_exact_on_decimal_forms():
    assert decimal_diff(0.4875, 0.5) == -0.0125
    assert decimal_diff(0.5125, 0.5) == 0.0125
    assert 0.4875 - 0.5 != -0.0125  # the float difference is not, hence the helper
    assert format_value(decimal_diff(0.5125, 0.5), "signed") == "+0.013"
    assert format_value(decimal_diff(0.4875, 0.5), "signed") == "-0.013"


def _table():
    cols = (
        Column("name"),
        Column("value", "value ↑", "float"),
        Column("delta", "Δ", "signed"),
        Column("n", kind="int"),
    )
    rows = (
        {"name": "a_b & 50% #1 {x} ~^\\$", "value": 0.4875, "delta": -0.0125, "n": 40},
        {"name": "pipe|cell", "value": None, "delta": math.nan, "n": 3},
    )
    return Table("demo_table", "Demo ρ × table", cols, rows, ("a note with 5% and _",))


def _md_cells(line):
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def test_markdown_shape_and_escaping():
    md = to_markdown(_table())
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    assert _md_cells(lines[0]) == ["name", "value ↑", "Δ", "n"]
    assert re.fullmatch(r"\|:-+\|-+:\|-+:\|-+:\|", lines[1])  # text left, numbers right
    assert all(len(re.findall(r"(?<!\\)\|", ln)) == 5 for ln in lines)
    # "&" as an entity: HTML in cells is text (a cell "&lt;" shows as typed, not as "<")
    assert _md_cells(lines[2]) == ["a_b &amp; 50% #1 {x} ~^\\$", "0.488", "-0.013", "40"]
    assert _md_cells(lines[3]) == ["pipe\\|cell", "—", "—", "3"]
    assert md.startswith("## Demo ρ × table\n")
    assert md.endswith("\n- a note with 5% and _\n")


def test_csv_roundtrip_with_rounding_and_empty_missing():
    rows = list(csv.reader(io.StringIO(to_csv(_table()))))
    assert rows[0] == ["name", "value", "delta", "n"]
    assert rows[1] == ["a_b & 50% #1 {x} ~^\\$", "0.488", "-0.013", "40"]
    assert rows[2] == ["pipe|cell", "", "", "3"]


def test_json_keeps_raw_values_and_nulls():
    doc = json.loads(to_json(_table()))
    assert doc["schema"] == "headscope.leaderboard" and doc["table"] == "demo_table"
    assert doc["rows"][0]["value"] == 0.4875  # unrounded
    assert doc["rows"][1]["value"] is None and doc["rows"][1]["delta"] is None
    assert [c["kind"] for c in doc["columns"]] == ["text", "float", "signed", "int"]


def _balanced(tex: str) -> bool:
    depth = 0
    for i, ch in enumerate(tex):
        if tex[i - 1 : i] == "\\":
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def test_latex_is_well_formed():
    tex = to_latex(_table())
    assert _balanced(tex)
    envs = re.findall(r"\\(begin|end)\{(\w+)\}", tex)
    stack = []
    for kind, name in envs:
        if kind == "begin":
            stack.append(name)
        else:
            assert stack.pop() == name
    assert not stack
    assert r"\begin{tabular}{lrrr}" in tex
    body = tex.split(r"\midrule")[1].split(r"\bottomrule")[0].strip().splitlines()
    assert len(body) == 2
    for line in body:
        assert line.endswith(r"\\")
        assert len(re.findall(r"(?<!\\)&", line)) == 3  # 4 columns
    assert r"a\_b \& 50\% \#1 \{x\} \textasciitilde{}\^{}\textbackslash{}\$" in tex
    assert r"{\ensuremath{\Delta}}" in tex and r"{\ensuremath{\rho}} {\texttimes}" in tex
    assert r"{\textemdash}" in body[1]  # the missing value
    assert re.search(r"0\.488 +& +-0\.013 +& +40", body[0])
    assert tex.isascii()  # pdflatex refuses raw Unicode such as − (U+2212)


def test_terminal_shows_title_rounded_numbers_and_notes():
    text = to_terminal(_table())
    assert text.splitlines()[0] == "Demo ρ × table"
    assert "0.488" in text and "-0.013" in text and "* a note with 5% and _" in text


def test_render_dispatch_and_unknown_format():
    assert render(_table(), "md") == to_markdown(_table())
    with pytest.raises(ValueError, match="unknown format"):
        render(_table(), "xlsx")


def test_parse_formats():
    assert parse_formats(["md,csv", "latex", "md"]) == ["md", "csv", "latex"]
    assert parse_formats(["markdown,tex"]) == ["md", "latex"]
    with pytest.raises(ValueError, match="unknown format 'pdf'"):
        parse_formats(["md,pdf"])
