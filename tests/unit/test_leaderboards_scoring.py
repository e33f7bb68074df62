"""Leaderboards: different scoring modes are refused; lmms-eval results are another source."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.schema.results import MetricDefRecord, MetricRecord, ResultEntry, RunResults
from leaderboards.accuracy import accuracy_table
from leaderboards.settings import MergeError
from leaderboards.sources import load_sources

LMMS = Path(__file__).resolve().parents[1] / "data" / "leaderboards" / "lmms_eval"
MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"


def _run(path: Path, scoring: str | None, task: str = "pope", value: float = 0.8) -> Path:
    settings = {} if scoring is None else {"scoring": scoring}
    res = RunResults(
        spec_passed={},
        spec_resolved={},
        headscope_version="0",
        git={},
        environment={},
        model={"family": "qwen2_5_vl", "pretrained": MODEL, "dtype": "bfloat16"},
        settings={"dtype": "bfloat16"},
        metric_defs={task: [MetricDefRecord("accuracy", True)]},
        entries=[
            ResultEntry(
                task=task,
                task_args={},
                split="test",
                task_settings=settings,
                intervention="none",
                intervention_spec={"name": "none", "args": {}},
                intervention_resolved={},
                metrics=[MetricRecord("accuracy", value, 0.01, 8)],
                n_samples=8,
            )
        ],
    )
    path.mkdir(parents=True, exist_ok=True)
    res.save(path / "results.json")
    return path


def test_one_task_under_two_modes_is_refused(tmp_path):
    a, b = _run(tmp_path / "a", "official"), _run(tmp_path / "b", "lenient")
    with pytest.raises(MergeError, match=r"pope: .*lenient in .*official in .*rescore"):
        load_sources([a, b])
    with pytest.raises(MergeError, match="unrecorded"):
        load_sources([a, _run(tmp_path / "old", None)])


def test_same_mode_and_other_tasks_merge(tmp_path):
    a, b = _run(tmp_path / "a", "official"), _run(tmp_path / "b", "official", value=0.7)
    c = _run(tmp_path / "c", "lenient", task="mmmu")
    assert len(load_sources([a, b, c]).runs) == 3


def test_lmms_eval_results_are_read_and_converted():
    sources = load_sources([LMMS])
    (run,) = sources.runs
    assert run.model == MODEL
    entries = {e.task: e for e in run.results.entries}
    assert sorted(entries) == ["mlvu", "pope", "videomme"]
    assert any("textvqa_val" in w for w in sources.warnings)  # reported, not dropped silently
    pope = {m.name: m for m in entries["pope"].metrics}
    assert pope["accuracy"].value == 0.875 and pope["accuracy"].stderr is None
    assert pope["f1"].value == pytest.approx(0.8742857142857143) and pope["accuracy"].n == 8
    vmme = entries["videomme"].metrics[0]
    assert (vmme.name, vmme.value, vmme.stderr) == ("accuracy", 0.625, 0.0125)  # % → fraction
    assert entries["mlvu"].metrics[0].name == "m_avg"
    assert entries["mlvu"].metrics[0].value == pytest.approx(0.48)
    assert all(e.task_settings["scoring"] == "lmms_eval" for e in entries.values())


def test_lmms_eval_numbers_sit_beside_headscope_lmms_eval_mode(tmp_path):
    ours = _run(tmp_path / "ours", "lmms_eval", value=0.86)
    runs = load_sources([ours, LMMS]).runs
    rows = [r for r in accuracy_table(runs).rows if r["task"] == "pope"]
    assert sorted(r["value"] for r in rows) == [0.86, 0.875]
    assert len({r["model"] for r in rows}) == 1  # one model, two sources side by side
    with pytest.raises(MergeError, match="lmms_eval in"):
        load_sources([_run(tmp_path / "off", "official"), LMMS])


def test_a_copied_lmms_eval_file_in_a_folder_is_found(tmp_path):
    target = tmp_path / "lmms" / "Qwen__Qwen2.5-VL-7B-Instruct"
    target.mkdir(parents=True)
    shutil.copy(next(LMMS.glob("*_results.json")), target)
    doc = json.loads(next(target.glob("*.json")).read_text())
    assert doc["config"]["model_args"].startswith("pretrained=")
    assert len(load_sources([tmp_path / "lmms"]).runs) == 1
