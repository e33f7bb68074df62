"""VidSTG mini: the ``vidstg`` task on the toy model's generated scenes (no download).

- Data: ``harness.toy.scenes.generate_samples("vidstg", split, n, seed)``, split
  ``validation`` or ``test`` (default). Each sample is a few 64×64 frames with a coloured
  shape over a span of frames, and a declarative or interrogative instruction.
- Same sample type, metrics, scoring and evidence as :mod:`tasks.vidstg.task`; only loading differs
  (frames in memory, all shown: positions = frame indices) and the instruction, which is the
  generated question verbatim.
- Answer format (agreed with the toy model): ``"<start>-<end> [x1, y1, x2, y2]"``, 0-based frame
  positions with an inclusive end, box normalised to [0, 1].
"""

from __future__ import annotations

from typing import Any, Literal

from harness.api.payloads import Box
from harness.api.registry import task
from tasks.common.mini import MiniMixin
from tasks.vidstg.data import VidSTGSample
from tasks.vidstg.task import VidSTG

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
        span=(int(ms.span[0]), int(ms.span[1])),
        tube={int(f): Box(*map(float, b)) for f, b in ms.frame_boxes.items()},
        width=width,
        height=height,
        fps=1.0,
        frames=tuple(ms.images),
    )


@task("vidstg_mini")
class VidSTGMini(MiniMixin, VidSTG):
    """VidSTG on generated toy scenes.

    Args:
        n: Samples per split.
        seed: Toy dataset seed.
        sentence_type: "declarative", "interrogative" or "all".
        scoring: "official" (the default) or "lenient", as :class:`~tasks.vidstg.task.VidSTG`.
    """

    kind = "vidstg"

    def __init__(
        self,
        *,
        n: int = 100,
        seed: int = 0,
        sentence_type: Literal["declarative", "interrogative", "all"] = "all",
        scoring: str = "official",
    ) -> None:
        super().__init__(sentence_type=sentence_type, scoring=scoring)
        self._init_mini(n, seed)

    def load(self, split: str | None = None, limit: int | None = None) -> list[VidSTGSample]:
        """Toy samples (frames in memory), filtered by sentence type, first ``limit``."""
        out = [from_mini(ms) for ms in self.mini_samples(split, None)]
        out = [s for s in out if self.sentence_type in ("all", s.sentence_type)]
        return out[:limit] if limit else out

    def prompt(self, sample: VidSTGSample, n: int = 0) -> str:
        """The generated question, verbatim."""
        return self._questions[sample.doc_id]

    def settings(self) -> dict[str, Any]:
        """Sample count, toy seed, sentence type."""
        return MiniMixin.settings(self) | {"sentence_type": self.sentence_type}
