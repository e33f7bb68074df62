"""Regenerate the leaderboard test inputs (hand-chosen values) and the golden tables.

Usage (from the repository root)::

    python tests/data/leaderboards/regen.py            # inputs + goldens
    python tests/data/leaderboards/regen.py --goldens  # goldens only

Every number below is typed by hand; nothing comes from a model. The goldens are the
output of ``headscope leaderboard`` over these inputs (GOLDEN_ARGS) and were checked by
hand (see README.md) before being committed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from harness.schema.bench import bench_document  # noqa: E402
from harness.schema.results import MetricDefRecord, MetricRecord, ResultEntry, RunResults  # noqa: E402

GOLDEN_ARGS = [
    "run_a",
    "run_b",
    "run_c",
    "--format",
    "md,csv",
    "--no-figures",
    "--universal-k",
    "0.25",
    "--n-boot",
    "200",
    "--quiet",
]

DEFS = {
    "refcocog_toy": [
        MetricDefRecord("accuracy", True, "IoU ≥ 0.5"),
        MetricDefRecord("iou", True, "mean IoU"),
    ],
    "docvqa_toy": [MetricDefRecord("anls", True, "ANLS")],
}
ABLATE_TOP = {"name": "ablate", "args": {"k": 0.05, "mode": "zero", "select": "top"}}


def _label(spec):
    if not spec["args"]:
        return spec["name"]
    parts = [f"{k}={json.dumps(v).strip(chr(34))}" for k, v in sorted(spec["args"].items())]
    return spec["name"] + ":" + ",".join(parts)


def _entry(task, spec, metrics, n, **extra):
    return ResultEntry(
        task=task,
        task_args={},
        split="val",
        task_settings=extra.pop("task_settings", {}),
        intervention=_label(spec),
        intervention_spec=spec,
        intervention_resolved=extra.pop("resolved", {}),
        metrics=[MetricRecord(name, v, se, n) for name, v, se in metrics],
        n_samples=n,
        samples_file=f"samples/{task}.jsonl",
        **extra,
    )


def _run(pretrained, attn, entries, defs, family="qwen2_vl"):
    model = {
        "family": family,
        "pretrained": pretrained,
        "dtype": "float32",
        "attn_implementation": attn,
        "box_convention": "absolute",
        "geometry": {"num_layers": 2, "num_heads": 4},
    }
    return RunResults(
        spec_passed={},
        spec_resolved={},
        headscope_version="0.1.0",
        git={"commit": None, "dirty": None},
        environment={"python": "3.x"},
        model=model,
        settings={"dtype": "float32", "attn_implementation": attn, "dispatch": "headscope"},
        metric_defs={t: DEFS[t] for t in defs},
        entries=entries,
        created="2026-01-01T00:00:00",
    )


RANKING = "/runs/qwen/rank/ranking.json"
RANKING_ALT = "/runs/qwen-alt/rank/ranking.json"  # same basename: must stay a separate row
# Random-k ablation as the main job runs it: one spec per seeded draw (draw=0..2), averaged
# by the leaderboard into one row; accuracy 0.45 / 0.5 / 0.5125 → mean 0.4875.
RANDOM_DRAWS = [(0.45, 0.08, 0.46), (0.5, 0.079, 0.47), (0.5125, 0.081, 0.48)]


def _random(k, draw):
    args = {"k": k, "mode": "zero", "select": "random", "seed": 0, "draws": 3, "draw": draw}
    return {"name": "ablate", "args": args}


def run_a():
    ref = "refcocog_toy"

    def abl(sel, k, **extra):
        return {"name": "ablate", "args": {"k": k, "mode": "zero", "select": sel, **extra}}

    hyb = {"name": "hybrid", "args": {"keep": 0.25, "window": 64, "ranking": RANKING}}
    draws = [
        _entry(ref, _random(0.05, d), [("accuracy", acc, se), ("iou", iou, 0.03)], 40)
        for d, (acc, se, iou) in enumerate(RANDOM_DRAWS)
    ]
    return _run(
        "tiny-qwen2vl",
        "sdpa",
        [
            _entry(
                ref,
                {"name": "none", "args": {}},
                [("accuracy", 0.5, 0.0801), ("iou", 0.48, 0.031)],
                40,
            ),
            _entry(ref, abl("top", 0.05), [("accuracy", 0.275, 0.0715), ("iou", 0.3, 0.04)], 40),
            _entry(
                ref,
                abl("top", 0.1, ranking=RANKING),
                [("accuracy", 0.2, 0.064), ("iou", 0.21, 0.04)],
                40,
            ),
            _entry(
                ref,
                abl("top", 0.1, ranking=RANKING_ALT),
                [("accuracy", 0.225, 0.066), ("iou", 0.22, 0.04)],
                40,
            ),
            *draws,
            _entry(ref, abl("bottom", 0.05), [("accuracy", 0.5125, 0.08), ("iou", 0.49, 0.03)], 40),
            _entry(ref, hyb, [("accuracy", 0.475, 0.079), ("iou", 0.46, 0.03)], 40),
            _entry("docvqa_toy", {"name": "none", "args": {}}, [("anls", 0.64, 0.05)], 20),
            _entry(
                "docvqa_toy",
                hyb,
                [("anls", 0.6, 0.05)],
                20,
                failures=[{"doc_id": "d7", "error": "ValueError: bad page"}],
            ),
        ],
        [ref, "docvqa_toy"],
    )


def run_b():
    ref = "refcocog_toy"
    return _run(
        "tiny-qwen2vl",
        "eager",
        [
            _entry(
                ref,
                {"name": "none", "args": {}},
                [("accuracy", 0.525, 0.08), ("iou", 0.5, 0.03)],
                40,
            ),
            _entry(ref, ABLATE_TOP, [("accuracy", 0.3, 0.072), ("iou", 0.31, 0.04)], 40),
        ],
        [ref],
    )


def run_c():
    ref = "refcocog_toy"
    res = _run(
        "/models/tiny-llava",  # a local path: shown as llava:tiny-llava
        "sdpa",
        [
            _entry(
                ref,
                {"name": "none", "args": {}},
                [
                    ("accuracy", 0.6, 0.0785),
                    ("iou", 0.55, 0.03),
                    ("accuracy_ci_low", 0.45, None),
                    ("accuracy_ci_high", 0.75, None),
                ],
                40,
            ),
            _entry(
                ref,
                ABLATE_TOP,
                [
                    ("accuracy", 0.4, 0.0785),
                    ("iou", 0.41, 0.03),
                    ("accuracy_ci_low", 0.25, None),
                    ("accuracy_ci_high", 0.55, None),
                ],
                40,
            ),
        ],
        [ref],
        family="llava",
    )
    return res


def ranking():
    import numpy as np

    from harness.schema.ranking import Ranking, TaskRam

    base = {
        "refcocog_toy": [[0.10, 0.50, 0.20, 0.05], [0.60, 0.15, 0.30, 0.02]],
        "vidstg_toy": [[0.12, 0.40, 0.25, 0.04], [0.55, 0.10, 0.35, 0.03]],
        "docvqa_toy": [[0.20, 0.08, 0.15, 0.06], [0.45, 0.11, 0.40, 0.01]],
    }
    # 6 samples per task: the hand-chosen mean-ish matrix plus seeded Gaussian noise
    # (σ = 0.06, numpy default_rng(7)), clipped to [0, 1]; enough to move close ranks.
    rng = np.random.default_rng(7)
    tasks = {}
    for name, matrix in base.items():
        per = np.clip(np.array(matrix) + rng.normal(0.0, 0.06, size=(6, 2, 4)), 0.0, 1.0)
        tasks[name] = TaskRam.from_samples({"name": name}, per, n_boot=200, seed=0)
    return Ranking(
        model={"family": "qwen2_vl", "pretrained": "tiny-qwen2vl"},
        settings={"attn_implementation": "sdpa", "dtype": "float32", "seed": 0},
        tasks=tasks,
        num_layers=2,
        num_heads=4,
    )


def _bench_row(length, keep, dense, hybrid, bound, speedup=None, sdpa=None):
    """A row as ``bench hybrid --json`` writes it: settings plus measurements.

    Only length/keep/window and the settings (scope, layers, threads, sinks, repeats) may
    group rows; sdpa_ms, dispatch_overhead, times_ms, kept_fraction, heads_kept_per_layer,
    of_bound and dims are measurements and differ per row on purpose.
    """
    kept = round(keep * 4 + 0.49)  # ⌈keep·4⌉ heads of 4
    row = {"length": length, "keep": keep, "window": 64, "dense_ms": dense, "hybrid_ms": hybrid}
    if speedup is not None:
        row["speedup"] = speedup
    row["bound"] = bound
    if sdpa is not None:
        row.update(
            sdpa_ms=sdpa,
            dispatch_overhead=round(dense / sdpa - 1.0, 4),
            times_ms={"dense": [dense, dense + 1.0], "hybrid": [hybrid], "sdpa": [sdpa]},
        )
    row.update(
        scope="layer",
        layers=2,
        threads=2,
        sinks=0,
        repeats=3,
        heads_kept_per_layer=kept,
        kept_fraction=kept / 4,
        dims={"hidden": 64, "heads": 4},
    )
    return row


BENCH_HYBRID = bench_document(
    "hybrid",
    [
        _bench_row(1024, 0.25, 10.0, 8.0, 1.6, speedup=1.25, sdpa=9.5),
        _bench_row(2048, 0.25, 30.0, 20.0, 2.4, speedup=1.5, sdpa=30.0),
        _bench_row(4096, 0.25, 100.0, 50.0, 3.2, speedup=2.0, sdpa=98.0),
        _bench_row(4096, 0.5, 100.0, 80.0, 1.9),
    ],
    model={"family": "qwen2_vl", "pretrained": "tiny-qwen2vl"},
    settings={"dtype": "float32", "attn_implementation": "sdpa", "device": "cpu"},
)
BENCH_RAM = bench_document(
    "ram",
    model="tiny-qwen2vl",
    settings={"dtype": "float32", "device": "cpu"},
    rows=[
        {
            "length": 512,
            "probe_peak_mb": 100.0,
            "eager_peak_mb": 180.0,
            "mem_ratio": 1.8,
            "probe_ms": 5.0,
            "eager_ms": 6.5,
            "time_ratio": 1.3,
        },
        {
            "length": 2048,
            "probe_peak_mb": 160.0,
            "eager_peak_mb": None,
            "mem_ratio": None,
            "probe_ms": 21.0,
            "eager_ms": None,
            "time_ratio": None,
        },
    ],
)


def diagnostics(variant, shift):
    layers = []
    for layer, (a_rid, a_mix, f_rid, f_mix) in enumerate(
        [(0.05, 0.6, 0.2, 0.01), (0.07, 0.62, 0.22, 0.03)]
    ):
        for module, rid, mix in (("attention", a_rid, a_mix), ("ffn", f_rid, f_mix)):
            d_s = 0.01 + layer * 0.01
            layers.append(
                {
                    "layer": layer,
                    "module": module,
                    "erank_in": 10.0 + layer,
                    "erank_out": 10.5 + layer,
                    "dS": d_s,
                    "dD": rid + shift - d_s,
                    "RID": rid + shift,
                    "TME_in": 0.5,
                    "TME_out": 0.5 + mix,
                    "MixIG": mix,
                }
            )
    return {
        "schema": "headscope.diagnostics",
        "schema_version": 1,
        "model": {"family": "qwen2_vl", "pretrained": "tiny-qwen2vl", "dtype": "float32"},
        "settings": {"attn_implementation": "eager", "energy": 0.99, "seed": 0},
        "variant": variant,
        "n_samples": 8,
        "layers": layers,
        "baselines": {
            "noise_delta": {"RID": 0.61, "MixIG": -0.8},
            "noise_qkv": {"RID": 0.44, "MixIG": -0.5},
        },
        "erope_floor": 0.062,
    }


def write_inputs():
    from harness.schema.ranking import save_ranking

    run_a().save(HERE / "run_a" / "results.json")
    run_b().save(HERE / "run_b" / "results.json")
    run_c().save(HERE / "run_c" / "results.json")
    save_ranking(HERE / "run_a" / "ranking.json", ranking())
    for name, doc in (
        ("bench_hybrid.json", BENCH_HYBRID),
        ("bench_ram.json", BENCH_RAM),
        ("diagnostics_paper.json", diagnostics("paper", 0.0)),
        ("diagnostics_code.json", diagnostics("code", 0.01)),
    ):
        (HERE / "run_a" / name).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    conflict = run_a()
    bad = conflict.entries[0]
    changed = [MetricRecord("accuracy", 0.55, 0.08, 40), *bad.metrics[1:]]
    conflict.entries[0] = ResultEntry(**{**bad.__dict__, "metrics": changed})
    conflict.save(HERE / "conflict" / "results.json")


def write_goldens():
    import os

    from harness.cli import main as cli

    os.chdir(HERE)  # relative inputs: the goldens hold no absolute path
    assert cli.main(["leaderboard", *GOLDEN_ARGS, "--output", "golden"]) == 0


if __name__ == "__main__":
    if "--goldens" not in sys.argv:
        write_inputs()
    write_goldens()
