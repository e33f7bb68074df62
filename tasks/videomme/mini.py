"""Video-MME mini: the ``videomme`` task on the toy model's generated scenes (no download).

- Data: ``harness.toy.scenes.generate_samples("videomme", split, n, seed)``, split
  ``validation`` or ``test`` (default): "short" clips of 2 frames and "medium" clips of 4, each
  with a four-option question.
- Same sample type, metrics (accuracy overall and per duration) and scoring as
  :mod:`tasks.videomme.task`; frames come from memory and the instruction is the generated question
  verbatim (options and answer rule included). The answer is one letter.
"""

from __future__ import annotations

from typing import Any, Literal

from harness.api.registry import task
from harness.api.scoring import ScoringMode
from tasks.common.mini import MiniMixin, video_choice_sample
from tasks.videomme.task import VideoMME, VideoMMESample

__all__ = ["VideoMMEMini", "from_mini"]


def from_mini(ms: Any) -> VideoMMESample:
    """A toy :class:`~harness.toy.scenes.MiniSample` as a :class:`VideoMMESample`."""
    return video_choice_sample(VideoMMESample, ms, duration=ms.duration)


@task("videomme_mini")
class VideoMMEMini(MiniMixin, VideoMME):
    """Video-MME on generated toy scenes.

    Args:
        n: Samples per split.
        seed: Toy dataset seed.
        duration: "short", "medium", "long" (none generated) or "all".
        random_fallback: ``lenient`` only: draw a seeded letter for replies with none.
        scoring: "official", "lmms_eval" or "lenient" (see :mod:`harness.api.scoring`).
    """

    kind = "videomme"

    def __init__(
        self,
        *,
        n: int = 100,
        seed: int = 0,
        duration: Literal["short", "medium", "long", "all"] = "all",
        random_fallback: bool = False,
        scoring: ScoringMode = "official",
    ) -> None:
        super().__init__(duration=duration, random_fallback=random_fallback, scoring=scoring)
        self._init_mini(n, seed)

    def load(self, split: str | None = None, limit: int | None = None) -> list[VideoMMESample]:
        """Toy samples (frames in memory), filtered by duration, first ``limit``."""
        out = [from_mini(ms) for ms in self.mini_samples(split, None)]
        out = [s for s in out if self.duration in ("all", s.duration)]
        return out[:limit] if limit else out

    def settings(self) -> dict[str, Any]:
        """Sample count, toy seed, duration filter, fallback rule."""
        return MiniMixin.settings(self) | {
            "duration": self.duration,
            "random_fallback": self.random_fallback,
        }
