"""The main job: ``headscope run`` without ``--interventions`` / ``--config``.

One command runs the whole protocol on one model and writes everything into one
output directory:

1. ``rank/`` — RAM ranking of heads on the grounded tasks (CoRe heads), cross-task
   Spearman, heatmaps, attention maps of a few samples (``rank/maps.json``);
2. ``accuracy/`` — the accuracy grid: baseline, top-k / bottom-k / random-k head
   ablation at a few k (random: several seeded draws), SAP, and hybrid attention at a
   few keep fractions, static (the ranking's top heads) and input-adaptive
   (``select=adaptive``, same keep; budgets spread evenly, and from the ranking's per-layer
   counts), and beside each static hybrid cell a streamed-decode one (``decode=stream``);
3. ``bench_hybrid.json`` — dense vs hybrid prefill timing with the FLOP-model bound;
   ``bench_decode.json`` — dense vs streamed KV decoding (KV bytes, peak memory, TPOT);
4. ``diagnose/`` — eRank / RID / TME / MixIG per layer and module;
5. ``leaderboards/`` — every table (md, csv, json, latex) and figure.

Defaults run the bundled toy model on the mini tasks in a few minutes on 2 CPU cores;
``--model`` / ``--model-args`` / ``--tasks`` / ``--limit`` run the same protocol on a real
checkpoint and the real benchmarks (:func:`real_model_defaults`): the hybrid window of the
accuracy grid is then a fraction of the tasks' measured prompt lengths
(``sequence_lengths.json``), and the bench times the model's own decoder geometry on its own
device and dtype. Each stage resumes: rerunning the command skips what is already on disk,
and keeps the first run's stage timings (``timings.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from harness.run.protocol import (
    ProtocolConfig,
    grid_interventions,
    mini_tasks,
    real_model_defaults,
    task_spec,
)

__all__ = ["ProtocolConfig", "mini_tasks", "real_model_defaults", "run_protocol"]


def _stage(title: str) -> float:
    print(f"\n== {title}", flush=True)
    return time.perf_counter()


def run_protocol(model_spec: Any, cfg: ProtocolConfig, output: str | Path) -> dict[str, Any]:
    """Run every stage of the main job; return the summary (also saved as summary.json).

    Names, task arguments and the directory are checked before anything is written; the
    directory is locked while the job runs (a second job into it is refused).
    """
    from harness.api.registry import MODEL_FAMILIES
    from harness.api.specs import SpecError
    from harness.api.task import build_task, grounded_tasks
    from harness.run.evaluator import SPEC_FILE
    from harness.run.outdir import check_main_job_dir
    from harness.schema.writes import OutputLock, writing_into

    out = Path(output)
    MODEL_FAMILIES.get(model_spec.name)
    names = dict.fromkeys((*cfg.tasks, *(cfg.rank_tasks or ()), *cfg.diagnose_tasks))
    built = {n: build_task(n, task_spec(n, 1, cfg).args) for n in names}
    if not (cfg.rank_tasks or any(built[n].grounded for n in cfg.tasks)):
        raise SpecError(
            f"the protocol ranks heads on grounded tasks, and none of {list(cfg.tasks)} is "
            f"one; add one of {', '.join(grounded_tasks())}"
        )
    check_main_job_dir(out, SPEC_FILE)
    with OutputLock(out, "main job directory"):
        with writing_into(out):  # a full or read-only disk: one line naming the file
            return _stages(model_spec, cfg, out)


def _stages(model_spec: Any, cfg: ProtocolConfig, out: Path) -> dict[str, Any]:
    from harness.api.model import load_adapter
    from harness.api.specs import RunSpec
    from harness.api.task import grounded_tasks
    from harness.probes.rank import format_report, run_rank
    from harness.run.evaluator import run_grid
    from harness.run.resume import diagnose_done, rank_request, reusable_ranking, write_marker
    from harness.run.stages import (
        StageTimings,
        bench_stage,
        decode_bench_stage,
        maps_stage,
        scaled_window,
        task_lengths,
        unwindowed_tasks,
        window_record,
    )
    from harness.schema.results import write_json_atomic

    clock = StageTimings(out / "timings.json")
    start = _stage(f"loading model {model_spec.name}")
    adapter = load_adapter(model_spec)  # a bad checkpoint fails here, before anything is written
    write_marker(out, model_spec, cfg)
    clock.record("load_s", time.perf_counter() - start, (out / "summary.json").exists())

    rank_tasks = cfg.rank_tasks or tuple(grounded_tasks(cfg.tasks))
    _stage(f"1/5 ranking heads by RAM on {', '.join(rank_tasks)}")
    ranking_path = out / "rank" / "ranking.json"
    rank_specs = [task_spec(n, cfg.n_rank, cfg) for n in rank_tasks]
    request = rank_request(model_spec, rank_specs, cfg.seed)
    reused = reusable_ranking(out / "rank", request, figures=cfg.figures) is not None
    with clock.stage("rank_s", done_before=reused):
        if reused:
            print(f"   reusing {ranking_path}")
        else:
            report = run_rank(
                adapter,
                rank_specs,
                out / "rank",
                seed=cfg.seed,
                skip_bad_docs=cfg.skip_bad_docs,
                request=request,
                plots=cfg.figures,
            )
            print(format_report(report))
        maps_stage(adapter, rank_specs, out / "rank", cfg)

    task_specs = tuple(task_spec(n, cfg.n_eval, cfg) for n in cfg.tasks)
    lengths = task_lengths(adapter, task_specs, cfg, out)
    window = cfg.hybrid_window or scaled_window(lengths, cfg.hybrid_window_fraction)
    window_info = window_record(
        cfg, window, lengths, adapter.geometry, getattr(adapter, "model", None)
    )
    _stage(f"2/5 accuracy grid: baseline, ablation, SAP, hybrid (window {window})")
    if dense := unwindowed_tasks(window_info):
        print(
            f"   note: the median prompt of {', '.join(dense)} fits in the {window}-token "
            "window: their hybrid rows are mostly dense attention (summary.json: "
            "hybrid_window.per_task)"
        )
    spec = RunSpec(
        model=model_spec,
        tasks=task_specs,
        interventions=tuple(grid_interventions(cfg, ranking_path, window)),
        seed=cfg.seed,
        batch_size=cfg.batch_size,
        output=str(out / "accuracy"),
        skip_bad_docs=cfg.skip_bad_docs,
        gen_kwargs=dict(cfg.gen_kwargs),
    )
    with clock.stage("accuracy_s", done_before=_complete(out / "accuracy" / "results.json")):
        results = run_grid(
            spec, adapter, order=cfg.order, check_vision_reuse=cfg.check_vision_reuse
        )

    _stage("3/5 prefill speed: dense vs hybrid (FLOP-model bound alongside)")
    bench_path = out / "bench_hybrid.json"
    with clock.stage("bench_s", done_before=bench_path.exists()):
        if not bench_path.exists():
            bench_stage(cfg, bench_path, adapter, lengths, window)
    decode_path = out / "bench_decode.json"
    with clock.stage("bench_decode_s", done_before=decode_path.exists()):
        if not decode_path.exists():
            decode_bench_stage(cfg, decode_path, adapter)

    _stage("4/5 module diagnostics (eRank / RID / TME / MixIG)")
    diag_done = diagnose_done(out / "diagnose", figures=cfg.figures)
    with clock.stage("diagnose_s", done_before=diag_done):
        if not diag_done:
            from harness.probes.diagnose_run import run_diagnose

            diag = [t for t in cfg.diagnose_tasks if t in cfg.tasks] or list(rank_tasks[:1])
            diag_specs = [task_spec(n, cfg.n_diagnose, cfg) for n in diag]
            run_diagnose(adapter, diag_specs, out / "diagnose", seed=cfg.seed, plots=cfg.figures)

    _stage("5/5 leaderboards and figures")
    boards_done = (out / "leaderboards" / "leaderboard.md").exists()
    with clock.stage("leaderboards_s", done_before=boards_done):
        tables_text = _leaderboards(out, cfg.figures)

    summary = _summary(results, bench_path, out, cfg)
    summary["hybrid_window"] = window_info
    summary["timings_s"] = clock.rounded()
    write_json_atomic(out / "summary.json", summary)
    print(tables_text)
    _print_summary(summary)
    return summary


def _complete(results_path: Path) -> bool:
    try:
        return json.loads(results_path.read_text(encoding="utf-8"))["status"] == "complete"
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _leaderboards(out: Path, figures: bool = True) -> str:
    from leaderboards import cli as leaderboard_cli

    parser = argparse.ArgumentParser()
    leaderboard_cli.add_arguments(parser)
    argv = [str(out), "--output", str(out / "leaderboards"), "--universal-k", "0.1", "--quiet"]
    extra = ([] if figures else ["--no-figures"]) + _own_scoring(out / "accuracy")
    args = parser.parse_args(argv + extra)
    leaderboard_cli.run(args)
    md = out / "leaderboards" / "leaderboard.md"
    return md.read_text(encoding="utf-8") if md.exists() else ""


def _own_scoring(accuracy: Path) -> list[str]:
    """The leaderboard's ``--scoring`` for the job's own accuracy results.

    ``["--scoring", M]`` when ``accuracy/`` also holds rescored copies (the leaderboard refuses
    to choose between them) and its own results are all scored ``M``; else ``[]``.
    """
    from harness.schema.results import load_results
    from leaderboards.settings import UNRECORDED_SCORING, scoring_of

    if not any(accuracy.glob("results.scoring-*.json")):
        return []
    modes = {scoring_of(e) for e in load_results(accuracy / "results.json").entries}
    modes.discard(UNRECORDED_SCORING)
    return ["--scoring", modes.pop()] if len(modes) == 1 else []


def _primary(entry: Any) -> float | None:
    return entry.metrics[0].value if entry.metrics else None


def _summary(results: Any, bench_path: Path, out: Path, cfg: ProtocolConfig) -> dict[str, Any]:
    by = {(e.task, e.intervention): e for e in results.entries}
    per_task: dict[str, dict[str, Any]] = {}
    for task in cfg.tasks:
        base = _primary(by[(task, "none")])
        row: dict[str, Any] = {"metric": by[(task, "none")].metrics[0].name, "none": base}
        for e in results.entries:
            if e.task != task or e.intervention == "none":
                continue
            args = e.intervention_spec["args"]
            name = e.intervention_spec["name"]
            if name == "ablate":
                key = f"ablate_{args['select']}_k{args['k']}"
                row.setdefault(key, []).append(_primary(e))
            elif name == "hybrid":
                adaptive = "_adaptive" if args.get("select") == "adaptive" else ""
                ranked = "_ranked" if args.get("layer_budget") == "ranking" else ""
                stream = "_stream" if args.get("decode", "dense") != "dense" else ""
                row[f"hybrid{adaptive}{ranked}{stream}_keep{args['keep']}"] = _primary(e)
            else:
                row[name] = _primary(e)
        per_task[task] = {k: _mean(v) if isinstance(v, list) else v for k, v in row.items()}
    drops: dict[str, Any] = {}
    for k in cfg.ablation_k:
        for select in ("top", "bottom", "random"):
            vals = [
                r["none"] - r[f"ablate_{select}_k{k}"]
                for r in per_task.values()
                if r.get("none") is not None and r.get(f"ablate_{select}_k{k}") is not None
            ]
            drops[f"{select}_k{k}"] = _mean(vals)
    bench = json.loads(bench_path.read_text()) if bench_path.exists() else {"rows": []}
    spearman_path = out / "rank" / "spearman.json"
    return {
        "per_task": per_task,
        "mean_accuracy_drop": drops,
        "hybrid_speed": [
            {k: r[k] for k in ("length", "keep", "window", "speedup", "bound")}
            for r in bench["rows"]
        ],
        "spearman": json.loads(spearman_path.read_text()) if spearman_path.exists() else None,
        "output": str(out),
    }


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _print_summary(summary: dict[str, Any]) -> None:
    from tabulate import tabulate

    drops = summary["mean_accuracy_drop"]
    print("\n== summary")
    rows = [[name, f"{v:.3f}" if v is not None else "n/a"] for name, v in drops.items()]
    print(tabulate(rows, headers=["ablation (select_k)", "mean accuracy drop vs none"]))
    for r in summary["hybrid_speed"]:
        print(
            f"hybrid prefill (attention only) at {r['length']} tokens, keep {r['keep']}, "
            f"W={r['window']}: {r['speedup']:.2f}× (FLOP bound {r['bound']:.2f}×)"
        )
    print(f"timings (s): {summary['timings_s']}")
    print(f"everything is in {summary['output']}/ (leaderboards/leaderboard.md first)")
