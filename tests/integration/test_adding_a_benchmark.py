"""docs/adding_a_benchmark.md: its example benchmark passes the checks the built-in tasks pass.

The plugin file and its scoring cases are read from the page itself, so the documented example
is the tested one. The checks run in a fresh interpreter: the plugin's name must not leak into
this process's registry.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "adding_a_benchmark.md"

PROBE = """
import json, sys
from harness.api.payloads import Generation
from harness.api.registry import TASKS, include_path
from harness.api.task import ScoringContext, build_task
from harness.testing.task_checks import task_problems

include_path(sys.argv[1])
cases = json.loads(sys.argv[2])
scores = []
for mode in ("official", "lenient"):
    task = build_task("spell", {"scoring": mode})
    samples = {s.word: s for s in task.load()}
    ctx = ScoringContext(parse_box=lambda text, size: None)
    scores.append([task.score(samples[w], Generation(text=r), ctx)["accuracy"] for w, r in cases])
print(json.dumps({"problems": task_problems("spell"), "scores": scores,
                  "origin": TASKS.origin("spell")}))
"""


def _doc_file(name: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    return re.search(rf"<!-- file: {re.escape(name)} -->\n```\w*\n(.*?)```", text, re.S).group(1)


def _doc_cases() -> list[tuple[str, str, float, float]]:
    rows = re.findall(r"^\| (\w+) \| `([^`]*)` \| ([01]) \| ([01]) \|$", DOC.read_text(), re.M)
    return [(w, r, float(o), float(lenient)) for w, r, o, lenient in rows]


def test_the_example_benchmark_meets_the_task_contract_and_scores_its_cases(tmp_path):
    (tmp_path / "headscope_spell.py").write_text(_doc_file("headscope_spell.py"))
    cases = _doc_cases()
    assert len(cases) == 6
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    pairs = json.dumps([[w, r] for w, r, _, _ in cases])
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path), pairs],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["origin"].endswith("headscope_spell.Spell")  # include_path prefixes the module
    assert out["problems"] == []
    assert out["scores"] == [[c[2] for c in cases], [c[3] for c in cases]]
