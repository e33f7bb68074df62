"""VidSTG rows → typed samples, and VidSTG answer scoring (used by :mod:`tasks.vidstg.task`).

Conventions normalised once here: ``used_segment`` and ``temporal_gt`` are
``[begin_fid, end_fid)`` with exclusive ends, in absolute frame ids of the video; the tube is
``{frame id: Box}`` for every frame of ``temporal_gt``; VidOR boxes ``{xmin, ymin, xmax, ymax}``
(absolute pixels) become xyxy :class:`~harness.api.payloads.Box` es. One sample per sentence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.api.payloads import Box, EvidenceError
from harness.api.task import SampleError
from harness.media.video import frame_positions_in_span
from tasks.common.loading import require

__all__ = [
    "SENTENCE_TYPES",
    "VidSTGSample",
    "vidor_box",
    "normalise_entry",
    "box_text",
    "parse_span",
    "tube_scores",
]

SENTENCE_TYPES = ("declarative", "interrogative")
# "A-B", "A to B", ... and the same in other languages ("2 bis 6", "2 al 6", "2 à 6",
# "第2帧到第6帧", "2から6", "с 2 по 6"); an optional frame word may sit before B.
_SPAN = re.compile(
    r"(\d+)\s*(?:帧|幀)?\s*(?:-|–|—|~|～|〜|,|，|to|through|thru|until|till|and|bis|al|a|à|au"
    r"|hasta|até|до|по|到|至|から)\s*(?:frames?\s*(?:number\s*)?|第\s*)?(\d+)",
    re.I,
)
# "Start: 2, End: 6", "starting at frame 2 and ending at frame 6".
_LABELED = re.compile(
    r"\bstart(?:s|ing)?\b[^\d]{0,24}?(\d+).{0,60}?\bend(?:s|ing)?\b[^\d]{0,24}?(\d+)", re.I | re.S
)
_ONE = re.compile(r"\d+")
# A list of three or more frames, "5, 6, 7, 8" or "5, 6, 7 and 8": the frames it names, so its
# span runs from the smallest to the largest (read as "A, B" it would be the first two only).
_LIST = re.compile(
    r"(?<![\d.])\d+(?:\s*[,，]\s*\d+){1,}\s*(?:[,，]?\s*(?:and|&)\s*\d+)?(?!\d|\.\d)", re.I
)
# Boxes in any written form: "[..]" with three or more numbers ("[2, 6]" is a span),
# "(x1,y1),(x2,y2)", "<|box_start|>..<|box_end|>".
_BOXES = re.compile(
    r"<\|box_start\|>.*?<\|box_end\|>|\[[^\]]*\]"
    r"|\(\s*[-\d.eE+]+\s*,\s*[-\d.eE+]+\s*\)\s*,?\s*\(\s*[-\d.eE+]+\s*,\s*[-\d.eE+]+\s*\)",
    re.S,
)
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")
# "(x1, y1, x2, y2) = (140, 120, 340, 360)": the corners named, then their values in
# parentheses ("=", ":" or nothing between); the names alone are not numbers of the reply.
_CORNERS = r"\(\s*x_?1\s*,\s*y_?1\s*,\s*x_?2\s*,\s*y_?2\s*\)"
_VALUE = r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*"
_NAMED_BOX = re.compile(rf"{_CORNERS}\s*[=:]?\s*\({_VALUE},{_VALUE},{_VALUE},{_VALUE}\)", re.I)
_CORNER_NAMES = re.compile(_CORNERS, re.I)


def _drop_box(match: re.Match[str]) -> str:
    text = match.group()
    if text.startswith("[") and len(_NUMBER.findall(text)) < 3:
        return text  # "[2, 6]" or "[2-6]": a span in brackets, not a box
    return " "


@dataclass(frozen=True, slots=True)
class VidSTGSample:
    """One sentence to ground.

    Attributes:
        doc_id: ``"<vid>:<entry index>:<d|i><sentence index>"``.
        vid: VidOR video id.
        sentence: The caption or question text.
        sentence_type: "declarative" (captions) or "interrogative" (questions).
        target_id: Trajectory id (tid) of the target object.
        target_category: Its VidOR category.
        segment: ``used_segment`` as (begin, end_exclusive) source frames: the clip shown.
        span: ``temporal_gt`` as (begin, end_exclusive) source frames.
        tube: ``{source frame: Box}`` for every frame of ``span``.
        width: Video width in pixels.
        height: Video height in pixels.
        fps: Frame rate from the annotation.
        video_name: File name or path (relative to ``video_root``) of the video.
        frames: In-memory frames (mini variant); empty when frames come from the video file.
    """

    doc_id: str
    vid: str
    sentence: str
    sentence_type: str
    target_id: int
    target_category: str
    segment: tuple[int, int]
    span: tuple[int, int]
    tube: dict[int, Box]
    width: int
    height: int
    fps: float
    video_name: str = ""
    frames: tuple[Any, ...] = ()


def vidor_box(bbox: Any, where: str) -> Box:
    """A VidOR ``{xmin, ymin, xmax, ymax}`` (absolute px) as a :class:`Box`; SampleError if bad."""
    try:
        return Box(
            float(bbox["xmin"]), float(bbox["ymin"]), float(bbox["xmax"]), float(bbox["ymax"])
        )
    except (KeyError, TypeError, ValueError, EvidenceError) as exc:
        raise SampleError(f"{where}: bad box {bbox!r}: {exc}") from None


def _fid_range(value: Any, where: str, name: str) -> tuple[int, int]:
    try:
        begin, end = int(value["begin_fid"]), int(value["end_fid"])
    except (KeyError, TypeError, ValueError, OverflowError):
        raise SampleError(
            f"{where}: {name} needs integer begin_fid/end_fid, got {value!r}"
        ) from None
    if begin < 0 or end <= begin:
        raise SampleError(f"{where}: {name} end frame {end} is not after start frame {begin}")
    return begin, end


def normalise_entry(
    entry: Mapping[str, Any], trajectories: Sequence[Any], where: str, entry_index: int = 0
) -> list[VidSTGSample]:
    """Turn one VidSTG entry (+ the video's VidOR trajectories) into one sample per sentence.

    Raises:
        SampleError: naming ``where`` for a missing field, an empty or inverted frame range,
            a span outside the segment, an unknown target, a missing/degenerate box, or any
            value of the wrong type.
    """
    try:
        return _normalise(entry, trajectories, where, entry_index)
    except SampleError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        raise SampleError(f"{where}: malformed entry ({type(exc).__name__}: {exc})") from None


def _normalise(
    entry: Mapping[str, Any], trajectories: Sequence[Any], where: str, entry_index: int
) -> list[VidSTGSample]:
    fields = ("vid", "fps", "frame_count", "width", "height", "subject/objects")
    require(entry, (*fields, "used_segment", "temporal_gt", "captions", "questions"), where)
    segment = _fid_range(entry["used_segment"], where, "used_segment")
    span = _fid_range(entry["temporal_gt"], where, "temporal_gt")
    if not (segment[0] <= span[0] and span[1] <= segment[1] <= int(entry["frame_count"])):
        raise SampleError(f"{where}: temporal_gt {span} is outside used_segment {segment}")
    width, height, fps = int(entry["width"]), int(entry["height"]), float(entry["fps"])
    if width <= 0 or height <= 0 or not (math.isfinite(fps) and fps > 0):
        raise SampleError(f"{where}: width/height/fps {width}/{height}/{fps} must be positive")
    categories = {int(o["tid"]): str(o["category"]) for o in entry["subject/objects"]}
    vid = str(entry["vid"])
    out: list[VidSTGSample] = []
    tubes: dict[int, dict[int, Box]] = {}
    groups = (("declarative", "captions"), ("interrogative", "questions"))
    for sentence_type, key in groups:
        for k, sent in enumerate(entry[key]):
            require(sent, ("description", "target_id"), f"{where} {key}[{k}]")
            tid = int(sent["target_id"])
            if tid not in categories:
                raise SampleError(f"{where} {key}[{k}]: target_id {tid} not in subject/objects")
            if tid not in tubes:
                tubes[tid] = _tube(trajectories, tid, span, where)
                if all(b.clip(width, height) is None for b in tubes[tid].values()):
                    raise SampleError(
                        f"{where} {key}[{k}]: the tube of target {tid} lies wholly outside the "
                        f"{width}×{height} frame"
                    )
            out.append(
                VidSTGSample(
                    doc_id=f"{vid}:{entry_index}:{sentence_type[0]}{k}",
                    vid=vid,
                    sentence=str(sent["description"]).strip(),
                    sentence_type=sentence_type,
                    target_id=tid,
                    target_category=categories[tid],
                    segment=segment,
                    span=span,
                    tube=tubes[tid],
                    width=width,
                    height=height,
                    fps=fps,
                    video_name=str(entry.get("video_path") or f"{vid}.mp4"),
                )
            )
    return out


def _tube(trajectories: Sequence[Any], tid: int, span: tuple[int, int], where: str) -> dict:
    tube = {}
    for fid in range(*span):
        boxes = trajectories[fid] if fid < len(trajectories) else ()
        hit = next((b for b in boxes if int(b.get("tid", -1)) == tid), None)
        if hit is None:
            raise SampleError(f"{where}: target tid {tid} has no box in frame {fid} of {span}")
        tube[fid] = vidor_box(hit.get("bbox"), f"{where} frame {fid}")
    return tube


def box_text(text: str) -> str:
    """``text`` with each named parenthesised box written as ``[x1, y1, x2, y2]``.

    headscope's own reading of a reply (TubeDETR predicts boxes, it reads no text): a box
    written "(x1, y1, x2, y2) = (140, 120, 340, 360)" (also "(x_1, …)", ":" or nothing for
    "=") is the box ``[140, 120, 340, 360]`` in the family's convention, at the place it is
    written; the adapter's box parser reads the result
    (:attr:`~harness.api.task.ScoringContext.parse_video_box`).
    """
    return _NAMED_BOX.sub(lambda m: "[" + ", ".join(m.groups()) + "]", text)


def parse_span(text: str) -> tuple[int, int] | None:
    """Frame positions ``(start, end)`` from a reply such as ``"<start>-<end> [...]"``, or None.

    Every box (``[..]`` holding three or more numbers, ``(x1,y1),(x2,y2)``,
    ``<|box_start|>..<|box_end|>``, a named box "(x1, y1, x2, y2) = (…)" of :func:`box_text`,
    and the corner names "(x1, y1, x2, y2)" alone) is removed first, wherever it stands, so a
    box before the
    span does not hide it ("[2, 6]" stays: a span in brackets). The span is the first "A-B",
    "A–B", "A~B", "A, B", "A to B", "A through/until/and B" (an optional "frame" before B:
    "Frame 3 through frame 7" is (3, 7)) or the same in other languages ("2 bis 6", "2 al 6",
    "2 à 6", "2 a 6", "第2帧到第6帧", "2から6", "с 2 по 6") or labelled ends ("Start: 2, End:
    6", "starting at frame 2 and ending at frame 6") or a list of three or more frames ("frames
    5, 6, 7, 8", "5, 6, 7 and 8": smallest to largest), whichever comes first; else the first
    lone number is a one-frame span. Reversed ends are swapped; None means no number outside
    the boxes.
    """
    head = _BOXES.sub(_drop_box, _CORNER_NAMES.sub(" ", box_text(text)))
    found = [m for m in (_SPAN.search(head), _LABELED.search(head)) if m]
    match = min(found, key=lambda m: m.start()) if found else None
    listed = next((m for m in _LIST.finditer(head) if len(_ONE.findall(m.group())) >= 3), None)
    if listed and (match is None or listed.start() <= match.start()):
        frames = [int(n) for n in _ONE.findall(listed.group())]
        return (min(frames), max(frames))
    if match:
        a, b = int(match.group(1)), int(match.group(2))
        return (min(a, b), max(a, b))
    one = _ONE.search(head)
    return (int(one.group()), int(one.group())) if one else None


def tube_scores(
    shown: Sequence[int],
    span: tuple[int, int],
    tube: Mapping[int, Box],
    pred_positions: tuple[int, int] | None,
    pred_box: Box | None,
) -> tuple[float, float] | None:
    """``(tIoU, vIoU)`` over the shown frames, or None when no shown frame is in the span.

    With ``G`` the shown positions whose source frame is in ``span`` and ``P`` the predicted
    positions: ``tIoU = |P∩G| / |P∪G|``, ``vIoU = Σ_{p∈P∩G} IoU(pred_box, tube[shown[p]]) /
    |P∪G|``.

    Args:
        shown: Source frame index of each shown position (strictly increasing).
        span: Ground-truth (begin, end_exclusive) source frames.
        tube: Ground-truth box per source frame of the span.
        pred_positions: Predicted (start, end) shown positions, end inclusive, each clamped to
            ``[0, len(shown) − 1]``; None when unparsed (P is empty).
        pred_box: Predicted box in original pixels; None when unparsed (vIoU is then 0).
    """
    gt = set(frame_positions_in_span(shown, *span))
    if not gt:
        return None
    pred: set[int] = set()
    if pred_positions is not None and shown:
        last = len(shown) - 1
        lo, hi = sorted(min(max(p, 0), last) for p in pred_positions)
        pred = set(range(lo, hi + 1))
    union = len(gt | pred)
    both = gt & pred
    viou = 0.0
    if pred_box is not None:
        viou = sum(pred_box.iou(tube[shown[p]]) for p in both) / union
    return len(both) / union, viou


def tubedetr_scores(
    shown: Sequence[int],
    span: tuple[int, int],
    tube: Mapping[int, Box],
    pred_positions: tuple[int, int] | None,
    pred_box: Box | None,
) -> tuple[float, float]:
    """``(tIoU, vIoU)`` as TubeDETR's VidSTG evaluator computes them, on the shown frames.

    antoyang/TubeDETR ``datasets/vidstg_eval.py::VidSTGiouEvaluator.evaluate`` with the shown
    frames as its ``frame_ids`` and the predicted positions mapped to source frames as its
    post-processor does (``models/postprocessors.py``: ``[id[start], id[end] + 1]``, end
    excluded): tIoU from frame-number arithmetic of the two ``[start, end)`` spans (0 when
    they do not overlap); vIoU = Σ IoU(pred box, gt box) over the shown gt-tube frames inside
    both spans, divided by the number of shown frames inside their hull (at least 1). A
    sentence is never left out; an unparsed span or box scores 0 (no prediction).
    """
    if pred_positions is None or not shown:
        return 0.0, 0.0
    last = len(shown) - 1
    lo, hi = sorted(min(max(p, 0), last) for p in pred_positions)
    pred = (shown[lo], shown[hi] + 1)
    max_start, min_end = max(span[0], pred[0]), min(span[1], pred[1])
    min_start, max_end = min(span[0], pred[0]), max(span[1], pred[1])
    if min_end <= max_start:
        tiou = 0.0
    else:
        inter = min_end - max_start
        tiou = inter / ((span[1] - span[0]) + (pred[1] - pred[0]) - inter)
    hull = [f for f in shown if min_start <= f < max_end]
    both = {f for f in shown if max_start <= f < min_end}
    viou = 0.0
    if pred_box is not None:
        viou = sum(pred_box.iou(tube[f]) for f in shown if span[0] <= f < span[1] and f in both)
    return tiou, viou / max(len(hull), 1)
