"""mmmu_mini — MMMU-style multiple choice on toy shape scenes (embedded toy model).

Samples: ``harness.toy.scenes.generate_samples("mmmu", split, n, seed)``, split ``validation``
or ``test``. Same sample type, parsing (seeded fallback) and metrics as :mod:`tasks.mmmu.task`; the
request text is the toy question verbatim (it already lists "A. …" options and the answer
rule). Answers: one letter.
"""

from __future__ import annotations

from harness.api.registry import task
from tasks.common.mini import SeededMini
from tasks.mmmu.task import MMMU, MMMUSample

__all__ = ["MMMUMini"]


@task("mmmu_mini")
class MMMUMini(SeededMini, MMMU):
    """MMMU on toy scenes.

    Args:
        n: Samples per split.
        seed: Toy dataset seed.
    """

    kind = "mmmu"

    def load(self, split: str | None = None, limit: int | None = None) -> list[MMMUSample]:
        """Toy samples as :class:`~tasks.mmmu.task.MMMUSample` (multiple-choice)."""
        return [
            MMMUSample(
                doc_id=s.doc_id,
                question=s.question,
                options=tuple(s.options),
                answer=s.answer,
                golds=(s.answer,),
                question_type="multiple-choice",
                images=tuple(s.images),
                subfield=s.task_type,
            )
            for s in self.mini_samples(split, limit)
        ]
