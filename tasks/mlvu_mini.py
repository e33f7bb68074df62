"""MLVU mini: the ``mlvu`` task on the toy model's generated scenes (no download).

- Data: :func:`harness.toy.scenes.generate_samples` with kind ``"mlvu"`` (deterministic;
  splits train / validation / test, default test; ``n`` samples, dataset ``seed``): a few
  64×64 frames and a needle / count / order question with four options.
- Same sample type, metrics (per-type accuracy, macro average over the types present) and
  scoring as :mod:`tasks.mlvu`; frames come from memory and the instruction is the generated
  question verbatim (options and answer rule included). The answer is one letter.
"""

from __future__ import annotations

from typing import Any

from harness.registry import task
from tasks._video import mini_samples
from tasks.mlvu import MLVU, MLVUSample

__all__ = ["MLVUMini", "from_mini"]


def from_mini(ms: Any) -> MLVUSample:
    """A toy :class:`~harness.toy.scenes.MiniSample` as an :class:`MLVUSample`."""
    return MLVUSample(
        doc_id=ms.doc_id,
        question=ms.question,
        options=tuple(ms.options),
        answer=ms.answer,
        task_type=ms.task_type,
        frames=tuple(ms.images),
    )


@task("mlvu_mini")
class MLVUMini(MLVU):
    """MLVU on generated toy scenes.

    Args:
        n: Number of samples generated for the split.
        seed: Dataset seed of the generator.
        random_fallback: Draw a seeded letter for replies with none (default: count wrong).
    """

    default_split = "test"

    def __init__(self, *, n: int = 200, seed: int = 0, random_fallback: bool = False) -> None:
        super().__init__(random_fallback=random_fallback)
        self.n = n
        self.seed = seed

    def load(self, split: str | None = None, limit: int | None = None) -> list[MLVUSample]:
        """The generated samples (first ``limit``)."""
        raw = mini_samples("mlvu", split or self.default_split, self.n, self.seed, limit)
        return [from_mini(ms) for ms in raw]

    def prompt(self, sample: MLVUSample) -> str:
        """The generated question, verbatim."""
        return sample.question

    def settings(self) -> dict[str, Any]:
        """Generator settings (frames are shown as generated)."""
        return {
            **getattr(self, "_args", {}),
            "n": self.n,
            "seed": self.seed,
            "random_fallback": self.random_fallback,
            "source": "harness.toy.scenes",
        }
