"""Video-MME mini: the ``videomme`` task on the toy model's generated scenes (no download).

- Data: :func:`harness.toy.scenes.generate_samples` with kind ``"videomme"`` (deterministic;
  splits train / validation / test, default test; ``n`` samples, dataset ``seed``): "short"
  clips of 2 frames and "medium" clips of 4, with a four-option question.
- Same sample type, metrics (accuracy overall and per duration) and scoring as
  :mod:`tasks.videomme`; frames come from memory and the instruction is the generated question
  verbatim (options and answer rule included). The answer is one letter.
"""

from __future__ import annotations

from typing import Any, Literal

from harness.registry import task
from tasks._video import mini_samples
from tasks.videomme import VideoMME, VideoMMESample

__all__ = ["VideoMMEMini", "from_mini"]


def from_mini(ms: Any) -> VideoMMESample:
    """A toy :class:`~harness.toy.scenes.MiniSample` as a :class:`VideoMMESample`."""
    return VideoMMESample(
        doc_id=ms.doc_id,
        question=ms.question,
        options=tuple(ms.options),
        answer=ms.answer,
        duration=ms.duration,
        task_type=ms.task_type,
        frames=tuple(ms.images),
    )


@task("videomme_mini")
class VideoMMEMini(VideoMME):
    """Video-MME on generated toy scenes.

    Args:
        n: Number of samples generated for the split.
        seed: Dataset seed of the generator.
        duration: "short", "medium", "long" (none generated) or "all".
        random_fallback: Draw a seeded letter for replies with none (default: count wrong).
    """

    default_split = "test"

    def __init__(
        self,
        *,
        n: int = 200,
        seed: int = 0,
        duration: Literal["short", "medium", "long", "all"] = "all",
        random_fallback: bool = False,
    ) -> None:
        super().__init__(duration=duration, random_fallback=random_fallback)
        self.n = n
        self.seed = seed

    def load(self, split: str | None = None, limit: int | None = None) -> list[VideoMMESample]:
        """The generated samples, filtered by duration (first ``limit``)."""
        raw = mini_samples("videomme", split or self.default_split, self.n, self.seed, None)
        out = [s for s in map(from_mini, raw) if self.duration in ("all", s.duration)]
        return out[:limit] if limit else out

    def prompt(self, sample: VideoMMESample) -> str:
        """The generated question, verbatim."""
        return sample.question

    def settings(self) -> dict[str, Any]:
        """Generator settings (frames are shown as generated)."""
        return {
            **getattr(self, "_args", {}),
            "n": self.n,
            "seed": self.seed,
            "duration": self.duration,
            "random_fallback": self.random_fallback,
            "source": "harness.toy.scenes",
        }
