"""``headscope rank`` writes the head-sparsity profile of every task (profile.json + report)."""

import json

import numpy as np
import pytest

pytest.importorskip("torch")

from harness.api.specs import TaskSpec  # noqa: E402
from harness.probes.profile import METRICS, profile_metrics, ranking_profiles  # noqa: E402
from harness.probes.rank import format_report, run_rank  # noqa: E402
from harness.schema.profile import ProfileFile  # noqa: E402
from harness.schema.ranking import load_ranking  # noqa: E402
from tests.integration.test_probes_rank import tiny_adapter  # noqa: E402


def test_rank_writes_the_sparsity_profile(tmp_path):
    adapter = tiny_adapter("qwen2_vl")
    specs = [TaskSpec("refcocog_mini", limit=3, args={"n": 3}), TaskSpec("mmdocir_mini", limit=2)]
    report = run_rank(adapter, specs, tmp_path, seed=1, n_boot=30, progress=False, plots=False)
    doc = json.loads((tmp_path / "profile.json").read_text())
    assert tmp_path / "profile.json" in report.files
    assert doc["format"] == "headscope.profile" and list(doc["tasks"]) == specs_names(specs)
    assert list(ProfileFile.from_dict(doc, "profile.json").tasks) == specs_names(specs)
    ranking = load_ranking(tmp_path / "ranking.json")
    assert doc == json.loads(json.dumps(ranking_profiles(ranking, n_boot=30)))  # from the file
    for name, prof in doc["tasks"].items():
        mean = ranking.tasks[name].per_sample.mean(axis=0)
        point = profile_metrics(mean.ravel(), ranking.num_layers)
        for metric in METRICS:
            stats = prof["metrics"][metric]
            assert stats["value"] == pytest.approx(float(point[metric][0]), abs=1e-12)
            assert stats["ci_low"] <= stats["ci_high"]
        assert prof["n_samples"] == len(ranking.tasks[name].per_sample)
        assert prof["bootstrap"]["seed"] == 1 and prof["bootstrap"]["n_boot"] == 30
        assert np.isclose(prof["cumulative_mass"][-1], 1.0)
    text = format_report(report)
    assert "head-sparsity profile" in text and "gini" in text


def specs_names(specs):
    return [s.name for s in specs]
