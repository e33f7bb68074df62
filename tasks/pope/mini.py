"""pope_mini — POPE-style yes/no object probing on toy shape scenes (embedded toy model).

Samples: ``harness.toy.scenes.generate_samples("pope", split, n, seed)`` with split
``validation`` or ``test`` (held out from the toy model's training). Same sample type, metrics
and answer normalisation as :mod:`tasks.pope.task`; the request text is the toy question verbatim.
Answers: "yes" / "no".
"""

from __future__ import annotations

from harness.api.registry import task
from tasks.common.mini import SeededMini
from tasks.pope.task import Pope, PopeSample

__all__ = ["PopeMini"]


@task("pope_mini")
class PopeMini(SeededMini, Pope):
    """POPE on toy scenes.

    Args:
        n: Samples per split.
        seed: Toy dataset seed.
    """

    kind = "pope"

    def load(self, split: str | None = None, limit: int | None = None) -> list[PopeSample]:
        """Toy samples as :class:`~tasks.pope.task.PopeSample`."""
        return [
            PopeSample(
                doc_id=s.doc_id,
                question=s.question,
                answer=s.answer,
                image=s.images[0],
                category=s.category,
            )
            for s in self.mini_samples(split, limit)
        ]
