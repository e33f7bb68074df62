"""``headscope rank``: Retrieval Attention Mass per head and task (paper A's CoRe heads).

Per sample of a grounded task: ``request = task.request(sample)``, ``evidence =
task.evidence(sample, request)``, ``spans = adapter.token_spans(request, evidence)``, then one
prefill through the dispatch records, per head, the mean over the instruction rows of the
post-softmax mass on the evidence columns Ω(V*) (``O(n_q · S)`` memory). Per task the
``[N, L, H]`` values become a :class:`~harness.schema.ranking.TaskRam` (mean, stderr, bootstrap CI);
the tasks together make the ranking file that ``ablate`` and ``hybrid`` read.

Samples whose evidence cannot be mapped (:class:`~harness.api.payloads.EvidenceError`) or
covers no token are skipped, counted and reported. Malformed rows and unreadable media
(:class:`~harness.api.task.SampleError`) follow the rule of ``headscope run``: they stop the
run with an error naming the row, or with ``skip_bad_docs`` are skipped, counted and reported
with their reason. Any other error stops the run.

Outputs (``run_rank``): ``OUT/ranking.json`` (:mod:`harness.schema.ranking` format),
``OUT/spearman.json`` (cross-task report, layout in :func:`cross_task`),
``OUT/profile.json`` (head-sparsity profile per task, :mod:`harness.probes.profile`),
``OUT/heatmaps/<task>.png`` (and ``.pdf``) when matplotlib is installed, and with ``maps``
the attention maps ``OUT/maps.json`` + ``OUT/maps.npz`` + ``OUT/maps/media/``
(:mod:`harness.probes.maps`, format :mod:`harness.schema.maps`).
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.api.errors import UsageError
from harness.api.payloads import EvidenceError
from harness.api.task import BadDataError, BadDoc, SampleError, TaskLoadError, build_task
from harness.api.threads import record
from harness.probes.record import ProbeError, prepare_single, record_masses

if TYPE_CHECKING:
    from harness.api.specs import TaskSpec
    from harness.probes.maps import MapsConfig
    from harness.schema.ranking import Ranking

__all__ = [
    "draw_heatmaps",
    "format_report",
    "TaskProbe",
    "RankReport",
    "probe_task",
    "build_ranking",
    "cross_task",
    "run_rank",
]

PROBE_NOTE = "instruction rows → evidence columns; float32 softmax of recorded rows only"


@dataclass
class TaskProbe:
    """Per-sample RAM of one task.

    Attributes:
        name: Task name.
        spec: Task spec as a plain dict (with the task's ``settings()``).
        values: One ``[L, H]`` array per probed sample.
        ids: Their doc ids.
        skipped: ``{"doc_id", "reason"}`` per skipped sample.
    """

    name: str
    spec: dict
    values: list[Any] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)


@dataclass
class RankReport:
    """What :func:`run_rank` produced: the ranking, the cross-task report and the files."""

    ranking: Ranking
    cross: dict[str, Any]
    skipped: dict[str, list[dict[str, str]]]
    files: list[Path]
    profile: dict[str, Any] | None = None
    maps: dict[str, int] | None = None


def _plain(value: Any) -> Any:
    """JSON-able copy (tuples → lists, unknown objects → str)."""
    return json.loads(json.dumps(value, default=str))


def probe_task(
    adapter: Any, tspec: TaskSpec, *, progress: bool = True, skip_bad_docs: bool = False
) -> TaskProbe:
    """Probe every sample of one task (see the module docstring for skipping rules)."""
    from harness.api.progress import track

    task = build_task(tspec.name, tspec.args)
    task.collect_bad_rows = skip_bad_docs
    try:
        docs = tspec.take(task.load(split=tspec.split, limit=tspec.load_limit))
    except SampleError as exc:
        raise BadDataError(f"task {tspec.name!r}: {exc}; {BadDataError.FIX}") from None
    except TaskLoadError as exc:
        raise BadDataError(f"task {tspec.name!r}: documents failed to load: {exc}") from None
    spec = {
        "name": tspec.name,
        "split": tspec.split or task.default_split,
        "limit": tspec.limit,
        "args": dict(tspec.args),
        "settings": _plain(task.settings()),
    }
    out = TaskProbe(tspec.name, spec)
    no_evidence = 0
    items = track(docs, f"rank {tspec.name}", enabled=progress)
    try:  # the bar is cleared before an error is printed
        for doc in items:
            try:
                if isinstance(doc, BadDoc):
                    raise SampleError(doc.reason)
                request = task.request(doc)
            except SampleError as exc:  # malformed row or media: the same rule as `run`
                if not skip_bad_docs:
                    raise BadDataError(
                        f"task {tspec.name!r}, doc {doc.doc_id!r}: {exc}; {BadDataError.FIX}"
                    ) from None
                out.skipped.append({"doc_id": str(doc.doc_id), "reason": str(exc)})
                continue
            try:
                evidence = task.evidence(doc, request)
                if evidence is None:
                    no_evidence += 1
                    raise EvidenceError("the task gives no evidence for this sample")
                spans = adapter.token_spans(request, evidence)
                if not spans.evidence:
                    raise EvidenceError("the evidence covers no visual token")
                if not spans.instruction:
                    raise EvidenceError("no instruction tokens")
            except EvidenceError as exc:
                out.skipped.append({"doc_id": str(doc.doc_id), "reason": str(exc)})
                continue
            inputs = prepare_single(adapter, request, spans)
            try:
                mass = record_masses(
                    adapter.model, inputs, spans.instruction, {"ev": spans.evidence}
                )
            except ProbeError as exc:
                raise ProbeError(f"task {tspec.name!r}, doc {doc.doc_id!r}: {exc}") from exc
            out.values.append(mass["ev"])
            out.ids.append(str(doc.doc_id))
    finally:
        items.close()
    if docs and no_evidence == len(docs):
        from harness.api.task import grounded_tasks

        raise UsageError(
            f"task {tspec.name!r} is not grounded (Task.evidence returned None); rank needs "
            f"grounded tasks: {', '.join(grounded_tasks())}"
        )
    out.spec["n_skipped"] = len(out.skipped)
    return out


def build_ranking(
    adapter: Any,
    probes: list[TaskProbe],
    *,
    seed: int = 0,
    n_boot: int = 1000,
    request: dict[str, Any] | None = None,
) -> Ranking:
    """The ranking of the probed tasks (tasks without any probed sample are left out).

    ``request``, when given, is recorded as ``settings["request"]`` (see :func:`run_rank`).

    Raises:
        ProbeError: No task has a probed sample.
    """
    import numpy as np

    from harness.schema.ranking import Ranking, TaskRam

    geo = adapter.geometry
    tasks = {
        p.name: TaskRam.from_samples(p.spec, np.stack(p.values), p.ids, n_boot=n_boot, seed=seed)
        for p in probes
        if p.values
    }
    if not tasks:
        raise ProbeError("no sample of any task could be probed (see the skipped samples)")
    model = _plain(dict(adapter.settings()))
    model["geometry"] = {
        "num_layers": geo.num_layers,
        "num_heads": geo.num_heads,
        "num_kv_heads": geo.num_kv_heads,
        "head_dim": geo.head_dim,
        "hidden_size": geo.hidden_size,
    }
    settings = {
        "attn_implementation": model.get("attn_implementation"),
        "dtype": model.get("dtype"),
        "seed": seed,
        "dispatch": "headscope",
        "probe": PROBE_NOTE,
        "n_boot": n_boot,
        "environment": record(),  # CPU threads: a record, not a setting (leaderboards skip it)
    }
    if request is not None:
        settings["request"] = _plain(request)
    return Ranking(
        model=model,
        settings=settings,
        tasks=tasks,
        num_layers=geo.num_layers,
        num_heads=geo.num_heads,
    )


def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def cross_task(
    ranking: Ranking, *, top_k: float = 0.05, n_boot: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """Cross-task agreement of a ranking.

    Returns:
        ``{"tasks": [...], "n_samples": {task: N}, "top_k": k, "top_k_count": n,
        "spearman": [{"a", "b", "rho", "ci_low", "ci_high", "n_boot"}] (every pair; NaN →
        null), "universal_heads": ["L3H1", ...] (top-k in every task, layer-major),
        "top_heads": {task | "combined": [...best first]}, "layer_distribution":
        {task | "combined": [count per layer]}, "bootstrap": {"n_boot", "seed", "alpha"}}``.
    """
    from harness.metrics.ram import head_count, layer_distribution, spearman_bootstrap

    names = ranking.task_names
    pairs = []
    for a, b in itertools.combinations(names, 2):
        res = spearman_bootstrap(
            ranking.tasks[a].per_sample, ranking.tasks[b].per_sample, n_boot=n_boot, seed=seed
        )
        pairs.append(
            {
                "a": a,
                "b": b,
                "rho": _num(res.rho),
                "ci_low": _num(res.ci_low),
                "ci_high": _num(res.ci_high),
                "n_boot": res.n_boot,
            }
        )
    keys = [*names, "combined"]
    mats = {n: ranking.matrix(None if n == "combined" else n) for n in keys}
    return {
        "tasks": names,
        "n_samples": {n: int(ranking.tasks[n].per_sample.shape[0]) for n in names},
        "top_k": top_k,
        "top_k_count": head_count(top_k, ranking.num_layers * ranking.num_heads),
        "spearman": pairs,
        "universal_heads": [str(h) for h in ranking.universal_heads(top_k)],
        "top_heads": {
            n: [str(h) for h in ranking.top_heads(None if n == "combined" else n, top_k)]
            for n in keys
        },
        "layer_distribution": {n: layer_distribution(m, top_k).tolist() for n, m in mats.items()},
        "bootstrap": {"n_boot": n_boot, "seed": seed, "alpha": 0.05},
    }


def draw_heatmaps(ranking: Ranking, out: Path, missing_only: bool = False) -> list[Path]:
    """``OUT/heatmaps/<task>.png`` (and ``.pdf``) per task and combined; [] without matplotlib.

    Args:
        ranking: The ranking.
        out: The rank output directory.
        missing_only: Draw only the figures not on disk (a resumed main job).
    """
    from harness.probes.plots import figures_missing, heatmap, plotting_available

    if not plotting_available():
        return []
    files = []
    for name in [*ranking.task_names, None]:
        label = name or "combined"
        path = out / "heatmaps" / f"{label}.png"
        if not (missing_only and not figures_missing([path])):
            heatmap(ranking.matrix(name), f"RAM — {label}", path)
        files += [path, path.with_suffix(".pdf")]
    return files


def run_rank(
    adapter: Any,
    tspecs: list[TaskSpec],
    output: str | Path,
    *,
    seed: int = 0,
    top_k: float = 0.05,
    n_boot: int = 1000,
    progress: bool = True,
    plots: bool = True,
    skip_bad_docs: bool = False,
    request: dict[str, Any] | None = None,
    maps: MapsConfig | None = None,
) -> RankReport:
    """Probe the tasks; write ranking, cross-task report, sparsity profile, heatmaps, maps.

    ``ranking.json`` is written last, each file whole (atomically): a run killed midway leaves
    no ranking, so whoever finds one finds the other files and figures beside it. ``request``
    (the caller's record of what the ranking was made for: model, task specs, seed) is kept in
    the ranking's settings, so that a resume can tell a ranking made for something else.
    ``maps`` (:class:`~harness.probes.maps.MapsConfig`): also the attention maps (after the
    ranking; they resume on their own); None: none, and the maps of an earlier rank in
    ``output`` are removed (they were made for the ranking this one replaces).
    """
    from harness.probes.profile import ranking_profiles
    from harness.schema.ranking import save_ranking
    from harness.schema.results import write_json_atomic

    out = Path(output)
    probes = [
        probe_task(adapter, t, progress=progress, skip_bad_docs=skip_bad_docs) for t in tspecs
    ]
    ranking = build_ranking(adapter, probes, seed=seed, n_boot=n_boot, request=request)
    cross = cross_task(ranking, top_k=top_k, n_boot=n_boot, seed=seed)
    skipped = {p.name: p.skipped for p in probes}
    cross["skipped"] = {name: len(rows) for name, rows in skipped.items()}
    cross["dropped_tasks"] = [p.name for p in probes if not p.values]
    write_json_atomic(out / "spearman.json", cross, indent=1, allow_nan=False)
    profile = ranking_profiles(ranking, n_boot=n_boot)
    write_json_atomic(out / "profile.json", profile, indent=1, allow_nan=False)
    figures = draw_heatmaps(ranking, out) if plots else []
    if maps is None or maps.n == 0:  # an earlier rank's maps belong to its ranking
        from harness.probes.maps import remove_maps

        remove_maps(out)
    files = [save_ranking(out / "ranking.json", ranking), out / "spearman.json"]
    files += [out / "profile.json", *figures]
    counts = None
    if maps is not None and maps.n > 0:  # after the ranking: their own resume (write_maps)
        from harness.probes.maps import write_maps

        path, counts = write_maps(adapter, tspecs, ranking, out, maps, progress=progress)
        files += [path, path.with_suffix(".npz")]
    return RankReport(ranking, cross, skipped, files, profile, counts)


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def format_report(report: Any) -> str:
    """Terminal summary: Spearman table, universal heads, layer distribution, skips."""
    from tabulate import tabulate

    cross = report.cross
    names = cross["tasks"]
    lookup = {}
    for p in cross["spearman"]:
        cell = f"{_fmt(p['rho'])} [{_fmt(p['ci_low'])}, {_fmt(p['ci_high'])}]"
        lookup[(p["a"], p["b"])] = lookup[(p["b"], p["a"])] = cell
    rows = [[a, *("1" if a == b else lookup[(a, b)] for b in names)] for a in names]
    parts = [
        f"Spearman ρ of mean RAM [95% bootstrap CI] (n = {cross['n_samples']})",
        tabulate(rows, headers=["", *names]) if len(names) > 1 else "(one task: no pairs)",
        "",
        f"universal heads (top-{cross['top_k']} = {cross['top_k_count']} heads in every task): "
        + (", ".join(cross["universal_heads"]) or "none"),
        "",
        "layer distribution of the top heads:",
        tabulate(
            [[n, *counts] for n, counts in cross["layer_distribution"].items()],
            headers=["", *(f"L{i}" for i in range(report.ranking.num_layers))],
        ),
    ]
    if report.profile is not None:
        from harness.probes.profile import format_profile

        parts += ["", format_profile(report.profile)]
    if report.maps is not None:
        m = report.maps
        line = f"attention maps: {m['samples']} samples ({m['computed']} tasks computed, "
        parts += ["", line + f"{m['kept']} kept from the last run)"]
    skips = {n: len(v) for n, v in report.skipped.items() if v}
    if skips:
        parts += ["", "skipped samples: " + ", ".join(f"{n}: {k}" for n, k in skips.items())]
        for name, rows_ in report.skipped.items():
            reasons = sorted({r["reason"] for r in rows_})
            if reasons:
                parts.append(f"  {name}: " + "; ".join(reasons[:3]))
    return "\n".join(parts)
