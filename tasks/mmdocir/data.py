"""MMDocIR annotation rows → typed samples (used by :mod:`tasks.mmdocir.task`).

Normalisation, once: layout boxes are scaled to page-image pixels by ``image_w / page_w`` and
``image_h / page_h`` (positive-area ones, for evidence and the lenient rule) and also kept as
released, in page coordinates (for the official rule); pages stay 0-based; ``doc_id`` is
``"{doc_name}#{k}"`` for the k-th question of a document.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from harness.api.payloads import Box
from harness.api.task import SampleError
from tasks.common.loading import RowImage, image_size, parse_list, require
from tasks.mmdocir.official import Rect

__all__ = ["DocIRSample", "document_pages", "question_sample", "gold_layouts"]


@dataclass(frozen=True, slots=True)
class DocIRSample:
    """One retrieval question.

    Attributes:
        doc_id: ``"{doc_name}#{k}"``.
        question: Question text.
        answer: The question's answer (logged, not scored).
        pages: Page image sources of the whole document, in order.
        gold_pages: 0-based evidence pages.
        layouts: Gold layout regions of positive area ``(page, Box in page-image pixels)``.
        page_sizes: ``(page, (width, height))`` of the images of the gold pages and of the
            pages holding gold layouts.
        domain: Document domain.
        page_ids: The gold ``page_id`` list as released (may repeat; empty = ``gold_pages``).
        layout_rects: Gold layouts ``(page, (x1, y1, x2, y2))`` as released, in the
            annotation's page coordinates (zero-area ones included).
        page_points: ``(page, page_size)`` of the pages holding gold layouts.
    """

    doc_id: str
    question: str
    answer: str
    pages: tuple[Any, ...]
    gold_pages: tuple[int, ...]
    layouts: tuple[tuple[int, Box], ...] = ()
    page_sizes: tuple[tuple[int, tuple[int, int]], ...] = ()
    domain: str = ""
    page_ids: tuple[int, ...] = ()
    layout_rects: tuple[Rect, ...] = ()
    page_points: tuple[tuple[int, tuple[float, float]], ...] = ()


def document_pages(note: Any, pages_meta: Any, media: Any, where: str) -> tuple[tuple, list]:
    """The page sources of one annotated document and its questions (checked)."""
    if not isinstance(note, dict):
        raise SampleError(f"{where}: not a JSON object")
    require(note, ["doc_name", "page_indices", "questions"], where)
    span = parse_list(note["page_indices"], where, "page_indices")
    if (
        len(span) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in span)
        or not 0 <= span[0] <= span[1] < len(pages_meta)
    ):
        raise SampleError(f"{where}: page_indices {span} outside the {len(pages_meta)} pages")
    for end in (span[0], span[1]):
        if pages_meta[end]["doc_name"] != note["doc_name"]:
            raise SampleError(f"{where}: pages row {end} belongs to another document")
    questions = note["questions"]
    if not isinstance(questions, list) or not all(isinstance(q, dict) for q in questions):
        raise SampleError(f"{where}: questions must be a list of objects")
    pages = tuple(RowImage(media, r, "image_binary") for r in range(span[0], span[1] + 1))
    return pages, questions


def question_sample(note: dict, k: int, q: dict, pages: tuple, where: str) -> DocIRSample:
    """The k-th question of a document as a :class:`DocIRSample` (SampleError if malformed)."""
    require(q, ["Q", "page_id"], where)
    try:
        gold = [int(p) for p in parse_list(q["page_id"], where, "page_id")]
    except (TypeError, ValueError, OverflowError):
        raise SampleError(f"{where}: page_id {q['page_id']!r} is not a list of pages") from None
    if not gold or any(not 0 <= p < len(pages) for p in gold):
        raise SampleError(f"{where}: page_id {gold} outside the document's {len(pages)} pages")
    rects, points = gold_layouts(q, len(pages), where)
    sizes = {
        p: image_size(pages[p], f"{where} page {p}") for p in set(gold) | {p for p, _ in rects}
    }
    layouts = []
    for page, (x1, y1, x2, y2) in rects:
        (pw, ph), (w, h) = points[page], sizes[page]
        if x2 > x1 and y2 > y1:  # a zero-area gold layout has no pixels to point at
            layouts.append((page, Box(x1 * w / pw, y1 * h / ph, x2 * w / pw, y2 * h / ph)))
    return DocIRSample(
        doc_id=f"{note['doc_name']}#{k}",
        question=str(q["Q"]).strip(),
        answer=str(q.get("A", "")),
        pages=pages,
        gold_pages=tuple(dict.fromkeys(gold)),
        layouts=tuple(layouts),
        page_sizes=tuple(sorted(sizes.items())),
        domain=str(note.get("domain") or ""),
        page_ids=tuple(gold),
        layout_rects=tuple(rects),
        page_points=tuple(sorted(points.items())),
    )


def gold_layouts(q: dict, n_pages: int, where: str) -> tuple[list[Rect], dict]:
    """Gold layouts as released (page coordinates) and each layout page's ``page_size``."""
    rects: list[Rect] = []
    points: dict[int, tuple[float, float]] = {}
    for item in q.get("layout_mapping") or []:
        try:
            page, (pw, ph) = int(item["page"]), (float(v) for v in item["page_size"])
            x1, y1, x2, y2 = (float(v) for v in item["bbox"])
        except (KeyError, TypeError, ValueError, OverflowError):
            raise SampleError(f"{where}: malformed layout_mapping entry {item!r}") from None
        if not all(math.isfinite(v) for v in (pw, ph, x1, y1, x2, y2)):
            raise SampleError(f"{where}: layout_mapping entry {item!r} is not finite")
        if not 0 <= page < n_pages or pw <= 0 or ph <= 0:
            raise SampleError(
                f"{where}: layout on page {page} (page_size {item['page_size']}) outside "
                f"the document's {n_pages} pages"
            )
        if x2 < x1 or y2 < y1:
            raise SampleError(f"{where}: layout bbox {item['bbox']} is written reversed")
        if points.setdefault(page, (pw, ph)) != (pw, ph):
            raise SampleError(f"{where}: page {page} has two page sizes in layout_mapping")
        if x2 > x1 and y2 > y1 and Box(x1, y1, x2, y2).clip(pw, ph) is None:
            raise SampleError(
                f"{where}: layout bbox {item['bbox']} lies outside its {pw:g}×{ph:g} page"
            )
        rects.append((page, (x1, y1, x2, y2)))
    return rects, points
