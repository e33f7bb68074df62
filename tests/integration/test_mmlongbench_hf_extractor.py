"""MMLongBench-Doc's local answer extractor (``extractor="hf:PATH"``) on a tiny random chat model.

The model is a 2-layer Qwen2 built from its config with an offline byte tokenizer and a ChatML
template, saved to a folder as a real checkpoint would be; its extractions are noise, so the
tests check the request, batching, caching and records, and score a scripted model's reply.
The prompt file is a stand-in (the release's prompt is not shipped).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.api.errors import UsageError
from harness.api.payloads import Generation
from harness.api.task import ScoringContext, build_task
from tasks.mmlongbench_doc.extractor import EndpointExtractor
from tasks.mmlongbench_doc.hf_extractor import HFExtractor
from tasks.mmlongbench_doc.task import DocSample

CHAT = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
PAIRS = [("How many?", "There are 12."), ("Who?", "Apple Inc."), ("When?", "At 9 a.m.")]


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from harness.models.offline.tokenizer import byte_tokenizer

    folder = tmp_path_factory.mktemp("tiny_chat")
    specials = {"<|im_start|>": 300, "<|im_end|>": 301, "<pad>": 302}
    tok = byte_tokenizer(320, specials, eos="<|im_end|>", pad="<pad>")
    tok.chat_template = CHAT
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=320, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
        eos_token_id=301, pad_token_id=302,
    )  # fmt: skip
    Qwen2ForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture
def prompt(tmp_path):
    path = tmp_path / "prompt_for_answer_extraction.md"
    path.write_text("Extract the answer.\nExtracted answer: [answer]\nAnswer format: [format]\n")
    return path


def test_the_request_is_the_release_request_the_endpoint_sends(chat_model, prompt):
    hf = HFExtractor(str(chat_model), str(prompt), device="cpu")
    endpoint = EndpointExtractor("http://127.0.0.1:9/v1", "gpt-4o", str(prompt))
    for question, reply in PAIRS:
        assert hf.messages(question, reply) == endpoint.request_body(question, reply)["messages"]


def test_replies_are_extracted_in_batches_once_and_cached_across_runs(chat_model, prompt, tmp_path):
    cache = tmp_path / "extractions.jsonl"
    hf = HFExtractor(
        str(chat_model), str(prompt), device="cpu", batch_size=2, cache_file=str(cache)
    )
    hf.prefetch([*PAIRS, PAIRS[0]])  # three distinct replies, one twice
    assert hf.generate_calls == 2  # ceil(3 / 2)
    first = [hf(q, r) for q, r in PAIRS]
    assert hf.generate_calls == 2 and all(isinstance(x, str) for x in first)
    assert len(cache.read_text().splitlines()) == 3
    again = HFExtractor(str(chat_model), str(prompt), device="cpu", cache_file=str(cache))
    assert [again(q, r) for q, r in PAIRS] == first and again.generate_calls == 0
    other_prompt = tmp_path / "other.md"
    other_prompt.write_text("Another prompt.\n")
    fresh = HFExtractor(str(chat_model), str(other_prompt), device="cpu", cache_file=str(cache))
    fresh(*PAIRS[0])  # another prompt is another key: extracted again
    assert fresh.generate_calls == 1


def test_a_torn_cache_line_is_extracted_again_and_the_file_stays_readable(
    chat_model, prompt, tmp_path
):
    cache = tmp_path / "extractions.jsonl"
    hf = HFExtractor(str(chat_model), str(prompt), device="cpu", cache_file=str(cache))
    hf(*PAIRS[0])
    cache.write_text(cache.read_text() + '{"key": "abc", "extr')  # killed mid-write
    reread = HFExtractor(str(chat_model), str(prompt), device="cpu", cache_file=str(cache))
    reread(*PAIRS[1])
    assert reread.generate_calls == 1
    rows = [json.loads(line) for line in cache.read_text().splitlines()[-1:]]
    assert rows[0]["key"] == reread.key(*PAIRS[1])


def test_the_task_records_the_extractor_and_scores_what_the_model_extracts(
    chat_model, prompt, monkeypatch
):
    task = build_task(
        "mmlongbench_doc",
        {
            "extractor": f"hf:{chat_model}",
            "extractor_prompt": str(prompt),
            "extractor_device": "cpu",
        },
    )
    settings = task.settings()
    assert settings["extractor"] == f"hf:{chat_model}"  # as passed (task args win)
    assert settings["extractor_model"] == str(chat_model)
    assert settings["extractor_model_config_sha256"] and settings["extractor_prompt_sha256"]
    assert settings["extractor_decoding"] == "greedy, max_new_tokens=256"
    seen = []

    def scripted(pairs):
        seen.append(len(pairs))
        return [
            "Extracted answer: " + s.answer + "\nAnswer format: String" for s in docs[: len(pairs)]
        ]

    docs = [
        DocSample(f"d.pdf#{i}", "d.pdf", f"q{i}", answer, fmt, (0,))
        for i, (answer, fmt) in enumerate([("12", "Int"), ("Apple Inc.", "Str"), ("9 a.m.", "Str")])
    ]
    monkeypatch.setattr(task.extractor, "_generate", scripted)
    gens = [Generation(text="long free-form reply " + str(i)) for i in range(3)]
    task.prepare_scoring(docs, gens)
    assert seen == [3]  # one batch for the three replies
    ctx = ScoringContext(parse_box=lambda text, size: None)
    rows = [task.score(d, g, ctx) for d, g in zip(docs, gens, strict=True)]
    assert [r["extracted"] for r in rows] == [d.answer for d in docs]
    assert all(r["accuracy"] == 1.0 for r in rows) and seen == [3]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"extractor": "hf:/no/such/folder", "extractor_prompt": "x"}, "not a directory"),
        ({"extractor": "hf-model"}, "did you mean 'hf:PATH'"),
        ({"extractor_batch_size": 4}, "need extractor='hf:PATH'"),
    ],
)
def test_bad_extractor_arguments_are_refused_at_build(args, match):
    with pytest.raises(ValueError, match=match):
        build_task("mmlongbench_doc", args)


def _build(model, prompt, **extra):
    args = {"extractor": f"hf:{model}", "extractor_prompt": str(prompt), **extra}
    return build_task("mmlongbench_doc", args)


@pytest.mark.parametrize("keep", [[], ["config.json"], ["tokenizer.json", "tokenizer_config.json"]])
def test_a_folder_without_config_or_tokenizer_is_refused_at_build(
    keep, chat_model, prompt, tmp_path
):
    import shutil

    folder = tmp_path / "partial"
    folder.mkdir()
    for name in keep:
        shutil.copy(chat_model / name, folder / name)
    with pytest.raises(UsageError, match="holds no chat model transformers can load"):
        _build(folder, prompt)


@pytest.mark.parametrize(
    ("device", "match"),
    [("banana", "'banana' is not a device name"), ("meta", "'meta' asked for, but meta is not")],
)
def test_an_extractor_device_that_does_not_exist_is_refused_at_build(
    device, match, chat_model, prompt
):
    with pytest.raises(UsageError, match=f"extractor_device: device {match}"):
        _build(chat_model, prompt, extractor_device=device)


def test_an_extractor_cuda_device_without_cuda_is_refused_at_build(chat_model, prompt, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(
        UsageError, match="extractor_device: device 'cuda:1'.*CUDA is not available"
    ):
        _build(chat_model, prompt, extractor_device="cuda:1")


def _cache_dir(tmp):
    (tmp / "c").mkdir()
    return tmp / "c", "is not a regular file"


def _cache_under_file(tmp):
    (tmp / "f").write_text("x")
    return tmp / "f" / "c.jsonl", "is a file, not a directory"


def _cache_read_only(tmp, monkeypatch):
    (tmp / "c.jsonl").write_text("")
    real = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if str(p) == str(tmp / "c.jsonl") else real(p, mode)
    )
    return tmp / "c.jsonl", "is not writable"


@pytest.mark.parametrize(
    "case",
    [
        _cache_dir,
        _cache_under_file,
        lambda tmp: (Path("/proc/headscope-no-such/c.jsonl"), "is on /proc"),
        _cache_read_only,
    ],
    ids=["directory", "under-a-file", "under-proc", "read-only"],
)
def test_an_extractor_cache_that_cannot_be_written_is_refused_at_build(
    case, chat_model, prompt, tmp_path, monkeypatch
):
    takes_patch = case is _cache_read_only
    path, match = case(tmp_path, monkeypatch) if takes_patch else case(tmp_path)
    with pytest.raises(UsageError, match=f"extractor_cache '{path}'.*{match}"):
        _build(chat_model, prompt, extractor_cache=str(path))


def test_truncated_extractor_weights_are_a_usage_error(chat_model, prompt, tmp_path):
    import shutil

    folder = tmp_path / "damaged"
    shutil.copytree(chat_model, folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])
    hf = HFExtractor(str(folder), str(prompt), device="cpu")
    with pytest.raises(UsageError, match="no loadable chat model there.*deserializing header"):
        hf(*PAIRS[0])


def test_cli_an_empty_extractor_folder_is_one_usage_line(prompt, tmp_path, capsys):
    from harness.cli.main import main
    from tests.fixtures.make_image_doc_fixtures import make_mmlongbench

    (tmp_path / "empty").mkdir()
    args = make_mmlongbench(tmp_path / "data") | {
        "extractor": f"hf:{tmp_path / 'empty'}",
        "extractor_prompt": str(prompt),
    }
    argv = ["run", "--tasks", "mmlongbench_doc", "--limit", "1", "--interventions", "none",
            "--task-args", json.dumps({"mmlongbench_doc": args}),
            "--output", str(tmp_path / "o")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "holds no chat model" in err, err
    assert not (tmp_path / "o").exists()
