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
medium (the gold box as the task gives it, and the predicted box parsed from the reply with the
run's recorded box convention, :func:`harness.api.model.parse_box_text`; a tube task's
predicted span and box and a page task's predicted pages as the task logged them in the
reply's scores: ``pred_positions``/``pred_box``, ``pred_pages``); media are numbered
**from 0** in the order the model saw them (``index``), and a frame also carries its
0-based index in the source video (``source``).
"""

from __future__ import annotations

import math
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
    if any(p["text"] != request.text for p in detail["prompts"]):
        return "the task's data give another prompt for this document than the run logged"
    if "frame_indices" in detail["fields"] and request.video is not None:
        frames = _ints(detail["fields"]["frame_indices"])
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


def _ints(value: Any) -> list[int] | None:
    """``value`` as a list of ints when it is a list of whole numbers (not booleans), else None."""
    if not isinstance(value, list):
        return None
    ok = all(isinstance(x, int | float) and not isinstance(x, bool) for x in value)
    if not ok or not all(math.isfinite(x) and x == int(x) for x in value):
        return None
    return [int(x) for x in value]


def _box(value: Any) -> list[float] | None:
    """``value`` as an ``[x1, y1, x2, y2]`` box of finite numbers, else None."""
    ok = isinstance(value, list) and len(value) == 4
    if not ok or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    return _round(value) if all(math.isfinite(v) for v in value) else None


def _logged_regions(scores: Any, media: list[dict[str, Any]], kind: str) -> list[dict] | None:
    """The predicted regions a task logged in a reply's scores, on the stored media, or None.

    ``pred_positions`` ``[start, end]`` (shown frame positions, end inclusive) with
    ``pred_box`` (original pixels, or none: the whole frame) for a tube; ``pred_pages``
    (0-based) for pages. A log holding something else there (not whole numbers, not a
    four-number box) gets None: nothing drawn, nothing guessed.
    """
    if not isinstance(scores, dict):
        return None
    if kind == "tube" and "pred_positions" in scores:
        span, box = scores.get("pred_positions"), scores.get("pred_box")
        if span is None:
            return []
        span = _ints(span)
        if span is None or len(span) != 2 or (box is not None and _box(box) is None):
            return None
        return [
            {"media": i, "box": None if box is None else _box(box)}
            for i, m in enumerate(media)
            if m["kind"] == "frame" and span[0] <= m["index"] <= span[1]
        ]
    if kind == "page" and "pred_pages" in scores:
        pages = _ints(scores["pred_pages"])
        if pages is None:
            return None
        return [
            {"media": i, "box": None}
            for i, m in enumerate(media)
            if m["kind"] == "page" and m["index"] in set(pages)
        ]
    return None


def _predict(detail: dict[str, Any], source: dict[str, Any], media: list[dict[str, Any]]) -> None:
    """Give each reply its predicted ``region`` list.

    Tube and page tasks: what the task logged (:func:`_logged_regions`). Box tasks: the box
    parsed from the reply with the run's box convention, on the image of the gold box.
    """
    kind = detail["media"]["evidence"]["kind"]
    if kind in ("tube", "page"):
        for replies in detail["replies"]:
            for r in replies:
                regions = _logged_regions(r.get("scores"), media, kind)
                if regions is not None:
                    r["region"] = regions
        return
    gold = detail["media"]["evidence"]["regions"]
    if not gold:
        return
    medium = media[gold[0]["media"]]
    size = (medium["width"], medium["height"])
    try:
        parse = _box_reader(source.get("model") or {}, size)
    except ValueError as exc:
        detail["media"]["predicted_note"] = f"predicted boxes are not drawn: {exc}"
        return
    for replies in detail["replies"]:
        for r in replies:
            box = parse(str(r.get("output") or ""))
            r["region"] = [] if box is None else [{"media": gold[0]["media"], "box": _round(box)}]


def _box_reader(model: dict[str, Any], size: tuple[int, int]) -> Any:
    """``text -> (x1, y1, x2, y2) | None`` in original pixels, as the run's model reads boxes.

    The recorded ``box_convention`` (default ``normalized``); ``pixels_resized`` (Qwen2.5-VL)
    maps back through the recorded ``resize`` with
    :func:`harness.models.qwen_resize.resized_size`, as the adapter and ``rescore`` do.

    Raises:
        ValueError: ``pixels_resized`` without a usable ``resize`` record.
    """
    from harness.api.model import parse_box_text

    convention = model.get("box_convention") or "normalized"
    resized = None
    if convention == "pixels_resized":
        from harness.models.qwen_resize import resized_size

        if not isinstance(model.get("resize"), dict):
            raise ValueError("the run records boxes in resized pixels but not the resize")
        resized = resized_size(size, model["resize"])

    def read(text: str) -> Any:
        box = parse_box_text(text, size, convention, resized_size=resized)
        return None if box is None else box.as_tuple()

    return read


def _round(box: Any) -> list[float]:
    return [round(float(v), 1) for v in box]


def _document(task: Any, sample: Any, detail: dict[str, Any], where: Path, budget: Budget) -> dict:
    """Write one document's media under ``where``; its page data."""
    from harness.media.store import store_png

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
                {"media": position[m], "box": None if b is None else _round(b)}
                for m, b in regions
                if m in position
            ],
        },
        "note": None,
    }


def write_task_media(out: Path, ts: Any, warnings: list[str], budget: Budget | None = None) -> int:
    """Write the media of every document of ``ts`` (:class:`viewer.samples.TaskSamples`).

    Each chunk's sample detail gets ``media`` (the page data: media with ``src`` inside the
    site, gold regions, ``note`` when none are shown) and, for a box task, each reply its
    predicted ``region``. Returns the number of documents shown with media.
    """
    from harness.api.errors import UsageError
    from harness.api.task import BadDoc, build_task
    from viewer.confine import slug

    source = ts.source or {}
    details = [d for chunk in ts.chunks for d in chunk["samples"]]
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
                _predict(d, source, d["media"]["media"])
    if budget.full():
        warnings.append(
            f"{ts.task}: some sample media not shown: the site's {MAX_TOTAL_BYTES} bytes"
        )
    _list_boxes(ts, details)
    return shown


def _list_boxes(ts: Any, details: list[dict[str, Any]]) -> None:
    """Add each predicted box, in pixels, to the samples list's reply (as the gold is given)."""
    for sample, detail in zip(ts.table["samples"], details):
        if detail["media"].get("evidence", {}).get("kind") != "box":
            continue
        for c, replies in enumerate(detail["replies"]):
            region = replies[0].get("region") if replies else None
            if region and sample["r"][c] is not None:
                box = ", ".join(f"{v:g}" for v in region[0]["box"])
                sample["r"][c] = f"{sample['r'][c]} → [{box}] px"
