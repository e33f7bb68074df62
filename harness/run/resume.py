"""Main-job resume: what a stopped main job left on disk, and whether a rerun may use it.

A main job can be stopped anywhere (Ctrl-C, SIGKILL, a full disk). The rerun of the same
command takes up the work where it stopped:

- ``main_job.json``, written as soon as the model has loaded, marks the directory as a main
  job's, so a job stopped in stage 1 (nothing but ``timings.json`` yet) resumes instead of
  being refused as "not empty";
- ``rank/ranking.json`` is reused only when it records (``settings.request``) that it was made
  for this job's model, rank tasks (their arguments and limits) and seed; a ranking made for
  anything else is refused with the fields that differ, never silently reused. Files are
  written whole and the ranking last, so a ranking comes with its report files; figures that a
  stopped run did not draw (older headscope drew them after the files) are drawn on resume;
- the diagnostics files likewise: their missing figures are drawn on resume.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from harness.schema.writes import OutputDirError

__all__ = ["MARKER", "write_marker", "rank_request", "reusable_ranking", "diagnose_done"]

MARKER = "main_job.json"
RANK_FILES = ("spearman.json", "profile.json")


def write_marker(out: Path, model_spec: Any, cfg: Any) -> None:
    """``OUT/main_job.json``: the model spec and settings of the job that made ``out``."""
    from harness.schema.results import write_json_atomic

    path = out / MARKER
    if not path.exists():
        record = {
            "format": "headscope.main_job",
            "version": 1,
            "model": dataclasses.asdict(model_spec),
            "config": dataclasses.asdict(cfg),
        }
        write_json_atomic(path, json.loads(json.dumps(record, default=str)))


def rank_request(model_spec: Any, task_specs: list[Any], seed: int) -> dict[str, Any]:
    """What a main job's ranking is made for: the model (where it runs aside), tasks, seed."""
    model = dataclasses.asdict(model_spec)
    for where in ("device", "device_map"):
        model.pop(where)
    tasks = [dataclasses.asdict(t) for t in task_specs]
    return json.loads(json.dumps({"model": model, "tasks": tasks, "seed": seed}))


def _differences(made: Any, wanted: Any, prefix: str = "") -> list[str]:
    if isinstance(made, dict) and isinstance(wanted, dict):
        out = []
        for key in sorted(set(made) | set(wanted), key=str):
            out += _differences(made.get(key), wanted.get(key), f"{prefix}{key}.")
        return out
    return [] if made == wanted else [prefix.rstrip(".")]


def reusable_ranking(rank_dir: Path, request: dict[str, Any], figures: bool = True) -> Any:
    """The ranking in ``rank_dir`` if a resumed main job may use it, else None (rank again).

    None when there is no ranking, or when its report files are missing (a run of older
    headscope stopped between them); figures it lacks are drawn (unless ``figures`` is False).

    Raises:
        OutputDirError: the ranking is unreadable, or was made for another model, other tasks
            or settings (the message names what differs and how to go on).
    """
    from harness.probes.rank import draw_heatmaps
    from harness.schema.ranking import RankingFormatError, load_ranking

    path = rank_dir / "ranking.json"
    if not path.exists():
        return None
    fix = f"delete {str(rank_dir)!r} to rank again, or choose a new --output"
    try:
        ranking = load_ranking(path)
    except (OSError, RankingFormatError) as exc:
        raise OutputDirError(f"{str(path)!r} cannot be read ({exc}); {fix}") from None
    made = ranking.settings.get("request")
    if made is None:
        raise OutputDirError(
            f"{str(path)!r} does not record which model, tasks and seed it was made for "
            f"(made by `headscope rank` or an older headscope); {fix}"
        )
    if made != request:
        fields = ", ".join(_differences(made, request)) or "?"
        raise OutputDirError(
            f"{str(path)!r} was made for another main job (it differs in: {fields}); this "
            f"job would apply it without ranking; {fix}"
        )
    if not all((rank_dir / name).is_file() for name in RANK_FILES):
        return None
    if figures:
        draw_heatmaps(ranking, rank_dir, missing_only=True)
    return ranking


def diagnose_done(diag_dir: Path, figures: bool = True) -> bool:
    """True when the diagnostics files are on disk (then their missing figures are drawn).

    ``figures`` False: no figure is drawn (``headscope run --no-figures``).
    """
    from harness.probes.diagnose import VARIANTS
    from harness.probes.diagnose_run import draw_missing_plots

    if not all((diag_dir / f"diagnostics_{v}.json").is_file() for v in VARIANTS):
        return False
    if figures:
        draw_missing_plots(diag_dir)
    return True
