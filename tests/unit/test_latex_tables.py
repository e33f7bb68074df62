"""The LaTeX tables compile: parsed strictly by pylatexenc, and by pdflatex when installed.

Every table ``headscope leaderboard`` builds from the hand-made leaderboard inputs is checked,
plus a table holding every LaTeX special and the non-ASCII symbols the tables use.
"""

import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from pylatexenc.latexwalker import LatexEnvironmentNode, LatexWalker

from leaderboards import build_tables, load_sources
from leaderboards.formatting import Column, Table
from leaderboards.latex import MAX_ROWS, PACKAGES, to_latex

DATA = Path(__file__).resolve().parents[1] / "data" / "leaderboards"


def _hard_table():
    cols = (Column("name"), Column("value", "ρ ≥ Δ × ε", "float"), Column("n", kind="int"))
    rows = (
        {"name": "a_b & 50% #1 {x} ~^\\$ <>", "value": -0.0125, "n": 4},
        {"name": "−0.8 → ≈ ⌈k·L⌉ ± √ é 中", "value": math.nan, "n": 3},
    )
    return Table("hard", "Hard — “text” ↑↓", cols, rows, ("RID = ΔS + ΔD; MixIG −0.80",))


def _long_table():
    """A main-job-like accuracy table: 8 tasks × 14 long intervention labels, 13 columns."""
    cols = (
        Column("model"),
        Column("task"),
        Column("intervention"),
        Column("metric"),
        *(Column(f"v{i}", f"value column {i}", "float") for i in range(9)),
    )
    labels = [
        f"ablate:k=0.{i},mode=zero,ranking=/a/long/path/rank/ranking.json,select=top"
        for i in range(14)
    ]
    rows = tuple(
        {
            "model": "toy",
            "task": f"task_{t}_mini",
            "intervention": lab,
            "metric": "accuracy",
            **{f"v{i}": 0.5 + i / 100 for i in range(9)},
        }
        for t in range(8)
        for lab in labels
    )
    return Table("long", "Long and wide", cols, rows, ("a note with /a/long/path/" * 8,))


def _wide_table():
    """accuracy_summary-like: 10 numeric columns with long headers."""
    cols = (
        Column("model"),
        Column("intervention"),
        *(Column(f"t{i}", f"mmlongbench_mini_{i} (accuracy)", "float") for i in range(10)),
    )
    rows = tuple(
        {
            "model": "toy",
            "intervention": f"hybrid:keep=0.{i},window=24,select=adaptive",
            **{f"t{j}": 0.984 for j in range(10)},
        }
        for i in range(14)
    )
    return Table("wide", "Wide", cols, rows)


def _tables():
    built = build_tables(load_sources([DATA / r for r in ("run_a", "run_b", "run_c")]), False)
    empty = Table("empty", "No rows", (Column("a"), Column("b", kind="float")), ())
    return [*built, _hard_table(), empty, _long_table(), _wide_table()]


TABLES = _tables()


def _env(nodes, name):
    for node in nodes or []:
        if isinstance(node, LatexEnvironmentNode):
            if node.environmentname == name:
                return node
            found = _env(node.nodelist, name)
            if found is not None:
                return found
    return None


def _tabulars(nodes):
    for node in nodes or []:
        if isinstance(node, LatexEnvironmentNode):
            if node.environmentname == "tabular":
                yield node
            else:
                yield from _tabulars(node.nodelist)
        elif getattr(node, "nodelist", None):
            yield from _tabulars(node.nodelist)


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.name)
def test_latex_parses_strictly_with_one_cell_per_column(table):
    tex = to_latex(table)
    assert tex.isascii(), "pdflatex refuses raw Unicode"
    nodes, _, _ = LatexWalker(tex, tolerant_parsing=False).get_latex_nodes()
    tabulars = list(_tabulars(nodes))
    if r"-key}" in tex:  # shortened labels: the key table comes first
        tabulars = tabulars[1:]
    assert tabulars
    n_rows = 0
    for tabular in tabulars:
        spec = tabular.nodeargd.argnlist[-1].latex_verbatim().strip("{}")
        split = len(tabulars) > 1 and any(c.key == "task" for c in table.shown)
        want = [c for c in table.shown if not (split and c.key == "task")]
        assert spec == "".join("r" if c.kind != "text" else "l" for c in want)
        body = tabular.latex_verbatim().split(r"\midrule")[1].split(r"\bottomrule")[0]
        rows = [r for r in body.split(r"\\") if r.strip()]
        assert len(rows) <= MAX_ROWS
        n_rows += len(rows)
        for row in rows:  # one unescaped & between each pair of cells
            assert len(re.findall(r"(?<!\\)&", row)) == len(spec) - 1
    assert n_rows == len(table.rows)


def test_long_labels_get_a_key_and_long_tables_are_split_by_task():
    tex = to_latex(_long_table())
    assert r"\label{tab:long-key}" in tex and "ablate 14" in tex
    assert tex.count(r"\begin{tabular}") == 1 + 8  # the key, then one float per task
    assert "Long and wide {\\textemdash} task task\\_7\\_mini" in tex
    wide = to_latex(_wide_table())
    assert r"\rotatebox{90}{mmlongbench\_mini\_0 (accuracy)}" in wide


def test_parser_rejects_broken_latex():
    # The strict parse above can fail: an unbalanced brace or environment is an error.
    for broken in (r"\begin{table}\caption{x\end{table}", r"\begin{table}\end{tabular}"):
        with pytest.raises(Exception, match="(?i)closing|environment|end"):
            LatexWalker(broken, tolerant_parsing=False).get_latex_nodes()


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed")
def test_tables_fit_an_article_page_with_pdflatex(tmp_path):
    """Every table compiles; no overfull box, no float taller than the page, none scaled
    below 0.7 (the log's measured widths against article's 345 pt line)."""
    doc = "\n".join(
        [
            r"\documentclass{article}",
            r"\usepackage{" + ",".join(PACKAGES) + "}",
            r"\begin{document}",
        ]
        + [to_latex(t) + "\n\\clearpage" for t in TABLES]
        + [r"\end{document}"]
    )
    (tmp_path / "tables.tex").write_text(doc, encoding="ascii")
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "tables.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    errors = [ln for ln in run.stdout.splitlines() if ln.startswith("!")]
    assert run.returncode == 0 and not errors, errors
    assert (tmp_path / "tables.pdf").stat().st_size > 0
    log = (tmp_path / "tables.log").read_text(encoding="latin-1")
    assert "Overfull" not in log, re.findall(r"Overfull[^\n]*", log)
    assert "Float too large" not in log
    widths = re.findall(r"headscope table (\S+): ([0-9.]+)pt wide, line ([0-9.]+)pt", log)
    assert len(widths) >= len(TABLES)
    for label, width, line in widths:
        assert float(width) < float(line) / 0.7, (label, width, line)
