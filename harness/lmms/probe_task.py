"""A small lmms-eval include directory built from headscope's ``refcocog_mini`` documents.

``python -m harness.lmms.probe_task DIR [--n 6]`` writes into ``DIR`` (created; its name must
not be ``tasks``, which would shadow headscope's ``tasks`` package): the documents' images as
PNG files, their prompts and answers in ``probe.json``, ``probe_utils.py`` (``doc_to_*`` and
``process_results``) and two task files, ``headscope_probe.yaml`` (``generate_until``,
exact match of the box text) and ``headscope_probe_ll.yaml`` (``loglikelihood`` of the answer).
Then ``python -m lmms_eval --model headscope --model_args 'family=toy,intervention=none'
--tasks headscope_probe --include_path DIR ...`` runs it (docs/lmms_eval.md), and
``tests/integration/test_lmms_plugin.py`` checks the plugin against headscope's own evaluator
on it. The prompts and images are the ones headscope's task builds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["SOURCE_TASK", "write_probe_tasks", "main"]

#: The headscope task whose documents the probe tasks hold (the toy's answers differ by document).
SOURCE_TASK = "refcocog_mini"
TASK_YAML = """
task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: {output_type}
doc_to_visual: !function probe_utils.doc_to_visual
doc_to_text: !function probe_utils.doc_to_text
doc_to_target: !function probe_utils.doc_to_target
{extra}
"""
GENERATE_EXTRA = """
generation_kwargs:
  max_new_tokens: 32
  temperature: 0
  do_sample: false
  until: ["<never-generated>"]
process_results: !function probe_utils.process_generation
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
"""
LL_EXTRA = """
process_results: !function probe_utils.process_loglikelihood
metric_list:
  - metric: logprob
    aggregation: mean
    higher_is_better: true
"""
UTILS = """
import ast

from PIL import Image


def doc_to_visual(doc):
    with Image.open(doc["image"]) as im:
        return [im.convert("RGB")]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return doc["text"]


def doc_to_target(doc):
    return " " + doc["answer"]  # a continuation starts with its separator (lm-eval convention)


def same(output, answer):
    return "".join(output.split()) == "".join(answer.split())  # the toy decodes "[ 0.5 , ..."


def process_generation(doc, results):
    return {"exact_match": float(same(results[0], doc["answer"]))}


def process_loglikelihood(doc, results):
    return {"logprob": as_pair(results[0])[0]}


def as_pair(response):
    # lmms-eval 0.7.3's evaluator turns every non-text response into str() (its
    # unwrap_generation_output fallback), so a (logprob, greedy) pair arrives as its repr
    return ast.literal_eval(response) if isinstance(response, str) else response
"""


def write_probe_tasks(root: str | Path, n: int = 6) -> list[dict[str, Any]]:
    """Write the include directory ``root`` (see the module docstring); returns its rows."""
    from harness.api.registry import TASKS
    from harness.toy.scenes import normalised_box_text

    task = TASKS.get(SOURCE_TASK)()
    root = Path(root).resolve()  # the task files name their data by absolute paths
    root.mkdir(parents=True)
    rows = []
    for doc in task.load(split="test", limit=n)[:n]:
        request = task.request(doc)
        image = root / f"{doc.doc_id}.png"
        request.images[0].save(image)
        answer = normalised_box_text((doc.box.x1, doc.box.y1, doc.box.x2, doc.box.y2))
        rows.append({"text": request.text, "answer": answer, "image": str(image)})
    data = root / "probe.json"
    data.write_text(json.dumps(rows), encoding="utf-8")
    (root / "probe_utils.py").write_text(UTILS, encoding="utf-8")
    for name, kind, extra in (
        ("headscope_probe", "generate_until", GENERATE_EXTRA),
        ("headscope_probe_ll", "loglikelihood", LL_EXTRA),
    ):
        text = TASK_YAML.format(name=name, data=data, output_type=kind, extra=extra)
        (root / f"{name}.yaml").write_text(text, encoding="utf-8")
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python -m harness.lmms.probe_task DIR [--n N]``."""
    parser = argparse.ArgumentParser(
        prog="python -m harness.lmms.probe_task", description=__doc__.splitlines()[0]
    )
    parser.add_argument("dir", help="include directory to create (not named 'tasks')")
    parser.add_argument("--n", type=int, default=6, help="documents (default: 6)")
    args = parser.parse_args(argv)
    if Path(args.dir).name == "tasks":
        parser.error("name the directory anything but 'tasks' (it would shadow headscope's)")
    if Path(args.dir).exists():
        parser.error(f"{args.dir} exists; give a new directory")
    rows = write_probe_tasks(args.dir, args.n)
    tasks = "headscope_probe, headscope_probe_ll"
    print(f"wrote {len(rows)} documents and the tasks {tasks} to {args.dir}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
