"""MMLongBench-Doc — question answering over long PDF documents (rendered pages).

- Dataset: ``yubo2333/MMLongBench-Doc``, split ``train`` (1,091 rows); the PDFs (135 documents)
  are a separate download placed in ``doc_dir``. Local metadata: ``data_files`` / ``data_dir``.
- Fields (all strings): ``doc_id`` (PDF file name, shared by its questions), ``doc_type``,
  ``question``, ``answer`` ("Not answerable" when unanswerable), ``evidence_pages`` (string
  list, **1-based**, may be "[]" even for answerable questions), ``evidence_sources`` (string
  list: Pure-text, Table, Chart, Figure, Generalized-text), ``answer_format`` (Str, Int,
  Float, List, None).
- Licence: CC BY-NC-SA 4.0 (check each document's own terms). Paper: Ma et al.,
  "MMLongBench-Doc: Benchmarking Long-context Document Understanding with Visualizations",
  NeurIPS 2024 Datasets & Benchmarks.
- Normalisation: evidence pages → 0-based once at load; ``doc_id`` of a sample is
  ``"{pdf}#{row}"`` because a PDF carries many questions.
- Pages shown (recorded in settings): ``pages="all"`` — every page (first ``max_pages`` if
  set); ``pages="gold"`` — the evidence pages only (an oracle; questions without evidence
  pages then show all pages). Rendered by :func:`harness.media.pdf.render_pages` at ``dpi``.
- Prompt: the question and a request for a short answer or "Not answerable".
- Scoring (``scoring``, recorded in settings; see :mod:`harness.api.scoring`):

  - ``official`` (default) — the release's two steps: an *extractor* turns the reply into
    an answer (:mod:`tasks.mmlongbench_doc.extractor`: ``extractor="rules"``, the default, or
    ``extractor="openai"`` with ``extractor_url`` / ``extractor_model`` / ``extractor_prompt``
    for any OpenAI-compatible endpoint, as the release asks GPT-4o; the choice is recorded
    and never substituted), then ``eval/eval_score.py::eval_score`` per ``answer_format``
    and ``eval_acc_and_f1`` (:mod:`tasks.mmlongbench_doc.official`).
  - ``lmms_eval`` — lmms-eval 0.7.3 ``tasks/mmlongbench_doc/utils.py`` on the raw reply.
  - ``lenient`` — :func:`tasks.mmlongbench_doc.answers.match_answer` on the raw reply: Int equality;
    Float ±1% with percent variants; Str exact for URLs/dates/numbers (dates compared as
    dates, "(…)" and "$" removed) else ANLS ≥ 0.5; List sorted element-wise; None → the
    reply must say "not answerable".
- Metrics: accuracy (mean score) and F1, with recall over answerable questions and
  precision over replies that give an answer, as each mode defines them.
- Evidence: the evidence pages among the pages shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from harness.api.errors import UsageError
from harness.api.payloads import Generation, PageEvidence, Request
from harness.api.registry import task
from harness.api.scoring import ScoringMode, check_scoring
from harness.api.task import (
    UNIT_INTERVAL,
    MetricDef,
    MetricValue,
    SampleError,
    ScoringContext,
    Task,
    TaskLoadError,
    mean_stderr,
)
from tasks.common.loading import DataFiles, RowSource, parse_list, require, row_id
from tasks.mmlongbench_doc.answers import FORMATS, match_answer, not_answerable
from tasks.mmlongbench_doc.extractor import NOT_ANSWERABLE, make_extractor
from tasks.mmlongbench_doc.official import NA_CLEAN, lm_clean, lmms_eval_score, official_score

__all__ = ["DocSample", "MMLongBenchDoc", "match_answer", "not_answerable", "PROMPT_SUFFIX"]

PROMPT_SUFFIX = (
    "\nAnswer with a short phrase, number or list taken from the document. "
    'If the document does not contain the answer, reply "Not answerable".'
)


@dataclass(frozen=True, slots=True)
class DocSample:
    """One question on one document.

    Attributes:
        doc_id: ``"{pdf}#{row}"``.
        document: PDF file name (relative to ``doc_dir``).
        question: Question text.
        answer: Gold answer string ("Not answerable" when unanswerable).
        answer_format: Str, Int, Float, List or None.
        evidence_pages: 0-based evidence pages (may be empty).
        evidence_sources: Evidence modalities.
        page_images: Pre-rendered pages (mini tasks); empty means render ``document``.
    """

    doc_id: str
    document: str
    question: str
    answer: str
    answer_format: str
    evidence_pages: tuple[int, ...]
    evidence_sources: tuple[str, ...] = ()
    page_images: tuple[Any, ...] = ()


_HF_DEFAULTS = {"device": "auto", "dtype": "auto", "batch_size": 8, "cache_file": None}


@task("mmlongbench_doc")
class MMLongBenchDoc(RowSource, Task):
    """MMLongBench-Doc long-document QA over rendered pages.

    Args:
        pages: "all" (every page, up to ``max_pages``) or "gold" (evidence pages only, oracle).
        dpi: Render resolution (144 is the benchmark's usual).
        max_pages: Cap on pages shown in "all" mode (first pages kept); None = no cap.
        doc_dir: Folder holding the PDFs named by the ``doc_id`` field.
        dataset_id: HF dataset id.
        data_files: Local parquet/JSON(L) file(s), or ``{split: files}``.
        data_dir: Local folder of such files.
        revision: Hub revision.
        scoring: "official" (extractor + the release's eval_score), "lmms_eval" or
            "lenient".
        extractor: "rules", "openai" or "hf:PATH" (a local chat model; official scoring only;
            see :mod:`tasks.mmlongbench_doc.extractor`).
        extractor_url: Base URL of an OpenAI-compatible endpoint (extractor "openai").
        extractor_model: Model name at that endpoint.
        extractor_prompt: Path of the release's ``eval/prompt_for_answer_extraction.md``
            ("openai" and "hf:PATH").
        extractor_device: "hf:PATH" only: "auto", "cpu", "cuda", "cuda:N".
        extractor_dtype: "hf:PATH" only: "auto", "float32", "bfloat16", "float16".
        extractor_batch_size: "hf:PATH" only: replies per generate call.
        extractor_cache: "hf:PATH" only: JSON-lines file caching extractions across runs.
    """

    metrics: ClassVar[tuple[MetricDef, ...]] = (
        MetricDef("accuracy", True, "mean rule-based answer score", bounds=UNIT_INTERVAL),
        MetricDef(
            "f1", True, "F1 of answerable-recall and answered-precision", bounds=UNIT_INTERVAL
        ),
    )
    default_split: ClassVar[str] = "train"
    grounded: ClassVar[bool] = True

    def __init__(
        self,
        *,
        pages: Literal["all", "gold"] = "all",
        dpi: int = 144,
        max_pages: int | None = None,
        doc_dir: str | None = None,
        dataset_id: str = "yubo2333/MMLongBench-Doc",
        data_files: DataFiles | None = None,
        data_dir: str | None = None,
        revision: str | None = None,
        scoring: ScoringMode = "official",
        extractor: str = "rules",
        extractor_url: str | None = None,
        extractor_model: str | None = None,
        extractor_prompt: str | None = None,
        extractor_device: str = "auto",
        extractor_dtype: str = "auto",
        extractor_batch_size: int = 8,
        extractor_cache: str | None = None,
    ) -> None:
        self.scoring = check_scoring("mmlongbench_doc", scoring)
        if self.scoring != "official" and extractor != "rules":
            raise UsageError("mmlongbench_doc: an answer extractor only applies to 'official'")
        hf_options = {
            "device": extractor_device,
            "dtype": extractor_dtype,
            "batch_size": extractor_batch_size,
            "cache_file": extractor_cache,
        }
        if not extractor.startswith("hf:") and hf_options != _HF_DEFAULTS:
            raise UsageError(
                "mmlongbench_doc: extractor_device/dtype/batch_size/cache need extractor='hf:PATH'"
            )
        self.extractor = make_extractor(
            extractor,
            extractor_url,
            extractor_model,
            extractor_prompt,
            **(hf_options if extractor.startswith("hf:") else {}),
        )
        if pages not in ("all", "gold"):
            raise UsageError(f"mmlongbench_doc pages must be 'all' or 'gold', got {pages!r}")
        if dpi <= 0 or (max_pages is not None and max_pages < 1):
            raise UsageError("mmlongbench_doc: dpi and max_pages must be positive")
        self.pages, self.dpi, self.max_pages = pages, dpi, max_pages
        self.doc_dir = doc_dir
        self._init_source(dataset_id, data_files, data_dir, revision)

    def settings(self) -> dict[str, Any]:
        """Pages shown, dpi and page cap (resolved defaults included)."""
        return {
            "pages": self.pages,
            "dpi": self.dpi,
            "max_pages": self.max_pages,
            "scoring": self.scoring,
            **(self.extractor.settings() if self.scoring == "official" else {}),
        } | super().settings()

    def load(self, split: str | None = None, limit: int | None = None) -> list[DocSample]:
        """Load rows; evidence pages become 0-based once here."""
        if self.doc_dir is None:
            raise TaskLoadError("mmlongbench_doc: pass doc_dir=<folder holding the PDFs>")
        split = split or self.default_split
        out = []
        for i, row in enumerate(self.source_rows("mmlongbench_doc", split)):
            try:
                out.append(self._sample(row, i))
            except SampleError as exc:
                self.bad_row(out, row_id("mmlongbench_doc", i, row, "doc_id"), exc)
            if limit is not None and len(out) >= limit:
                break
        return out

    def _sample(self, row: dict[str, Any], i: int) -> DocSample:
        where = row_id("mmlongbench_doc", i, row, "doc_id")
        require(row, ["doc_id", "question", "answer", "evidence_pages", "answer_format"], where)
        fmt = str(row["answer_format"])
        if fmt not in FORMATS:
            raise SampleError(f"{where}: answer_format {fmt!r} not one of {FORMATS}")
        pages = parse_list(row["evidence_pages"], where, "evidence_pages")
        if not all(isinstance(p, int) and not isinstance(p, bool) and p >= 1 for p in pages):
            raise SampleError(f"{where}: evidence_pages {pages!r} must be 1-based page numbers")
        sources = parse_list(row.get("evidence_sources") or "[]", where, "evidence_sources")
        return DocSample(
            doc_id=f"{row['doc_id']}#{i}",
            document=str(row["doc_id"]),
            question=str(row["question"]).strip(),
            answer=str(row["answer"]).strip(),
            answer_format=fmt,
            evidence_pages=tuple(sorted({p - 1 for p in pages})),
            evidence_sources=tuple(str(s) for s in sources),
        )

    def shown_pages(self, sample: DocSample, n_pages: int) -> list[int]:
        """0-based pages put in the request, in order, for a document of ``n_pages``."""
        beyond = [p for p in sample.evidence_pages if p >= n_pages]
        if beyond:
            raise SampleError(
                f"mmlongbench_doc doc {sample.doc_id}: evidence page(s) "
                f"{[p + 1 for p in beyond]} (1-based) beyond the document's {n_pages} pages"
            )
        if self.pages == "gold" and sample.evidence_pages:
            return list(sample.evidence_pages)
        return list(range(min(n_pages, self.max_pages or n_pages)))

    def prompt(self, sample: DocSample) -> str:
        """The question and the short-answer rule."""
        return sample.question + PROMPT_SUFFIX

    def request(self, sample: DocSample) -> Request:
        """The pages shown (rendered) and the question."""
        if sample.page_images:
            shown = self.shown_pages(sample, len(sample.page_images))
            images = tuple(sample.page_images[p] for p in shown)
        else:
            from harness.media.pdf import page_count, render_pages

            pdf = Path(self.doc_dir or ".") / sample.document
            shown = self.shown_pages(sample, page_count(pdf))
            images = tuple(render_pages(pdf, shown, dpi=self.dpi))
        return Request(text=self.prompt(sample), pages=images, max_new_tokens=32)

    def evidence(self, sample: DocSample, request: Request) -> PageEvidence | None:
        """Positions of the evidence pages among the pages shown (None if none is shown)."""
        if self.pages == "gold" and sample.evidence_pages:
            shown = list(sample.evidence_pages)
        else:
            shown = list(range(len(request.pages)))
        found = tuple(shown.index(p) for p in sample.evidence_pages if p in shown)
        return PageEvidence(pages=found) if found else None

    def prepare_scoring(
        self, samples: Sequence[DocSample], generations: Sequence[Generation]
    ) -> None:
        """Extract a batch of replies at once (a local model extractor batches them)."""
        prefetch = getattr(self.extractor, "prefetch", None)
        if self.scoring == "official" and prefetch is not None:
            prefetch([(s.question, g.text) for s, g in zip(samples, generations, strict=True)])

    def score(self, sample: DocSample, generation: Generation, ctx: ScoringContext) -> dict:
        """Score under the mode, plus the answerability flags its F1 needs."""
        reply, gold, fmt = generation.text, sample.answer, sample.answer_format
        if self.scoring == "official":
            extracted = self.extractor(sample.question, reply)
            return {
                "accuracy": official_score(gold, extracted, fmt),
                "extracted": extracted,
                "gold_answerable": float(gold != NOT_ANSWERABLE),
                "pred_answerable": float(extracted != NOT_ANSWERABLE),
            }
        if self.scoring == "lmms_eval":
            return {
                "accuracy": lmms_eval_score(gold, reply, fmt),
                "gold_answerable": float(lm_clean(gold) != NA_CLEAN),
                "pred_answerable": float(lm_clean(reply.strip()) != NA_CLEAN),
            }
        return {
            "accuracy": match_answer(reply, gold, fmt),
            "gold_answerable": float(not not_answerable(gold)),
            "pred_answerable": float(not not_answerable(reply)),
        }

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> list[MetricValue]:
        """Accuracy, and F1 as the scoring mode defines it."""
        acc, err = mean_stderr([r["accuracy"] for r in rows])
        gold = [r for r in rows if r["gold_answerable"]]
        pred = [r for r in rows if r["pred_answerable"]]
        hits = sum(r["accuracy"] for r in gold)
        empty = float("nan") if self.scoring == "lenient" else 0.0
        recall = hits / len(gold) if gold else empty
        if self.scoring == "lmms_eval":  # lmms-eval sums the scores of answered replies
            precision = sum(r["accuracy"] for r in pred) / len(pred) if pred else 0.0
        else:
            precision = hits / len(pred) if pred else empty
        if self.scoring == "official" and not (gold and pred):
            f1 = 0.0  # the release's ZeroDivisionError → 0
        else:
            f1 = 2 * recall * precision / (recall + precision) if recall + precision > 0 else 0.0
        return [
            MetricValue("accuracy", acc, err, len(rows)),
            MetricValue("f1", f1, None, len(rows)),
        ]

    def sample_log(self, sample: DocSample) -> dict[str, Any]:
        """Gold answer, format and 0-based evidence pages."""
        return {
            "target": sample.answer,
            "answer_format": sample.answer_format,
            "evidence_pages": list(sample.evidence_pages),
        }
