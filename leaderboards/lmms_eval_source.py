"""lmms-eval results files as a leaderboard source, beside headscope's own runs.

lmms-eval (0.7.x) writes ``<output>/<model>/<date>_results.json``: ``results`` (per task,
``"<metric>,<filter>": value`` and ``"<metric>_stderr,<filter>"``), ``config`` (``model``,
``model_args``), ``n-samples``, ``configs``, ``versions``. :func:`to_run_results` turns one
into a :class:`~harness.schema.results.RunResults` so the same model's numbers from both
tools sit in one table:

- tasks it has that headscope also has are kept (``pope`` / ``pope_adv`` / ``pope_pop`` /
  ``pope_random``, ``mmmu_val``, ``videomme``, ``mlvu_dev``, ``refcocog_bbox_rec_val`` /
  ``_test``, ``mmlongbench_doc``), under headscope's task name and metric names; the others
  are listed in a warning;
- percentages (Video-MME, MLVU) become fractions, as headscope reports them;
- every entry records ``scoring="lmms_eval"`` and ``source="lmms-eval"`` in its task
  settings, so it sits beside headscope results scored with ``scoring=lmms_eval`` and is
  refused next to other modes (:func:`leaderboards.settings.check_scoring`);
- the model is named by ``pretrained=`` of ``model_args`` (else ``config.model``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_lmms_eval_results", "to_run_results", "TASK_MAP"]

# lmms-eval task -> (headscope task, split, task settings, {lmms metric: (ours, scale)})
_POPE = {
    "pope_accuracy": ("accuracy", 1.0),
    "pope_precision": ("precision", 1.0),
    "pope_recall": ("recall", 1.0),
    "pope_f1_score": ("f1", 1.0),
    "pope_yes_ratio": ("yes_ratio", 1.0),
}
_REFCOCO = {
    "refcoco_ACC@0.5": ("acc@0.5", 1.0),
    "refcoco_IoU": ("miou", 1.0),
    "refcoco_ACC@0.3": ("acc@0.3", 1.0),
    "refcoco_ACC@0.7": ("acc@0.7", 1.0),
    "refcoco_Center_ACC": ("center_acc", 1.0),
}
TASK_MAP: dict[str, tuple[str, str, dict[str, Any], dict[str, tuple[str, float]]]] = {
    "pope": ("pope", "test", {"subset": "all"}, _POPE),
    "pope_adv": ("pope", "adversarial", {"subset": "adversarial"}, _POPE),
    "pope_pop": ("pope", "popular", {"subset": "popular"}, _POPE),
    "pope_random": ("pope", "random", {"subset": "random"}, _POPE),
    "mmmu_val": ("mmmu", "validation", {}, {"mmmu_acc": ("accuracy", 1.0)}),
    "videomme": ("videomme", "test", {}, {"videomme_perception_score": ("accuracy", 0.01)}),
    "mlvu_dev": ("mlvu", "test", {}, {"mlvu_percetion_score": ("m_avg", 0.01)}),
    "refcocog_bbox_rec_val": ("refcocog", "val", {}, _REFCOCO),
    "refcocog_bbox_rec_test": ("refcocog", "test", {}, _REFCOCO),
    "mmlongbench_doc": (
        "mmlongbench_doc",
        "train",
        {},
        {"mmlongbench_doc_acc": ("accuracy", 1.0), "mmlongbench_doc_f1": ("f1", 1.0)},
    ),
}


def is_lmms_eval_results(doc: Any) -> bool:
    """Whether a JSON document is an lmms-eval aggregated results file."""
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("results"), dict)
        and isinstance(doc.get("config"), dict)
        and "n-samples" in doc
        and "configs" in doc
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None  # lmms-eval writes "N/A" for missing stderrs
    return None if value != value else float(value)


def _pretrained(config: dict[str, Any]) -> str:
    args = config.get("model_args") or ""
    if isinstance(args, dict):
        return str(args.get("pretrained") or config.get("model") or "unknown")
    for part in str(args).split(","):
        key, _, value = part.partition("=")
        if key.strip() == "pretrained" and value.strip():
            return value.strip()
    return str(config.get("model") or "unknown")


def to_run_results(doc: dict[str, Any], where: str) -> tuple[Any, list[str]]:
    """``(RunResults, warnings)`` of an lmms-eval results document."""
    from harness.api.registry import TASKS
    from harness.schema.results import MetricDefRecord, MetricRecord, ResultEntry, RunResults

    config = doc["config"]
    n_samples = doc.get("n-samples") or {}
    entries, defs, skipped = [], {}, []
    for name, values in sorted(doc["results"].items()):
        if name not in TASK_MAP or not isinstance(values, dict):
            skipped.append(name)
            continue
        task, split, task_settings, metric_map = TASK_MAP[name]
        metrics = []
        for key, value in values.items():
            metric, _, _filter = key.partition(",")
            if metric not in metric_map:
                continue
            ours, scale = metric_map[metric]
            number = _number(value)
            err = _number(values.get(f"{metric}_stderr,{_filter}"))
            n = int((n_samples.get(name) or {}).get("effective") or 0)
            metrics.append(
                MetricRecord(
                    ours,
                    None if number is None else number * scale,
                    None if err is None else err * scale,
                    n,
                )
            )
        if not metrics:
            skipped.append(name)
            continue
        defs[task] = [
            MetricDefRecord(m.name, m.higher_is_better, bounds=m.bounds and list(m.bounds))
            for m in TASKS.get(task).metrics
        ]
        entries.append(
            ResultEntry(
                task=task,
                task_args={},
                split=split,
                task_settings={**task_settings, "scoring": "lmms_eval", "source": "lmms-eval"},
                intervention="none",
                intervention_spec={"name": "none", "args": {}},
                intervention_resolved={},
                metrics=metrics,
                n_samples=max(m.n for m in metrics),
            )
        )
    version = doc.get("lmms_eval_version") or (doc.get("versions") and "0.7.x") or "unknown"
    results = RunResults(
        spec_passed={},
        spec_resolved={},
        headscope_version="",
        git={"commit": doc.get("git_hash"), "dirty": None},
        environment={},
        model={"family": "lmms-eval", "pretrained": _pretrained(config)},
        settings={"source": "lmms-eval", "lmms_eval_version": version},
        metric_defs=defs,
        entries=entries,
        created=str(doc.get("date") or ""),
    )
    warnings = [f"{where}: lmms-eval task(s) without a headscope counterpart: {skipped}"]
    return results, warnings if skipped else []
