"""MLVU mini: the ``mlvu`` task on the toy model's generated scenes (no download).

- Data: ``harness.toy.scenes.generate_samples("mlvu", split, n, seed)``, split ``validation``
  or ``test`` (default): a few 64×64 frames and a needle / count / order question with four
  options.
- Same sample type, metrics (per-type accuracy, macro average over the types present) and
  scoring as :mod:`tasks.mlvu.task`; frames come from memory and the instruction is the generated
  question verbatim (options and answer rule included). The answer is one letter.
"""

from __future__ import annotations

from typing import Any

from harness.api.registry import task
from harness.api.scoring import ScoringMode
from tasks.common.mini import MiniMixin, video_choice_sample
from tasks.mlvu.task import MLVU, MLVUSample

__all__ = ["MLVUMini", "from_mini"]


def from_mini(ms: Any) -> MLVUSample:
    """A toy :class:`~harness.toy.scenes.MiniSample` as an :class:`MLVUSample`."""
    return video_choice_sample(MLVUSample, ms)


@task("mlvu_mini")
class MLVUMini(MiniMixin, MLVU):
    """MLVU on generated toy scenes.

    Args:
        n: Samples per split.
        seed: Toy dataset seed.
        random_fallback: ``lenient`` only: draw a seeded letter for replies with none.
        scoring: "official", "lmms_eval" or "lenient" (see :mod:`harness.api.scoring`).
    """

    kind = "mlvu"

    def __init__(
        self,
        *,
        n: int = 100,
        seed: int = 0,
        random_fallback: bool = False,
        scoring: ScoringMode = "official",
    ) -> None:
        super().__init__(random_fallback=random_fallback, scoring=scoring)
        self._init_mini(n, seed)

    def load(self, split: str | None = None, limit: int | None = None) -> list[MLVUSample]:
        """Toy samples (frames in memory), first ``limit``."""
        return [from_mini(ms) for ms in self.mini_samples(split, limit)]

    def settings(self) -> dict[str, Any]:
        """Sample count, toy seed, fallback rule."""
        return MiniMixin.settings(self) | {"random_fallback": self.random_fallback}
