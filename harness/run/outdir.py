"""Run directories: refuse, before anything is written, one that holds another command's files.

:func:`check_run_dir` (a grid run), :func:`check_main_job_dir` and :func:`check_rank_dir` find
what a directory already holds. The write checks, the write-error lines and the directory lock
(:class:`harness.schema.writes.OutputLock`) live in :mod:`harness.schema.writes`, below the
leaderboards that share them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.schema.writes import LOCK_FILE, OutputDirError, check_writable

__all__ = [
    "check_run_dir",
    "check_main_job_dir",
    "check_rank_dir",
]


def check_run_dir(
    out: Path, identity: dict[str, Any], spec_file: str, legacy: dict[str, Any] | None = None
) -> None:
    """Refuse a directory that holds another run, or files of something else; writes nothing.

    Args:
        out: The output directory (may not exist yet).
        identity: The run's identity (:func:`harness.run.cells.run_identity`).
        spec_file: Name of the file recording the identity of the run in ``out``.
        legacy: The same run's identity as older headscope recorded it (full paths), also
            accepted.
    """
    check_writable(out)
    spec_path = out / spec_file
    if spec_path.is_file():
        try:
            previous = json.loads(spec_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise OutputDirError(
                f"output directory {str(out)!r}: {spec_file} is unreadable ({exc}); "
                "choose a new --output directory"
            ) from None
        if isinstance(previous, dict):
            previous = {k: v for k, v in previous.items() if k not in NOT_IDENTITY}
        if previous != identity and (legacy is None or previous != legacy):
            raise OutputDirError(
                f"output directory {str(out)!r} holds a run with a different spec; "
                "use a new --output directory (or the same spec to resume)"
            )
    elif out.is_dir() and any(p.name != LOCK_FILE for p in out.iterdir()):
        raise OutputDirError(
            f"output directory {str(out)!r} is not empty and holds no headscope run; "
            "choose an empty or new directory"
        )


#: Keys older run_spec.json files recorded that no longer define a run's identity.
NOT_IDENTITY = ("skip_bad_docs",)


#: What the main job writes at the top of its directory.
MAIN_JOB_ENTRIES = (
    "main_job.json",
    "timings.json",
    "sequence_lengths.json",
    "rank",
    "accuracy",
    "bench_hybrid.json",
    "bench_decode.json",
    "diagnose",
    "leaderboards",
    "summary.json",
)


def check_main_job_dir(out: Path, spec_file: str) -> None:
    """Refuse a grid directory, or a non-empty one that holds no main-job output; no writes."""
    check_writable(out, "main job directory")
    if (out / spec_file).exists() or (out / "results.json").exists():
        raise OutputDirError(
            f"{str(out)!r} holds a grid run ({spec_file}); the main job writes its stages "
            "(rank/, accuracy/, ...) into a directory of its own: choose another --output"
        )
    if out.is_dir():
        names = {p.name for p in out.iterdir()} - {LOCK_FILE}
        if names and not names & set(MAIN_JOB_ENTRIES):
            raise OutputDirError(
                f"main job directory {str(out)!r} is not empty and holds no main-job output; "
                "choose an empty or new directory"
            )


#: Files whose presence marks a directory as a run of another command (grid or main job).
_RUN_MARKERS = ("run_spec.json", "results.json", "summary.json", "samples")


def check_rank_dir(out: Path) -> None:
    """Refuse, writing nothing, an output directory that holds a grid run or a main job.

    ``headscope rank`` writes ``ranking.json``, ``spearman.json`` and ``heatmaps/``; inside a
    grid run's directory (``run_spec.json``, ``results.json``, ``samples/``) or at the top of
    a main job's (``summary.json``, whose ranking lives in its own ``rank/``) those files
    would sit among another command's outputs, and that run would no longer resume or be
    read as one run.
    """
    from harness.probes.maps import check_maps_files

    check_writable(out, "rank output directory")
    check_maps_files(out)
    found = [name for name in _RUN_MARKERS if (out / name).exists()]
    if found:
        raise OutputDirError(
            f"rank output directory {str(out)!r} holds another command's run ({found[0]}); "
            "choose a directory of its own for --output, e.g. a new rank/ folder"
        )
