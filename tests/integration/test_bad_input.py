"""Hostile command lines and run files: each is exit code 2, one error line naming the culprit,
no traceback, and nothing written (the corrected command is never refused as "a different
spec")."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main as cli_main
from harness.schema.bench import bench_document

RUN = ["run", "--tasks", "pope_mini", "--limit", "2", "--interventions", "none"]


def _yaml(text: str):
    def setup(tmp: Path) -> list[str]:
        (tmp / "run.yaml").write_text(text)
        return ["run", "--config", str(tmp / "run.yaml")]

    return setup


def _flags(*argv: str):
    return lambda tmp: list(argv)


def _output_is_file(tmp: Path) -> list[str]:
    (tmp / "o").write_text("mine")
    return RUN


def _parent_is_file(tmp: Path) -> list[str]:
    (tmp / "f").write_text("mine")
    return [*RUN, "--output", str(tmp / "f" / "sub")]


def _leaderboard_output_is_file(tmp: Path) -> list[str]:
    assert main([*RUN, "--output", str(tmp / "run")]) == 0
    (tmp / "o").write_text("mine")
    return ["leaderboard", str(tmp / "run"), "--quiet"]


def _diagnose_output_is_file(tmp: Path) -> list[str]:
    (tmp / "o").write_text("mine")
    return ["diagnose", "--tasks", "refcocog_mini", "--limit", "1"]


def _bench_with_strings(tmp: Path) -> list[str]:
    row = {"length": "4K", "keep": 0.1, "window": 8, "dense_ms": 1.0, "hybrid_ms": 1.0,
           "speedup": "fast", "bound": 2.0}  # fmt: skip
    (tmp / "lb").mkdir()
    (tmp / "lb" / "bench_hybrid.json").write_text(json.dumps(bench_document("hybrid", [row])))
    return ["leaderboard", str(tmp / "lb"), "--quiet"]


def _grid_dir_for_main_job(tmp: Path) -> list[str]:
    (tmp / "o").mkdir()
    (tmp / "o" / "run_spec.json").write_text("{}")
    return ["run"]


def _mean_reference(name: str, write):
    """The grid with ablate:mode=mean reading ``tmp/name``, which ``write(path)`` fills."""

    def setup(tmp: Path) -> list[str]:
        write(tmp / name)
        ablate = f"ablate:select=random,k=2,mode=mean,mean_reference={tmp / name}"
        return [*RUN, "--interventions", ablate]

    return setup


def _pickled(path: Path) -> None:
    import pickle

    path.write_bytes(pickle.dumps({"mean": [[1.0]]}))  # no torch.save: a plain pickle


def _torch_pickled(path: Path) -> None:
    import fractions

    import torch

    torch.save({"mean": fractions.Fraction(1, 3)}, path)  # a zip, with a class weights_only refuses


def _object_npz(path: Path) -> None:
    import numpy as np

    np.savez(path, mean=np.array([{"a": 1}], dtype=object))


def _truncated_npz(path: Path) -> None:
    import numpy as np

    np.savez(path, mean=np.zeros((2, 2, 2)))
    path.write_bytes(path.read_bytes()[:100])


def _on_run(*argv: str):
    """``argv`` (``{run}`` replaced) after a small grid run into ``tmp/run``."""

    def setup(tmp: Path) -> list[str]:
        assert main([*RUN, "--output", str(tmp / "run")]) == 0
        return [str(tmp / "run") if a == "{run}" else a for a in argv]

    return setup


def _heads_import(output: str):
    """``heads import`` of a small SparseMM score file into ``output`` (``{tmp}`` replaced)."""

    def setup(tmp: Path) -> list[str]:
        scores = {f"{layer}-{head}": [0.5 + head] for layer in range(4) for head in range(8)}
        (tmp / "scores.json").write_text(json.dumps(scores))
        (tmp / "f").write_text("a file")
        target = output.replace("{tmp}", str(tmp))
        return ["heads", "import", str(tmp / "scores.json"), "--k", "3", "--output", target]

    return setup


PROC = "/proc/headscope-no-such-dir"

# (id, argv builder (tmp -> argv; "--output tmp/o" is appended unless given), culprit)
CASES = [
    ("layer-outside-model", _flags(*RUN, "--interventions", "sap:layers=[99]"), "layers [99]"),
    ("fractional-k", _flags(*RUN, "--interventions", "ablate:k=2.5,select=random"), "2.5"),
    ("nan-k", _flags(*RUN, "--interventions", '{"name": "ablate", "args": {"k": NaN}}'),
     "non-finite"),
    ("args-as-string", _flags(*RUN, "--interventions", '{"name": "ablate", "args": "k=1"}'),
     "args must be a mapping"),
    ("unknown-intervention-arg", _flags(*RUN, "--interventions", "ablate:colour=1"), "colour"),
    ("bad-choice", _flags(*RUN, "--interventions", "ablate:select=random,mode=loud"), "loud"),
    ("missing-ranking", _flags(*RUN, "--interventions",
                               "ablate:select=top,k=2,ranking=/nonexistent/r.json"),
     "/nonexistent/r.json"),
    ("key-twice", _flags(*RUN, "--interventions", "ablate:k=1,k=2"), "twice"),
    ("task-twice", _flags("run", "--tasks", "pope_mini,pope_mini"), "twice"),
    ("run-file-binary", lambda tmp: (tmp / "r.yaml").write_bytes(b"\xff\xfe\x00") and
     ["run", "--config", str(tmp / "r.yaml")], "cannot be read"),
    ("no-name", _flags(*RUN, "--interventions", ":k=1"), "no name"),
    ("output-is-file", _output_is_file, "is a file"),
    ("parent-is-file", _parent_is_file, "is a file"),
    ("yaml-seed-string", _yaml('tasks: [pope_mini]\nseed: "zero"\n'), "seed"),
    ("yaml-bool-string", _yaml('tasks: [pope_mini]\nskip_bad_docs: "no"\n'), "skip_bad_docs"),
    ("yaml-limit-float", _yaml("tasks: [{name: pope_mini, limit: 2.5}]\n"), "limit"),
    ("yaml-args-string", _yaml('tasks: [{name: pope_mini, args: "n=5"}]\n'), "tasks[0]: args"),
    ("yaml-args-list", _yaml("tasks: [{name: pope_mini, args: [1, 2]}]\n"), "tasks[0]: args"),
    ("yaml-args-null", _yaml("tasks: [{name: pope_mini, args: null}]\n"), "tasks[0]: args"),
    ("yaml-model-name-null", _yaml("tasks: [pope_mini]\nmodel: {name: null}\n"), "model: name"),
    ("yaml-model-number", _yaml("tasks: [pope_mini]\nmodel: 5\n"), "model"),
    ("yaml-task-arg-type", _yaml('tasks: [{name: pope_mini, args: {n: "5"}}]\n'), "argument n"),
    ("yaml-batch-bool", _yaml("tasks: [pope_mini]\nbatch_size: true\n"), "batch_size"),
    ("yaml-task-int", _yaml("tasks: [7]\n"), "tasks[0]"),
    ("yaml-interventions-map", _yaml("tasks: [pope_mini]\ninterventions: {a: 1}\n"),
     "interventions"),
    ("yaml-top-level-list", _yaml("- pope_mini\n"), "mapping"),
    ("yaml-int-key", _yaml("tasks: [pope_mini]\n1: 2\n"), "unknown key"),
    ("yaml-unparseable", _yaml("tasks: [pope_mini\n"), "malformed"),
    ("yaml-inf-k", _yaml("tasks: [pope_mini]\ninterventions: [{name: ablate, "
                         "args: {k: .inf, select: random}}]\n"), "finite"),
    ("limit-zero", _flags("run", "--tasks", "pope_mini", "--limit", "0"), "limit"),
    ("seed-negative", _flags(*RUN, "--seed", "-1"), "seed"),
    ("batch-zero", _flags(*RUN, "--batch-size", "0"), "batch_size"),
    ("task-args-type", _flags(*RUN, "--task-args", '{"pope_mini": {"n": 2.5}}'), "argument n"),
    ("task-args-string", _flags(*RUN, "--task-args", '{"pope_mini": "n=5"}'), "--task-args"),
    ("model-args-nan", _flags(*RUN, "--model-args", '{"args": {"x": NaN}}'), "non-finite"),
    ("model-args-type", _flags(*RUN, "--model-args", '{"dtype": 5}'), "dtype"),
    ("main-job-ignores-interventions",
     _flags("run", "--interventions", "bogus:x=1", "--skip-bad-docs"), "--interventions"),
    ("main-job-in-grid-dir", _grid_dir_for_main_job, "grid run"),
    ("main-job-limit-zero", _flags("run", "--limit", "0"), "--limit"),
    ("leaderboard-bench-strings", _bench_with_strings, "must be finite numbers"),
    ("leaderboard-output-is-file", _leaderboard_output_is_file, "is a file"),
    ("diagnose-output-is-file", _diagnose_output_is_file, "is a file, not a directory"),
    ("rank-output-is-file", lambda tmp: (tmp / "o").write_text("x") and
     ["rank", "--tasks", "refcocog_mini", "--limit", "1"], "is a file"),
    ("rank-limit-zero", _flags("rank", "--tasks", "refcocog_mini", "--limit", "0"), "limit"),
    ("rank-top-k-fraction", _flags("rank", "--tasks", "refcocog_mini", "--top-k", "2.5"), "2.5"),
    ("rank-top-k-too-many", _flags("rank", "--tasks", "refcocog_mini", "--top-k", "999"),
     "--top-k: k=999 exceeds the model's"),
    ("rank-n-boot-zero", _flags("rank", "--tasks", "refcocog_mini", "--n-boot", "0"), "n-boot"),
    ("diagnose-energy", _flags("diagnose", "--tasks", "refcocog_mini", "--energy", "2"),
     "--energy must be in (0, 1]"),
    ("device-banana", _flags(*RUN, "--device", "banana"), "'banana' is not a device name"),
    ("device-cpu-index", _flags(*RUN, "--device", "cpu:-1"), "'cpu:-1' is not a device name"),
    ("device-meta", _flags(*RUN, "--device", "meta"), "meta is not available here"),
    ("mean-reference-garbage", _mean_reference("m.pt", lambda p: p.write_bytes(b"\x80garbage")),
     "is not a zip archive"),
    ("mean-reference-pickled", _mean_reference("m.pt", _pickled), "is not a zip archive"),
    ("mean-reference-torch-pickled", _mean_reference("m.pt", _torch_pickled),
     "pickled objects that torch.load(weights_only=True) refuses"),
    ("mean-reference-empty-pt", _mean_reference("m.pt", lambda p: p.write_bytes(b"")),
     "is not a zip archive"),
    ("mean-reference-truncated-npz", _mean_reference("m.npz", _truncated_npz),
     "is not a zip archive"),
    ("mean-reference-object-npz", _mean_reference("m.npz", _object_npz), "allow_pickle=False"),
    ("output-under-proc", _flags(*RUN, "--output", PROC), "is on /proc"),
    ("output-under-proc-self", _flags(*RUN, "--output", "/proc/self/x"), "is on /proc"),
    ("main-job-output-under-proc", _flags("run", "--output", PROC), "is on /proc"),
    ("means-output-under-proc", _flags("means", "--tasks", "pope_mini", "--output",
                                       f"{PROC}/m.pt"), "is on /proc"),
    ("rank-output-under-proc", _flags("rank", "--tasks", "refcocog_mini", "--output", PROC),
     "is on /proc"),
    ("view-output-under-proc", _on_run("view", "{run}", "--output", PROC), "is on /proc"),
    ("rescore-output-under-proc",
     _on_run("rescore", "{run}", "--scoring", "lenient", "--output", PROC), "is on /proc"),
    ("leaderboard-output-under-proc", _on_run("leaderboard", "{run}", "--output", PROC),
     "is on /proc"),
    ("heads-output-under-proc", _heads_import(f"{PROC}/h.json"), "is on /proc"),
    ("heads-output-under-a-file", _heads_import("{tmp}/f/h.json"), "is a file, not a directory"),
    ("rank-no-map-heads", _flags("rank", "--tasks", "refcocog_mini", "--maps-heads", "0",
                                 "--maps-random", "0"), "choose no head to map"),
    ("main-job-no-map-heads", _flags("run", "--maps-heads", "0", "--maps-random", "0"),
     "choose no head to map"),
]  # fmt: skip


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if re.match(r"headscope( \w+)?: error: ", line)]


def main(argv: list[str]) -> int:
    try:
        return cli_main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        return int(exc.code or 0)


@pytest.mark.parametrize(("builder", "culprit"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_error_and_writes_nothing(builder, culprit, tmp_path, capsys):
    argv = builder(tmp_path)
    if "--output" not in argv:
        argv = [*argv, "--output", str(tmp_path / "o")]
    before = sorted(tmp_path.rglob("*"))
    rc = main(argv)
    err = capsys.readouterr().err
    lines = _error_lines(err)
    assert rc == 2, err
    assert len(lines) == 1 and culprit in lines[0], err
    assert "Traceback" not in err and err.rstrip().endswith(lines[0])
    assert sorted(tmp_path.rglob("*")) == before  # nothing written, no directory created


def test_corrected_command_runs_after_a_refused_one(tmp_path, capsys):
    out = str(tmp_path / "o")
    assert main([*RUN, "--interventions", "sap:layers=[99]", "--output", out]) == 2
    assert not (tmp_path / "o").exists()
    assert main([*RUN, "--interventions", "sap:layers=[1]", "--output", out]) == 0
    assert json.loads((tmp_path / "o" / "results.json").read_text())["status"] == "complete"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_output_parent(tmp_path, capsys):
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o555)
    try:
        assert main([*RUN, "--output", str(tmp_path / "ro" / "o")]) == 2
    finally:
        (tmp_path / "ro").chmod(0o755)
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "not writable" in lines[0]


def test_leaderboard_names_a_truncated_or_ill_typed_results_file(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*RUN, "--output", str(out)]) == 0
    text = (out / "results.json").read_text()
    bad = tmp_path / "lb" / "a"
    bad.mkdir(parents=True)
    (bad / "results.json").write_text(text[:300])
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "lb"), "--quiet"]) == 2
    lines = _error_lines(capsys.readouterr().err)
    assert (
        len(lines) == 1 and str(bad / "results.json") in lines[0] and "not valid JSON" in lines[0]
    )
    doc = json.loads(text)
    doc["entries"][0]["metrics"][0]["value"] = "0.5"
    (bad / "results.json").write_text(json.dumps(doc))
    assert main(["leaderboard", str(tmp_path / "lb"), "--quiet"]) == 2
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "metric 0: value must be a finite number" in lines[0]


def test_leaderboard_says_a_means_file_is_not_a_headscope_file(tmp_path, capsys):
    # `means --output runs/means.pt`, then `leaderboard runs/*`: the shell passes means.pt too
    runs = tmp_path / "runs"
    assert main([*RUN, "--output", str(runs / "toy")]) == 0
    assert (
        main(["means", "--tasks", "pope_mini", "--limit", "2", "--output", str(runs / "means.pt")])
        == 0
    )
    capsys.readouterr()
    assert main(["leaderboard", str(runs / "toy"), str(runs / "means.pt"), "--quiet"]) == 2
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "means.pt: not a headscope file" in lines[0], lines
    assert "truncated or damaged" not in lines[0] and "hint: leave it out" in lines[0]


def test_real_process_prints_one_line_and_no_traceback(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    (tmp_path / "f").write_text("a file")
    for argv in (
        [*RUN, "--interventions", '{"name": "ablate", "args": "k=1"}', "--output", "o"],
        [*RUN, "--output", str(tmp_path / "f" / "x")],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "harness", *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and len(_error_lines(proc.stderr)) == 1


def test_unwritable_output_parent_even_as_root(tmp_path, capsys, monkeypatch):
    (tmp_path / "ro").mkdir()
    real = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if str(p) == str(tmp_path / "ro") else real(p, mode)
    )
    assert main([*RUN, "--output", str(tmp_path / "ro" / "o")]) == 2
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "not writable" in lines[0]
    assert list((tmp_path / "ro").iterdir()) == []
