"""MMDocIR — page- and layout-level evidence retrieval in long documents, asked generatively.

- Dataset: HF ``MMDocIR/MMDocIR_Evaluation_Dataset`` (files, not a builder config):
  ``MMDocIR_pages.parquet`` (``doc_name``, ``domain``, ``passage_id``, ``image_path``,
  ``image_binary`` JPEG, ``ocr_text``, ``vlm_text``), ``MMDocIR_layouts.parquet`` (not needed
  here: gold layouts come with each question) and ``MMDocIR_annotations.jsonl``, one line per
  document: ``doc_name``, ``domain``, ``page_indices`` / ``layout_indices`` (**inclusive**
  [start, end] row ranges into the parquets; the README spells the latter
  ``layout_indinces``), ``questions`` [{``Q``, ``A``, ``page_id`` (**0-based** list), ``type``
  (string repr of a list), ``layout_mapping`` [{``page``, ``page_size`` [w, h] and ``bbox``
  [x1, y1, x2, y2], both in the page's own coordinates}]}]. 313 documents, 1,658 questions;
  one split, ``test``. Local copy: ``data_dir`` holding the three files (or ``annotations_file`` /
  ``pages_file``).
- Licence: CC BY-NC 4.0. Paper: Dong et al., "MMDocIR: Benchmarking Multi-Modal Retrieval for
  Long Documents", 2025 (arXiv 2501.08828).
- Normalisation (once, at load; :mod:`tasks.mmdocir.data`): layout boxes scaled to page-image
  pixels by ``image_w / page_w`` and ``image_h / page_h`` and also kept as released; pages stay
  0-based; ``doc_id`` is ``"{doc_name}#{k}"`` for the k-th question of a document.
- Generative protocol: all pages of the document are shown in order (the first ``max_pages``
  when capped; gold pages beyond the cap count as misses) and the model is asked which
  page(s) hold the evidence, as 1-based page numbers, most relevant first. With
  ``level="layout"`` it is asked for regions "page N: [x1, y1, x2, y2]" (boxes parsed in the
  model family's convention).
- Scoring (``scoring``):

  - ``official`` (the default): MMDocIR's released ``metric_eval.py`` (``recall``,
    ``recall_layout``, ``evaluate_page`` / ``evaluate_layout``), applied to the ranked list the
    reply names — see :mod:`tasks.mmdocir.official` for the rules, quirks and the one
    adaptation. Metrics: ``recall@1/3/5`` (micro over questions) and ``recall@k_macro`` (mean
    over the release's ten domains); with ``level="layout"`` also ``layout_recall@1/5/10``
    (gold layout area covered by the first k regions) and their ``_macro``.
  - ``lenient``: page ``recall@1/3/5`` = |set(gold) ∩ first k pages| / |set(gold)|; with
    ``level="layout"`` also ``layout_recall@1/3/5``: a gold layout (of positive area) is found
    when one of the first k regions lies on its page with IoU ≥ 0.5.

  Pages and regions are read from the reply by :mod:`tasks.common.page_refs` in both modes.
  lmms-eval 0.7.3 has no MMDocIR task.
- Gold as released: a question's ``page_id`` list is kept as given (the official denominator
  is its length); a gold layout of zero area (one real question has one) and a gold layout on
  a page outside ``page_id`` (two real questions) are accepted, as the release scores them.
- Evidence: the gold pages among those shown; with ``level="layout"`` also their boxes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from harness.api.errors import UsageError
from harness.api.payloads import Box, Generation, PageEvidence, Request
from harness.api.registry import task
from harness.api.scoring import check_scoring
from harness.api.task import (
    UNIT_INTERVAL,
    MetricDef,
    MetricValue,
    SampleError,
    ScoringContext,
    Task,
    TaskLoadError,
)
from tasks.common.loading import lazy_media, load_rows, open_image, row_id
from tasks.common.page_refs import parse_pages, parse_regions
from tasks.mmdocir.data import DocIRSample, document_pages, question_sample
from tasks.mmdocir.official import (
    LAYOUT_KS,
    PAGE_KS,
    Rect,
    layout_recall,
    micro_macro,
    page_recall,
)

__all__ = ["DocIRSample", "MMDocIR", "parse_pages", "parse_regions", "recall_at"]

KS = (1, 3, 5)
PAGE_METRICS = tuple(
    MetricDef(f"recall@{k}", True, f"gold pages in the first {k}", bounds=UNIT_INTERVAL) for k in KS
)
LAYOUT_METRICS = tuple(
    MetricDef(
        f"layout_recall@{k}",
        True,
        f"gold layouts hit by the first {k} regions",
        bounds=UNIT_INTERVAL,
    )
    for k in KS
)


def _with_macro(
    name: str, ks: tuple[int, ...], what: str, bounds: tuple[float | None, float | None]
) -> tuple[MetricDef, ...]:
    """``name@k`` for each k (``what`` formatted with k), then each one's ten-domain macro."""
    micro = tuple(MetricDef(f"{name}@{k}", True, what.format(k=k), bounds=bounds) for k in ks)
    return micro + tuple(
        MetricDef(f"{m.name}_macro", True, f"{m.name} averaged over the ten domains", bounds=bounds)
        for m in micro
    )


OFFICIAL_PAGE_METRICS = _with_macro(
    "recall", PAGE_KS, "gold pages in the first {k} named", UNIT_INTERVAL
)
# metric_eval.recall_layout sums overlaps: overlapping retrieved regions can pass 1.
OFFICIAL_LAYOUT_METRICS = _with_macro(
    "layout_recall", LAYOUT_KS, "gold layout area covered by the first {k} regions", (0.0, None)
)
ANNOTATIONS, PAGES = "MMDocIR_annotations.jsonl", "MMDocIR_pages.parquet"


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
        scoring: "official" (the release's metrics, the default) or "lenient" (see above).
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
        scoring: str = "official",
    ) -> None:
        self.scoring = check_scoring("mmdocir", scoring, ("official", "lenient"))
        if level not in ("page", "layout"):
            raise UsageError(f"mmdocir level must be 'page' or 'layout', got {level!r}")
        if max_pages is not None and max_pages < 1:
            raise UsageError("mmdocir max_pages must be ≥ 1")
        self.level, self.max_pages = level, max_pages
        if self.scoring == "official":
            layout_metrics, self.metrics = OFFICIAL_LAYOUT_METRICS, OFFICIAL_PAGE_METRICS
        else:
            layout_metrics, self.metrics = LAYOUT_METRICS, PAGE_METRICS
        if level == "layout":
            self.metrics += layout_metrics
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
                pages, questions = document_pages(note, pages_meta, media, where)
            except SampleError as exc:
                self.bad_row(out, where, exc)
                questions = []
            for k, q in enumerate(questions):
                try:
                    out.append(question_sample(note, k, q, pages, f"{where} question {k}"))
                except SampleError as exc:
                    self.bad_row(out, f"{note['doc_name']}#{k}", exc)
                if limit is not None and len(out) >= limit:
                    return out
            if limit is not None and len(out) >= limit:
                return out
        return out

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
        """Page recall@k (and layout recall@k at layout level) under the scoring mode."""
        n = self.n_shown(sample)
        regions = [(p, t) for p, t in parse_regions(generation.text) if 0 <= p < n]
        if self.level == "layout" and regions:  # the pages the regions lie on, in order
            predicted = list(dict.fromkeys(p for p, _ in regions))
        else:
            predicted = parse_pages(generation.text, n)
        if self.scoring == "official":
            return self._official(sample, predicted, regions, ctx) | {"pred_pages": predicted}
        out = {f"recall@{k}": recall_at(predicted, sample.gold_pages, k) for k in KS}
        out["pred_pages"] = predicted  # 0-based, in the order named (the viewer draws them)
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

    def _official(
        self,
        sample: DocIRSample,
        predicted: list[int],
        regions: list[tuple[int, str]],
        ctx: ScoringContext,
    ) -> dict[str, Any]:
        """The release's recall / recall_layout of the lists the reply names (see module doc)."""
        gold = sample.page_ids or sample.gold_pages
        out: dict[str, Any] = {f"recall@{k}": page_recall(predicted[:k], gold) for k in PAGE_KS}
        if self.level == "layout":
            regions = list(dict.fromkeys((p, "".join(t.split())) for p, t in regions))
            points, sizes = dict(sample.page_points), dict(sample.page_sizes)
            rects = [_in_page_points(points, sizes, p, t, ctx) for p, t in regions]
            for k in LAYOUT_KS:
                found = [r for r in rects[:k] if r is not None]
                out[f"layout_recall@{k}"] = layout_recall(found, sample.layout_rects)
        return out | {"domain": sample.domain}

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> list[MetricValue]:
        """Means (lenient); micro and ten-domain macro means as the release computes (official)."""
        if self.scoring != "official":
            return super().aggregate(rows)
        declared = [m.name for m in self.metrics]
        names = [name for name in declared if not name.endswith("_macro")]
        pairs = [micro_macro(rows, name, f"{name}_macro") for name in names]
        values = [micro for micro, _ in pairs] + [macro for _, macro in pairs]
        return [v for v in values if v.name in declared]

    def sample_log(self, sample: DocIRSample) -> dict[str, Any]:
        """Gold pages (0-based) and the answer."""
        return {"target": list(sample.gold_pages), "answer": sample.answer}


def _in_page_points(
    points: dict[int, tuple[float, float]],
    sizes: dict[int, tuple[int, int]],
    page: int,
    box_text: str,
    ctx: ScoringContext,
) -> Rect | None:
    """A region read in the family's convention, in the annotation's page coordinates.

    ``points`` / ``sizes``: page → ``page_size`` / image size. None when the box does not
    parse or its page holds no gold layout (it then covers nothing, though it still takes one
    of the k places).
    """
    if page not in points or page not in sizes:
        return None
    box = ctx.parse_box(box_text, sizes[page])
    if box is None:
        return None
    (pw, ph), (w, h) = points[page], sizes[page]
    return page, (box.x1 * pw / w, box.y1 * ph / h, box.x2 * pw / w, box.y2 * ph / h)
