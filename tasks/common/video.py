"""Shared pieces of the video tasks (MLVU, Video-MME and their mini variants).

- :class:`VideoChoiceTask`: the multiple-choice video task base (MLVU, Video-MME): frames from
  the file (uniform sampling over the whole video) or from memory (mini variants), letter
  parsing per scoring mode (:meth:`VideoChoiceTask.letter`, rules in
  :mod:`tasks.common.choice_rules`), accuracy, grouped accuracy, and the shown frame indices in the
  per-sample log.

PyAV is only imported when a video file is decoded (:mod:`harness.media.video`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.api.errors import UsageError
from harness.api.payloads import Generation, Request, Video
from harness.api.scoring import FALLBACK_RULE, ScoringMode, check_scoring, seeded_letter
from harness.api.task import MetricValue, ScoringContext, Task, mean_stderr
from harness.media.video import VideoFinder, sample_frames
from tasks.common.choice_rules import lenient_letter, lmms_eval_mcq_letter
from tasks.common.loading import RowSource

__all__ = ["LETTERS", "VideoChoiceTask", "accuracy", "group_accuracy"]

LETTERS = "ABCDEFGHIJ"


def group_accuracy(
    rows: Sequence[Mapping[str, Any]], key: str, groups: Sequence[str], prefix: str = "accuracy_"
) -> list[MetricValue]:
    """Accuracy (mean of ``row["accuracy"]``) of the rows of each group ``row[key] == g``."""
    return [accuracy([r for r in rows if r.get(key) == g], f"{prefix}{g}") for g in groups]


def accuracy(rows: Sequence[Mapping[str, Any]], name: str = "accuracy") -> MetricValue:
    """Mean ± stderr of ``row["accuracy"]`` over ``rows``, reported as ``name``."""
    mean, err = mean_stderr([float(r["accuracy"]) for r in rows])
    return MetricValue(name, mean, err, len(rows))


class VideoChoiceTask(RowSource, Task):
    """Base of multiple-choice video tasks.

    Samples must have ``doc_id``, ``options`` (option texts), ``answer`` (a letter),
    ``video_name`` and ``frames`` (in-memory frames; empty for file-backed samples).
    Subclasses implement :meth:`load` and :meth:`prompt`; file-backed ones keep their dataset
    arguments with ``_init_source`` and read rows with ``source_rows`` (:class:`RowSource`).

    Args:
        num_frames: Frames sampled uniformly over the whole video.
        video_root: Folder with the videos (searched recursively by name / id).
        random_fallback: ``lenient`` scoring only: when no letter can be parsed, draw one
            with a seeded RNG (MMMU's rule) instead of counting the answer wrong.
        scoring: "official", "lmms_eval" or "lenient" (see :mod:`harness.api.scoring`).
    """

    video_what = "video"
    source_media = "video"
    registry_name = "video"

    def __init__(
        self,
        *,
        num_frames: int = 16,
        video_root: str | None = None,
        random_fallback: bool = False,
        scoring: ScoringMode = "official",
    ) -> None:
        if num_frames < 1:
            raise UsageError(f"num_frames must be ≥ 1, got {num_frames}")
        self.scoring = check_scoring(self.registry_name, scoring)
        if random_fallback and self.scoring != "lenient":
            raise UsageError(
                f"{self.registry_name}: random_fallback only applies to scoring='lenient' "
                f"(the {self.scoring} rule counts replies without a letter as it defines)"
            )
        self.num_frames = num_frames
        self.random_fallback = random_fallback
        self._videos = VideoFinder(video_root, self.video_what)
        self._shown: dict[str, tuple[int, ...]] = {}

    def prompt(self, sample: Any) -> str:
        """Instruction text for ``sample``."""
        raise NotImplementedError

    def video(self, sample: Any) -> Video:
        """The shown frames: in-memory frames as they are, else uniform over the file."""
        if sample.frames:
            return Video(tuple(sample.frames), tuple(range(len(sample.frames))))
        return sample_frames(self._videos.find(sample.video_name), self.num_frames)

    def request(self, sample: Any) -> Request:
        """Sampled frames plus the question with its options."""
        video = self.video(sample)
        self._shown[sample.doc_id] = video.frame_indices
        return Request(text=self.prompt(sample), video=video, max_new_tokens=16)

    def letter(self, sample: Any, text: str) -> str | None:
        """The letter the scoring mode reads from a reply ("" or None: none)."""
        letters = LETTERS[: len(sample.options)]
        if self.scoring == "lmms_eval":
            return lmms_eval_mcq_letter(text, "ABCD")  # lmms-eval passes A-D whatever the count
        if self.scoring == "lenient":
            return lenient_letter(text, letters, sample.options)
        raise NotImplementedError(f"{self.registry_name}: no official rule")

    def score(self, sample: Any, generation: Generation, ctx: ScoringContext) -> dict[str, Any]:
        """Parsed letter, correctness, and whether the reply was answered at all."""
        pred = self.letter(sample, generation.text) or None
        how = "parsed" if pred is not None else "none"
        if pred is None and self.random_fallback:
            pred, how = (
                seeded_letter(LETTERS[: len(sample.options)], ctx.seed, sample.doc_id),
                "random",
            )
        return {
            "accuracy": float(pred == sample.answer),
            "pred": pred,
            "parse": how,
            "answered": float(pred is not None),
            **self.score_groups(sample),
        }

    def score_groups(self, sample: Any) -> dict[str, Any]:
        """Group labels copied into each score row (task type, duration...)."""
        return {}

    def sample_log(self, sample: Any) -> dict[str, Any]:
        """Target letter and the source indices of the shown frames."""
        shown = self._shown.pop(sample.doc_id, None)
        return {
            "target": sample.answer,
            "frame_indices": list(shown) if shown is not None else None,
        }

    def settings(self) -> dict[str, Any]:
        """Resolved settings that change the numbers."""
        return {
            **super().settings(),
            "num_frames": self.num_frames,
            "frame_sampling": "uniform segment centres over the whole video",
            "random_fallback": self.random_fallback,
            "scoring": self.scoring,
        } | ({"fallback": FALLBACK_RULE} if self.random_fallback else {})
