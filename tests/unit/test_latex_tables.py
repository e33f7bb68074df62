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
from leaderboards.formatting import Column, Table, to_latex

DATA = Path(__file__).resolve().parents[1] / "data" / "leaderboards"


def _hard_table():
    cols = (Column("name"), Column("value", "ρ ≥ Δ × ε", "float"), Column("n", kind="int"))
    rows = (
        {"name": "a_b & 50% #1 {x} ~^\\$ <>", "value": -0.0125, "n": 4},
        {"name": "−0.8 → ≈ ⌈k·L⌉ ± √ é 中", "value": math.nan, "n": 3},
    )
    return Table("hard", "Hard — “text” ↑↓", cols, rows, ("RID = ΔS + ΔD; MixIG −0.80",))


def _tables():
    built = build_tables(load_sources([DATA / r for r in ("run_a", "run_b", "run_c")]), False)
    empty = Table("empty", "No rows", (Column("a"), Column("b", kind="float")), ())
    return [*built, _hard_table(), empty]


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


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.name)
def test_latex_parses_strictly_with_one_cell_per_column(table):
    tex = to_latex(table)
    assert tex.isascii(), "pdflatex refuses raw Unicode"
    nodes, _, _ = LatexWalker(tex, tolerant_parsing=False).get_latex_nodes()
    float_env = _env(nodes, "table")
    tabular = _env(float_env.nodelist, "tabular")
    assert tabular is not None
    spec = tabular.nodeargd.argnlist[-1].latex_verbatim().strip("{}")
    assert spec == "".join("r" if c.kind != "text" else "l" for c in table.shown)
    body = tabular.latex_verbatim().split(r"\midrule")[1].split(r"\bottomrule")[0]
    rows = [r for r in body.split(r"\\") if r.strip()]
    assert len(rows) == len(table.rows)
    for row in rows:  # one unescaped & between each pair of cells
        assert len(re.findall(r"(?<!\\)&", row)) == len(spec) - 1


def test_parser_rejects_broken_latex():
    # The strict parse above can fail: an unbalanced brace or environment is an error.
    for broken in (r"\begin{table}\caption{x\end{table}", r"\begin{table}\end{tabular}"):
        with pytest.raises(Exception, match="(?i)closing|environment|end"):
            LatexWalker(broken, tolerant_parsing=False).get_latex_nodes()


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed")
def test_tables_compile_with_pdflatex(tmp_path):
    doc = "\n".join(
        [r"\documentclass{article}", r"\usepackage{booktabs}", r"\begin{document}"]
        + [to_latex(t) for t in TABLES]
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
