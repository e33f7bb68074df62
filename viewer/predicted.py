"""What each reply predicted, as a sample page draws it beside the gold region.

Box tasks (RefCOCOg): the box read from the reply as the run's model reads boxes
(:func:`harness.api.model.parse_box_text` with the recorded ``box_convention``; resized pixels
map back through the recorded ``resize``, :func:`harness.models.qwen_resize.resized_size`).
Tube and page tasks: what the task logged in the reply's scores — VidSTG's ``pred_positions``
(shown frame positions, end inclusive) and ``pred_box``, MMDocIR's ``pred_pages`` (0-based).
Everything in the original pixels of the medium; a value that is not what it should be draws
nothing.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["ints", "rounded", "predict", "list_boxes"]


def ints(value: Any) -> list[int] | None:
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
    return rounded(value) if all(math.isfinite(v) for v in value) else None


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
        span = ints(span)
        if span is None or len(span) != 2 or (box is not None and _box(box) is None):
            return None
        return [
            {"media": i, "box": None if box is None else _box(box)}
            for i, m in enumerate(media)
            if m["kind"] == "frame" and span[0] <= m["index"] <= span[1]
        ]
    if kind == "page" and "pred_pages" in scores:
        pages = ints(scores["pred_pages"])
        if pages is None:
            return None
        return [
            {"media": i, "box": None}
            for i, m in enumerate(media)
            if m["kind"] == "page" and m["index"] in set(pages)
        ]
    return None


def predict(detail: dict[str, Any], source: dict[str, Any], media: list[dict[str, Any]]) -> None:
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
            r["region"] = [] if box is None else [{"media": gold[0]["media"], "box": rounded(box)}]


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


def rounded(box: Any) -> list[float]:
    """A box's coordinates to 0.1 px (what the pages show)."""
    return [round(float(v), 1) for v in box]


def list_boxes(ts: Any, details: list[dict[str, Any]]) -> None:
    """Add each predicted box, in pixels, to the samples list's reply (as the gold is given)."""
    for sample, detail in zip(ts.table["samples"], details):
        if detail["media"].get("evidence", {}).get("kind") != "box":
            continue
        for c, replies in enumerate(detail["replies"]):
            region = replies[0].get("region") if replies else None
            if region and sample["r"][c] is not None:
                box = ", ".join(f"{v:g}" for v in region[0]["box"])
                sample["r"][c] = f"{sample['r'][c]} → [{box}] px"
