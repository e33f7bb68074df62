"""VidSTG mini: the ``vidstg`` task on the toy model's generated scenes (no download).

- Data: :func:`harness.toy.scenes.generate_samples` with kind ``"vidstg"`` (deterministic;
  splits train / validation / test, default test; ``n`` samples, dataset ``seed``). Each sample
  is a few 64×64 frames with a coloured shape over a span of frames.
- Same sample type, metrics, scoring and evidence as :mod:`tasks.vidstg`; only loading differs
  (frames in memory, shown as they are: positions = frame indices) and the instruction, which is
  the generated question verbatim.
- Answer format (agreed with the toy model): ``"<start>-<end> [x1, y1, x2, y2]"``, 0-based frame
  positions with an inclusive end, box normalised to [0, 1].
"""

from __future__ import annotations

from typing import Any, Literal

from harness.payloads import Box
from harness.registry import task
from tasks._video import mini_samples
from tasks._vidstg_data import VidSTGSample
from tasks.vidstg import VidSTG

__all__ = ["VidSTGMini", "from_mini"]


def from_mini(ms: Any) -> VidSTGSample:
    """A toy :class:`~harness.toy.scenes.MiniSample` as a :class:`VidSTGSample`."""
    width, height = ms.images[0].size
    return VidSTGSample(
        doc_id=ms.doc_id,
        vid=ms.doc_id,
        sentence=ms.question,
        sentence_type=ms.sentence_type,
        target_id=0,
        target_category=ms.layout[ms.span[0]][0].name if ms.layout else "",
        segment=(0, len(ms.images)),
        span=tuple(ms.span),
        tube={int(f): Box(*map(float, b)) for f, b in ms.frame_boxes.items()},
        width=width,
        height=height,
        fps=1.0,
        frames=tuple(ms.images),
    )


@task("vidstg_mini")
class VidSTGMini(VidSTG):
    """VidSTG on generated toy scenes.

    Args:
        n: Number of samples generated for the split.
        seed: Dataset seed of the generator.
        sentence_type: "declarative", "interrogative" or "all".
    """

    default_split = "test"

    def __init__(
        self,
        *,
        n: int = 200,
        seed: int = 0,
        sentence_type: Literal["declarative", "interrogative", "all"] = "all",
    ) -> None:
        super().__init__(sentence_type=sentence_type)
        self.n = n
        self.seed = seed

    def load(self, split: str | None = None, limit: int | None = None) -> list[VidSTGSample]:
        """The generated samples (first ``limit``), filtered by sentence type."""
        raw = mini_samples("vidstg", split or self.default_split, self.n, self.seed, None)
        out = [from_mini(ms) for ms in raw]
        out = [s for s in out if self.sentence_type in ("all", s.sentence_type)]
        return out[:limit] if limit else out

    def prompt(self, sample: VidSTGSample, n: int) -> str:
        """The generated question, verbatim."""
        return sample.sentence

    def settings(self) -> dict[str, Any]:
        """Generator settings (frames are shown as generated)."""
        return {
            **getattr(self, "_args", {}),
            "n": self.n,
            "seed": self.seed,
            "sentence_type": self.sentence_type,
            "source": "harness.toy.scenes",
        }
