"""``headscope bench ttft``: real configs load with their published geometry; the whole path
(processor → vision tower → decoder, dense and hybrid) runs on shrunk towers on the CPU."""

import json

import pytest

torch = pytest.importorskip("torch")

from harness.bench.real_models import build_config  # noqa: E402
from harness.bench.ttft import run_ttft  # noqa: E402

# (layers, heads, KV heads, hidden, FFN, vocab, vision depth, vision width) from the configs'
# sources (harness/assets/configs/README.md).
PUBLISHED = {
    "qwen3_vl_4b": (36, 32, 8, 2560, 9728, 151936, 24, 1024),
    "qwen2_5_vl_7b": (28, 28, 4, 3584, 18944, 152064, 32, 1280),
    "llava_onevision_7b": (28, 28, 4, 3584, 18944, 152064, 26, 1152),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_real_configs_load_with_the_published_geometry(name):
    cfg = build_config(name)
    t, v = cfg.get_text_config(), cfg.vision_config
    depth = getattr(v, "depth", None) or v.num_hidden_layers
    got = (t.num_hidden_layers, t.num_attention_heads, t.num_key_value_heads, t.hidden_size,
           t.intermediate_size, t.vocab_size, depth, v.hidden_size)  # fmt: skip
    assert got == PUBLISHED[name]


# 4 frames of 112 px: Qwen2.5 → 2 temporal groups × (112/28)² = 32 tokens; Qwen3 → frames
# rounded to 128 px (32-px cells) → 2 × 16 = 32; OneVision → 4 × 14² pooled + 1 newline = 785.
VISUAL = {"qwen2_5_vl_7b": 32, "qwen3_vl_4b": 32, "llava_onevision_7b": 785}


@pytest.mark.parametrize("name", sorted(VISUAL))
def test_ttft_runs_the_whole_path_on_shrunk_towers(name):
    row = run_ttft(
        name, frames=4, frame_size=112, shrink=True, keep=0.25, window=16, repeats=1,
        device="cpu", dtype="float32",
    )  # fmt: skip
    assert row["visual_tokens"] == VISUAL[name] and row["tokens"] > row["visual_tokens"]
    for variant in ("dense", "hybrid"):
        stats = row[variant]
        assert 0 < stats["vision_ms"] < stats["ttft_ms"]
        assert 0 < stats["vision_share"] < 1
    assert row["window_kernels"] == {"chunked": 2}  # hybrid prefill, two layers, CPU kernel
    assert row["decoder"]["layers"] == 2 and row["shrunk"] is True


def test_ttft_cli_refuses_unknown_models(capsys):
    from harness.bench.ttft import main

    with pytest.raises(SystemExit):
        main(["--model", "gpt4v"])
    assert "unknown model" in capsys.readouterr().err


@pytest.mark.parametrize("bench", ["masks", "ttft"])
def test_bench_help_documents_every_flag(bench, capsys):
    from harness.cli import main as cli
    from tests.integration.test_cli_flags import _options_without_help

    with pytest.raises(SystemExit):
        cli.main(["bench", bench, "--help"])
    text = capsys.readouterr().out
    assert _options_without_help(text) == [] and "--kernel" in text


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA message")
@pytest.mark.parametrize("bench", ["masks", "ttft", "hybrid", "ram"])
def test_bench_refuses_cuda_without_a_gpu(bench, capsys):
    """Every bench with --device says it the way model loading does (check_device), at once."""
    from harness.cli import main as cli

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["bench", bench, "--device", "cuda"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--device cuda: device 'cuda' asked for, but CUDA is not available here" in err
    assert err.rstrip().endswith("use --device cpu")


def test_ttft_cli_prints_a_table_or_with_json_one_tagged_document_per_model(capsys):
    from harness.bench.ttft import main
    from harness.schema.bench import BenchDocument

    argv = ["--model", "qwen2_5_vl_7b", "--shrink", "--frames", "2", "--frame-size", "56"]
    argv += ["--repeats", "1", "--window", "16", "--device", "cpu", "--dtype", "float32"]
    assert main([*argv, "--json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    doc = BenchDocument.from_dict(json.loads(line))
    assert doc.kind == "ttft" and not doc.legacy
    assert [r["model"] for r in doc.rows] == ["qwen2_5_vl_7b"]
    assert doc.rows[0]["threads"] == torch.get_num_threads()
    assert main(argv) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split()[:4] == ["model", "tokens", "dense.ttft_ms", "hybrid.ttft_ms"]
    assert row.split()[0] == "qwen2_5_vl_7b" and float(row.split()[2]) > 0


def test_ttft_refuses_full_size_models_on_cpu_in_one_line(capsys):
    from harness.cli import main as cli

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["bench", "ttft", "--device", "cpu", "--frames", "4"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--device cpu needs --shrink" in err


def test_ttft_memory_check_counts_the_weights_without_allocating(monkeypatch):
    import harness.bench.real_models as real_models

    # Qwen2.5-VL-7B: 8.29 B parameters (7.6 B text + 0.67 B vision) → 2 bytes each in bfloat16.
    size = real_models.weight_bytes("qwen2_5_vl_7b", "bfloat16")
    assert 8.0e9 < size / 2 < 8.5e9
    monkeypatch.setattr(real_models, "_available_bytes", lambda device: size - 1)
    problem = real_models.memory_problem(
        ["qwen3_vl_4b", "qwen2_5_vl_7b"], "bfloat16", "cuda", False
    )
    assert problem.startswith("qwen2_5_vl_7b in bfloat16 needs 15.4 GiB")
    monkeypatch.setattr(real_models, "_available_bytes", lambda device: size)
    assert real_models.memory_problem(["qwen2_5_vl_7b"], "bfloat16", "cuda", False) is None
