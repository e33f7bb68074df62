"""refcocog_mini — referring expression comprehension on toy shape scenes (embedded toy model).

Samples: ``harness.toy.scenes.generate_samples("refcocog", split, n, seed)``, split
``validation`` or ``test``. Same sample type, IoU metrics and box evidence as
:mod:`tasks.refcocog`; the request text is the toy question verbatim. Answers:
``"[x1, y1, x2, y2]"`` normalised to [0, 1] (the toy adapter's ``normalized`` convention).
"""

from __future__ import annotations

from harness.api.payloads import Box
from harness.api.registry import task
from tasks._mini import SeededMini
from tasks.refcocog import PROMPT, RefCOCOg, RefSample

__all__ = ["RefCOCOgMini"]

_PREFIX = PROMPT.split("{}")[0]


@task("refcocog_mini")
class RefCOCOgMini(SeededMini, RefCOCOg):
    """RefCOCOg on toy scenes.

    Args:
        n: Samples per split.
        seed: Toy dataset seed.
    """

    kind = "refcocog"

    def load(self, split: str | None = None, limit: int | None = None) -> list[RefSample]:
        """Toy samples as :class:`~tasks.refcocog.RefSample` (boxes xyxy pixels)."""
        out = []
        for s in self.mini_samples(split, limit):
            expression = s.question.removeprefix(_PREFIX).rstrip(".")
            out.append(
                RefSample(
                    doc_id=s.doc_id, expression=expression, box=Box(*s.box), image=s.images[0]
                )
            )
        return out
