"""MMDocIR — page- and layout-level evidence retrieval in long documents, asked generatively.

- Dataset: HF ``MMDocIR/MMDocIR_Evaluation_Dataset`` (files, not a builder config):
  ``MMDocIR_pages.parquet`` (``doc_name``, ``domain``, ``passage_id``, ``image_path``,
  ``image_binary`` JPEG, ``ocr_text``, ``vlm_text``), ``MMDocIR_layouts.parquet`` (not needed
  here: gold layouts come with each question) and ``MMDocIR_annotations.jsonl``, one line per
  document: ``doc_name``, ``domain``, ``page_indices`` / ``layout_indices`` (**inclusive**
  [start, end] row ranges into the parquets; the README spells the latter
  ``layout_indinces``), ``questions`` [{``Q``, ``A``, ``page_id`` (**0-based** list), ``type``
  (string repr of a list), ``layout_mapping`` [{``page``, ``page_size`` [w, h] in PDF points,
  ``bbox`` [x1, y1, x2, y2] in PDF points}]}]. 313 documents, 1,658 questions; one split,
  ``test``. Local copy: ``data_dir`` holding the three files (or ``annotations_file`` /
  ``pages_file``).
- Licence: CC BY-NC 4.0. Paper: Dong et al., "MMDocIR: Benchmarking Multi-Modal Retrieval for
  Long Documents", 2025 (arXiv 2501.08828).
- Normalisation (once, at load): layout boxes scaled to page-image pixels by
  ``image_w / page_w`` and ``image_h / page_h``; pages stay 0-based; ``doc_id`` is
  ``"{doc_name}#{k}"`` for the k-th question of a document.
- Generative protocol: all pages of the document are shown in order (the first ``max_pages``
  when capped; gold pages beyond the cap count as misses) and the model is asked which
  page(s) hold the evidence, as 1-based page numbers, most relevant first. With
  ``level="layout"`` it is asked for regions "page N: [x1, y1, x2, y2]" (boxes parsed in the
  model family's convention).
- Metrics: page ``recall@1/3/5`` = |gold ∩ first k pages| / |gold|; with ``level="layout"``
  also ``layout_recall@1/3/5``: a gold layout is found when one of the first k regions lies on
  its page with IoU ≥ 0.5.
- Evidence: the gold pages among those shown; with ``level="layout"`` also their boxes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from harness.api.payloads import Box, Generation, PageEvidence, Request
from harness.api.registry import task
from harness.api.task import MetricDef, SampleError, ScoringContext, Task, TaskLoadError
from tasks._common import (
    RowImage,
    image_size,
    lazy_media,
    load_rows,
    open_image,
    parse_list,
    require,
    row_id,
)
from tasks._scoring import check_scoring

__all__ = ["DocIRSample", "MMDocIR", "parse_pages", "parse_regions", "recall_at"]

KS = (1, 3, 5)
PAGE_METRICS = tuple(MetricDef(f"recall@{k}", True, f"gold pages in the first {k}") for k in KS)
LAYOUT_METRICS = tuple(
    MetricDef(f"layout_recall@{k}", True, f"gold layouts hit by the first {k} regions") for k in KS
)
ANNOTATIONS, PAGES = "MMDocIR_annotations.jsonl", "MMDocIR_pages.parquet"
_REGION = re.compile(r"page\s*(\d+)\s*[:\-,]?\s*(\[[^\]]*\])", re.I)


@dataclass(frozen=True, slots=True)
class DocIRSample:
    """One retrieval question.

    Attributes:
        doc_id: ``"{doc_name}#{k}"``.
        question: Question text.
        answer: The question's answer (logged, not scored).
        pages: Page image sources of the whole document, in order.
        gold_pages: 0-based evidence pages.
        layouts: Gold layout regions ``(page, Box in page-image pixels)``.
        page_sizes: ``(page, (width, height))`` of the gold pages' images.
        domain: Document domain.
    """

    doc_id: str
    question: str
    answer: str
    pages: tuple[Any, ...]
    gold_pages: tuple[int, ...]
    layouts: tuple[tuple[int, Box], ...] = ()
    page_sizes: tuple[tuple[int, tuple[int, int]], ...] = ()
    domain: str = ""


_NOT_PAGE = re.compile(
    r"\b(?:fig(?:ure)?s?|tables?|tab|sections?|sec|chapters?|ch|eq(?:uation)?s?|steps?|"
    r"items?|notes?|footnotes?|appendix|ref(?:erence)?s?)\.?\s*\d+(?:\.\d+)*",
    re.I,
)
_RANGE = re.compile(r"(\d+)\s*(?:-|–|—|to|through|thru)\s*(?:pages?\s*)?(\d+)", re.I)


def parse_pages(text: str, n_pages: int) -> list[int]:
    """1-based page numbers in order of mention → unique 0-based pages within the document.

    Numbers that name a figure, table, section, equation, step, note or reference ("(see
    Figure 2)", "Table 3.1") are not pages; a range "3-7" / "3 to 7" / "pages 3 through 7"
    stands for every page in it (clipped to the document); out-of-document pages are dropped.
    """
    text = _NOT_PAGE.sub(" ", str(text))
    out: list[int] = []
    pos = 0
    for match in _RANGE.finditer(text):
        out += _numbers(text[pos : match.start()], n_pages, out)
        a, b = sorted((int(match.group(1)), int(match.group(2))))
        out += [p for p in range(max(a, 1) - 1, min(b, n_pages)) if p not in out]
        pos = match.end()
    out += _numbers(text[pos:], n_pages, out)
    return out


def _numbers(text: str, n_pages: int, seen: list[int]) -> list[int]:
    found: list[int] = []
    for token in re.findall(r"\d+", text):
        page = int(token) - 1
        if 0 <= page < n_pages and page not in seen and page not in found:
            found.append(page)
    return found


def parse_regions(text: str) -> list[tuple[int, str]]:
    """``(0-based page, box text)`` for each "page N: [..]" region, in order."""
    return [(int(m.group(1)) - 1, m.group(2)) for m in _REGION.finditer(text)]


def recall_at(predicted: list[int], gold: tuple[int, ...], k: int) -> float:
    """|gold ∩ predicted[:k]| / |gold|."""
    return len(set(predicted[:k]) & set(gold)) / len(set(gold)) if gold else float("nan")


@task("mmdocir")
class MMDocIR(Task):
    """MMDocIR page / layout retrieval asked of a generative model.

    Args:
        level: "page" (page recall) or "layout" (page and layout recall).
        max_pages: Show only the first ``max_pages`` pages of a document; None = all.
        data_dir: Folder with the annotations JSONL and the pages parquet.
        annotations_file: Explicit annotations JSONL (overrides ``data_dir``).
        pages_file: Explicit pages parquet (overrides ``data_dir``).
        dataset_id: HF dataset repository holding the files.
        revision: Hub revision.
        scoring: Only "lenient" (headscope's rule, described above) for now; the
            benchmark's official and lmms-eval rules are not implemented yet.
    """

    metrics: ClassVar[tuple[MetricDef, ...]] = PAGE_METRICS + LAYOUT_METRICS
    default_split: ClassVar[str] = "test"
    grounded: ClassVar[bool] = True

    def __init__(
        self,
        *,
        level: Literal["page", "layout"] = "page",
        max_pages: int | None = None,
        data_dir: str | None = None,
        annotations_file: str | None = None,
        pages_file: str | None = None,
        dataset_id: str = "MMDocIR/MMDocIR_Evaluation_Dataset",
        revision: str | None = None,
        scoring: str = "lenient",
    ) -> None:
        self.scoring = check_scoring("mmdocir", scoring, ("lenient",))
        if level not in ("page", "layout"):
            raise ValueError(f"mmdocir level must be 'page' or 'layout', got {level!r}")
        if max_pages is not None and max_pages < 1:
            raise ValueError("mmdocir max_pages must be ≥ 1")
        self.level, self.max_pages = level, max_pages
        self.metrics = PAGE_METRICS + (LAYOUT_METRICS if level == "layout" else ())
        self.data_dir, self.annotations_file, self.pages_file = (
            data_dir,
            annotations_file,
            pages_file,
        )
        self.dataset_id, self.revision = dataset_id, revision

    def settings(self) -> dict[str, Any]:
        """Level and page cap (resolved defaults included)."""
        return {
            "level": self.level,
            "max_pages": self.max_pages,
            "scoring": self.scoring,
        } | super().settings()

    def _table(self, split: str, name: str, explicit: str | None) -> Any:
        if explicit is None and self.data_dir is not None:
            explicit = str(Path(self.data_dir) / name)
        if explicit is not None:
            return load_rows("mmdocir", split, data_files=explicit)
        return load_rows(
            "mmdocir", split, dataset_id=self.dataset_id, revision=self.revision, hub_files=name
        )

    def load(self, split: str | None = None, limit: int | None = None) -> list[DocIRSample]:
        """Join annotations with page rows; scale layout boxes to pixels."""
        split = split or self.default_split
        if split != "test":
            raise TaskLoadError(f"mmdocir has one evaluation split, 'test' (got {split!r})")
        notes = self._table(split, ANNOTATIONS, self.annotations_file)
        pages_meta, media = lazy_media(self._table(split, PAGES, self.pages_file), ["image_binary"])
        if "image_binary" not in media.column_names:
            raise TaskLoadError("mmdocir: the pages table has no 'image_binary' column")
        out: list[DocIRSample] = []
        for i, note in enumerate(notes):
            where = row_id("mmdocir annotations", i, note, "doc_name")
            try:
                pages, questions = self._document(note, pages_meta, media, where)
            except SampleError as exc:
                self.bad_row(out, where, exc)
                questions = []
            for k, q in enumerate(questions):
                try:
                    out.append(self._sample(note, k, q, pages, f"{where} question {k}"))
                except SampleError as exc:
                    self.bad_row(out, f"{note['doc_name']}#{k}", exc)
                if limit is not None and len(out) >= limit:
                    return out
            if limit is not None and len(out) >= limit:
                return out
        return out

    @staticmethod
    def _document(note: Any, pages_meta: Any, media: Any, where: str) -> tuple[tuple, list]:
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

    def _sample(self, note: dict, k: int, q: dict, pages: tuple, where: str) -> DocIRSample:
        require(q, ["Q", "page_id"], where)
        try:
            gold = [int(p) for p in parse_list(q["page_id"], where, "page_id")]
        except (TypeError, ValueError, OverflowError):
            raise SampleError(f"{where}: page_id {q['page_id']!r} is not a list of pages") from None
        if not gold or any(not 0 <= p < len(pages) for p in gold):
            raise SampleError(f"{where}: page_id {gold} outside the document's {len(pages)} pages")
        sizes = {p: image_size(pages[p], f"{where} page {p}") for p in set(gold)}
        layouts = []
        for item in q.get("layout_mapping") or []:
            try:
                page, (pw, ph) = int(item["page"]), (float(v) for v in item["page_size"])
                x1, y1, x2, y2 = (float(v) for v in item["bbox"])
            except (KeyError, TypeError, ValueError, OverflowError):
                raise SampleError(f"{where}: malformed layout_mapping entry {item!r}") from None
            if not all(math.isfinite(v) for v in (pw, ph, x1, y1, x2, y2)):
                raise SampleError(f"{where}: layout_mapping entry {item!r} is not finite")
            if page not in sizes or pw <= 0 or ph <= 0:
                raise SampleError(f"{where}: layout on page {page} not among gold pages {gold}")
            if not (x2 > x1 and y2 > y1):
                raise SampleError(f"{where}: layout bbox {item['bbox']} has no area")
            if Box(x1, y1, x2, y2).clip(pw, ph) is None:
                raise SampleError(
                    f"{where}: layout bbox {item['bbox']} lies outside its {pw:g}×{ph:g} page"
                )
            w, h = sizes[page]
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
        )

    def n_shown(self, sample: DocIRSample) -> int:
        """How many leading pages of the document are shown."""
        return min(len(sample.pages), self.max_pages or len(sample.pages))

    def prompt(self, sample: DocIRSample) -> str:
        """The question and the page (or region) answer rule."""
        n = self.n_shown(sample)
        head = (
            f"{sample.question}\nThe document's {n} pages are shown in order (page 1 to page {n})."
        )
        if self.level == "layout":
            return head + (
                " Which regions hold the evidence to answer the question? Reply with one region "
                "per line, most relevant first, as: page N: [x1, y1, x2, y2]"
            )
        return head + (
            " Which page or pages hold the evidence to answer the question? Reply with the "
            "page numbers only, most relevant first, separated by commas."
        )

    def request(self, sample: DocIRSample) -> Request:
        """Pages shown (decoded) and the retrieval question."""
        images = tuple(
            open_image(sample.pages[p], f"mmdocir doc {sample.doc_id} page {p}")
            for p in range(self.n_shown(sample))
        )
        return Request(text=self.prompt(sample), pages=images, max_new_tokens=48)

    def evidence(self, sample: DocIRSample, request: Request) -> PageEvidence | None:
        """Gold pages among the pages shown (with their layout boxes at layout level)."""
        shown = [p for p in sample.gold_pages if p < len(request.pages)]
        if not shown:
            return None
        boxes: dict[int, tuple[Box, ...]] = {}
        if self.level == "layout":
            for page in shown:
                found = tuple(b for p, b in sample.layouts if p == page)
                if found:
                    boxes[page] = found
        return PageEvidence(pages=tuple(shown), boxes=boxes)

    def score(self, sample: DocIRSample, generation: Generation, ctx: ScoringContext) -> dict:
        """Page recall@k (and layout recall@k at layout level)."""
        n = self.n_shown(sample)
        regions = [(p, t) for p, t in parse_regions(generation.text) if 0 <= p < n]
        if self.level == "layout" and regions:
            predicted = list(dict.fromkeys(p for p, _ in regions))
        else:
            predicted = parse_pages(generation.text, n)
        out = {f"recall@{k}": recall_at(predicted, sample.gold_pages, k) for k in KS}
        if self.level == "layout" and sample.layouts:
            sizes = dict(sample.page_sizes)
            boxes = [(p, ctx.parse_box(t, sizes[p]) if p in sizes else None) for p, t in regions]
            for k in KS:
                hits = sum(
                    any(p == gp and b is not None and b.iou(gb) >= 0.5 for p, b in boxes[:k])
                    for gp, gb in sample.layouts
                )
                out[f"layout_recall@{k}"] = hits / len(sample.layouts)
        return out

    def sample_log(self, sample: DocIRSample) -> dict[str, Any]:
        """Gold pages (0-based) and the answer."""
        return {"target": list(sample.gold_pages), "answer": sample.answer}
