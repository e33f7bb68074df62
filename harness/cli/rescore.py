"""``headscope rescore``: score a finished run's logged replies again, without the model.

Example::

    headscope rescore out/run --scoring lmms_eval

reads ``out/run/results.json`` and every cell's sample log, rebuilds each task with its
recorded arguments plus ``scoring=MODE``, loads its documents (the dataset, not the model),
scores every logged reply again and writes ``out/run/results.scoring-lmms_eval.json`` beside
the old file (the old one is never touched). Runs made with ``--predict-only`` (replies
logged, nothing scored) are scored this way too. The new file records the mode in each
entry's task settings and ``rescored_from`` in the run settings; leaderboards refuse to
merge it with results of another mode.

Boxes (grounded tasks) are parsed with the ``box_convention`` recorded in the model
settings; ``pixels_resized`` (Qwen2.5-VL) with the image ``resize`` parameters the adapter
recorded from its processor, and boxes on video frames (VidSTG) with its ``video_resize``
(:mod:`harness.models.qwen_resize`, the functions the adapter itself uses). Results written
before these were recorded are refused when such a box is parsed, naming what is missing.
Light at import: argparse only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.api.errors import UsageError
from harness.api.helpformat import add_logging_arguments, add_output_argument

__all__ = ["add_arguments", "run", "rescore", "ResizeUnrecorded"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``rescore`` flags."""
    parser.add_argument("run_dir", metavar="DIR", help="run directory holding results.json")
    parser.add_argument(
        "--scoring",
        required=True,
        help="official (the benchmark's released evaluation code), lmms_eval (lmms-eval "
        "0.7.3's scoring) or lenient (headscope's tolerant parsers); docs/scoring.md",
    )
    parser.add_argument(
        "--tasks", default=None, help="comma-separated tasks to rescore (default: all)"
    )
    parser.add_argument(
        "--results", default="results.json", help="results file inside DIR (default: %(default)s)"
    )
    parser.add_argument(
        "--task-args",
        "--task_args",
        dest="task_args",
        default=None,
        metavar="JSON",
        help="JSON {task: {arg: value}} merged into the recorded task arguments, e.g. an "
        'answer extractor: \'{"mmlongbench_doc": {"extractor": "openai", ...}}\'',
    )
    add_output_argument(
        parser, None, "directory of the new results file (default: DIR, beside the old one)"
    )
    add_logging_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Rescore and print where the new file went."""
    import json

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None
    shape = 'rescore: --task-args must be JSON {"task": {"arg": value}}'
    try:
        extra = json.loads(args.task_args) if args.task_args else None
    except ValueError as exc:
        raise UsageError(f"{shape}; it is not valid JSON ({exc})") from None
    if extra is not None and not (
        isinstance(extra, dict) and all(isinstance(v, dict) for v in extra.values())
    ):
        raise UsageError(shape)
    path = rescore(
        args.run_dir,
        args.scoring,
        tasks=tasks,
        results_name=args.results,
        task_args=extra,
        output=args.output,
    )
    print(f"wrote {path}")
    return 0


class ResizeUnrecorded(UsageError):
    """Boxes in resized pixels, but no recorded resize to undo it.

    ``resize`` for boxes on images, ``video_resize`` for boxes on video frames.
    """


def _parse_box(model: dict[str, Any]) -> Any:
    """The box parser of the run's model, rebuilt from its recorded settings.

    ``pixels_resized`` boxes are mapped back with the recorded ``resize`` parameters through
    :func:`harness.models.qwen_resize.resized_size`, the function the adapter itself uses.
    """
    from harness.api.model import parse_box_text

    convention = model.get("box_convention") or "normalized"
    if model.get("family") == "internvl" and convention == "normalized_1000":
        # Recorded before the rule had a name; InternVL's adapter already read fractions then.
        convention = "normalized_1000_auto"
    if convention != "pixels_resized":
        return lambda text, size: parse_box_text(text, size, convention)
    from harness.models.qwen_resize import resized_size

    resize = model.get("resize")

    def parse(text: str, size: tuple[int, int]) -> Any:
        if resize is None:
            raise ResizeUnrecorded(
                "rescore: the run's model settings record boxes in 'pixels_resized' but no "
                "'resize' (results written before headscope recorded the Qwen image resize), "
                "so its boxes cannot be mapped back without the processor: rerun the grounded "
                "task(s) with `headscope run`, or rescore the others with --tasks"
            )
        return parse_box_text(text, size, convention, resized_size=resized_size(size, resize))

    return parse


def _parse_video_box(model: dict[str, Any]) -> Any:
    """The run's parser of boxes on video frames, ``(text, size, num_frames)``.

    ``pixels_resized`` boxes are mapped back with the recorded ``video_resize`` through
    :func:`harness.models.qwen_resize.video_resized_size`, the function the adapter uses.
    """
    from harness.api.model import parse_box_text

    convention = model.get("box_convention") or "normalized"
    if convention != "pixels_resized":
        image = _parse_box(model)
        return lambda text, size, _n: image(text, size)
    from harness.models.qwen_resize import video_resized_size

    resize = model.get("video_resize")

    def parse(text: str, size: tuple[int, int], num_frames: int) -> Any:
        if resize is None:
            raise ResizeUnrecorded(
                "rescore: the run's model settings record boxes in 'pixels_resized' but no "
                "'video_resize' (results written before headscope recorded the Qwen video "
                "resize), so boxes on video frames cannot be mapped back without the processor: "
                "rerun the video grounding task(s) with `headscope run`, or rescore the others "
                "with --tasks"
            )
        resized = video_resized_size(size, num_frames, resize)
        return parse_box_text(text, size, convention, resized_size=resized)

    return parse


def rescore(
    run_dir: str | Path,
    scoring: str,
    *,
    tasks: list[str] | None = None,
    results_name: str = "results.json",
    task_args: dict[str, dict[str, Any]] | None = None,
    output: str | Path | None = None,
) -> Path:
    """Score the logged replies of ``run_dir`` under ``scoring``; return the new file's path.

    ``task_args`` (``{task: {arg: value}}``) are merged into each task's recorded arguments
    (e.g. MMLongBench-Doc's answer extractor); they are recorded in the new file. The new
    file goes to ``output`` (default: ``run_dir``); outside ``run_dir`` its entries point
    at the run's sample logs by relative paths.

    Only ``results_name`` and the sample logs its entries name are read, and only inside
    ``run_dir`` (an entry whose ``samples_file`` leads elsewhere is refused); the logs are
    never changed. The one file written is ``<results stem>.scoring-<scoring>.json``.

    Raises:
        UsageError: no results file; a run still being written (its lock is held); an
            unknown mode, or a mode a task does not have (names the task); logged documents
            not in the loaded data.
        harness.schema.results.ResultsError: a sample log missing, unnamed or outside
            ``run_dir``; ``results_name`` not a file name inside ``run_dir``.
        harness.schema.writes.OutputDirError: the new file cannot be written (disk full,
            read-only), naming it.
    """
    from dataclasses import replace

    from harness.api.payloads import Generation
    from harness.api.scoring import check_scoring
    from harness.api.task import ScoringContext, build_task
    from harness.cli._args import takes_scoring
    from harness.schema.results import MetricRecord, ResultsError, load_results
    from harness.schema.samples import read_sample_rows, sample_log_path, unique_rows
    from harness.schema.writes import check_writable, held_by, writing

    check_scoring("rescore", scoring)
    root = Path(run_dir)
    holder = held_by(root)
    if holder is not None:
        raise UsageError(
            f"rescore: {str(root)!r} is a run still being written ({holder}); its results "
            "are partial until it ends",
            hint="wait for that run to finish, then rescore",
        )
    source = _results_file(root, results_name)
    if output is not None:
        check_writable(output, "rescore --output")
    old = load_results(source)
    seed = int(old.spec_resolved.get("seed") or old.settings.get("seed") or 0)
    ctx = ScoringContext(
        _parse_box(old.model),
        seed,
        family=old.model.get("family"),
        parse_video_box=_parse_video_box(old.model),
    )
    unknown = sorted((set(tasks or ()) | set(task_args or {})) - {e.task for e in old.entries})
    if unknown:
        raise UsageError(f"rescore: task(s) {unknown} not in {source}")
    built: dict[tuple[str, str], tuple[Any, dict[str, Any]]] = {}
    entries = []
    for entry in old.entries:
        if tasks is not None and entry.task not in tasks:
            entries.append(entry)
            continue
        args = {**entry.task_args, **(task_args or {}).get(entry.task, {})}
        if takes_scoring(entry.task):  # a plugin task with one fixed rule is scored by it
            args["scoring"] = scoring
        key = (entry.task, repr(sorted(args.items())))
        if key not in built:
            task = build_task(entry.task, args)
            docs = {d.doc_id: d for d in task.load(split=entry.split)}
            built[key] = (task, docs)
        task, docs = built[key]
        log_path = sample_log_path(root, entry, f"rescore: {source}")
        if not log_path.is_file():
            raise ResultsError(
                f"rescore: {source}: the sample log of {entry.task}/{entry.intervention} "
                f"(samples_file {entry.samples_file!r}) is not there; rescore reads the "
                "logged replies, so restore that file or rerun the cell with `headscope run`"
            )
        scores, failures, missing = [], [], []
        rows, _ = unique_rows(read_sample_rows(log_path))  # read only: never repaired here
        logged = [r for r in rows if "output" in r and r["doc_id"] in docs]
        task.prepare_scoring(
            [docs[r["doc_id"]] for r in logged], [Generation(text=r["output"]) for r in logged]
        )
        for row in rows:
            if "output" not in row:
                continue  # skipped documents stay skipped
            doc = docs.get(row["doc_id"])
            if doc is None:
                missing.append(row["doc_id"])
                continue
            try:
                scores.append(task.score(doc, Generation(text=row["output"]), ctx))
            except ResizeUnrecorded:
                raise
            except ValueError as exc:
                failures.append({"doc_id": row["doc_id"], "error": f"{type(exc).__name__}: {exc}"})
        if missing:
            raise UsageError(
                f"rescore: {len(missing)} logged document(s) of {entry.task} are not in the "
                f"loaded data (first: {missing[0]!r})",
                hint="point the task at the same data (--task-args)",
            )
        aggregated = task.aggregate(scores)
        metrics = [
            MetricRecord(m.name, None if m.value != m.value else float(m.value), m.stderr, m.n)
            for m in aggregated
        ]
        warnings = task.reply_warnings(aggregated)
        for warning in warnings:
            print(
                f"headscope: warning: {entry.task} / {entry.intervention}: {warning}",
                file=sys.stderr,
            )
        entries.append(
            replace(
                entry,
                task_args=args,
                task_settings=task.settings(),
                metrics=metrics,
                n_samples=len(scores),
                failures=failures,
                warnings=warnings,
            )
        )
    target = root if output is None else Path(output)
    source_name = results_name
    if target.resolve() != root.resolve():
        import os

        target.mkdir(parents=True, exist_ok=True)
        source_name = os.path.relpath(source, target)
        entries = [
            replace(e, samples_file=os.path.relpath(root / e.samples_file, target))
            if e.samples_file
            else e
            for e in entries
        ]
    settings = {**old.settings, "rescored_from": source_name}
    new = replace(old, entries=entries, settings=settings)
    out = target / f"{Path(results_name).stem}.scoring-{scoring}.json"
    with writing(out, "rescored results"):
        new.save(out)  # atomic: the old file or the whole new one, never a part
    return out


def _results_file(root: Path, name: str) -> Path:
    """``root / name``, refused unless it is a results file inside ``root`` (links too)."""
    from harness.schema.results import ResultsError

    source = root / name
    if Path(name).name != name or name in (".", ".."):
        raise ResultsError(
            f"rescore: --results {name!r} must name a file inside {str(root)!r} (a bare file "
            "name such as results.json); rescore reads and writes the run directory only"
        )
    if not source.is_file():
        raise UsageError(
            f"rescore: no {name} in {str(root)!r}", hint="pass the output directory of a run"
        )
    if not source.resolve().is_relative_to(root.resolve()):
        raise ResultsError(
            f"rescore: {str(source)!r} is a link to {str(source.resolve())!r}, outside the "
            "run directory; rescore reads and writes the run directory only"
        )
    return source
