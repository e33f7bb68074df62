"""MMDocIR's released retrieval metrics, applied to the ranked lists a generative reply names.

Reference: github.com/MMDocRAG/MMDocIR @ 394d84d (2025-05-29), ``metric_eval.py`` —
``recall``, ``calculate_overlap_score``, ``recall_layout``, ``evaluate_page`` and
``evaluate_layout`` — and ``search.py``, which calls them with ``metric="recall"`` at
k = 1, 3, 5 (pages) and k = 1, 5, 10 (layouts).

What the released code does, quirks included (each held to equality by
``tests/data/scoring/mmdocir_official.json``, whose expectations come from running that code):

- Page recall of one question: |set(top k) ∩ set(page_id)| / ``len(page_id)`` — the
  denominator is the length of the gold *list* (a repeated gold page counts twice), and a
  question without gold pages scores 0.
- Layout recall of one question: the sum, over the top-k retrieved layouts and over the gold
  layouts on the same page, of the intersection area (zero unless the overlap is strictly
  positive in both axes), divided by the summed area of the gold layouts, all in the
  annotation's page coordinates (``page_size``). Overlaps are summed, not unioned, so two
  overlapping retrieved regions can push a question above 1; a question whose gold area is 0
  scores 0 (one real question has a zero-width gold layout).
- Aggregates: the overall number is the micro mean over questions (the last column the script
  prints); the macro number is the mean over the script's fixed list of ten domains of each
  domain's mean, a domain with no question counting 0. A domain outside that list makes the
  released script fail (KeyError); here the macro is then not reported (NaN, n = 0).
  The script prints ``round(100 * x, 1)``; headscope reports the unrounded fraction.

Adaptation (the one place the generative protocol differs): the released code ranks every page
(layout) of the document by a retriever's score and always keeps k. A generative reply names its
own ranked list, so the retrieved pages are the pages it names, in order (parsed by
:func:`tasks.common.page_refs.parse_pages`, duplicates dropped), and the retrieved layouts are
the regions "page N: [x1, y1, x2, y2]" it writes, in order, identical ones dropped; a reply
naming fewer than k items retrieves fewer. Region boxes are read in the model family's
convention (page-image pixels) and mapped to the annotation's page coordinates by
``page_size / image size``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.api.task import MetricValue, mean_stderr

__all__ = [
    "DOMAINS",
    "PAGE_KS",
    "LAYOUT_KS",
    "Rect",
    "page_recall",
    "overlap_area",
    "layout_recall",
    "micro_macro",
]

#: ``domain_list`` of ``evaluate_page`` / ``evaluate_layout``, in the script's order.
DOMAINS = (
    "Research report / Introduction",
    "Administration/Industry file",
    "Tutorial/Workshop",
    "Academic paper",
    "Brochure",
    "Financial report",
    "Guidebook",
    "Government",
    "Laws",
    "News",
)
PAGE_KS = (1, 3, 5)
LAYOUT_KS = (1, 5, 10)
#: ``(page, (x1, y1, x2, y2))`` in the annotation's page coordinates.
Rect = tuple[int, tuple[float, float, float, float]]


def page_recall(retrieved: Sequence[int], page_id: Sequence[int]) -> float:
    """``metric_eval.recall``: |set(retrieved) ∩ set(gold)| / len(gold list); 0 without gold."""
    hits = len(set(retrieved) & set(page_id))
    return hits / len(page_id) if page_id else 0.0


def overlap_area(a: Sequence[float], b: Sequence[float]) -> float:
    """``metric_eval.calculate_overlap_score``: the intersection area of two xyxy boxes.

    Zero unless the intersection is strictly positive along both axes.
    """
    left, top = max(a[0], b[0]), max(a[1], b[1])
    right, bottom = min(a[2], b[2]), min(a[3], b[3])
    if left < right and top < bottom:
        return (right - left) * (bottom - top)
    return 0.0


def layout_recall(retrieved: Sequence[Rect], gold: Sequence[Rect]) -> float:
    """``metric_eval.recall_layout``: summed same-page overlap / summed gold area (0 if none)."""
    covered = 0.0
    for page, box in retrieved:
        for gold_page, gold_box in gold:
            if page == gold_page:
                covered += overlap_area(box, gold_box)
    gold_area = 0.0
    for _, (x1, y1, x2, y2) in gold:
        gold_area += (x2 - x1) * (y2 - y1)
    return covered / gold_area if gold_area != 0 else 0.0


def micro_macro(
    rows: Sequence[dict], metric: str, macro_name: str
) -> tuple[MetricValue, MetricValue]:
    """Overall (micro) mean and the ten-domain macro mean of ``row[metric]``.

    The sums follow the script's own arithmetic (``+=`` per question in row order; the built-in
    ``sum`` over the ten domain means), so the values are the script's bit for bit under the
    same Python. Rows carry their question's ``domain``.
    """
    total, by_domain, count = 0.0, dict.fromkeys(DOMAINS, 0.0), dict.fromkeys(DOMAINS, 0)
    known = True
    for row in rows:
        value = float(row[metric])
        total += value
        domain = row.get("domain")
        if domain in by_domain:
            by_domain[domain] += value
            count[domain] += 1
        else:
            known = False
    n = len(rows)
    stderr = mean_stderr([float(r[metric]) for r in rows])[1]
    micro = MetricValue(metric, total / n if n else math.nan, stderr, n)
    if not (known and n):
        return micro, MetricValue(macro_name, math.nan, None, 0)
    means = [by_domain[d] / count[d] if count[d] else 0 for d in DOMAINS]
    return micro, MetricValue(macro_name, sum(means) / len(means), None, n)
