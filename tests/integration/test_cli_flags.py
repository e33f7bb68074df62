"""The flags lmms-eval users type, accepted and honoured by `headscope run`."""

import argparse
import json
import logging
import math
import re

import pytest

from harness.api.specs import ModelSpec, SpecError
from harness.cli import main as cli
from harness.testing.mock import ScriptedAdapter
from tests.toy_task import correct_on_even


@pytest.fixture
def mock_model(monkeypatch):
    """`run` uses one scripted mock (kept for inspection) instead of loading a model."""
    import harness.api.model as base
    from harness.api.registry import MODEL_FAMILIES

    adapter = ScriptedAdapter(correct_on_even)
    monkeypatch.setattr(base, "load_adapter", lambda spec: adapter)
    with MODEL_FAMILIES.temporary("toy", ScriptedAdapter, replace=True):
        yield adapter


def test_key_value_args_are_typed_like_lmms_eval_and_more():
    from harness.cli._args import parse_mapping

    text = (
        "pretrained=Qwen/Qwen2.5-VL-7B-Instruct,dtype=bfloat16,max_pixels=1003520,"
        'flag=True,off=false,ratio=0.5,none=null,layers=[1,2],names=[a,b],obj={"a":1,"b":[2,3]},'
        "quoted='x,y'"
    )
    assert parse_mapping(text, "--model_args") == {
        "pretrained": "Qwen/Qwen2.5-VL-7B-Instruct",
        "dtype": "bfloat16",
        "max_pixels": 1003520,
        "flag": True,
        "off": False,
        "ratio": 0.5,
        "none": None,
        "layers": [1, 2],
        "names": ["a", "b"],
        "obj": {"a": 1, "b": [2, 3]},
        "quoted": "x,y",
    }
    assert parse_mapping('{"dtype": "bfloat16"}', "--model-args") == {"dtype": "bfloat16"}


@pytest.mark.parametrize("text", ["dtype", "=x", "a=1,a=2", "{bad json", "[1, 2]"])
def test_malformed_mapping_is_a_usage_error(text):
    from harness.cli._args import parse_mapping

    with pytest.raises(SpecError):
        parse_mapping(text, "--model_args")


def _run_parser():
    parser = argparse.ArgumentParser()
    from harness.cli.run import add_arguments

    add_arguments(parser)
    return parser


def test_both_model_args_spellings_and_forms_give_one_spec():
    from harness.cli.run import model_from_args

    parser = _run_parser()
    a = parser.parse_args(
        [
            "--model",
            "qwen2_5_vl",
            "--model_args",
            "pretrained=/ckpt/q,dtype=bfloat16,max_pixels=802816",
        ]
    )
    b = parser.parse_args(
        ["--model", "qwen2_5_vl", "--model-args",
         '{"pretrained": "/ckpt/q", "dtype": "bfloat16", "args": {"max_pixels": 802816}}']
    )  # fmt: skip
    want = ModelSpec("qwen2_5_vl", "/ckpt/q", dtype="bfloat16", args={"max_pixels": 802816})
    assert model_from_args(a) == model_from_args(b) == want
    c = parser.parse_args(["--model", "llava", "--model_args", "revision=1234", "--device", "cuda"])
    assert model_from_args(c).revision == "1234" and model_from_args(c).device == "cuda"


@pytest.mark.parametrize("text, want", [("5", 5), ("5.0", 5), ("0.25", 0.25)])
def test_limit_is_a_count_or_a_fraction(text, want):
    from harness.cli._args import limit_value

    value = limit_value(text)
    assert value == want and type(value) is type(want)


@pytest.mark.parametrize("text", ["0", "1.5", "-1", "x"])
def test_bad_limit_is_refused(text):
    from harness.cli._args import limit_value

    with pytest.raises(argparse.ArgumentTypeError):
        limit_value(text)


def test_lmms_eval_spellings_run_a_grid(tmp_path, mock_model, capsys):
    out = tmp_path / "run"
    argv = ["run", "--tasks", "test_echo", "--interventions", "none", "--output_path", str(out),
            "--batch_size", "3", "--limit", "0.25", "--log_samples", "--verbosity", "warning",
            "--gen_kwargs", "max_new_tokens=7,temperature=0.5,do_sample=true,top_p=0.9,"
            "num_beams=1"]  # fmt: skip
    try:
        assert cli.main(argv) == 0
        assert logging.getLogger("headscope").level == logging.WARNING
    finally:
        logging.getLogger("headscope").setLevel(logging.NOTSET)
    data = json.loads((out / "results.json").read_text())
    gen = {"max_new_tokens": 7, "temperature": 0.5, "do_sample": True, "top_p": 0.9, "num_beams": 1}
    assert data["spec_passed"]["gen_kwargs"] == gen
    assert data["settings"]["gen_kwargs"] == gen
    assert mock_model.gen_kwargs == gen
    entry = data["entries"][0]
    assert entry["n_samples"] == math.ceil(10 * 0.25)  # lmms-eval: ceil(limit · n)
    assert data["spec_passed"]["batch_size"] == 3
    assert (out / entry["samples_file"]).is_file()


def test_predict_only_logs_outputs_without_scores(tmp_path, mock_model):
    out = tmp_path / "p"
    argv = ["run", "--tasks", "test_echo", "--interventions", "none", "--output", str(out),
            "--predict_only", "--limit", "4"]  # fmt: skip
    assert cli.main(argv) == 0
    data = json.loads((out / "results.json").read_text())
    entry = data["entries"][0]
    assert entry["metrics"] == [] and entry["n_samples"] == 4
    rows = [json.loads(x) for x in (out / entry["samples_file"]).read_text().splitlines()]
    assert len(rows) == 4 and all("output" in r and "scores" not in r for r in rows)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--gen_kwargs", "beams=2"], "unknown key(s) ['beams']"),
        (["--gen_kwargs", "max_new_tokens=0"], "max_new_tokens must be ≥ 1"),
        (["--gen_kwargs", "do_sample=1"], "do_sample=1"),
    ],
)
def test_bad_gen_kwargs_exit_2(extra, message, tmp_path, mock_model, capsys):
    argv = ["run", "--tasks", "test_echo", "--interventions", "none",
            "--output", str(tmp_path / "o"), *extra]  # fmt: skip
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_gen_kwargs_reach_the_hf_generate_call(monkeypatch):
    from harness.api.model import load_adapter
    from harness.api.payloads import Request

    adapter = load_adapter(ModelSpec())
    request = Request(text="what is in the image?", max_new_tokens=16)
    adapter.gen_kwargs = {"max_new_tokens": 2}
    (short,) = adapter.generate([request])
    assert 1 <= short.output_tokens <= 2
    seen = {}
    real = adapter.model.generate

    def spy(**kwargs):
        import torch

        seen.update(kwargs, rng=torch.initial_seed())
        return real(**kwargs)

    monkeypatch.setattr(adapter.model, "generate", spy)
    adapter.gen_kwargs = {"do_sample": True, "temperature": 1.5, "top_p": 0.9, "num_beams": 1}
    adapter.gen_seed = 3
    adapter.generate([request])
    assert (seen["do_sample"], seen["temperature"], seen["top_p"]) == (True, 1.5, 0.9)
    assert seen["max_new_tokens"] == 16 and seen["rng"] == 3  # the task's budget; seeded
    adapter.gen_kwargs = {}
    adapter.generate([request])
    assert seen["do_sample"] is False and seen["temperature"] is None  # greedy by default


def _options_without_help(help_text):
    """Option lines of an argparse help text that carry no description."""
    lines = help_text.splitlines()
    bare = []
    for i, line in enumerate(lines):
        if re.match(r"^  -", line) and not re.search(r"\S\s{2,}\S", line.strip()):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if not re.match(r"^\s{6,}\S", nxt):
                bare.append(line.strip())
    return bare


def test_every_flag_of_every_command_has_help(capsys):
    from harness.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sp in sub.choices.items():
        for action in sp._actions:
            if not isinstance(action, argparse._HelpAction):
                assert action.help, f"headscope {name} {action.option_strings or action.dest}"
    from harness.cli.bench import BENCHES

    for bench in sorted(BENCHES):
        with pytest.raises(SystemExit):
            cli.main(["bench", bench, "--help"])
        text = capsys.readouterr().out
        assert _options_without_help(text) == [], bench
        assert "``" not in text and ":class:" not in text, bench  # prose, not reST


def test_bench_ram_help_reads_as_prose(capsys):
    with pytest.raises(SystemExit):
        cli.main(["bench", "ram", "--help"])
    text = capsys.readouterr().out
    assert "``" not in text and ":class:" not in text and ":mod:" not in text
    assert "RAM probe against eager output_attentions" in text
    assert "- probe: the headscope dispatch with a RecordSpec" in text


def test_prose_unwraps_rest():
    from harness.cli._args import prose

    doc = "Use :class:`~harness.attention.plan.RecordSpec` and ``x = 1`` (:func:`f`)."
    assert prose(doc) == "Use RecordSpec and x = 1 (f)."


def test_run_help_says_what_runs(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    text = capsys.readouterr().out
    assert "Without --interventions / --config: the main job" in text
    assert "With --interventions (or a --config run file): only that" in text
    for flag in ("--model_args", "--output_path", "--batch_size", "--gen_kwargs",
                 "--log_samples", "--predict_only", "--verbosity", "--include_path"):  # fmt: skip
        assert flag in text


def test_run_tasks_may_be_json_objects_with_commas(tmp_path, mock_model):
    out = tmp_path / "j"
    tasks = '{"name": "test_echo", "args": {"n": 3, "broken": [1]}},test_echo'
    argv = ["run", "--tasks", tasks, "--interventions", "none", "--limit", "3",
            "--skip-bad-docs", "--output", str(out)]  # fmt: skip
    assert cli.main(argv) == 0
    entries = json.loads((out / "results.json").read_text())["entries"]
    assert [(e["n_samples"], e["n_skipped"]) for e in entries] == [(2, 1), (3, 0)]


def test_rank_and_diagnose_take_the_same_model_args(tmp_path, capsys):
    for command in ("rank", "diagnose"):
        argv = [command, "--model", "llava", "--model_args", "pretrained=./no/such/ckpt",
                "--limit", "0.5", "--output", str(tmp_path / command)]  # fmt: skip
        assert cli.main(argv) == 2
        assert "'./no/such/ckpt' does not exist" in capsys.readouterr().err


def test_run_file_takes_limit_and_scoring_like_the_flags(tmp_path):
    from harness.cli.run import spec_from_args

    run_file = tmp_path / "run.yaml"
    run_file.write_text("model: toy\ntasks: pope_mini\nlimit: 2\nscoring: lenient\n")
    parser = cli.build_parser()
    spec = spec_from_args(parser.parse_args(["run", "--config", str(run_file)]))
    (task,) = spec.tasks
    assert (task.name, task.limit, task.args["scoring"]) == ("pope_mini", 2, "lenient")
    flag = parser.parse_args(["run", "--config", str(run_file), "--scoring", "official"])
    assert spec_from_args(flag).tasks[0].args["scoring"] == "official"  # the flag wins
    run_file.write_text("tasks: pope_mini\nscoring: 3\n")
    assert cli.main(["run", "--config", str(run_file)]) == 2


def test_main_job_limit_reaches_diagnose_and_few_samples_are_warned(monkeypatch, capsys):
    from harness.cli.run import main_job as run_main_job
    from harness.run import main_job, stages

    seen = {}
    monkeypatch.setattr(main_job, "run_protocol", lambda spec, cfg, out: seen.update(cfg=cfg))
    parser = cli.build_parser()
    for limit, diagnose in (("3", 3), ("500", 8), ("0.5", 8)):
        args = parser.parse_args(["run", "--limit", limit, "--output", "unused"])
        assert run_main_job(args) == 0
        assert seen["cfg"].n_diagnose == diagnose
    assert stages.small_sample_warnings(3, 3) == [
        "3 documents per task: the ranking's bootstrap CIs (Spearman ρ, sparsity profiles) and "
        "the accuracy stderrs and random-k spreads come from so few samples that they mean "
        "little; use at least 30 per task (--limit)"
    ]
    assert stages.small_sample_warnings(64, 0.5) == []
    assert len(stages.small_sample_warnings(64, 10)) == 1


def test_main_job_warns_before_it_starts(monkeypatch, tmp_path, capsys):
    from harness.run import main_job

    monkeypatch.setattr(main_job, "_stages", lambda spec, cfg, out: {})
    out = tmp_path / "job"
    assert cli.main(["run", "--limit", "3", "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "headscope: warning: 3 documents per task" in err
    assert cli.main(["run", "--limit", "40", "--output", str(tmp_path / "j2")]) == 0
    assert "warning" not in capsys.readouterr().err
