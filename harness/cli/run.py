"""``headscope run``: its flags, the run spec they build, and the choice of what runs.

- With ``--interventions`` or ``--config``: the model × tasks × interventions grid
  (:func:`harness.run.evaluator.run_grid`), only that grid.
- Otherwise: the main job (:mod:`harness.run.main_job`), the whole protocol (rank, accuracy
  grid, bench, diagnose, leaderboards) on whatever ``--model`` / ``--model-args`` / ``--tasks``
  say; the bundled toy model and its mini tasks are the default only when none is given.

lmms-eval spellings are accepted (``--model_args``, ``--output_path``, ``--batch_size``,
``--gen_kwargs``, ``--limit`` as a fraction, ``--log_samples``, ``--predict_only``,
``--verbosity``, ``--include_path``). Light at import: argparse and json only.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from harness.api.helpformat import (
    add_logging_arguments,
    add_output_argument,
    add_threads_argument,
)
from harness.cli._args import SCORING_HELP, add_maps_arguments, add_order_arguments, limit_value

__all__ = ["add_arguments", "main_job", "run", "spec_from_args", "model_from_args"]

DESCRIPTION = """\
Without --interventions / --config: the main job, the full protocol on one model (1 rank heads
by RAM on the grounded tasks among --tasks, 2 accuracy grid: baseline, top/bottom/random-k
ablation, SAP, hybrid attention, 3 prefill bench at the model's own geometry, 4 module
diagnostics, 5 leaderboards), on --model / --model-args / --tasks. With nothing given it runs
the bundled toy model on the eight mini tasks; --model other than toy needs --tasks.
With --interventions (or a --config run file): only that model x tasks x interventions grid.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of ``headscope run``."""
    p.description = DESCRIPTION
    what = p.add_argument_group("what to run")
    what.add_argument(
        "--model",
        help="model family (default: toy, the bundled model; see 'headscope list models')",
    )
    what.add_argument(
        "--model-args",
        "--model_args",
        dest="model_args",
        default=None,
        metavar="ARGS",
        help="JSON object or key=value,key=value (typed), e.g. pretrained=/ckpt/qwen25vl,"
        "dtype=bfloat16,device=cuda. Keys: pretrained, revision, dtype, device, device_map, "
        "attn_implementation, args; any other key is a family option (e.g. max_pixels) and is "
        "refused if the family does not understand it",
    )
    what.add_argument("--tasks", help="comma-separated task names (see 'headscope list tasks')")
    what.add_argument(
        "--task-args",
        "--task_args",
        dest="task_args",
        default=None,
        metavar="JSON",
        help='JSON object of per-task variant arguments, e.g. \'{"vidstg": {"annotation_dir": '
        '"data/vidstg", "video_root": "data/vidor"}, "pope": {"subset": "adversarial"}}\'',
    )
    what.add_argument(
        "--interventions",
        action="append",
        default=None,
        metavar="SPEC",
        help="repeatable; runs only this grid: 'none', 'ablate:select=top,k=0.05,mode=zero,"
        "ranking=rank/ranking.json' or a JSON object",
    )
    what.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="YAML/JSON run file of a grid (flags override it)",
    )
    ev = p.add_argument_group("evaluation")
    ev.add_argument(
        "--limit",
        type=limit_value,
        default=None,
        metavar="N",
        help="documents per task: a count, or a fraction 0<x<1 of each task (the main job: "
        "accuracy grid and ranking, and diagnose when fewer than its 8)",
    )
    ev.add_argument(
        "--batch-size",
        "--batch_size",
        dest="batch_size",
        type=int,
        default=None,
        metavar="N",
        help="requests per generate call",
    )
    ev.add_argument(
        "--device", default=None, help="cpu, cuda or cuda:N (same as the model-args key device)"
    )
    ev.add_argument(
        "--gen-kwargs",
        "--gen_kwargs",
        dest="gen_kwargs",
        default=None,
        metavar="ARGS",
        help="generation settings for every request, JSON or key=value: max_new_tokens, "
        "temperature, do_sample, top_p, num_beams (default: each task's budget, greedy); "
        "recorded in results.json",
    )
    ev.add_argument("--seed", type=int, default=None, help="seed of random draws and sampling")
    add_threads_argument(ev)
    ev.add_argument("--scoring", default=None, metavar="MODE", help=SCORING_HELP)
    ev.add_argument(
        "--predict-only",
        "--predict_only",
        dest="predict_only",
        action="store_true",
        default=None,
        help="log the model's outputs, compute no scores (grids only)",
    )
    add_order_arguments(ev)
    ev.add_argument(
        "--skip-bad-docs",
        "--skip_bad_docs",
        dest="skip_bad_docs",
        action="store_true",
        default=None,
        help="count and skip samples whose media cannot be read",
    )
    maps = p.add_argument_group("attention maps (the main job's stage 1; not grids)")
    add_maps_arguments(maps)
    out = p.add_argument_group("output")
    add_output_argument(out, None, "output directory (default: headscope_out)")
    from harness.cli._args import add_no_figures_argument

    add_no_figures_argument(out, " (the main job: heatmaps, plots, leaderboard figures)")
    out.add_argument(
        "--log-samples",
        "--log_samples",
        dest="log_samples",
        action="store_true",
        help="accepted for lmms-eval habits: every sample is always logged, to "
        "DIR/samples/*.jsonl (the main job: DIR/accuracy/samples/)",
    )
    add_logging_arguments(p)


def setup(args: argparse.Namespace) -> None:
    """Apply ``--verbosity``, ``--threads`` and ``--include_path`` (before names are looked up)."""
    import logging

    from harness.api.progress import quiet_library_bars

    level = getattr(args, "verbosity", None)
    if level:
        logging.getLogger("headscope").setLevel(level)
    quiet_library_bars()  # HF's weight-loading bar too, when not drawing bars
    if getattr(args, "threads", None) is not None:
        from harness.api.threads import apply_threads

        apply_threads(args.threads)
    for directory in getattr(args, "include_path", None) or ():
        from harness.api.registry import include_path

        include_path(directory)


def model_from_args(args: argparse.Namespace, base: dict[str, Any] | None = None) -> Any:
    """The ModelSpec of ``--model`` / ``--model-args`` / ``--device`` over ``base`` (a dict)."""
    import dataclasses

    from harness.api.kv import text_fields
    from harness.api.specs import ModelSpec
    from harness.cli._args import parse_mapping

    fields = {f.name: f for f in dataclasses.fields(ModelSpec)}
    given = parse_mapping(args.model_args, "--model-args", strings=text_fields(ModelSpec))
    model = dict(base or {})
    if args.model:
        model = {"name": args.model}
    current = model.get("name", ModelSpec.name)
    if "name" in given and given["name"] != current:
        raise _spec_error(
            f"--model-args name={given['name']!r} would switch the model family from "
            f"{current!r}; choose the family with --model {given['name']}"
        )
    options = dict(model.get("args") or {})
    for key, value in given.items():
        if key == "args":
            if not isinstance(value, dict):
                raise _spec_error('--model-args "args" must be an object of family options')
            options.update(value)
        elif key in fields:
            if key != "name" and isinstance(value, int | float) and not isinstance(value, bool):
                value = str(value)  # a number in the JSON form, for a string field
            model[key] = value
        else:
            options[key] = value  # a family option: the family refuses what it cannot use
    if options:
        model["args"] = options
    if getattr(args, "device", None):
        model["device"] = args.device
    return ModelSpec.from_dict(model, "--model-args")


def _spec_error(message: str) -> Exception:
    from harness.api.specs import SpecError

    return SpecError(message)


def _task_args(args: argparse.Namespace) -> dict[str, Any] | None:
    import json

    from harness.api.strict_yaml import RunFileError, load_json

    if args.task_args is None:
        return None
    try:
        return load_json(args.task_args)
    except (json.JSONDecodeError, RunFileError) as exc:
        raise _spec_error(f"--task-args: malformed JSON ({exc})") from None


def spec_from_args(args: argparse.Namespace) -> Any:
    """Build a RunSpec from a run file (if any) overridden by flags."""
    from dataclasses import asdict

    from harness.api.run_file import read_run_file
    from harness.api.specs import (
        InterventionSpec,
        RunSpec,
        check_task_args,
        parse_intervention,
        parse_task,
    )
    from harness.cli._args import parse_mapping

    base: dict[str, Any] = {}
    scoring = args.scoring
    if args.config:
        raw = read_run_file(args.config)
        file_scoring = raw.pop("scoring", None)
        if file_scoring is not None and not isinstance(file_scoring, str):
            raise _spec_error(f"run file {args.config}: 'scoring' must be a mode name")
        if scoring is None:
            scoring = file_scoring  # the flag wins over the file, as for every key
        where = f"run file {args.config}"
        base = RunSpec.from_dict(raw, where=where).to_dict()
    if args.model or args.model_args is not None or args.device:
        base["model"] = asdict(model_from_args(args, base.get("model")))
    if args.tasks:
        from harness.api.kv import split_top_level

        items = split_top_level(args.tasks)  # commas inside a JSON task object do not split
        base["tasks"] = [asdict(parse_task(t)) for t in items if t.strip()]
    if not base.get("tasks"):
        raise _spec_error("--interventions runs a grid: name its tasks with --tasks")
    if args.limit is not None:
        base["tasks"] = [{**t, "limit": args.limit} for t in base["tasks"]]
    task_args = _task_args(args)
    if task_args is not None:
        per_task = check_task_args(task_args, [t["name"] for t in base["tasks"]])
        base["tasks"] = [
            {**t, "args": {**t.get("args", {}), **per_task.get(t["name"], {})}}
            for t in base["tasks"]
        ]
    if scoring is not None:
        from harness.cli._args import apply_scoring

        pairs = [(t["name"], t.get("args") or {}) for t in base["tasks"]]
        new = apply_scoring(scoring, pairs)
        base["tasks"] = [{**t, "args": a} for t, a in zip(base["tasks"], new, strict=True)]
    if args.interventions:
        base["interventions"] = [asdict(parse_intervention(x)) for x in args.interventions]
    elif "interventions" not in base:
        base["interventions"] = [asdict(InterventionSpec())]
    for key in ("batch_size", "seed", "output"):
        if getattr(args, key) is not None:
            base[key] = getattr(args, key)
    if args.gen_kwargs is not None:
        base["gen_kwargs"] = parse_mapping(args.gen_kwargs, "--gen_kwargs")
    for key in ("skip_bad_docs", "predict_only"):
        if getattr(args, key):
            base[key] = True
    return RunSpec.from_dict(base, where="run arguments")


def run(args: argparse.Namespace) -> int:
    """``headscope run``: the grid with ``--interventions`` / ``--config``, else the main job."""
    from harness.run.evaluator import run_grid

    setup(args)
    if not args.interventions and not args.config:
        return main_job(args)
    if any(getattr(args, k) is not None for k in ("maps", "maps_heads", "maps_random")):
        raise _spec_error("--maps* apply to the main job (and 'headscope rank'), not to a grid")
    if args.no_figures:
        raise _spec_error("--no-figures applies to the main job: a grid draws no figures")
    spec = spec_from_args(args)
    order = "cell" if args.cell_major else "sample"
    results = run_grid(spec, order=order, check_vision_reuse=args.check_vision_reuse)
    if results is None:  # a non-zero rank of a sharded run: rank 0 reports
        return 0
    _print_summary(results)
    print(f"\nresults: {spec.output}/results.json (samples: {spec.output}/samples/)")
    return 0


def _print_summary(results: Any) -> None:
    from tabulate import tabulate

    rows = []
    for e in results.entries:
        task = e.task + (f" {e.task_args}" if e.task_args else "")
        for m in e.metrics:
            value = "n/a" if m.value is None else f"{m.value:.4f}"
            err = "" if m.stderr is None else f"{m.stderr:.4f}"
            rows.append([task, e.intervention, m.name, value, err, m.n])
        if not e.metrics:
            rows.append([task, e.intervention, "(predict only)", "", "", e.n_samples])
    print(tabulate(rows, headers=["task", "intervention", "metric", "value", "stderr", "n"]))


def main_job(args: argparse.Namespace) -> int:
    """The full protocol on the model and tasks of the flags (toy + mini tasks by default)."""
    from harness.api.specs import check_task_args
    from harness.cli._args import MAPS_DEFAULTS, parse_mapping
    from harness.run.main_job import ProtocolConfig, mini_tasks, real_model_defaults, run_protocol

    if args.predict_only:
        raise _spec_error(
            "--predict_only applies to a grid (--interventions or --config); "
            "the main job scores every cell"
        )
    model_spec = model_from_args(args)
    # A real checkpoint: hybrid window scaled to its tasks' lengths, bench at its own geometry.
    kwargs: dict[str, Any] = real_model_defaults() if model_spec.name != "toy" else {}
    if args.tasks:
        names = tuple(t.strip() for t in args.tasks.split(",") if t.strip())
        if len(set(names)) != len(names):
            raise _spec_error(f"--tasks lists a task twice: {list(names)}")
        kwargs["tasks"] = names
    elif model_spec.name != "toy":
        raise _spec_error(
            f"--model {model_spec.name} needs --tasks: the mini tasks are the toy model's "
            "synthetic scenes. E.g. --tasks refcocog,vidstg,mmlongbench_doc,mmdocir,pope,mmmu,"
            "mlvu,videomme (see 'headscope list tasks')"
        )
    if args.limit is not None:
        kwargs.update(n_eval=args.limit, n_rank=args.limit)
        default = ProtocolConfig.__dataclass_fields__["n_diagnose"].default
        if args.limit >= 1 and args.limit < default:  # diagnose follows a smaller --limit
            kwargs["n_diagnose"] = int(args.limit)
    task_args = _task_args(args)
    names = list(kwargs.get("tasks") or mini_tasks())
    if task_args is not None:
        kwargs["task_args"] = check_task_args(task_args, names)
    if args.scoring is not None:
        from harness.cli._args import apply_scoring

        given = kwargs.get("task_args", {})
        new = apply_scoring(args.scoring, [(n, given.get(n, {})) for n in names])
        kwargs["task_args"] = {n: a for n, a in zip(names, new, strict=True) if a}
    for key in ("seed", "batch_size"):
        if getattr(args, key) is not None:
            kwargs[key] = getattr(args, key)
    if args.gen_kwargs is not None:
        kwargs["gen_kwargs"] = parse_mapping(args.gen_kwargs, "--gen_kwargs")
    if args.skip_bad_docs:
        kwargs["skip_bad_docs"] = True
    if args.cell_major:
        kwargs["order"] = "cell"
    if args.check_vision_reuse:
        kwargs["check_vision_reuse"] = True
    kwargs.update({k: getattr(args, k) for k in MAPS_DEFAULTS if getattr(args, k) is not None})
    kwargs["figures"] = not args.no_figures
    cfg = ProtocolConfig(**kwargs)
    from harness.run.stages import small_sample_warnings

    for warning in small_sample_warnings(cfg.n_eval, cfg.n_rank):
        print(f"headscope: warning: {warning}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    run_protocol(model_spec, cfg, args.output or "headscope_out")
    print(f"main job finished in {time.perf_counter() - t0:.0f} s")
    return 0
