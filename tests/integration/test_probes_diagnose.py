"""``headscope diagnose`` on tiny models: the files, their values, ε_RoPE's identity rotary."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from harness.api.specs import TaskSpec  # noqa: E402
from harness.api.task import build_task  # noqa: E402
from harness.metrics.geometry import erank, tme  # noqa: E402
from harness.models.llava import LlavaAdapter  # noqa: E402
from harness.models.offline import qwen as offline_qwen  # noqa: E402
from harness.models.qwen2_vl import Qwen2VLAdapter  # noqa: E402
from harness.probes.diagnose import rotary_identity  # noqa: E402
from harness.probes.diagnose_run import run_diagnose  # noqa: E402
from harness.probes.record import prepare_single  # noqa: E402
from harness.probes.states import capture_states  # noqa: E402
from harness.testing import tiny_processors as tp  # noqa: E402
from harness.testing.tiny import build_tiny_model, tiny_text_inputs  # noqa: E402
from leaderboards.diagnostics import parse_diagnostics  # noqa: E402

_CACHE: dict[str, object] = {}


def llava():
    if "llava" not in _CACHE:
        _CACHE["llava"] = LlavaAdapter.from_parts(
            build_tiny_model("llava"), tp.tiny_llava_processor()
        )
    return _CACHE["llava"]


def _finite(doc):
    vals = [r[k] for r in doc["layers"] for k in r if k not in ("layer", "module")]
    vals += [b[k] for b in doc["baselines"].values() for k in ("RID", "MixIG")]
    return all(isinstance(v, float) and math.isfinite(v) for v in vals)


def test_diagnose_writes_both_variants(tmp_path):
    adapter = Qwen2VLAdapter.from_parts(
        build_tiny_model("qwen2_vl"), offline_qwen.qwen_processor("qwen2_vl")
    )
    report = run_diagnose(
        adapter, [TaskSpec("refcocog_mini", limit=2, args={"n": 2})], tmp_path, progress=False
    )
    docs = {v: json.loads((tmp_path / f"diagnostics_{v}.json").read_text()) for v in report.docs}
    assert sorted(docs) == ["code", "paper"]
    for variant, doc in docs.items():
        parsed = parse_diagnostics(doc, f"diagnostics_{variant}.json")
        assert parsed.variant == variant and doc["n_samples"] == 2
        assert [(r["layer"], r["module"]) for r in parsed.layers] == [
            (0, "attention"), (0, "ffn"), (1, "attention"), (1, "ffn")
        ]  # fmt: skip
        assert _finite(doc) and set(parsed.baselines) == {"noise_delta", "noise_qkv"}
        assert all(len(b["per_layer"]["RID"]) == 2 for b in doc["baselines"].values())
        assert math.isfinite(doc["erope_floor"]) and doc["erope_floor"] > 0
        kr = doc["key_region"]
        assert kr["n"] == 2 and 0 < kr["mean"] < 1
        split = kr["by_correctness"]
        assert split["correct"]["n"] + split["wrong"]["n"] == 2
    paper, code = docs["paper"]["layers"], docs["code"]["layers"]
    # variant-independent fields agree; ΔD and TME differ by definition
    assert [r["erank_in"] for r in paper] == [r["erank_in"] for r in code]
    assert any(abs(p["dD"] - c["dD"]) > 1e-6 for p, c in zip(paper, code))
    assert all(0 <= r["dD"] <= 1 for r in paper) and all(0 <= r["dD"] <= 2**0.5 for r in code)


def test_diagnose_values_match_hidden_states(tmp_path):
    """LLaVA has no DeepStack: layer 0's block input / output are hidden_states[0] / [1].

    hidden 4 · 96 = 384 > S ≈ 250 tokens: the S < H case.
    """
    model = build_tiny_model("llava", head_dim=96)
    adapter = LlavaAdapter.from_parts(model, tp.tiny_llava_processor())
    spec = TaskSpec("mmdocir_mini", limit=1, args={"n": 1})
    report = run_diagnose(
        adapter, [spec], tmp_path, baselines=(), erope=False, key_region=False, progress=False
    )
    task = build_task("mmdocir_mini", {"n": 1})
    inputs = prepare_single(adapter, task.request(task.load(limit=1)[0]))
    with torch.no_grad():
        hs = adapter.model(**inputs, output_hidden_states=True).hidden_states
    x0, x1 = hs[0][0].double().numpy(), hs[1][0].double().numpy()
    assert x0.shape[0] < x0.shape[1] == 384
    attn0, ffn0 = report.docs["paper"]["layers"][:2]
    assert attn0["erank_in"] == pytest.approx(erank(x0), rel=1e-6)
    assert ffn0["erank_out"] == pytest.approx(erank(x1), rel=1e-6)
    assert ffn0["TME_out"] == pytest.approx(tme(x1, "paper"), rel=1e-6)
    assert report.docs["code"]["layers"][1]["TME_out"] == pytest.approx(tme(x1, "code"), rel=1e-6)
    assert report.docs["paper"]["erope_floor"] is None and report.docs["paper"]["baselines"] == {}


def test_rotary_identity_removes_position_information():
    """Without RoPE, causal attention at the last token ignores the order of earlier tokens."""
    adapter = llava()
    model = adapter.model
    ids = tiny_text_inputs(model, 1, 10, seed=1)["input_ids"]
    swapped = ids.clone()
    swapped[0, [2, 5]] = ids[0, [5, 2]]

    def last_post_attn(input_ids):
        with capture_states(model, layers=[0]) as cap, torch.no_grad():
            model(input_ids=input_ids)
        return cap.post_attn[0][0, -1]

    with rotary_identity(model) as patched:
        a, b = last_post_attn(ids), last_post_attn(swapped)
    assert patched == 1
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    assert (last_post_attn(ids) - last_post_attn(swapped)).abs().max() > 1e-4  # RoPE is back


def test_diagnose_cli_end_to_end(tmp_path, monkeypatch, capsys):
    from harness.api import model as base
    from harness.cli.main import main
    from leaderboards.sources import load_sources

    monkeypatch.setattr(base, "load_adapter", lambda spec: llava())
    out = tmp_path / "diag"
    argv = "diagnose --tasks refcocog_mini --limit 1 --baseline-layers all --no-generate"
    assert main([*argv.split(), "--output", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "RID paper" in text and "noise_delta" in text and "ε_RoPE" in text
    sources = load_sources([out])
    assert sorted(d.variant for d in sources.diagnostics) == ["code", "paper"]
    doc = json.loads((out / "diagnostics_paper.json").read_text())
    assert doc["settings"]["baseline_layers"] == "all"
    assert doc["key_region"]["by_correctness"] is None and doc["key_region"]["n"] == 1
    assert np.isfinite(doc["erope_floor"])
    assert main(["diagnose", "--baselines", "nope", "--output", str(out)]) == 2
