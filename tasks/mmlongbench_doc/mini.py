"""mmlongbench_mini — MMLongBench-Doc-style QA over toy 3-page documents (embedded toy model).

Samples: ``harness.toy.scenes.generate_samples("mmlongbench", split, n, seed)``, split
``validation`` or ``test``. Same sample type, rule-based matching (answer_format "Str": ANLS)
and metrics as :mod:`tasks.mmlongbench_doc.task`; pages are the generated images (no PDF). The
request text is the toy question verbatim. Answers: short free text ("red circle", "red").
Evidence: the evidence page, with the object's box on it (object-level Ω(V*) for the toy).
"""

from __future__ import annotations

from typing import Literal

from harness.api.payloads import Box, PageEvidence, Request
from harness.api.registry import task
from harness.api.scoring import ScoringMode
from tasks.common.mini import MiniMixin
from tasks.mmlongbench_doc.task import DocSample, MMLongBenchDoc

__all__ = ["MMLongBenchMini"]


@task("mmlongbench_mini")
class MMLongBenchMini(MiniMixin, MMLongBenchDoc):
    """MMLongBench-Doc on toy documents.

    Args:
        n: Samples per split.
        seed: Toy dataset seed.
        pages: "all" pages or only the "gold" evidence page.
        scoring: "official" (rules extractor), "lmms_eval" or "lenient".
    """

    kind = "mmlongbench"

    def __init__(
        self,
        *,
        n: int = 100,
        seed: int = 0,
        pages: Literal["all", "gold"] = "all",
        scoring: ScoringMode = "official",
    ):
        super().__init__(pages=pages, scoring=scoring)
        self._init_mini(n, seed)
        self._boxes: dict[str, tuple[tuple[int, Box], ...]] = {}

    def load(self, split: str | None = None, limit: int | None = None) -> list[DocSample]:
        """Toy samples as :class:`~tasks.mmlongbench_doc.task.DocSample` with page images."""
        out = []
        for s in self.mini_samples(split, limit):
            self._boxes[s.doc_id] = tuple((p, Box(*b)) for p, b in s.evidence)
            out.append(
                DocSample(
                    doc_id=s.doc_id,
                    document="",
                    question=s.question,
                    answer=s.answer,
                    answer_format=s.answer_format or "Str",
                    evidence_pages=(s.evidence_page,),
                    evidence_sources=(s.task_type,),
                    page_images=tuple(s.images),
                )
            )
        return out

    def evidence(self, sample: DocSample, request: Request) -> PageEvidence | None:
        """Evidence page positions plus the object's box on each."""
        base = super().evidence(sample, request)
        if base is None:
            return None
        shown = self.shown_pages(sample, len(sample.page_images))
        boxes = {
            shown.index(p): tuple(b for q, b in self._boxes.get(sample.doc_id, ()) if q == p)
            for p in sample.evidence_pages
            if p in shown
        }
        return PageEvidence(pages=base.pages, boxes={k: v for k, v in boxes.items() if v})
