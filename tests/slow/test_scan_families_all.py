"""The whole scan of scripts/scan_families.py prints what docs/families.md says it printed.

Counts and named groups only: the family columns change whenever a family lands. About two
minutes on one core.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNHELD = ("with_family_unit", "footprints_tested")


@pytest.mark.slow
def test_the_whole_scan_prints_what_the_docs_say():
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "scan_families.py"), "--json"],
        capture_output=True,
        text=True,
        timeout=1200,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
    )
    got = json.loads(out.stdout)
    lines = [f"- {k}: {v}" for k, v in got["counts"].items() if k not in UNHELD]
    lines += [f"- {k}: {', '.join(v) or '-'}" for k, v in got["groups"].items()]
    doc = (ROOT / "docs" / "families.md").read_text(encoding="utf-8")
    block = re.search(r"```text\n(.*?)```", doc, re.S).group(1)
    assert [line for line in block.splitlines() if line] == lines
