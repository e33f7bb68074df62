"""refcocog_mini — referring expression comprehension on toy shape scenes (embedded toy model).

Samples: ``harness.toy.scenes.generate_samples("refcocog", split, n, seed)``, split
``validation`` or ``test``. Same sample type, IoU metrics and box evidence as
:mod:`tasks.refcocog.task`; the request text is the toy question verbatim. Answers:
``"[x1, y1, x2, y2]"`` normalised to [0, 1] (the toy adapter's ``normalized`` convention).
Scoring modes as :mod:`tasks.refcocog.task` (the toy family has no released evaluator, so its
``official`` rule is ``standard``: the same numbers as ``lenient``).
"""

from __future__ import annotations

from typing import Any

from harness.api.payloads import Box
from harness.api.registry import task
from tasks.common.mini import SeededMini
from tasks.refcocog.official import OFFICIAL_RULES
from tasks.refcocog.task import PROMPT, RefCOCOg, RefSample

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

    def settings(self) -> dict[str, Any]:
        """Sample count, toy seed, scoring mode (under ``official``, its family → rule table)."""
        rules = {"official_rules": OFFICIAL_RULES} if self.scoring == "official" else {}
        return super().settings() | rules

    def load(self, split: str | None = None, limit: int | None = None) -> list[RefSample]:
        """Toy samples as :class:`~tasks.refcocog.task.RefSample` (boxes xyxy pixels)."""
        out = []
        for s in self.mini_samples(split, limit):
            expression = s.question.removeprefix(_PREFIX).rstrip(".")
            out.append(
                RefSample(
                    doc_id=s.doc_id, expression=expression, box=Box(*s.box), image=s.images[0]
                )
            )
        return out
