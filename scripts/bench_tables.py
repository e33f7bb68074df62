"""Before/after of the leaderboard table writers (hand-written → tabulate + pylatexenc).

Renders every table that ``headscope leaderboard`` builds from the given inputs (default: the
hand-made leaderboard test data) with the writers of an older revision (``--before``, read
with ``git show``) and with the current ones, then compares:

- Markdown: the cell grids (cells split on unescaped ``|``, stripped) must be identical;
- LaTeX: every cell turned back into text by pylatexenc's ``latex2text`` must be identical,
  the column spec and row count too; each document is also compiled with ``pdflatex`` when
  it is installed (both revisions), and the result is reported;
- time to render all tables in both forms.

Run: PYTHONPATH=. python scripts/bench_tables.py [--before f1d26d9] [INPUTS...]
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "leaderboards"


def _old_module(rev: str):
    src = subprocess.run(
        ["git", "show", f"{rev}:leaderboards/formatting.py"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    path = Path(tempfile.mkdtemp()) / "formatting_before.py"
    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("formatting_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["formatting_before"] = module
    spec.loader.exec_module(module)
    return module


def md_grid(md: str) -> list[list[str]]:
    rows = [ln for ln in md.splitlines() if ln.startswith("|")]
    grid = [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in rows]
    return [grid[0], *grid[2:]]  # header + body, without the alignment rule


def tex_grid(tex: str) -> tuple[str, list[list[str]]]:
    from pylatexenc.latex2text import LatexNodes2Text

    spec = re.search(r"\\begin\{tabular\}\{(\w*)\}", tex).group(1)
    body = tex.split(r"\begin{tabular}{" + spec + "}", 1)[1].split(r"\end{tabular}")[0]
    body = body.replace(r"\toprule", "").replace(r"\midrule", "").replace(r"\bottomrule", "")
    to_text = LatexNodes2Text(math_mode="text")
    grid = []
    for row in body.split(r"\\"):
        if row.strip():
            cells = re.split(r"(?<!\\)&", row)
            grid.append([" ".join(to_text.latex_to_text(c).split()) for c in cells])
    return spec, grid


def pdflatex_ok(tex_docs: list[str]) -> str:
    if shutil.which("pdflatex") is None:
        return "pdflatex not installed"
    tmp = Path(tempfile.mkdtemp())
    doc = "\n".join([r"\documentclass{article}", r"\usepackage{booktabs}",
                     r"\begin{document}", *tex_docs, r"\end{document}"])  # fmt: skip
    (tmp / "t.tex").write_text(doc, encoding="utf-8")
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
        cwd=tmp, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if run.returncode == 0:
        return "compiles"
    err = next((ln for ln in run.stdout.splitlines() if ln.startswith("!")), "?")
    return f"FAILS: {err}"


def main() -> None:
    from leaderboards import build_tables, load_sources
    from leaderboards import formatting as new

    parser = argparse.ArgumentParser()
    parser.add_argument("inputs", nargs="*")
    parser.add_argument("--before", default="f1d26d9")
    args = parser.parse_args()
    inputs = args.inputs or [str(DATA / r) for r in ("run_a", "run_b", "run_c")]
    old = _old_module(args.before)
    tables = build_tables(load_sources(inputs), False, 0.25, 200)
    md_diff = tex_diff = 0
    for t in tables:
        if md_grid(old.to_markdown(t)) != md_grid(new.to_markdown(t)):
            md_diff += 1
            print("markdown differs:", t.name)
        if tex_grid(old.to_latex(t)) != tex_grid(new.to_latex(t)):
            tex_diff += 1
            print("latex differs:", t.name, tex_grid(old.to_latex(t)), tex_grid(new.to_latex(t)))
    timings = {}
    for name, mod in (("before", old), ("after", new)):
        t0 = time.perf_counter()
        for _ in range(20):
            for t in tables:
                mod.to_markdown(t)
                mod.to_latex(t)
        timings[name] = (time.perf_counter() - t0) / 20
    cells = sum(len(t.rows) * len(t.shown) for t in tables)
    print(
        f"{len(tables)} tables, {cells} cells: markdown grids differing {md_diff}, "
        f"latex cell texts differing {tex_diff}"
    )
    print(
        f"render md+latex of all tables: before {timings['before'] * 1e3:.1f} ms, "
        f"after {timings['after'] * 1e3:.1f} ms"
    )
    print("pdflatex before:", pdflatex_ok([old.to_latex(t) for t in tables]))
    print("pdflatex after: ", pdflatex_ok([new.to_latex(t) for t in tables]))
    ascii_before = sum(not old.to_latex(t).isascii() for t in tables)
    print(
        f"tables with raw non-ASCII LaTeX: before {ascii_before}, after "
        f"{sum(not new.to_latex(t).isascii() for t in tables)}"
    )


if __name__ == "__main__":
    main()
