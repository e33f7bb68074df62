"""MMMU — massive multi-discipline multimodal understanding (college-level exam questions).

- Dataset: ``lmms-lab/MMMU`` (renamed ``lmms-lab-encoder/MMMU`` in July 2026; both ids are
  tried) with splits dev / validation (900 rows) / test, or ``MMMU/MMMU`` whose 30 subjects are
  separate configs (all are loaded and concatenated unless ``subjects`` names some). Local
  copies: ``data_files`` / ``data_dir`` (parquet, JSON, JSONL).
- Fields: ``id``, ``question`` (with ``<image k>`` tags), ``options`` (string repr of a list),
  ``explanation``, ``image_1`` … ``image_7``, ``img_type``, ``answer`` (a letter for
  multiple-choice; text or a list literal for open), ``topic_difficulty``, ``question_type``
  (multiple-choice | open), ``subfield``.
- Licence: Apache-2.0. Paper: Yue et al., "MMMU: A Massive Multi-discipline Multimodal
  Understanding and Reasoning Benchmark for Expert AGI", CVPR 2024.
- Prompt: the question (``<image k>`` tags kept, images given in order 1..7), then "A. …"
  option lines and "Answer with the option's letter from the given choices directly." — or
  "Answer the question using a single word or phrase." for open questions.
- Scoring (``scoring``, recorded in settings; see :mod:`harness.api.scoring`):

  - ``official`` — MMMU-Benchmark/MMMU ``mmmu/utils/eval_utils.py``: multiple choice by
    ``parse_multi_choice_response`` ("(X)", then " X ", then — for replies over five words —
    option text found anywhere, substrings included; :func:`tasks.common.choice_rules.mmmu_letter`),
    open questions by ``parse_open_response`` + ``eval_open`` (:mod:`tasks.mmmu.open_answers`:
    numeric golds compare as rounded floats, text golds as substrings of the key phrases).
  - ``lmms_eval`` — lmms-eval 0.7.3 ``tasks/mmmu/utils.py::mmmu_process_results``: its
    shared parser tests "X " without the leading space and adds an "X." rule; open answers
    as the official rule but against the raw ``answer`` string.
  - ``lenient`` — :func:`tasks.common.choice_rules.lenient_letter` and
    :func:`tasks.mmmu.open_answers.lenient_open_match` (whole words; numbers as numbers).

  Where a multiple-choice parser finds nothing, every mode draws the letter MMMU's way but
  seeded: ``random.Random(f"{seed}:{doc_id}")`` (the release seeds one generator with 42 at
  import, so its draws depend on order). The drawn letter is logged per sample with
  ``fallback_rate``; the rule is recorded in settings.
- Metric: ``accuracy`` (+ ``fallback_rate``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from harness.api.errors import UsageError
from harness.api.payloads import Generation, Request
from harness.api.registry import task
from harness.api.scoring import FALLBACK_RULE, ScoringMode, check_scoring, seeded_letter
from harness.api.task import UNIT_INTERVAL, MetricDef, SampleError, ScoringContext, Task
from tasks.common.choice_rules import lenient_letter, mmmu_letter
from tasks.common.loading import (
    DataFiles,
    RowImage,
    RowSource,
    lazy_media,
    open_image,
    parse_list,
    require,
    row_id,
)
from tasks.mmmu.open_answers import lenient_open_match, official_open_match

__all__ = ["MMMUSample", "MMMU", "MC_SUFFIX", "OPEN_SUFFIX", "LETTERS", "open_match"]

LETTERS = "ABCDEFGHIJ"
IMAGE_COLUMNS = tuple(f"image_{k}" for k in range(1, 8))
MC_SUFFIX = "Answer with the option's letter from the given choices directly."
OPEN_SUFFIX = "Answer the question using a single word or phrase."
SUBJECTS = (
    "Accounting", "Agriculture", "Architecture_and_Engineering", "Art", "Art_Theory",
    "Basic_Medical_Science", "Biology", "Chemistry", "Clinical_Medicine", "Computer_Science",
    "Design", "Diagnostics_and_Laboratory_Medicine", "Economics", "Electronics",
    "Energy_and_Power", "Finance", "Geography", "History", "Literature", "Manage", "Marketing",
    "Materials", "Math", "Mechanical_Engineering", "Music", "Pharmacy", "Physics", "Psychology",
    "Public_Health", "Sociology",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class MMMUSample:
    """One MMMU question.

    Attributes:
        doc_id: The row's ``id`` (e.g. ``"validation_Math_12"``).
        question: Question text with ``<image k>`` tags.
        options: Option texts (empty for open questions).
        answer: Gold letter (multiple-choice) or the first gold text (open).
        golds: All gold answers of an open question (``(answer,)`` for multiple-choice).
        question_type: ``"multiple-choice"`` or ``"open"``.
        images: Image sources in order image_1..image_7 (absent ones dropped).
        subfield: MMMU subfield, for per-field breakdowns.
        raw_answer: The ``answer`` field as stored (lmms-eval scores open answers on it).
    """

    doc_id: str
    question: str
    options: tuple[str, ...]
    answer: str
    golds: tuple[str, ...]
    question_type: str
    images: tuple[Any, ...]
    subfield: str = ""
    raw_answer: str = ""


def open_match(response: str, golds: tuple[str, ...], scoring: str = "lenient") -> bool:
    """Whether an open answer matches a gold answer under ``scoring`` (official/lenient).

    ``lmms_eval`` scores against the raw answer string; use :meth:`MMMU.score` for it.
    """
    if scoring == "official":
        return official_open_match(response, golds[0] if len(golds) == 1 else list(golds))
    return lenient_open_match(response, golds)


@task("mmmu")
class MMMU(RowSource, Task):
    """MMMU multiple-choice and open questions.

    Args:
        dataset_id: HF dataset id (``lmms-lab-encoder/MMMU``, ``lmms-lab/MMMU``, ``MMMU/MMMU``).
        subjects: Subject configs to load from ``MMMU/MMMU`` (default: all 30).
        data_files: Local parquet/JSON(L) file(s), or ``{split: files}``.
        data_dir: Local folder of such files.
        image_root: Folder that relative image paths are resolved against.
        revision: Hub revision.
        scoring: "official" (MMMU's eval_utils), "lmms_eval" or "lenient".
    """

    metrics: ClassVar[tuple[MetricDef, ...]] = (
        MetricDef("accuracy", True, "share of correct answers", bounds=UNIT_INTERVAL),
        MetricDef(
            "fallback_rate",
            False,
            "share of MC answers settled by the seeded random pick",
            bounds=UNIT_INTERVAL,
        ),
    )
    default_split: ClassVar[str] = "validation"

    def __init__(
        self,
        *,
        dataset_id: str = "lmms-lab-encoder/MMMU",
        subjects: list[str] | None = None,
        data_files: DataFiles | None = None,
        data_dir: str | None = None,
        image_root: str | None = None,
        revision: str | None = None,
        scoring: ScoringMode = "official",
    ) -> None:
        self.scoring = check_scoring("mmmu", scoring)
        unknown = sorted(set(subjects or ()) - set(SUBJECTS))
        if unknown:
            raise UsageError(f"mmmu: unknown subject(s) {unknown}; known: {list(SUBJECTS)}")
        self._init_source(dataset_id, data_files, data_dir, revision)
        self.subjects = tuple(subjects or ())
        self.image_root = image_root

    def _tables(self, split: str) -> list[Any]:
        local = self.data_files is not None or self.data_dir is not None
        if self.dataset_id.startswith("MMMU/") and not local:
            return [self.source_rows("mmmu", split, config=s) for s in self.subjects or SUBJECTS]
        return [self.source_rows("mmmu", split)]

    def load(self, split: str | None = None, limit: int | None = None) -> list[MMMUSample]:
        """Load rows; parse options and open-question gold lists once."""
        split = split or self.default_split
        out: list[MMMUSample] = []
        for rows in self._tables(split):
            meta, media = lazy_media(rows, IMAGE_COLUMNS)
            for i, row in enumerate(meta):
                try:
                    out.append(self._sample(row, i, media))
                except SampleError as exc:
                    self.bad_row(out, row_id("mmmu", i, row, "id"), exc)
                if limit is not None and len(out) >= limit:
                    return out
        return out

    def _sample(self, row: dict[str, Any], i: int, media: Any) -> MMMUSample:
        where = row_id("mmmu", i, row, "id")
        require(row, ["id", "question", "answer", "question_type"], where)
        qtype = str(row["question_type"])
        answer = str(row["answer"]).strip()
        if qtype == "multiple-choice":
            options = tuple(str(o) for o in parse_list(row.get("options"), where, "options"))
            if not 2 <= len(options) <= len(LETTERS):
                raise SampleError(f"{where}: multiple-choice needs 2-10 options, got {options!r}")
            if answer not in LETTERS[: len(options)]:
                raise SampleError(f"{where}: answer {answer!r} is not an option letter")
            golds: tuple[str, ...] = (answer,)
        elif qtype == "open":
            options = ()
            listed = parse_list(answer, where, "answer") if answer[:1] == "[" else [answer]
            golds = tuple(str(g) for g in listed)
            answer = golds[0] if golds else answer
        else:
            raise SampleError(f"{where}: question_type {qtype!r} is not multiple-choice/open")
        stored = media[i]
        images = tuple(RowImage(media, i, c) for c in IMAGE_COLUMNS if stored.get(c) is not None)
        if not images:
            raise SampleError(f"{where}: no image in image_1..image_7")
        return MMMUSample(
            doc_id=str(row["id"]),
            question=str(row["question"]),
            options=options,
            answer=answer,
            golds=golds,
            question_type=qtype,
            images=images,
            subfield=str(row.get("subfield") or ""),
            raw_answer=str(row["answer"]),
        )

    def prompt(self, sample: MMMUSample) -> str:
        """Question, option lines, answer rule (MMMU's standard zero-shot prompt)."""
        if sample.question_type == "multiple-choice":
            lines = [f"{LETTERS[k]}. {opt}" for k, opt in enumerate(sample.options)]
            return "\n".join([sample.question, *lines, MC_SUFFIX])
        return f"{sample.question}\n{OPEN_SUFFIX}"

    def request(self, sample: MMMUSample) -> Request:
        """All images of the question, then the prompt."""
        images = tuple(
            open_image(src, f"mmmu doc {sample.doc_id} image {k + 1}", self.image_root)
            for k, src in enumerate(sample.images)
        )
        return Request(text=self.prompt(sample), images=images, max_new_tokens=16)

    def score(self, sample: MMMUSample, generation: Generation, ctx: ScoringContext) -> dict:
        """Correctness under the scoring mode; multiple choice falls back to a seeded letter."""
        text = generation.text
        if sample.question_type != "multiple-choice":
            if self.scoring == "lmms_eval":
                ok = official_open_match(text, sample.raw_answer or sample.answer)
            else:
                ok = open_match(text, sample.golds, self.scoring)
            return {"accuracy": float(ok)}
        letters = LETTERS[: len(sample.options)]
        if self.scoring == "lenient":
            letter = lenient_letter(text, letters, sample.options)
        else:
            letter = mmmu_letter(text, letters, sample.options, self.scoring)
        fallback = letter is None
        if letter is None:
            letter = seeded_letter(letters, ctx.seed, sample.doc_id)
        return {
            "accuracy": float(letter == sample.answer),
            "fallback_rate": float(fallback),
            "parsed": letter,
        }

    def settings(self) -> dict[str, Any]:
        """Scoring mode and its seeded fallback rule, plus the arguments passed."""
        return {"scoring": self.scoring, "fallback": FALLBACK_RULE} | super().settings()

    def sample_log(self, sample: MMMUSample) -> dict[str, Any]:
        """Gold answer(s) and question type."""
        return {"target": list(sample.golds), "question_type": sample.question_type}
