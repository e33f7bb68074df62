"""``headscope diagnose`` over tasks: averages, the diagnostics files, table and figures.

Files (layout of :mod:`leaderboards.diagnostics`, one file per formula variant, because that
schema holds a single ``variant``): ``OUT/diagnostics_paper.json`` and
``OUT/diagnostics_code.json``. Besides the schema's keys each holds ``key_region`` (same in
both; see :func:`key_region_summary`), ``baselines.<name>.per_layer`` and
``baselines.<name>.layers``, and ``erope_method``. Figures:
``OUT/plots/diagnostics_<variant>.png`` (and ``.pdf``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.api.task import SampleError, build_task
from harness.api.threads import record
from harness.probes.diagnose import (
    EROPE_METHOD,
    FIELDS,
    KEY_REGION_DEFINITION,
    MODULES,
    VARIANTS,
    diagnose_sample,
)
from harness.schema.diagnostics import DIAGNOSTICS_SCHEMA, DIAGNOSTICS_VERSION

if TYPE_CHECKING:
    from harness.api.specs import TaskSpec

__all__ = [
    "DiagnoseReport",
    "run_diagnose",
    "build_documents",
    "key_region_summary",
    "table",
    "draw_missing_plots",
]


@dataclass
class DiagnoseReport:
    """Documents per variant, the files written and the samples skipped."""

    docs: dict[str, dict[str, Any]]
    files: list[Path]
    skipped: list[dict[str, str]]


def _mean(values: list[float]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _clean(value: Any) -> Any:
    """NaN → None recursively (JSON has no NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def key_region_summary(samples: list[dict[str, Any]], threshold: float) -> dict[str, Any] | None:
    """Key-region degree ratios: all samples, by correctness, per task.

    Args:
        samples: ``{"task", "doc_id", "ratio", "correct", "score", "metric"}`` per sample.
        threshold: The correctness threshold used.
    """
    from harness.metrics.ram import ratio_by_correctness

    rows = [s for s in samples if s.get("ratio") is not None]
    if not rows:
        return None

    def summary(sel: list[dict[str, Any]]) -> dict[str, Any]:
        judged = [s for s in sel if s.get("correct") is not None]
        split = None
        if judged:
            split = ratio_by_correctness(
                [s["ratio"] for s in judged], [bool(s["correct"]) for s in judged]
            )
        return {"mean": _mean([s["ratio"] for s in sel]), "n": len(sel), "by_correctness": split}

    tasks = sorted({s["task"] for s in rows})
    return _clean(
        {
            "definition": KEY_REGION_DEFINITION,
            "correct_if": f"task's first metric >= {threshold}",
            "metric": {t: next(s.get("metric") for s in rows if s["task"] == t) for t in tasks},
            **summary(rows),
            "per_task": {t: summary([s for s in rows if s["task"] == t]) for t in tasks},
            "samples": rows,
        }
    )


def build_documents(
    model: dict[str, Any],
    settings: dict[str, Any],
    results: list[dict[str, Any]],
    key_region: dict[str, Any] | None,
) -> dict[str, dict[str, Any]]:
    """One diagnostics document per variant from per-sample results (means over samples)."""
    docs = {}
    for variant in VARIANTS:
        first = results[0]["rows"][variant]
        layers = []
        for i, row in enumerate(first):
            vals = {f: _mean([r["rows"][variant][i][f] for r in results]) for f in FIELDS}
            layers.append({"layer": row["layer"], "module": row["module"], **vals})
        baselines = {}
        for name in results[0]["baselines"]:
            per_layer = {
                m: [
                    _mean([r["baselines"][name][variant][m][j] for r in results])
                    for j in range(len(results[0]["baselines"][name][variant][m]))
                ]
                for m in ("RID", "MixIG")
            }
            baselines[name] = {
                "RID": _mean(per_layer["RID"]),
                "MixIG": _mean(per_layer["MixIG"]),
                "per_layer": per_layer,
                "layers": settings.get("baseline_layers"),
            }
        ropes = [r["erope"][variant] for r in results if r["erope"] is not None]
        docs[variant] = _clean(
            {
                "schema": DIAGNOSTICS_SCHEMA,
                "schema_version": DIAGNOSTICS_VERSION,
                "model": model,
                "settings": settings,
                "variant": variant,
                "n_samples": len(results),
                "layers": layers,
                "baselines": baselines,
                "erope_floor": _mean(ropes) if ropes else None,
                "erope_method": EROPE_METHOD if ropes else "no rotary embedding found",
                "key_region": key_region,
            }
        )
    return docs


def _task_info(spec: TaskSpec, task: Any) -> dict[str, Any]:
    settings = json.loads(json.dumps(task.settings(), default=str))
    split = spec.split or task.default_split
    return {"name": spec.name, "split": split, "limit": spec.limit, "args": dict(spec.args),
            "settings": settings}  # fmt: skip


def run_diagnose(
    adapter: Any,
    tspecs: list[TaskSpec],
    output: str | Path,
    *,
    seed: int = 0,
    energy: float = 0.99,
    baselines: tuple[str, ...] = ("noise_delta", "noise_qkv"),
    baseline_layers: str = "each",
    erope: bool = True,
    key_region: bool = True,
    generate: bool = True,
    threshold: float = 0.5,
    progress: bool = True,
    plots: bool = True,
) -> DiagnoseReport:
    """Diagnose every sample of the tasks and write the files (module docstring)."""
    from harness.api.progress import track
    from harness.probes.record import ProbeError

    results, samples, skipped, task_info = [], [], [], []
    for spec in tspecs:
        task = build_task(spec.name, spec.args)
        docs = spec.take(task.load(split=spec.split, limit=spec.load_limit))
        task_info.append(_task_info(spec, task))
        for doc in track(docs, f"diagnose {spec.name}", enabled=progress):
            try:
                res = diagnose_sample(
                    adapter, task, doc, energy=energy, baselines=baselines,
                    baseline_layers=baseline_layers, seed=seed, erope=erope,
                    key_region=key_region, generate=generate, threshold=threshold,
                )  # fmt: skip
            except SampleError as exc:
                skipped.append({"task": spec.name, "doc_id": str(doc.doc_id), "reason": str(exc)})
                continue
            results.append(res)
            kr = res["key_region"]
            if kr is not None and "ratio" in kr:
                samples.append({"task": spec.name, "doc_id": str(doc.doc_id), **kr})
            elif kr is not None:
                skipped.append({"task": spec.name, "doc_id": str(doc.doc_id),
                                "reason": f"key region: {kr['skipped']}"})  # fmt: skip
    if not results:
        raise ProbeError("no sample could be diagnosed")
    model = json.loads(json.dumps(dict(adapter.settings()), default=str))
    settings = {
        "attn_implementation": model.get("attn_implementation"),
        "dtype": model.get("dtype"),
        "seed": seed,
        "energy": energy,
        "dispatch": "headscope",
        "tokens": "all tokens of each sample (batch 1, unpadded)",
        "states": "inside each decoder layer: block input, post-attention, block output",
        "baseline_layers": baseline_layers,
        "tasks": task_info,
        "environment": record(),  # CPU threads: a record, not a setting (leaderboards skip it)
    }
    docs = build_documents(model, settings, results, key_region_summary(samples, threshold))
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    figures = _plots(docs, out) if plots else []
    # Each file whole, the figures first and the paper variant last: whoever finds
    # diagnostics_paper.json (a resumed main job) finds everything else beside it.
    from harness.schema.results import write_json_atomic

    for variant in sorted(docs, key=lambda v: v == "paper"):
        path = out / f"diagnostics_{variant}.json"
        write_json_atomic(path, docs[variant], indent=1, allow_nan=False)
    files = [out / f"diagnostics_{variant}.json" for variant in docs]
    return DiagnoseReport(docs, files + figures, skipped)


def _plot_path(out: Path, variant: str) -> Path:
    return out / "plots" / f"diagnostics_{variant}.png"


def draw_missing_plots(output: str | Path) -> list[Path]:
    """Draw the figures of the diagnostics files in ``output`` that are not on disk.

    For a run stopped after its files were written and before its figures were drawn (older
    headscope wrote the files first). Returns the figures drawn.
    """
    from harness.probes.plots import figures_missing, plotting_available

    out = Path(output)
    docs = {}
    for variant in VARIANTS:
        path = out / f"diagnostics_{variant}.json"
        if path.is_file() and figures_missing([_plot_path(out, variant)]):
            docs[variant] = json.loads(path.read_text(encoding="utf-8"))
    return _plots(docs, out) if docs and plotting_available() else []


def _plots(docs: dict[str, dict[str, Any]], out: Path) -> list[Path]:
    from harness.probes.plots import diagnostic_levels, layer_lines, plotting_available

    if not plotting_available():
        return []
    files = []
    for variant, doc in docs.items():
        series = {
            m: {mod: [r[m] for r in doc["layers"] if r["module"] == mod] for mod in MODULES}
            for m in ("RID", "MixIG")
        }
        levels = diagnostic_levels(doc["baselines"], doc["erope_floor"])
        path = _plot_path(out, variant)
        png = layer_lines(series, f"module diagnostics ({variant})", path, levels)
        files += [png, png.with_suffix(".pdf")]
    return files


def table(docs: dict[str, dict[str, Any]]) -> str:
    """Terminal table: per layer and module, both variants side by side."""
    from tabulate import tabulate

    paper, code = docs["paper"], docs["code"]
    rows = []
    for p, c in zip(paper["layers"], code["layers"]):
        rows.append([p["layer"], p["module"], p["erank_in"], p["erank_out"], p["dS"],
                     p["dD"], c["dD"], p["RID"], c["RID"], p["MixIG"], c["MixIG"]])  # fmt: skip
    heads = ["layer", "module", "eRank in", "eRank out", "ΔS", "ΔD paper", "ΔD code",
             "RID paper", "RID code", "MixIG paper", "MixIG code"]  # fmt: skip
    lines = [tabulate(rows, headers=heads, floatfmt=".4f"), ""]
    for name in paper["baselines"]:
        b, bc = paper["baselines"][name], code["baselines"][name]
        lines.append(f"{name:12s} RID {b['RID']:.4f} / {bc['RID']:.4f}   "
                     f"MixIG {b['MixIG']:.4f} / {bc['MixIG']:.4f}   (paper / code)")  # fmt: skip
    if paper["erope_floor"] is not None:
        lines.append(f"ε_RoPE floor  RID {paper['erope_floor']:.4f} / {code['erope_floor']:.4f}")
    kr = paper.get("key_region")
    if kr:
        split = kr.get("by_correctness") or {}
        text = ", ".join(
            f"{k}: {v['mean']:.4f} (n={v['n']})" if v["mean"] is not None else f"{k}: n=0"
            for k, v in split.items()
        )
        lines.append(f"key-region degree ratio: mean {kr['mean']:.4f} (n={kr['n']}); {text}")
    return "\n".join(lines)
