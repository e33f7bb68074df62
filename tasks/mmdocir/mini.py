"""mmdocir_mini — MMDocIR-style page retrieval over toy 3-page documents (embedded toy model).

Samples: ``harness.toy.scenes.generate_samples("mmdocir", split, n, seed)``, split
``validation`` or ``test``. Same sample type, page parsing, scoring modes and metrics as
:mod:`tasks.mmdocir.task` (the toy's domain, "toy", is not one of the release's ten, so the official
``_macro`` metrics are not declared); the request text is the toy question verbatim. Answers:
the 1-based page number ("2"). Evidence: the evidence page with the object's box (object-level
Ω(V*)).
"""

from __future__ import annotations

from harness.api.payloads import Box, PageEvidence, Request
from harness.api.registry import task
from tasks.common.mini import SeededMini
from tasks.mmdocir.task import DocIRSample, MMDocIR

__all__ = ["MMDocIRMini"]


@task("mmdocir_mini")
class MMDocIRMini(SeededMini, MMDocIR):
    """MMDocIR on toy documents.

    Args:
        n: Samples per split.
        seed: Toy dataset seed.
    """

    kind = "mmdocir"

    def __init__(self, *, n: int = 100, seed: int = 0, scoring: str | None = None) -> None:
        super().__init__(n=n, seed=seed, scoring=scoring)
        # The toy's one domain is not among the release's ten: there is no macro to report.
        self.metrics = tuple(m for m in self.metrics if not m.name.endswith("_macro"))

    def load(self, split: str | None = None, limit: int | None = None) -> list[DocIRSample]:
        """Toy samples as :class:`~tasks.mmdocir.task.DocIRSample` (layout boxes in pixels)."""
        return [
            DocIRSample(
                doc_id=s.doc_id,
                question=s.question,
                answer=s.answer,
                pages=tuple(s.images),
                gold_pages=(s.evidence_page,),
                layouts=tuple((p, Box(*b)) for p, b in s.evidence),
                page_sizes=tuple((p, s.images[p].size) for p, _ in s.evidence),
                domain="toy",
                layout_rects=tuple((p, Box(*b).as_tuple()) for p, b in s.evidence),
                page_points=tuple((p, s.images[p].size) for p, _ in s.evidence),
            )
            for s in self.mini_samples(split, limit)
        ]

    def evidence(self, sample: DocIRSample, request: Request) -> PageEvidence | None:
        """The evidence page with the object's box on it."""
        shown = [p for p in sample.gold_pages if p < len(request.pages)]
        if not shown:
            return None
        boxes = {p: tuple(b for q, b in sample.layouts if q == p) for p in shown}
        return PageEvidence(pages=tuple(shown), boxes={p: b for p, b in boxes.items() if b})
