"""POPE — Polling-based Object Probing Evaluation (object hallucination, yes/no).

- Dataset: ``lmms-lab/POPE`` (renamed ``lmms-lab-encoder/POPE`` in July 2026; both ids are
  tried), default config, split ``test`` — 9,000 rows, 3,000 per negative-sampling setting
  (``category``: adversarial, popular, random). Local copies: ``data_files`` / ``data_dir``
  (parquet, JSON, JSONL); an ``image`` column of relative paths is resolved on ``image_root``.
- Fields: ``id``, ``question_id``, ``question`` ("Is there a X in the image?"), ``answer``
  (yes/no), ``image_source``, ``image``, ``category``.
- Licence: MIT (POPE annotations); images are MSCOCO val2014 (Flickr terms of use).
- Paper: Li et al., "Evaluating Object Hallucination in Large Vision-Language Models",
  EMNLP 2023.
- Prompt: the question, then "Answer the question using a single word or phrase."
- Scoring (``scoring``, recorded in settings; see :mod:`harness.api.scoring`):

  - ``official`` — RUCAIBox/POPE ``evaluate.py`` (module body): keep the reply up to its
    first ".", drop commas, split on spaces; the word "No", "not" or "no" makes it "no",
    anything else — including an empty reply or "I cannot tell" — is "yes". Precision,
    recall, F1 and yes_ratio (share of "yes" predictions) from those (NaN where the script
    would divide by zero).
  - ``lmms_eval`` — lmms-eval 0.7.3 ``tasks/pope/utils.py``: the prediction is the whole
    reply lower-cased and stripped, so only exactly "yes"/"no" count ("Yes." is wrong);
    recall counts a false negative only for an exact "no"; empty precision/recall/F1 are 0;
    its ``pope_yes_ratio`` is the share of **gold** "yes" answers (reported as such).
  - ``lenient`` — the first word decides ("Yes." and "yes, there is" are yes), else a lone
    yes/no word anywhere; a reply with neither (or both) counts as "no".

  ``unparsed_rate`` (every mode) is the share of replies in which :func:`yes_no` finds
  neither yes nor no, whatever the mode made of them.
- Metrics: accuracy, precision / recall / F1 with "yes" as the positive class, yes_ratio (the
  share of yes answers; 0.5 on balanced POPE is ideal, higher means more hallucination).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from harness.api.errors import UsageError
from harness.api.payloads import Generation, Request
from harness.api.registry import task
from harness.api.scoring import ScoringMode, check_scoring
from harness.api.task import (
    UNIT_INTERVAL,
    MetricDef,
    MetricValue,
    SampleError,
    ScoringContext,
    Task,
    mean_stderr,
)
from tasks.common.loading import (
    DataFiles,
    RowImage,
    RowSource,
    image_rows,
    open_image,
    require,
    row_id,
    yes_no,
)

__all__ = ["PopeSample", "Pope", "SUBSETS", "PROMPT_SUFFIX", "official_answer"]

SUBSETS = ("adversarial", "popular", "random", "all")
PROMPT_SUFFIX = "\nAnswer the question using a single word or phrase."


def official_answer(reply: str) -> str:
    """The yes/no POPE's ``evaluate.py`` reads from a reply (see the module docstring)."""
    first = reply.split(".")[0] if "." in reply else reply
    words = first.replace(",", "").split(" ")
    return "no" if {"No", "not", "no"} & set(words) else "yes"


@dataclass(frozen=True, slots=True)
class PopeSample:
    """One POPE question.

    Attributes:
        doc_id: ``"{category}/{question_id}"`` (question ids restart in each category).
        question: The question text.
        answer: ``"yes"`` or ``"no"``.
        image: Image source (PIL image, :class:`~tasks.common.loading.RowImage`, bytes or path).
        category: Negative-sampling setting (adversarial / popular / random).
    """

    doc_id: str
    question: str
    answer: str
    image: Any
    category: str


@task("pope")
class Pope(RowSource, Task):
    """POPE yes/no object probing.

    Args:
        subset: "adversarial", "popular", "random" or "all" (the 9,000 rows).
        dataset_id: HF dataset id (old or renamed).
        data_files: Local parquet/JSON(L) file(s), or ``{split: files}``.
        data_dir: Local folder of such files.
        image_root: Folder that relative image paths are resolved against.
        revision: Hub revision.
        scoring: "official" (POPE's evaluate.py), "lmms_eval" or "lenient".
    """

    metrics: ClassVar[tuple[MetricDef, ...]] = (
        MetricDef("accuracy", True, "share of correct yes/no answers", bounds=UNIT_INTERVAL),
        MetricDef("precision", True, "TP / (TP + FP), positive class yes", bounds=UNIT_INTERVAL),
        MetricDef("recall", True, "TP / (TP + FN), positive class yes", bounds=UNIT_INTERVAL),
        MetricDef("f1", True, "harmonic mean of precision and recall", bounds=UNIT_INTERVAL),
        MetricDef(
            "yes_ratio",
            False,
            "share of yes answers (0.5 ideal on balanced POPE)",
            bounds=UNIT_INTERVAL,
        ),
        MetricDef(
            "unparsed_rate",
            False,
            "share of answers saying neither yes nor no",
            bounds=UNIT_INTERVAL,
        ),
    )
    default_split: ClassVar[str] = "test"

    def __init__(
        self,
        *,
        subset: Literal["adversarial", "popular", "random", "all"] = "all",
        dataset_id: str = "lmms-lab-encoder/POPE",
        data_files: DataFiles | None = None,
        data_dir: str | None = None,
        image_root: str | None = None,
        revision: str | None = None,
        scoring: ScoringMode = "official",
    ) -> None:
        self.scoring = check_scoring("pope", scoring)
        if subset not in SUBSETS:
            raise UsageError(f"pope subset {subset!r} not one of {SUBSETS}")
        self.subset = subset
        self._init_source(dataset_id, data_files, data_dir, revision)
        self.image_root = image_root

    def settings(self) -> dict[str, Any]:
        """Subset (resolved default included) and the arguments passed."""
        return {"subset": self.subset, "scoring": self.scoring} | super().settings()

    def load(self, split: str | None = None, limit: int | None = None) -> list[PopeSample]:
        """Load, normalise answers to yes/no, filter by subset."""
        split = split or self.default_split
        meta, media = image_rows("pope", self.source_rows("pope", split))
        out = []
        for i, row in enumerate(meta):
            where = row_id("pope", i, row, "question_id")
            try:
                require(row, ["question_id", "question", "answer", "category"], where)
                answer = yes_no(str(row["answer"]))
                if answer is None:
                    raise SampleError(f"{where}: answer {row['answer']!r} is not yes/no")
            except SampleError as exc:
                if self.subset in ("all", row.get("category")):
                    self.bad_row(out, where, exc)
                continue
            if self.subset != "all" and row["category"] != self.subset:
                continue
            out.append(
                PopeSample(
                    doc_id=f"{row['category']}/{row['question_id']}",
                    question=str(row["question"]).strip(),
                    answer=answer,
                    image=RowImage(media, i, "image"),
                    category=str(row["category"]),
                )
            )
            if limit is not None and len(out) >= limit:
                break
        return out

    def prompt(self, sample: PopeSample) -> str:
        """Instruction text (the question plus POPE's short-answer rule)."""
        return sample.question + PROMPT_SUFFIX

    def request(self, sample: PopeSample) -> Request:
        """One image and the question."""
        image = open_image(sample.image, f"pope doc {sample.doc_id}", self.image_root)
        return Request(text=self.prompt(sample), images=(image,), max_new_tokens=8)

    def score(self, sample: PopeSample, generation: Generation, ctx: ScoringContext) -> dict:
        """Per-sample correctness and the prediction under the task's scoring mode."""
        text = generation.text
        parsed = yes_no(text)
        if self.scoring == "official":
            pred = official_answer(text)
        elif self.scoring == "lmms_eval":
            pred = text.lower().strip()
        else:
            pred = parsed or "no"
        return {
            "accuracy": float(pred == sample.answer),
            "pred": pred,
            "pred_yes": float(pred == "yes"),
            "pred_no": float(pred == "no"),
            "target_yes": float(sample.answer == "yes"),
            "unparsed_rate": float(parsed is None),
        }

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> list[MetricValue]:
        """Accuracy, precision, recall, F1, yes ratio (positive class: yes), per mode."""
        n = len(rows)
        tp = sum(1 for r in rows if r["pred_yes"] and r["target_yes"])
        fp = sum(1 for r in rows if r["pred_yes"] and not r["target_yes"])
        if self.scoring == "lmms_eval":  # a false negative is an exact "no" only
            fn = sum(1 for r in rows if r.get("pred_no", 1 - r["pred_yes"]) and r["target_yes"])
            empty = 0.0
        else:
            fn = sum(1 for r in rows if not r["pred_yes"] and r["target_yes"])
            empty = float("nan")
        precision = tp / (tp + fp) if tp + fp else empty
        recall = tp / (tp + fn) if tp + fn else empty
        if self.scoring == "lmms_eval":
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        elif self.scoring == "official":
            f1 = 2 * precision * recall / (precision + recall) if tp else float("nan")
        elif tp:
            f1 = 2 * precision * recall / (precision + recall)
        else:
            f1 = 0.0 if fp + fn else float("nan")
        acc, acc_err = mean_stderr([r["accuracy"] for r in rows])
        yes_col = "target_yes" if self.scoring == "lmms_eval" else "pred_yes"
        yes, yes_err = mean_stderr([r[yes_col] for r in rows])
        unp, unp_err = mean_stderr([r["unparsed_rate"] for r in rows])
        return [
            MetricValue("accuracy", acc, acc_err, n),
            MetricValue("precision", precision, None, tp + fp),
            MetricValue("recall", recall, None, tp + fn),
            MetricValue("f1", f1, None, n),
            MetricValue("yes_ratio", yes, yes_err, n),
            MetricValue("unparsed_rate", unp, unp_err, n),
        ]

    def sample_log(self, sample: PopeSample) -> dict[str, Any]:
        """Target and category."""
        return {"target": sample.answer, "category": sample.category}
