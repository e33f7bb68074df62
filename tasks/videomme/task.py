"""Video-MME: multiple-choice questions on short, medium and long videos.

- Dataset: ``lmms-lab/Video-MME`` (renamed ``lmms-eval/Video-MME`` in July 2026; both ids are
  tried), split ``test``: 2,700 rows = 900 videos × 3 questions. Local copies: ``data_files`` /
  ``data_dir`` (parquet, JSON, JSONL), loaded through ``datasets``.
- Fields: ``video_id``, ``duration`` (short | medium | long), ``domain``, ``sub_category``,
  ``videoID`` (the file stem), ``question_id``, ``task_type``, ``question``, ``options`` (four
  strings "A. …"), ``answer`` (a letter).
- Videos (and subtitles, unused here) are separate archives; ``<videoID>.mp4`` is found under
  ``video_root`` at any depth (``data/`` in the release).
- Licence: research use only (see the Video-MME terms; videos are from YouTube).
- Paper: Fu et al., "Video-MME: The First-Ever Comprehensive Evaluation Benchmark of
  Multi-modal LLMs in Video Analysis", CVPR 2025.
- Prompt: Video-MME's instruction ("Select the best answer …"), the question, the options as
  given, then "The best answer is:". ``num_frames`` frames uniformly over the whole video.
- Scoring (``scoring``, recorded in settings; see :mod:`harness.api.scoring`):

  - ``official`` — Video-MME's ``eval_your_results.py::extract_characters_regex`` (github
    thanku-all/parse_answer, linked from the Video-MME README): answer prefixes are deleted
    and the first capital A-D anywhere is the letter (:func:`tasks.common.choice_rules.
    videomme_letter`; "Based on …" reads B). A reply with no capital A-D is *not answered*
    and the release leaves it out of the denominator: ``accuracy`` = correct / answered (the
    official number), ``accuracy_all`` = correct / all questions, ``answered_rate``.
  - ``lmms_eval`` — lmms-eval 0.7.3 ``tasks/videomme/utils.py::videomme_process_results``
    (its shared ``extract_mcq_answer`` over A-D); every question counts (``accuracy`` =
    ``accuracy_all``). lmms-eval reports percent; headscope reports the fraction.
  - ``lenient`` — :func:`tasks.common.choice_rules.lenient_letter` ("C)", "C: Berries", "答案是C",
    option text with or without its final "."); a reply with none counts wrong, or draws a
    seeded letter with ``random_fallback=True``; every question counts.
- Variant: ``duration`` keeps only short, medium or long videos (default all).
- Metrics: accuracy overall and per duration (same denominators as ``accuracy``),
  ``accuracy_all`` and ``answered_rate``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.api.errors import UsageError
from harness.api.registry import task
from harness.api.scoring import ScoringMode
from harness.api.task import UNIT_INTERVAL, MetricDef, MetricValue, SampleError, mean_stderr
from tasks.common.choice_rules import videomme_letter
from tasks.common.loading import DataFiles, parse_list, require, row_id
from tasks.common.video import VideoChoiceTask, accuracy, group_accuracy

__all__ = ["VideoMME", "VideoMMESample", "DURATIONS", "normalise_row", "PROMPT_HEAD"]

DURATIONS = ("short", "medium", "long")
PROMPT_HEAD = (
    "Select the best answer to the following multiple-choice question based on the video. "
    "Respond with only the letter (A, B, C, or D) of the correct option."
)
_FIELDS = ("duration", "videoID", "question_id", "task_type", "question", "options", "answer")
_OPTION = re.compile(r"^\s*([A-D])\s*[.)]\s*(.*)$", re.S)


@dataclass(frozen=True, slots=True)
class VideoMMESample:
    """One Video-MME question.

    Attributes:
        doc_id: ``question_id`` (e.g. ``"001-1"``).
        question: Question text.
        options: The four option texts without their "A. " prefixes.
        answer: Right letter A–D.
        duration: "short", "medium" or "long".
        task_type: Question type (e.g. "Counting Problem").
        domain: Video domain.
        sub_category: Video sub-category.
        video_name: ``videoID``, the file stem under ``video_root``.
        frames: In-memory frames (mini variant); empty for file-backed samples.
    """

    doc_id: str
    question: str
    options: tuple[str, ...]
    answer: str
    duration: str
    task_type: str
    domain: str = ""
    sub_category: str = ""
    video_name: str = ""
    frames: tuple[Any, ...] = ()


def normalise_row(row: Mapping[str, Any], where: str) -> VideoMMESample:
    """One Video-MME row → :class:`VideoMMESample` ("A. text" options split once).

    Raises:
        SampleError: naming ``where`` for a missing field, options that are not exactly
            "A. …" to "D. …" in order, an answer that is not A–D, or an unknown duration.
    """
    require(row, _FIELDS, where)
    raw = parse_list(row["options"], where, "options")
    parsed = [_OPTION.match(str(o)) for o in raw]
    letters = [m.group(1) if m else None for m in parsed]
    if letters != list("ABCD"):
        raise SampleError(f"{where}: options are not 'A. …' to 'D. …' in order: {raw!r:.120}")
    answer = str(row["answer"]).strip().upper()
    if answer not in ("A", "B", "C", "D"):
        raise SampleError(f"{where}: answer {row['answer']!r:.40} is not a letter A–D")
    duration = str(row["duration"]).strip().lower()
    if duration not in DURATIONS:
        raise SampleError(f"{where}: duration {row['duration']!r:.40} not one of {DURATIONS}")
    return VideoMMESample(
        doc_id=str(row["question_id"]),
        question=str(row["question"]).strip(),
        options=tuple(m.group(2).strip() for m in parsed if m),
        answer=answer,
        duration=duration,
        task_type=str(row["task_type"]),
        domain=str(row.get("domain") or ""),
        sub_category=str(row.get("sub_category") or ""),
        video_name=str(row["videoID"]),
    )


@task("videomme")
class VideoMME(VideoChoiceTask):
    """Video-MME multiple choice (see the module docstring).

    Args:
        num_frames: Frames sampled uniformly over the whole video.
        video_root: Folder with the extracted Video-MME videos.
        duration: "short", "medium", "long" or "all".
        dataset_id: HF dataset id (old or renamed).
        data_files: Local parquet/JSON(L) file(s), or ``{split: files}``.
        data_dir: Local folder of such files.
        revision: Hub revision.
        random_fallback: ``lenient`` only: draw a seeded letter for replies with none.
        scoring: "official" (Video-MME's eval_your_results.py), "lmms_eval" or "lenient".
    """

    metrics = (
        MetricDef(
            "accuracy", True, "accuracy (official: over answered questions)", bounds=UNIT_INTERVAL
        ),
        *(
            MetricDef(f"accuracy_{d}", True, f"accuracy on {d} videos", bounds=UNIT_INTERVAL)
            for d in DURATIONS
        ),
        MetricDef(
            "accuracy_all",
            True,
            "accuracy over all questions (no letter = wrong)",
            bounds=UNIT_INTERVAL,
        ),
        MetricDef("answered_rate", True, "share of replies with a letter", bounds=UNIT_INTERVAL),
    )
    default_split = "test"
    video_what = "Video-MME video"

    def __init__(
        self,
        *,
        num_frames: int = 16,
        video_root: str | None = None,
        duration: Literal["short", "medium", "long", "all"] = "all",
        dataset_id: str = "lmms-lab/Video-MME",
        data_files: DataFiles | None = None,
        data_dir: str | None = None,
        revision: str | None = None,
        random_fallback: bool = False,
        scoring: ScoringMode = "official",
    ) -> None:
        if duration not in (*DURATIONS, "all"):
            raise UsageError(f"videomme duration {duration!r} not one of {(*DURATIONS, 'all')}")
        super().__init__(
            num_frames=num_frames,
            video_root=video_root,
            random_fallback=random_fallback,
            scoring=scoring,
        )
        self.duration = duration
        self._init_source(dataset_id, data_files, data_dir, revision)

    def load(self, split: str | None = None, limit: int | None = None) -> list[VideoMMESample]:
        """Rows of ``split`` as samples, filtered by duration (first ``limit``)."""
        split = split or self.default_split
        rows = self.source_rows("videomme", split)
        out: list[VideoMMESample] = []
        for i, row in enumerate(rows):
            where = row_id("videomme", i, row, "question_id")
            try:
                sample = normalise_row(row, where)
            except SampleError as exc:
                if self.duration in ("all", row.get("duration")):
                    self.bad_row(out, where, exc)
                continue
            if self.duration in ("all", sample.duration):
                out.append(sample)
            if limit is not None and len(out) >= limit:
                break
        return out

    def prompt(self, sample: VideoMMESample) -> str:
        """Video-MME's instruction, the question, "A. …" options, "The best answer is:"."""
        lines = [f"{'ABCD'[i]}. {opt}" for i, opt in enumerate(sample.options)]
        return "\n".join([PROMPT_HEAD, sample.question, *lines, "The best answer is:"])

    def score_groups(self, sample: VideoMMESample) -> dict[str, Any]:
        """Duration bucket and question type."""
        return {"duration": sample.duration, "task_type": sample.task_type}

    def letter(self, sample: VideoMMESample, text: str) -> str | None:
        """Video-MME's official extraction, or the base class's lmms_eval / lenient rule."""
        if self.scoring == "official":
            return videomme_letter(text)
        return super().letter(sample, text)

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> list[MetricValue]:
        """Accuracy (official: answered questions only), per duration, over all, answered."""
        counted = (
            [r for r in rows if r.get("answered", 1.0)] if self.scoring == "official" else rows
        )
        answered, answered_err = mean_stderr([float(r.get("answered", 1.0)) for r in rows])
        return [
            accuracy(counted),
            *group_accuracy(counted, "duration", DURATIONS),
            accuracy(rows, "accuracy_all"),
            MetricValue("answered_rate", answered, answered_err, len(rows)),
        ]

    def sample_log(self, sample: VideoMMESample) -> dict[str, Any]:
        """Target letter, duration, question type and the shown frame indices."""
        return {
            **super().sample_log(sample),
            "duration": sample.duration,
            "task_type": sample.task_type,
        }

    def settings(self) -> dict[str, Any]:
        """Resolved settings (with the duration filter)."""
        return {**super().settings(), "duration": self.duration}
