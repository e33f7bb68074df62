"""``headscope rank``: RAM from the dispatch probe vs eager attention, ranking file, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from harness.api.payloads import EvidenceError  # noqa: E402
from harness.api.specs import TaskSpec  # noqa: E402
from harness.api.task import build_task  # noqa: E402
from harness.metrics.ram import ram_reference, spearman  # noqa: E402
from harness.models.llava import LlavaAdapter  # noqa: E402
from harness.models.offline import qwen as offline_qwen  # noqa: E402
from harness.models.qwen2_vl import Qwen2VLAdapter  # noqa: E402
from harness.probes.rank import probe_task, run_rank  # noqa: E402
from harness.probes.record import prepare_single, record_masses  # noqa: E402
from harness.schema.ranking import load_ranking  # noqa: E402
from harness.testing import tiny_processors as tp  # noqa: E402
from harness.testing.tiny import build_tiny_model  # noqa: E402

_CACHE: dict[str, object] = {}


def tiny_adapter(family: str):
    if family not in _CACHE:
        if family == "llava":
            ad = LlavaAdapter.from_parts(build_tiny_model("llava"), tp.tiny_llava_processor())
        else:
            ad = Qwen2VLAdapter.from_parts(
                build_tiny_model("qwen2_vl", num_heads=6, num_kv_heads=2),
                offline_qwen.qwen_processor("qwen2_vl"),
            )
        _CACHE[family] = ad
    return _CACHE[family]


def _sample(name: str, index: int = 0):
    task = build_task(name, {"n": 3})
    doc = task.load(limit=3)[index]
    request = task.request(doc)
    return task, doc, request, task.evidence(doc, request)


def _eager_ram(adapter, inputs, query, region):
    """Reference: eager attention probabilities of the text decoder, reduced by ram_reference."""
    cfg = adapter.model.config.get_text_config()
    old = cfg._attn_implementation
    cfg._attn_implementation = "eager"
    try:
        with torch.no_grad():
            out = adapter.model(**inputs, output_attentions=True, use_cache=False)
    finally:
        cfg._attn_implementation = old
    attn = torch.stack([a[0] for a in out.attentions]).double().numpy()  # [L, H, S, S]
    return ram_reference(attn, query, region)


@pytest.mark.parametrize("family", ["llava", "qwen2_vl"])
@pytest.mark.parametrize("task_name", ["refcocog_mini", "vidstg_mini", "mmdocir_mini"])
def test_probe_ram_equals_eager_reference(family, task_name):
    adapter = tiny_adapter(family)
    _, _, request, evidence = _sample(task_name)
    spans = adapter.token_spans(request, evidence)
    inputs = prepare_single(adapter, request, spans)
    got = record_masses(adapter.model, inputs, spans.instruction, {"ev": spans.evidence})["ev"]
    want = _eager_ram(adapter, inputs, spans.instruction, spans.evidence)
    geo = adapter.geometry
    assert got.shape == want.shape == (geo.num_layers, geo.num_heads)
    assert np.abs(got - want).max() <= 1e-6
    # the values carry information: heads differ and the evidence is a strict part of the input
    assert got.std() > 1e-4 and 0 < got.min() and got.max() < 1


def test_probe_leaves_outputs_unchanged():
    adapter = tiny_adapter("llava")
    _, _, request, evidence = _sample("refcocog_mini")
    spans = adapter.token_spans(request, evidence)
    inputs = prepare_single(adapter, request, spans)
    with torch.no_grad():
        before = adapter.model(**inputs).logits
    from harness.probes.record import recording, span_masks

    q, k = span_masks(spans.seq_len, spans.instruction, {"ev": spans.evidence})
    with recording(adapter.model, q, k) as recs, torch.no_grad():
        during = adapter.model(**inputs).logits
    assert recs["ev"].calls == adapter.geometry.num_layers
    assert torch.equal(before, during)


def test_rank_writes_and_reloads(tmp_path):
    adapter = tiny_adapter("qwen2_vl")
    specs = [TaskSpec("refcocog_mini", limit=2, args={"n": 2}), TaskSpec("mmdocir_mini", limit=2)]
    report = run_rank(adapter, specs, tmp_path, seed=3, top_k=2, n_boot=20, progress=False)
    ranking = load_ranking(tmp_path / "ranking.json")
    assert ranking.task_names == ["refcocog_mini", "mmdocir_mini"]
    assert ranking.settings["seed"] == 3 and ranking.settings["attn_implementation"] == "sdpa"
    assert ranking.settings["dtype"] == "float32"
    ref = ranking.tasks["refcocog_mini"]
    assert ref.per_sample.shape == (2, 2, 6) and ref.spec["settings"]["n"] == 2
    np.testing.assert_array_equal(ref.per_sample, report.ranking.tasks["refcocog_mini"].per_sample)
    # a stored per-sample matrix is the probe of that very sample
    task, doc, request, evidence = _sample("refcocog_mini", 1)
    assert ref.sample_ids[1] == doc.doc_id
    spans = adapter.token_spans(request, evidence)
    direct = record_masses(
        adapter.model, prepare_single(adapter, request), spans.instruction, {"e": spans.evidence}
    )["e"]
    np.testing.assert_allclose(ref.per_sample[1], direct, rtol=0, atol=1e-12)
    cross = json.loads((tmp_path / "spearman.json").read_text())
    (pair,) = cross["spearman"]
    assert pair["rho"] == pytest.approx(spearman(ref.mean, ranking.matrix("mmdocir_mini")))
    assert pair["ci_low"] <= pair["rho"] <= pair["ci_high"]
    tops = {t: set(cross["top_heads"][t]) for t in ranking.task_names}
    assert set(cross["universal_heads"]) == tops["refcocog_mini"] & tops["mmdocir_mini"]
    assert all(sum(c) == 2 for c in cross["layer_distribution"].values())
    pytest.importorskip("matplotlib")
    for name in ("refcocog_mini", "mmdocir_mini", "combined"):
        assert (tmp_path / "heatmaps" / f"{name}.png").stat().st_size > 0
        assert (tmp_path / "heatmaps" / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"


def test_evidence_errors_are_counted_and_skipped(monkeypatch):
    adapter = tiny_adapter("llava")
    real = adapter.token_spans
    bad = build_task("refcocog_mini", {"n": 3}).load(limit=3)[1].doc_id

    calls = []

    def flaky(request, evidence=None):  # the second sample's evidence cannot be mapped
        calls.append(request)
        if len(calls) == 2:
            raise EvidenceError("box outside the image")
        return real(request, evidence)

    monkeypatch.setattr(adapter, "token_spans", flaky)
    probe = probe_task(adapter, TaskSpec("refcocog_mini", limit=3, args={"n": 3}), progress=False)
    assert len(probe.values) == 2 and probe.spec["n_skipped"] == 1
    assert probe.skipped == [{"doc_id": bad, "reason": "box outside the image"}]


def test_ungrounded_task_is_refused():
    with pytest.raises(ValueError, match="not grounded"):
        probe_task(tiny_adapter("llava"), TaskSpec("mmmu_mini", limit=1), progress=False)


def test_rank_cli_end_to_end(tmp_path, monkeypatch, capsys):
    from harness.api import model as base
    from harness.cli.main import main

    adapter = tiny_adapter("llava")
    monkeypatch.setattr(base, "load_adapter", lambda spec: adapter)
    out = tmp_path / "rank"
    argv = "rank --tasks refcocog_mini,mmlongbench_mini --limit 2 --n-boot 20 --top-k 0.25"
    argv = [*argv.split(), "--output", str(out), "--no-progress", "--no-figures"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "Spearman" in text and "universal heads" in text and "ranking.json" in text
    ranking = load_ranking(out / "ranking.json")
    assert {t: len(r.per_sample) for t, r in ranking.tasks.items()} == {
        "refcocog_mini": 2,
        "mmlongbench_mini": 2,
    }
    assert not (out / "heatmaps").exists()
    assert main(["rank", "--tasks", "no_such_task", "--output", str(out)]) == 2


def test_ablate_reads_the_ranking(tmp_path):
    from harness.api.intervention import build_intervention
    from harness.api.specs import InterventionSpec

    adapter = tiny_adapter("llava")
    spec = [TaskSpec("refcocog_mini", limit=2, args={"n": 2})]
    report = run_rank(adapter, spec, tmp_path, n_boot=10, progress=False, plots=False)
    args = {"select": "top", "k": 3, "ranking": str(tmp_path / "ranking.json")}
    units, _ = build_intervention(InterventionSpec("ablate", args)).resolve(adapter.geometry)
    assert [str(u) for u in units] == [str(h) for h in report.ranking.top_heads(None, 3)]
