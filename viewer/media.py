"""Every sample page's media, rebuilt by the task that ran it, written once per document.

Sample logs hold text (prompt, reply, scores), not images, and attention maps hold media for a
few samples only. So the site asks the task itself: for each task it builds the task with the
logged entry's arguments (:func:`harness.api.task.build_task`, as ``headscope rescore`` does),
loads the logged split, and for each logged document calls ``request`` (the images, sampled
frames or pages the model was shown) and, for a grounded task, ``evidence`` (the gold box, tube
or pages). A document is shown only when the rebuilt request asks what the log says was asked
(every logged prompt is its text, and the source frame indices are those the log records);
otherwise, or when the task's data cannot be loaded here, the page says why and shows none.

Bounds: at most :data:`MAX_PER_DOC` media per document (those holding evidence first, then
evenly spaced ones; the page says how many of how many), each downscaled to
:data:`MAX_SIDE` pixels on its longest side and written once as a PNG under
``media/docs/<task>/``, and at most :data:`MAX_TOTAL_BYTES` for the whole site (later
documents then show none, with a warning).

Coordinates and indices, one way everywhere: boxes are in the **original pixels** of their
medium (the gold region as the task gives it, each reply's predicted one as
:mod:`viewer.predicted` reads it); media are numbered
**from 0** in the order the model saw them (``index``), and a frame also carries its
0-based index in the source video (``source``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["MAX_SIDE", "MAX_PER_DOC", "MAX_TOTAL_BYTES", "Budget", "write_task_media"]

#: Longest side of a stored medium, per kind.
MAX_SIDE = {"image": 448, "page": 448, "frame": 224}
#: Media stored per document (frames of a long video, pages of a long document).
MAX_PER_DOC = 16
#: Bytes of media one site may hold.
MAX_TOTAL_BYTES = 256 << 20


def _kept(n: int, evidence: set[int]) -> list[int]:
    """At most MAX_PER_DOC of ``n`` media: those with evidence first, then evenly spaced."""
    if n <= MAX_PER_DOC:
        return list(range(n))
    keep = sorted(evidence)[:MAX_PER_DOC]
    room = MAX_PER_DOC - len(keep)
    for j in range(room):
        i = round(j * (n - 1) / max(1, room - 1))
        if i not in keep:
            keep.append(i)
    return sorted(keep)


def _shown(request: Any) -> list[tuple[str, int, int | None, Any]]:
    """``(kind, index, source frame, image)`` of each medium, in the order the model saw them."""
    out = [("image", i, None, im) for i, im in enumerate(request.images)]
    out += [("page", i, None, im) for i, im in enumerate(request.pages)]
    if request.video is not None:
        src = request.video.frame_indices
        out += [("frame", i, int(src[i]), im) for i, im in enumerate(request.video.frames)]
    return out


def _regions(evidence: Any, request: Any) -> tuple[str | None, list[tuple[int, Any]]]:
    """The gold evidence as ``(kind, [(medium, box or None)])`` in original pixels."""
    from harness.api.payloads import BoxEvidence, PageEvidence, TubeEvidence

    first_page = len(request.images)
    first_frame = first_page + len(request.pages)
    if isinstance(evidence, BoxEvidence):
        return "box", [(evidence.image_index, evidence.box.as_tuple())]
    if isinstance(evidence, TubeEvidence):
        return "tube", [(first_frame + f, b.as_tuple()) for f, b in sorted(evidence.boxes.items())]
    if isinstance(evidence, PageEvidence):
        out: list[tuple[int, Any]] = []
        for p in evidence.pages:
            boxes = evidence.boxes.get(p, ())
            out += [(first_page + p, b.as_tuple()) for b in boxes] or [(first_page + p, None)]
        return "page", out
    return None, []


def _mismatch(request: Any, detail: dict[str, Any]) -> str | None:
    """Why the rebuilt request is not the logged one, or None."""
    from viewer.predicted import ints

    if any(p["text"] != request.text for p in detail["prompts"]):
        return "the task's data give another prompt for this document than the run logged"
    if "frame_indices" in detail["fields"] and request.video is not None:
        frames = ints(detail["fields"]["frame_indices"])
        if frames != [int(x) for x in request.video.frame_indices]:
            return "the task now samples other frames than the run logged"
    return None


class Budget:
    """Bytes of media written so far, against MAX_TOTAL_BYTES."""

    def __init__(self) -> None:
        self.used = 0

    def full(self) -> bool:
        """Whether the site holds its bound of media bytes."""
        return self.used >= MAX_TOTAL_BYTES


def _document(task: Any, sample: Any, detail: dict[str, Any], where: Path, budget: Budget) -> dict:
    """Write one document's media under ``where``; its page data."""
    from harness.media.store import store_png
    from viewer.predicted import rounded

    request = task.request(sample)
    why = _mismatch(request, detail)
    if why:
        return {"media": [], "note": f"media not shown: {why}"}
    evidence = task.evidence(sample, request) if task.grounded else None
    kind, regions = _regions(evidence, request)
    shown = _shown(request)
    kept = _kept(len(shown), {m for m, _ in regions})
    media = []
    for m in kept:
        if budget.full():
            return {"media": [], "note": f"media not shown: the site holds {MAX_TOTAL_BYTES} bytes"}
        medium, index, source, image = shown[m]
        path = where / f"{m}.png"
        store_png(image, path, MAX_SIDE[medium])
        budget.used += path.stat().st_size
        entry = {"kind": medium, "index": index, "width": image.size[0], "height": image.size[1]}
        if source is not None:
            entry["source"] = source
        media.append(entry | {"file": path})
    position = {m: i for i, m in enumerate(kept)}
    return {
        "media": media,
        "n_media": len(shown),
        "evidence": {
            "kind": kind,
            "regions": [
                {"media": position[m], "box": None if b is None else rounded(b)}
                for m, b in regions
                if m in position
            ],
        },
        "note": None,
    }


def outside_paths(args: Any, run_dir: str | Path) -> list[str]:
    """The values in ``args`` that name an existing file or folder outside ``run_dir``."""
    top = Path(run_dir).resolve()
    found: list[str] = []
    if isinstance(args, dict):
        for value in args.values():
            found += outside_paths(value, run_dir)
    elif isinstance(args, list | tuple):
        for value in args:
            found += outside_paths(value, run_dir)
    elif isinstance(args, str) and args:
        try:
            path = (top / args).resolve()  # a relative path is read from the run's cwd: count
            named = Path(args).resolve()  # it both ways
            if any(p.exists() and not p.is_relative_to(top) for p in (path, named)):
                found.append(args)
        except (OSError, ValueError):
            pass
    return found


def write_task_media(
    out: Path,
    ts: Any,
    warnings: list[str],
    budget: Budget | None = None,
    task_paths: bool = False,
) -> int:
    """Write the media of every document of ``ts`` (:class:`viewer.samples.TaskSamples`).

    Each chunk's sample detail gets ``media`` (the page data: media with ``src`` inside the
    site, gold regions, ``note`` when none are shown) and each reply its predicted ``region``
    (:mod:`viewer.predicted`). A run whose logged task arguments name files or folders outside
    the run directory (a benchmark's local data) gets no media unless ``task_paths`` (the
    user's ``--task-paths``): a run directory may come from someone else, and its arguments
    would make the site show what those paths hold. Returns the documents shown with media.
    """
    from harness.api.errors import UsageError
    from harness.api.task import BadDoc, build_task
    from viewer.confine import slug
    from viewer.predicted import list_boxes, predict

    source = ts.source or {}
    details = [d for chunk in ts.chunks for d in chunk["samples"]]
    named = outside_paths(source.get("task_args") or {}, source.get("run_dir") or ".")
    if named and not task_paths:
        why = f"the run's task arguments name data outside the run ({', '.join(map(repr, named))})"
        warnings.append(f"{ts.task}: sample media not shown: {why}; --task-paths reads them")
        for d in details:
            d["media"] = {"media": [], "note": f"media not shown: {why} (view --task-paths)"}
        return 0
    try:
        task = build_task(ts.task, source.get("task_args") or {})
        docs = {
            d.doc_id: d for d in task.load(split=source.get("split")) if not isinstance(d, BadDoc)
        }
    except (UsageError, OSError, ImportError) as exc:
        warnings.append(f"{ts.task}: sample media not shown: the task does not load here ({exc})")
        for d in details:
            d["media"] = {"media": [], "note": f"media not shown: the task does not load ({exc})"}
        return 0
    budget = budget or Budget()
    folder = out / "media" / "docs" / slug(ts.task)
    shown = 0
    for d in details:
        sample = docs.get(str(d["id"]))
        if sample is None:
            d["media"] = {"media": [], "note": "media not shown: document not in the task's data"}
            continue
        try:
            d["media"] = _document(task, sample, d, folder / slug(str(d["id"])), budget)
        except (UsageError, ValueError) as exc:  # SampleError, EvidenceError
            d["media"] = {"media": [], "note": f"media not shown: {exc}"}
        for m in d["media"]["media"]:
            m["src"] = Path(m.pop("file")).relative_to(out).as_posix()
        if d["media"]["media"]:
            shown += 1
            if d["media"]["evidence"]["kind"]:
                predict(d, source, d["media"]["media"])
    if budget.full():
        warnings.append(
            f"{ts.task}: some sample media not shown: the site's {MAX_TOTAL_BYTES} bytes"
        )
    list_boxes(ts, details)
    return shown
