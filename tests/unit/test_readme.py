"""The README fits a screen and leads everywhere: ≤ 250 lines, one screenshot, every docs page
linked, every relative link in README.md and docs/ resolving, and its test command the one
``.ci/run`` runs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_readme_fits_a_screen_with_one_screenshot():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert len(re.findall(r"!\[[^\]]*\]\(", text)) == 1


def test_every_docs_page_is_linked_from_the_readme():
    text = README.read_text(encoding="utf-8")
    linked = {m for m in LINK.findall(text)}
    missing = [p.name for p in DOCS if f"docs/{p.name}" not in linked]
    assert not missing, f"README 'Read more' lacks {missing}"


def test_relative_links_resolve():
    broken = []
    for page in [README, *DOCS]:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} → {target}")
    assert not broken, broken


def test_readme_test_command_is_what_ci_runs():
    text = README.read_text(encoding="utf-8")
    block = text.split("# 2. run the tests as CI does", 1)[1].split("```", 1)[0]
    command = [line for line in block.splitlines() if "pytest" in line]
    assert command == ["python -m pytest -q"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[-1] == "python -m pytest -q" and ci[-2] == "# The README's test command:"
    assert "export CI=true" in ci  # a skipped browser or LaTeX test fails there
