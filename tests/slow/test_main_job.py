"""End to end: the main job on a reduced grid (slow: loads and runs a real model path)."""

import json

import pytest

from harness.api.specs import ModelSpec
from harness.run.main_job import ProtocolConfig, run_protocol
from harness.schema.maps import load_maps

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_llava_dir(tmp_path_factory):
    from harness.testing.tiny import build_tiny_model
    from harness.testing.tiny_processors import tiny_llava_processor

    path = tmp_path_factory.mktemp("tinyllava")
    build_tiny_model("llava", num_layers=2, num_heads=4).save_pretrained(path)
    tiny_llava_processor().save_pretrained(path)
    return path


def test_main_job_reduced_grid_writes_every_artifact(tmp_path, tiny_llava_dir):
    cfg = ProtocolConfig(
        tasks=("pope_mini", "refcocog_mini"),
        n_eval=4,
        n_rank=4,
        ablation_k=(0.125,),
        random_draws=2,
        hybrid_keep=(0.25,),
        hybrid_window=16,
        bench_lengths=(256,),
        bench_window=64,
        bench_geometry="tiny",
        n_diagnose=2,
        batch_size=4,
    )
    model = ModelSpec(name="llava", pretrained=str(tiny_llava_dir))
    summary = run_protocol(model, cfg, tmp_path / "out")
    out = tmp_path / "out"
    for rel in (
        "rank/ranking.json",
        "rank/maps.json",
        "accuracy/results.json",
        "bench_hybrid.json",
        "diagnose/diagnostics_paper.json",
        "leaderboards/leaderboard.md",
        "summary.json",
    ):
        assert (out / rel).is_file(), rel
    results = json.loads((out / "accuracy" / "results.json").read_text())
    labels = {e["intervention"] for e in results["entries"]}
    # none + top + bottom + 2 random draws + sap + hybrid (static, streamed decode, adaptive
    # even and ranked)
    assert len(labels) == 10
    assert (out / "bench_decode.json").is_file()
    assert "hybrid:keep=0.25,select=adaptive,window=16" in labels
    assert set(summary["per_task"]) == {"pope_mini", "refcocog_mini"}
    assert all("hybrid_adaptive_keep0.25" in row for row in summary["per_task"].values())
    assert all("hybrid_adaptive_ranked_keep0.25" in row for row in summary["per_task"].values())
    assert all("hybrid_stream_keep0.25" in row for row in summary["per_task"].values())
    assert summary["hybrid_speed"] and summary["hybrid_speed"][0]["length"] == 256
    maps = load_maps(out / "rank")  # stage 1's attention maps: 4 samples, top 4 + bottom 4
    assert maps.settings["maps"] == 4 and len(maps.tasks["refcocog_mini"].samples) == 4
    whys = [h.why for h in maps.tasks["refcocog_mini"].heads]
    assert whys == ["top"] * 4 + ["bottom"] * 4  # all 2 × 4 heads: none left to draw
    npz = (out / "rank" / "maps.npz").stat().st_mtime_ns
    # Rerunning resumes every stage instead of recomputing.
    again = run_protocol(model, cfg, out)
    assert again["per_task"] == summary["per_task"]
    assert (out / "rank" / "maps.npz").stat().st_mtime_ns == npz
