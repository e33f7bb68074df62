"""Shared pieces of the video tasks (MLVU, Video-MME and their mini variants).

- :class:`VideoChoiceTask`: the multiple-choice video task base (MLVU, Video-MME): frames from
  the file (uniform sampling over the whole video) or from memory (mini variants), letter
  parsing, accuracy, grouped accuracy, and the shown frame indices in the per-sample log.

PyAV is only imported when a video file is decoded (:mod:`harness.media.video`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.api.payloads import Generation, Request, Video
from harness.api.task import MetricValue, ScoringContext, Task, mean_stderr
from harness.media.video import VideoFinder, sample_frames
from tasks._common import RowSource, parse_choice

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
        random_fallback: When no letter can be parsed, draw one with a seeded RNG (MMMU's
            rule) instead of counting the answer wrong (the benchmarks' own rule).
    """

    video_what = "video"
    source_media = "video"

    def __init__(
        self, *, num_frames: int = 16, video_root: str | None = None, random_fallback: bool = False
    ) -> None:
        if num_frames < 1:
            raise ValueError(f"num_frames must be ≥ 1, got {num_frames}")
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

    def score(self, sample: Any, generation: Generation, ctx: ScoringContext) -> dict[str, Any]:
        """Parsed letter and correctness (unparsed counts wrong unless ``random_fallback``)."""
        letters = LETTERS[: len(sample.options)]
        choice = parse_choice(
            generation.text, letters, sample.options, seed=ctx.seed, doc_id=sample.doc_id
        )
        pred = choice.letter if choice.method != "random" or self.random_fallback else None
        return {
            "accuracy": float(pred == sample.answer),
            "pred": pred,
            "parse": choice.method if pred is not None else "none",
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
        }
