"""MMDocIR's two modes from the CLI: selected, recorded, and rescored one into the other."""

from __future__ import annotations

import json

import pytest

from harness.cli import main as cli
from harness.testing.mock import ScriptedAdapter
from tests.fixtures import make_image_doc_fixtures as F


@pytest.fixture
def names_pages(monkeypatch):
    """`run` uses a scripted model that names page 2, then page 1, for every question."""
    import harness.api.model as base
    from harness.api.registry import MODEL_FAMILIES

    answer = ScriptedAdapter(lambda r: "Page 2, then page 1.")
    monkeypatch.setattr(base, "load_adapter", lambda spec: answer)
    with MODEL_FAMILIES.temporary("toy", ScriptedAdapter, replace=True):
        yield


@pytest.mark.parametrize("mode", ["official", "lenient"])
def test_mmdocir_mode_from_the_cli_is_recorded_and_rescored(tmp_path, names_pages, mode):
    data = F.make_mmdocir(tmp_path)
    out = tmp_path / "run"
    args = {"mmdocir": data | {"scoring": mode}}
    argv = ["run", "--model", "toy", "--tasks", "mmdocir", "--interventions", "none"]
    assert cli.main([*argv, "--task-args", json.dumps(args), "--output", str(out)]) == 0
    entry = json.loads((out / "results.json").read_text())["entries"][0]
    assert entry["task_settings"]["scoring"] == mode
    metrics = {m["name"]: m["value"] for m in entry["metrics"]}
    # gold: [1] (alpha, Research report / Introduction), [0, 2] (alpha), [3] (beta, Academic
    # paper); the reply names pages 1 then 0 (0-based).
    assert metrics["recall@1"] == pytest.approx((1 + 0 + 0) / 3)
    assert metrics["recall@3"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert ("recall@1_macro" in metrics) == (mode == "official")
    if mode == "official":
        assert metrics["recall@3_macro"] == pytest.approx(((1 + 0.5) / 2 + 0) / 10)
    other = "lenient" if mode == "official" else "official"
    assert cli.main(["rescore", str(out), "--scoring", other]) == 0
    new = json.loads((out / f"results.scoring-{other}.json").read_text())["entries"][0]
    assert new["task_settings"]["scoring"] == other
    renamed = {m["name"]: m["value"] for m in new["metrics"]}
    assert renamed["recall@3"] == pytest.approx(metrics["recall@3"])
    assert ("recall@1_macro" in renamed) == (other == "official")
