"""MLVU: multi-task long video understanding, multiple-choice dev set.

- Dataset: ``sy1998/MLVU_dev`` (split ``test``: the dev set, ~2,174 rows). Local copies:
  ``data_files`` / ``data_dir`` (parquet, JSON, JSONL), loaded through ``datasets``.
- Fields: ``video_name``, ``duration`` (seconds), ``question``, ``candidates`` (list of option
  texts), ``answer`` (the right candidate's text), ``task_type``, ``question_id``.
- Videos: separate archives (tens of GB) extracted into ``video_root``; ``video_name`` is found
  there at any depth (``video/1_plotQA/<name>`` in the release).
- Licence: see the dataset card (research use; videos come from public sources).
- Paper: Zhou et al., "MLVU: Benchmarking Multi-task Long Video Understanding", CVPR 2025.
- Prompt: the question, the candidates as "(A) …" lines, "Only give the best option." and
  the primer "Best option: (". MLVU's choice bench starts the assistant's turn with "Best
  Option: ("; a request here has no assistant prefix, so the primer ends the question, as
  in lmms-eval 0.7.3 (``mlvu_dev.yaml`` post_prompt). ``num_frames`` frames are
  sampled uniformly over the whole video.
- Answers: the candidate text is turned into its letter once, at load: the letter of the LAST
  candidate equal to it, as the release's ``choice_bench.py`` ``qa_template`` does (JUNJIE99/MLVU
  @ fd060c1; six rows of the released annotations have duplicate candidates).
- Scoring (``scoring``, recorded in settings; see :mod:`harness.api.scoring`):

  - ``official`` — MLVU ``evaluation/multiple_choice_evaluation/choice_bench.py::check_ans``
    (:func:`tasks.common.choice_rules.mlvu_letter`): with a ")" the character before the first
    ")" is the letter ("B)" and "(B) text" are B), without one the whole reply must be the
    letter ("B" is, "Best option:(B" and "The correct option is B, because…" are not).
    ``m_avg`` averages the task types present, as the release does.
  - ``lmms_eval`` — lmms-eval 0.7.3 ``tasks/mlvu/utils.py``: ``extract_mcq_answer`` over A-D
    and ``mlvu_aggregate_results_dev``, whose average runs over all seven types, an absent
    type counting 0 (reproduced in ``m_avg``; lmms-eval reports percent, headscope the
    fraction).
  - ``lenient`` — :func:`tasks.common.choice_rules.lenient_letter` ("B)", "Best option:(B",
    "The correct option is B, because…"); a reply with none counts wrong, or draws a seeded
    letter with ``random_fallback=True``.
- Metrics: accuracy per task type, ``m_avg`` = the macro average over the seven
  multiple-choice types (anomaly_reco, count, ego, needle, order, plotQA, topic_reasoning)
  **present in the run** (a type with no sample does not count as 0, except under
  ``lmms_eval`` as above; its stderr combines the per-type ones as independent), and the
  overall (micro) accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.api.registry import task
from harness.api.scoring import ScoringMode
from harness.api.task import UNIT_INTERVAL, MetricDef, MetricValue, SampleError
from tasks.common.choice_rules import mlvu_letter
from tasks.common.loading import DataFiles, normalize_text, parse_list, require, row_id
from tasks.common.video import LETTERS, VideoChoiceTask, accuracy, group_accuracy

__all__ = ["MLVU", "MLVUSample", "MC_TYPES", "normalise_row", "macro_average", "PRIMER"]

MC_TYPES = ("anomaly_reco", "count", "ego", "needle", "order", "plotQA", "topic_reasoning")
PRIMER = "Best option: ("
_FIELDS = ("video_name", "question", "candidates", "answer", "task_type", "question_id")


@dataclass(frozen=True, slots=True)
class MLVUSample:
    """One MLVU multiple-choice question.

    Attributes:
        doc_id: ``question_id`` (made unique with ``#k`` when repeated).
        question: Question text.
        options: Candidate texts, letters A.. in order.
        answer: Letter of the right candidate.
        task_type: MLVU task type (plotQA, needle, ...).
        video_name: Video file name, found under ``video_root``.
        duration: Video length in seconds, when given.
        frames: In-memory frames (mini variant); empty for file-backed samples.
    """

    doc_id: str
    question: str
    options: tuple[str, ...]
    answer: str
    task_type: str
    video_name: str = ""
    duration: float | None = None
    frames: tuple[Any, ...] = ()


def _last_index(items: Sequence[str], value: str) -> int:
    return len(items) - 1 - list(reversed(items)).index(value)


def normalise_row(row: Mapping[str, Any], where: str) -> MLVUSample:
    """One MLVU row → :class:`MLVUSample` (answer text → letter).

    Raises:
        SampleError: naming ``where`` for a missing field, unparseable candidates, or an
            answer that is not one of the candidates.
    """
    require(row, _FIELDS, where)
    options = tuple(str(c).strip() for c in parse_list(row["candidates"], where, "candidates"))
    if not 2 <= len(options) <= len(LETTERS):
        raise SampleError(f"{where}: needs 2–{len(LETTERS)} candidates, got {len(options)}")
    answer = str(row["answer"]).strip()
    # The release's qa_template keeps the LAST candidate equal to the answer (six released
    # rows have duplicate candidates), so the gold letter is the last match, not the first.
    norm = [normalize_text(o) for o in options]
    if answer in options:
        letter = LETTERS[_last_index(options, answer)]
    elif normalize_text(answer) in norm:
        letter = LETTERS[_last_index(norm, normalize_text(answer))]
    elif len(answer) == 1 and answer in LETTERS[: len(options)]:
        letter = answer  # some copies store the letter itself
    else:
        raise SampleError(f"{where}: answer {answer!r:.60} is not one of the candidates")
    try:
        duration = float(row["duration"]) if row.get("duration") is not None else None
    except (TypeError, ValueError):
        duration = None
    return MLVUSample(
        doc_id=str(row["question_id"]),
        question=str(row["question"]).strip(),
        options=options,
        answer=letter,
        task_type=str(row["task_type"]),
        video_name=str(row["video_name"]),
        duration=duration if duration is None or math.isfinite(duration) else None,
    )


def macro_average(
    per_type: Sequence[MetricValue], name: str = "m_avg", absent_as_zero: bool = False
) -> MetricValue:
    """Mean of the per-type accuracies of the types with samples (absent types are skipped).

    With ``absent_as_zero`` (lmms-eval's rule) every type counts, an absent one as 0.
    """
    if absent_as_zero and per_type:
        values = [m.value if m.n > 0 else 0.0 for m in per_type]
        return MetricValue(name, sum(values) / len(values), None, sum(m.n for m in per_type))
    present = [m for m in per_type if m.n > 0]
    if not present:
        return MetricValue(name, float("nan"), None, 0)
    value = sum(m.value for m in present) / len(present)
    errs = [m.stderr for m in present]
    stderr = None
    if all(e is not None for e in errs):
        stderr = math.sqrt(sum(e * e for e in errs)) / len(present)  # type: ignore[operator]
    return MetricValue(name, value, stderr, sum(m.n for m in present))


@task("mlvu")
class MLVU(VideoChoiceTask):
    """MLVU multiple-choice questions (see the module docstring).

    Args:
        num_frames: Frames sampled uniformly over the whole video.
        video_root: Folder with the extracted MLVU videos.
        dataset_id: HF dataset id.
        data_files: Local parquet/JSON(L) file(s), or ``{split: files}``.
        data_dir: Local folder of such files.
        revision: Hub revision.
        random_fallback: ``lenient`` only: draw a seeded letter for replies with none.
        scoring: "official" (MLVU's check_ans), "lmms_eval" or "lenient".
    """

    metrics = (
        MetricDef(
            "m_avg",
            True,
            "macro accuracy over the multiple-choice types present",
            bounds=UNIT_INTERVAL,
        ),
        MetricDef("accuracy", True, "accuracy over all questions", bounds=UNIT_INTERVAL),
        *(
            MetricDef(f"accuracy_{t}", True, f"accuracy on {t} questions", bounds=UNIT_INTERVAL)
            for t in MC_TYPES
        ),
    )
    default_split = "test"
    video_what = "MLVU video"

    def __init__(
        self,
        *,
        num_frames: int = 16,
        video_root: str | None = None,
        dataset_id: str = "sy1998/MLVU_dev",
        data_files: DataFiles | None = None,
        data_dir: str | None = None,
        revision: str | None = None,
        random_fallback: bool = False,
        scoring: ScoringMode = "official",
    ) -> None:
        super().__init__(
            num_frames=num_frames,
            video_root=video_root,
            random_fallback=random_fallback,
            scoring=scoring,
        )
        self._init_source(dataset_id, data_files, data_dir, revision)

    def load(self, split: str | None = None, limit: int | None = None) -> list[MLVUSample]:
        """Rows of ``split`` as samples (first ``limit``)."""
        split = split or self.default_split
        rows = self.source_rows("mlvu", split)
        out: list[MLVUSample] = []
        seen: dict[str, int] = {}
        for i, row in enumerate(rows):
            where = row_id("mlvu", i, row, "question_id")
            try:
                sample = normalise_row(row, where)
            except SampleError as exc:
                self.bad_row(out, where, exc)
                continue
            k = seen[sample.doc_id] = seen.get(sample.doc_id, -1) + 1
            if k:
                sample = replace(sample, doc_id=f"{sample.doc_id}#{k}")
            out.append(sample)
            if limit is not None and len(out) >= limit:
                break
        return out

    def prompt(self, sample: MLVUSample) -> str:
        """Question, "(A) …" candidate lines, MLVU's answer instruction and primer."""
        lines = [f"({LETTERS[i]}) {opt}" for i, opt in enumerate(sample.options)]
        return "\n".join(
            [sample.question, "Options:", *lines, "Only give the best option.", PRIMER]
        )

    def letter(self, sample: MLVUSample, text: str) -> str | None:
        """MLVU's ``check_ans`` letter, or the base class's lmms_eval / lenient rule."""
        if self.scoring == "official":
            return mlvu_letter(text)
        return super().letter(sample, text)

    def score_groups(self, sample: MLVUSample) -> dict[str, Any]:
        """The task type, for per-type accuracy."""
        return {"task_type": sample.task_type}

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> list[MetricValue]:
        """Macro average over present MC types, micro accuracy, per-type accuracy."""
        per_type = group_accuracy(rows, "task_type", MC_TYPES)
        m_avg = macro_average(per_type, absent_as_zero=self.scoring == "lmms_eval")
        return [m_avg, accuracy(rows), *per_type]

    def sample_log(self, sample: MLVUSample) -> dict[str, Any]:
        """Target letter, task type and the shown frame indices."""
        return {**super().sample_log(sample), "task_type": sample.task_type}
