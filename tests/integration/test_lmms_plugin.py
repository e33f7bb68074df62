"""The lmms-eval plugin, offline: ``simple_evaluate`` on a local task with the bundled model.

A small generate task and a log-likelihood task are written to a temporary include path (JSON
data + PNG images built from ``refcocog_mini``'s documents, through headscope's own task so the
prompts and images are exactly the ones the harness uses). One subprocess (``_lmms_runner.py``:
lmms-eval patches globals on import) runs lmms-eval three times into one response cache —
baseline, an ablation, the baseline again — and headscope's own evaluator on the same documents.
The plugin must reproduce the evaluator's outputs and token counts for both interventions, the
two interventions must get separate cache entries, and the repeated baseline must come from the
cache without touching the model.

The model is the bundled toy when its assets are present, else a tiny random LLaVA saved to a
temporary directory. lmms-eval comes from ``pip install -e '.[lmms]'`` plus
``pip install --no-deps -r requirements/lmms.txt`` (done by ``.ci/run``); without it the test
skips, except under CI where a missing lmms-eval is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness.lmms.probe_task import SOURCE_TASK

N = 6
ABLATION = {"select": "random", "k": 0.9, "mode": "zero", "seed": 0}
if importlib.util.find_spec("lmms_eval") is None:
    if os.environ.get("CI"):
        pytest.fail(
            "lmms-eval is not installed: .ci/run must install requirements/lmms.txt",
            pytrace=False,
        )
    pytest.skip(
        "lmms-eval not installed (pip install -e '.[lmms]' && "
        "pip install --no-deps -r requirements/lmms.txt)",
        allow_module_level=True,
    )


def _model_spec(tmp: Path) -> dict:
    from harness.models.toy import TOY_DIR

    if (TOY_DIR / "config.json").is_file():
        return {"name": "toy"}
    from harness.testing import tiny_processors as tp
    from harness.testing.tiny import build_tiny_model

    build_tiny_model("llava").save_pretrained(tmp)
    tp.tiny_llava_processor().save_pretrained(tmp)
    return {"name": "llava", "pretrained": str(tmp)}


def _write_tasks(root: Path) -> list[dict]:
    """The include path, written as docs/lmms_eval.md tells users to write it."""
    from harness.lmms.probe_task import write_probe_tasks

    rows = write_probe_tasks(root, N)
    assert len(rows) == N
    return rows


def _model_args(spec: dict, intervention: str, args: dict | None = None) -> str:
    parts = [f"family={spec['name']}"]
    if "pretrained" in spec:
        parts.append(f"pretrained={spec['pretrained']}")
    parts.append(f"intervention={intervention}")
    if args is not None:
        parts.append("intervention_args=" + json.dumps(args, separators=(",", ":")))
    return ",".join(parts)


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lmms")
    spec = _model_spec(tmp / "model")
    rows = _write_tasks(tmp / "lmms_include")
    base = _model_args(spec, "none")
    ablate = _model_args(spec, "ablate", ABLATION)
    config = {
        "include_path": str(tmp / "lmms_include"),
        "cache": str(tmp / "cache"),
        "model_spec": spec,
        "output": str(tmp / "headscope_out"),
        "n": N,
        "task": SOURCE_TASK,
        "ablation": ABLATION,
        "runs": [
            {"model_args": base, "tasks": ["headscope_probe", "headscope_probe_ll"]},
            {"model_args": ablate, "tasks": ["headscope_probe"]},
            {"model_args": base, "tasks": ["headscope_probe"]},
        ],
    }
    for i, run in enumerate(config["runs"]):
        run["timing_log"] = str(tmp / f"timing{i}.jsonl")
    (tmp / "config.json").write_text(json.dumps(config), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env.update(HF_HOME=str(tmp / "hf"), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1")
    env.update(OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    repo = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("_lmms_runner.py")),
            str(tmp / "config.json"),
        ],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    result = json.loads((tmp / "result.json").read_text(encoding="utf-8"))
    return result, rows, config


def _same(output: str, answer: str) -> bool:
    return "".join(output.split()) == "".join(answer.split())


def test_plugin_reproduces_headscope_outputs_for_each_intervention(outcome):
    result, rows, _ = outcome
    base, ablated, _ = result["runs"]
    for run, label in ((base, "none"), (ablated, "ablate")):
        reference = result["headscope"][label]
        assert [s["resp"] for s in run["samples"]] == [r["output"] for r in reference]
        assert [s["token_counts"] for s in run["samples"]] == [
            {
                "input_tokens": r["timing"]["prompt_tokens"],
                "output_tokens": r["timing"]["output_tokens"],
            }
            for r in reference
        ]
        correct = [_same(r["output"], row["answer"]) for r, row in zip(reference, rows)]
        assert run["metrics"]["headscope_probe"]["exact_match,none"] == sum(correct) / N
    # the ablation changes what the model says (what the two runs are compared for)
    assert [s["resp"] for s in base["samples"]] != [s["resp"] for s in ablated["samples"]]


def test_interventions_do_not_collide_in_the_response_cache(outcome):
    result, _, config = outcome
    base, ablated, again = result["runs"]
    assert base["calls"]["generate_until"] == N and ablated["calls"]["generate_until"] == N
    assert again["calls"] == {"generate_until": 0, "loglikelihood": 0}
    assert [s["resp"] for s in again["samples"]] == [s["resp"] for s in base["samples"]]
    with sqlite3.connect(Path(config["cache"]) / "cache.db") as db:
        rows = db.execute(
            "select count(*), count(distinct cache_key) from responses where task_name = ?",
            ("headscope_probe",),
        ).fetchone()
    assert rows == (2 * N, 2 * N)


def test_prefill_time_is_recorded_per_sample(outcome):
    result, _, config = outcome
    base, ablated, again = result["runs"]
    for i, run in enumerate((base, ablated)):
        log = Path(config["runs"][i]["timing_log"]).read_text(encoding="utf-8").splitlines()
        timings = [json.loads(line) for line in log]
        assert sorted(t["doc_id"] for t in timings) == list(range(N))
        assert all(t["prefill_ms"] > 0 and t["task"] == "headscope_probe" for t in timings)
        assert run["throughput"]["avg_prefill_ms"] > 0
    assert not Path(config["runs"][2]["timing_log"]).exists()  # all answers came from the cache


def test_loglikelihood_requests_reach_the_model_intact(outcome):
    # the numbers themselves are checked against an eager reference in test_lmms_convert.py
    result, _, _ = outcome
    got, want = result["runs"][0]["loglikelihood"], result["direct_loglikelihood"]
    assert len(got) == N
    for (logprob, greedy), (ref_logprob, ref_greedy) in zip(got, want):
        assert logprob == pytest.approx(ref_logprob, rel=1e-5) and greedy == ref_greedy
        assert logprob < 0
