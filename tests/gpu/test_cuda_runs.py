"""End to end on CUDA: the main job (all stages), and every benchmark at small sizes."""

import json
import os

import pytest

torch = pytest.importorskip("torch")

DEVICE = os.environ.get("HEADSCOPE_GPU_TESTS_DEVICE", "cuda")
ON_CUDA = DEVICE == "cuda"


@pytest.fixture(scope="module")
def tiny_llava_dir(tmp_path_factory):
    from harness.testing.tiny import build_tiny_model
    from harness.testing.tiny_processors import tiny_llava_processor

    path = tmp_path_factory.mktemp("tinyllava")
    build_tiny_model("llava", num_layers=2, num_heads=4).save_pretrained(path)
    tiny_llava_processor().save_pretrained(path)
    return path


def test_main_job_runs_end_to_end_on_cuda(tmp_path, tiny_llava_dir):
    """Every stage (rank, accuracy with all interventions, bench, diagnose with the noise
    baselines, leaderboards) on the GPU; the results say where and with which kernel."""
    from harness.api.specs import ModelSpec
    from harness.run.main_job import ProtocolConfig, run_protocol

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
    model = ModelSpec(name="llava", pretrained=str(tiny_llava_dir), device=DEVICE)
    run_protocol(model, cfg, tmp_path / "out")
    out = tmp_path / "out"
    for rel in ("rank/ranking.json", "accuracy/results.json", "diagnose/diagnostics_paper.json"):
        assert (out / rel).is_file(), rel
    results = json.loads((out / "accuracy" / "results.json").read_text())
    assert results["environment"]["device"].startswith(DEVICE)
    expected = "flex" if ON_CUDA else "chunked"
    assert results["settings"]["window_kernel"]["prefill"] == expected
    hybrid = [e for e in results["entries"] if e["intervention"].startswith("hybrid")]
    assert hybrid and all(expected in e["intervention_resolved"]["window_kernels"] for e in hybrid)


@pytest.mark.parametrize("scope", ["attention", "layer"])
@pytest.mark.parametrize("kernel", ["auto", "chunked"])
def test_bench_hybrid_small_on_cuda(scope, kernel):
    from harness.bench.hybrid import run_bench

    rows = run_bench(
        geometry="tiny", lengths=(512, 1024), keep=0.25, window=64, repeats=2, warmup=1,
        scope=scope, kernel=kernel, device=DEVICE, dtype="bfloat16" if ON_CUDA else "float32",
    )  # fmt: skip
    ran = "flex" if kernel == "auto" and ON_CUDA else "chunked"
    for row in rows:
        assert set(row["window_kernels"]) == {ran}
        assert row["dense_ms"] > 0 and row["hybrid_ms"] > 0 and row["bound"] > 1


def test_bench_masks_small_on_cuda():
    from harness.bench.mask_cost import run_mask_cost

    row = run_mask_cost(
        geometry="tiny", samples=6, min_length=300, max_length=2000, keep=0.25, window=64,
        kernel="flex" if ON_CUDA else "flex_eager", device=DEVICE,
    )  # fmt: skip
    assert row["type_builds"] <= 2 * len({int(n) for n in row["lengths"]})
    assert 0 <= row["mask_share"] < 1


def test_bench_ttft_shrunk_on_cuda():
    from harness.bench.ttft import run_ttft

    row = run_ttft(
        "qwen2_5_vl_7b", frames=8, frame_size=112, shrink=True, keep=0.25, window=32,
        device=DEVICE, dtype="bfloat16" if ON_CUDA else "float32", repeats=1,
    )  # fmt: skip
    assert row["tokens"] > 0 and row["dense"]["ttft_ms"] > 0 and row["hybrid"]["ttft_ms"] > 0
    assert 0 < row["dense"]["vision_share"] < 1
