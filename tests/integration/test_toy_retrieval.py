"""The shipped toy model has retrieval heads that headscope's own ranking finds.

End to end through the CLI: ``headscope rank`` on a grounded mini task, then ``headscope run``
zero-ablating the top / bottom 10 % of heads by that ranking and random 10 % sets, on held-out
pope_mini. Checked only while TRAINING.md says the phenomenon is present (skipped loudly
otherwise), like the held-out answer checks.
"""

from __future__ import annotations

import json
import re

import pytest

from harness.cli import main as cli
from harness.toy import ASSET_DIR

_TRAINING = (ASSET_DIR / "TRAINING.md").read_text()
_PHENOMENON = re.search(r"^RETRIEVAL PHENOMENON: (\w+)$", _TRAINING, re.M)
PRESENT = bool(_PHENOMENON) and _PHENOMENON.group(1) == "present"
DRAWS = 5


@pytest.mark.skipif(not PRESENT, reason="TRAINING.md does not claim the retrieval phenomenon")
def test_top_ram_heads_matter_bottom_heads_do_not(tmp_path):
    rank_dir, run_dir = tmp_path / "rank", tmp_path / "run"
    argv = ["rank", "--tasks", "refcocog_mini", "--limit", "16", "--no-progress", "--no-figures"]
    assert cli.main([*argv, "--n-boot", "10", "--output", str(rank_dir)]) == 0
    ranking = rank_dir / "ranking.json"
    interventions = ["none"]
    for select in ("top", "bottom"):
        interventions.append(f"ablate:select={select},k=0.1,mode=zero,ranking={ranking}")
    for draw in range(DRAWS):
        interventions.append(
            f"ablate:select=random,k=0.1,mode=zero,seed=0,draws={DRAWS},draw={draw}"
        )
    args = ["run", "--tasks", "pope_mini", "--limit", "32", "--output", str(run_dir)]
    for spec in interventions:
        args += ["--interventions", spec]
    assert cli.main(args) == 0

    results = json.loads((run_dir / "results.json").read_text())
    accuracy = {}
    for entry in results["entries"]:
        value = next(m["value"] for m in entry["metrics"] if m["name"] == "accuracy")
        resolved = entry["intervention_resolved"]
        accuracy.setdefault(resolved.get("select", "none"), []).append(value)
    base = accuracy["none"][0]
    drop = {name: base - sum(v) / len(v) for name, v in accuracy.items()}
    assert len(accuracy["random"]) == DRAWS
    assert base >= 0.9, accuracy
    # Numbers on the shipped weights (64 samples, TRAINING.md): top −0.52, random −0.13, bottom 0.
    assert drop["top"] >= 0.3, drop
    assert drop["top"] >= 3 * max(drop["random"], 0.01), drop
    assert drop["bottom"] <= 0.05, drop
