"""Subprocess of ``test_lmms_plugin.py``: lmms-eval runs, then headscope's own evaluator.

lmms-eval patches process-wide state when imported (loguru handlers, filelock's metaclass, ssl
pickling), so it runs here rather than inside the pytest process.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def _as_pair(response):
    import ast

    return ast.literal_eval(response) if isinstance(response, str) else response


def run(config_path: str) -> None:
    """Run the configured lmms-eval runs and the headscope reference; write ``result.json``."""
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager
    from PIL import Image

    from harness.api.model import load_adapter
    from harness.api.payloads import Request
    from harness.api.specs import InterventionSpec, ModelSpec, RunSpec, TaskSpec
    from harness.lmms._convert import continuation_logprob
    from harness.lmms.model import TIMING_LOG_ENV, HeadscopeLMM
    from harness.run.evaluator import run_grid

    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    calls = {"generate_until": 0, "loglikelihood": 0}
    for name in calls:
        original = getattr(HeadscopeLMM, name)

        def counted(self, requests, _original=original, _name=name):
            calls[_name] += len(requests)
            return _original(self, requests)

        setattr(HeadscopeLMM, name, counted)
    manager = TaskManager("WARNING", include_path=config["include_path"], include_defaults=False)
    runs = []
    for run in config["runs"]:
        os.environ[TIMING_LOG_ENV] = run["timing_log"]
        before = dict(calls)
        out = simple_evaluate(
            model="headscope",
            model_args=run["model_args"],
            tasks=run["tasks"],
            task_manager=manager,
            batch_size=1,
            use_cache=config["cache"],
            log_samples=True,
            bootstrap_iters=0,
        )
        samples = sorted(out["samples"]["headscope_probe"], key=lambda s: s["doc_id"])
        ll = sorted(out["samples"].get("headscope_probe_ll", []), key=lambda s: s["doc_id"])
        runs.append(
            {
                "calls": {k: calls[k] - before[k] for k in calls},
                "metrics": out["results"],
                "throughput": out.get("throughput", {}),
                "samples": [
                    {"resp": s["resps"][0][0], "token_counts": s["token_counts"][0]}
                    for s in samples
                ],
                "loglikelihood": [list(_as_pair(s["resps"][0][0])) for s in ll],
            }
        )
    spec = RunSpec(
        model=ModelSpec(**config["model_spec"]),
        tasks=(TaskSpec(config["task"], limit=config["n"]),),
        interventions=(InterventionSpec(), InterventionSpec("ablate", config["ablation"])),
        output=config["output"],
    )
    results = run_grid(spec)
    reference = {}
    for entry in results.entries:
        path = Path(config["output"]) / entry.samples_file
        label = entry.intervention.split(":")[0]
        reference[label] = [json.loads(line) for line in path.read_text().splitlines()]
    adapter = load_adapter(ModelSpec(**config["model_spec"]))
    direct = []
    for row in json.loads(Path(config["include_path"], "probe.json").read_text()):
        with Image.open(row["image"]) as im:
            request = Request(row["text"], images=(im.convert("RGB"),))
        direct.append(continuation_logprob(adapter, request, " " + row["answer"]))
    result = {"runs": runs, "headscope": reference, "direct_loglikelihood": direct}
    Path(config_path).with_name("result.json").write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    run(sys.argv[1])
