"""Synthetic main-job directories for the viewer's tests and its scale benchmark.

:func:`write_fixture_job` writes, with headscope's own writers, what a main job leaves for the
viewer: ``accuracy/results.json`` with per-sample logs (``samples/*.jsonl``), and for the
grounded tasks ``rank/ranking.json`` and attention maps (:mod:`harness.testing.maps`, their
doc ids set to the task's first samples). Numbers are seeded draws, not model outputs: each
cell answers a sample correctly with its own probability (baseline 0.9, top-k ablation 0.3,
random-k 0.8, ...), so the pages have something to filter.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

__all__ = ["write_fixture_job", "fixture_cells", "P_CORRECT"]

#: Probability that a cell of this selection answers correctly.
P_CORRECT = {"none": 0.9, "top": 0.3, "bottom": 0.88, "random": 0.8, "hybrid": 0.7}


def fixture_cells(ks: tuple[float, ...] = (0.1,), draws: int = 2) -> list[dict[str, Any]]:
    """Intervention specs as the main job runs them: baseline, top/bottom/random-k, hybrid.

    With ``ks=(0.1, 0.2)`` and ``draws=5`` there are 16 cells (the scale benchmark's grid).
    """
    cells: list[dict[str, Any]] = [{"name": "none", "args": {}}]
    for k in ks:
        for select in ("top", "bottom"):
            args = {"k": k, "mode": "zero", "ranking": "ranking.json", "select": select}
            cells.append({"name": "ablate", "args": args})
        for d in range(draws):
            args = {"k": k, "mode": "zero", "select": "random", "seed": 0, "draw": d}
            cells.append({"name": "ablate", "args": {**args, "draws": draws}})
    cells.append({"name": "hybrid", "args": {"keep": 0.1, "window": 24}})
    return cells


def _label(spec: dict[str, Any]) -> str:
    if not spec["args"]:
        return spec["name"]
    parts = [f"{k}={json.dumps(v).strip(chr(34))}" for k, v in sorted(spec["args"].items())]
    return spec["name"] + ":" + ",".join(parts)


def _kind(spec: dict[str, Any]) -> str:
    return spec["args"].get("select", spec["name"])


def write_fixture_job(
    root: str | Path,
    *,
    tasks: tuple[str, ...] = ("refcocog_mini", "pope_mini"),
    grounded: tuple[str, ...] = ("refcocog_mini",),
    n_samples: int = 12,
    cells: list[dict[str, Any]] | None = None,
    model: str = "toy",
    num_layers: int = 2,
    num_heads: int = 4,
    seed: int = 0,
    maps: bool = True,
) -> Path:
    """Write a synthetic main-job directory at ``root``; returns ``root``.

    Args:
        root: The job directory (created).
        tasks: Task names of the accuracy grid.
        grounded: Those with a ranking (and maps); must be among ``tasks``.
        n_samples: Samples per task.
        cells: Intervention specs (default :func:`fixture_cells`).
        model: The model's ``pretrained`` name (models side by side differ here).
        num_layers: Decoder layers of the ranking and maps.
        num_heads: Heads per layer.
        seed: Seed of every draw.
        maps: Also write attention maps for the grounded tasks.
    """
    import numpy as np

    from harness.schema.ranking import Ranking, TaskRam, save_ranking
    from harness.schema.results import (
        MetricDefRecord,
        MetricRecord,
        ResultEntry,
        RunResults,
    )
    from harness.schema.samples import SampleLog

    root = Path(root)
    out = root / "accuracy"
    rng = np.random.default_rng(seed)
    cells = fixture_cells() if cells is None else cells
    entries = []
    for task in tasks:
        ids = [f"{task}-{i:05d}" for i in range(n_samples)]
        for c, spec in enumerate(cells):
            label = _label(spec)
            correct = rng.random(n_samples) < P_CORRECT[_kind(spec)]
            rel = f"samples/{task}__{c:02d}.jsonl"
            rows = [
                {
                    "doc_id": doc,
                    "prompt": f"Is there a {('red', 'blue', 'green')[i % 3]} square? ({doc})",
                    "output": "yes" if ok else "no",
                    "timing": {"prefill_ms": 1.0, "total_ms": 2.0},
                    "target": "yes",
                    "scores": {"accuracy": float(ok), "pred": "yes" if ok else "no"},
                }
                for i, (doc, ok) in enumerate(zip(ids, correct))
            ]
            SampleLog(out / rel).rewrite(rows)
            value = float(correct.mean())
            stderr = float(correct.std(ddof=1) / np.sqrt(n_samples)) if n_samples > 1 else None
            entries.append(
                ResultEntry(
                    task=task,
                    task_args={},
                    split="test",
                    task_settings={"scoring": "official"},
                    intervention=label,
                    intervention_spec=spec,
                    intervention_resolved={},
                    metrics=[MetricRecord("accuracy", value, stderr, n_samples)],
                    n_samples=n_samples,
                    samples_file=rel,
                )
            )
    model_spec = {"family": "toy", "pretrained": model, "dtype": "float32"}
    model_spec["attn_implementation"] = "sdpa"
    settings = {"dtype": "float32", "attn_implementation": "sdpa", "seed": seed}
    RunResults(
        spec_passed={},
        spec_resolved={},
        headscope_version="0.1.0",
        git={"commit": None, "dirty": None},
        environment={},
        model=model_spec,
        settings=settings,
        metric_defs={t: [MetricDefRecord("accuracy", True, "fixture")] for t in tasks},
        entries=entries,
        created="2026-01-01T00:00:00",
    ).save(out / "results.json")
    if grounded:
        ram = {}
        for task in grounded:
            per = rng.uniform(0.0, 0.05, size=(n_samples, num_layers, num_heads))
            per[:, min(1, num_layers - 1), 0] += 0.5  # one strong retrieval head
            ids = [f"{task}-{i:05d}" for i in range(n_samples)]
            ram[task] = TaskRam.from_samples({"name": task}, per, ids, n_boot=50, seed=seed)
        ranking = Ranking(model_spec, settings, ram, num_layers, num_heads)
        save_ranking(root / "rank" / "ranking.json", ranking)
        if maps:
            _write_maps(root / "rank", grounded, num_layers, num_heads, seed)
    return root


def _write_maps(folder: Path, tasks: tuple[str, ...], layers: int, heads: int, seed: int) -> None:
    """The example maps of :mod:`harness.testing.maps`, on the tasks' first samples' ids."""
    from harness.schema.maps import load_maps, save_maps
    from harness.testing.maps import write_example_maps

    write_example_maps(folder, tasks=tasks, num_layers=layers, num_heads=heads, seed=seed)
    loaded = load_maps(folder)
    renamed = {}
    for task, entry in loaded.tasks.items():
        samples = tuple(
            dataclasses.replace(s, doc_id=f"{task}-{i:05d}") for i, s in enumerate(entry.samples)
        )
        renamed[task] = dataclasses.replace(entry, samples=samples)
    save_maps(folder, dataclasses.replace(loaded, tasks=renamed))


def use_task_documents(job: str | Path, replies: dict[str, str] | None = None) -> Path:
    """Make a fixture job's sample logs name its tasks' real documents (the viewer's media).

    Row ``i`` of each log gets the ``i``-th document of the task as built with no arguments
    (its ``doc_id``, the request's prompt text and the task's logged fields), and the reply
    ``replies[task]`` when given. Returns ``job``.
    """
    import json

    from harness.api.task import build_task

    for log in sorted((Path(job) / "accuracy" / "samples").glob("*.jsonl")):
        name = log.name.split("__")[0]
        task = build_task(name, {})
        rows = [json.loads(line) for line in log.read_text().splitlines()]
        docs = list(task.load(split="test"))[: len(rows)]
        for row, doc in zip(rows, docs):
            row.update(task.sample_log(doc))
            row["doc_id"], row["prompt"] = doc.doc_id, task.request(doc).text
            row["output"] = (replies or {}).get(name, row["output"])
        log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return Path(job)
