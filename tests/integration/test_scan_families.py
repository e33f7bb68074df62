"""scripts/scan_families.py on a few classes: each column measures what it claims.

- LLaVA: every decoder layer calls the probe once with ``layer_idx``; the grid runs; its
  family units (llava, toy) and the footprints test cover it.
- Qwen3.5: a linear-attention layer (from ``[linear, full]``) never calls the probe; the grid
  runs on the attention layer.
- Mllama: refused as cross-attention (the tiny instance keeps one cross-attention layer).
- BLIP: its text decoder does not go through the attention interface, so the probe is never
  called: ``routed`` is false (the column can say no).
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _scan(*types: str) -> dict:
    args = [a for t in types for a in ("--only", t)]
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "scan_families.py"), *args, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
        cwd=ROOT,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
    )
    return json.loads(out.stdout)


def test_scan_rows_and_counts():
    got = _scan("llava", "qwen3_5", "mllama", "blip")
    rows = {r["model_type"]: r for r in got["rows"]}
    assert list(rows) == ["blip", "llava", "mllama", "qwen3_5"]

    llava = rows["llava"]
    assert llava["build"] == "ok" and llava["forward"] == "model"
    assert llava["routed"] and llava["once"]
    assert llava["layers_called"] == llava["decoder_layers"] == 2
    assert llava["grid"] == "ok"
    assert llava["grid_detail"]["empty"] == 0 and llava["grid_detail"]["zero"] > 1e-4
    assert llava["family"] == ["llava", "toy"] and llava["footprints"]

    qwen = rows["qwen3_5"]
    assert qwen["layer_types"] == ["full_attention", "linear_attention"]
    assert qwen["no_head_layers"] and qwen["routed"] and qwen["once"]
    assert (qwen["layers_called"], qwen["decoder_layers"]) == (1, 2)
    assert qwen["grid"] == "ok" and not qwen["family"]

    mllama = rows["mllama"]
    assert mllama["refused"] == "cross-attention" and mllama["grid"] == "refused"
    assert "cross-attention layers [1]" in mllama["grid_detail"]

    blip = rows["blip"]
    assert blip["build"] == "ok" and blip["routed"] is False and blip["layers_called"] == 0

    counts = got["counts"]
    assert counts["model_types"] == 4 and counts["tiny_build_ok"] == 4
    assert counts["routed"] == 3 and counts["routed_once_per_layer"] == 3
    assert counts["config_layers_without_heads"] == 1
    assert counts["refused_cross_attention"] == 1 and counts["grid_ok"] == 2
    assert counts["with_family_unit"] == counts["footprints_tested"] == 1
    assert got["groups"]["not_routed"] == ["blip"]
    assert got["groups"]["layers_not_called"] == ["mllama", "qwen3_5"]
    assert got["groups"]["refused"] == ["mllama"]


def test_unknown_model_type_is_refused():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "scan_families.py"), "--only", "llavaa"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and "unknown model types ['llavaa']" in proc.stderr
