"""Regenerate tests/data/scoring/mmdocir_official.json from MMDocIR's released metric code.

The replies and their hand reading (pages named, 0-based, in order; regions written, in page
coordinates) are below. The expected values come from running the released
``metric_eval.py`` (MMDocRAG/MMDocIR @ 394d84d), which is not vendored. Usage:

    git --git-dir=<MMDocIR mirror> show 394d84d:metric_eval.py > DIR/metric_eval.py
    python tests/data/scoring/regen_mmdocir_official.py --refs DIR

Only the script's metric functions are compiled (its torch/numpy imports are skipped; numpy
is given for ``ndcg``). Two of its names are replaced for the generative protocol (see the
provenance written into the JSON): ``top_k_indices`` and ``round``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[2]))

from regen_modes import functions  # noqa: E402

from tasks.common.page_refs import parse_pages, parse_regions  # noqa: E402

NAMES = [
    "precision", "recall", "ndcg", "average_precision", "mean_reciprocal_rank",
    "calculate_overlap_score", "recall_layout", "evaluate_page", "evaluate_layout",
]  # fmt: skip
SRC = "MMDocRAG/MMDocIR@394d84dbda393a1abbdddddc265d60b74f52dcc3 metric_eval.py"
# fmt: off
D = ["Research report / Introduction", "Administration/Industry file", "Tutorial/Workshop",
     "Academic paper", "Brochure", "Financial report", "Guidebook", "Government", "Laws"]
# Page cases: (reply, n_pages, page_id, hand-ranked pages, note).
PAGE = [
    ("3", 10, [2], [2], "bare number"),
    ("Page 3", 10, [2], [2], "word + number"),
    ("**Page 3**", 10, [2], [2], "markdown bold"),
    ("page 3, page 5", 10, [4], [2, 4], "two pages, gold second"),
    ("5, 3", 10, [2, 4], [4, 2], "two gold pages"),
    ("3-5", 10, [3], [2, 3, 4], "hyphen range expands"),
    ("pages 2 to 4", 10, [0, 3], [1, 2, 3], "'to' range"),
    ("Pages 7 through 9", 10, [8], [6, 7, 8], "'through' range"),
    ("The evidence is on page 2 (see Figure 4).", 10, [1], [1], "figure number is not a page"),
    ("Table 3 on page 6", 10, [2], [5], "table number is not a page"),
    ("", 10, [0], [], "empty reply"),
    ("None of the pages.", 10, [0], [], "no number"),
    ("12", 10, [0], [], "beyond the document"),
    ("0", 10, [0], [], "page 0 does not exist (1-based)"),
    ("1, 1, 2", 10, [0, 1], [0, 1], "repeated page once"),
    ("4", 10, [3, 3], [3], "gold list repeats a page: denominator 2"),
    ("4, 5", 10, [3, 3, 4], [3, 4], "repeated gold page, denominator 3"),
    ("Let me look at each page. Page 1 is the cover. Page 4 shows the revenue chart, so the "
     "answer is on page 4.", 10, [3], [0, 3], "chain of thought: order of mention"),
    ("第3页", 10, [2], [2], "Chinese"),
    ("Seite 3 und Seite 8", 10, [7], [2, 7], "German"),
    ("page 3\npage 9\npage 1\npage 2\npage 4\npage 5", 10, [0, 1], [2, 8, 0, 1, 3, 4],
     "six pages, gold 3rd and 4th"),
    ("Pages 1-10", 10, [9], list(range(10)), "whole document range, gold last"),
    ("10, 9, 8, 7, 6, 5", 10, [4], [9, 8, 7, 6, 5, 4], "gold 6th"),
    ("pages 5-3", 10, [3], [2, 3, 4], "reversed range"),
    ("Section 2.1, page 7", 10, [6], [6], "section number is not a page"),
    ("Eq. 3 is on page 2", 10, [1], [1], "equation number is not a page"),
    ("p. 4", 10, [3], [3], "abbreviation"),
    ("The answer: 7.", 10, [6], [6], "number in a sentence"),
    ("I think it's page eleven.", 20, [10], [], "number in words"),
    ("[3, 6]", 10, [5], [2, 5], "brackets"),
    ("Page 2; also Page 2", 10, [1], [1], "same page twice"),
    ("PAGE 8", 10, [7, 2], [7], "uppercase, one of two gold"),
    ("1,2,3,4,5,6", 10, [5], [0, 1, 2, 3, 4, 5], "gold 6th, no spaces"),
    ("Pages 2\u20134", 10, [3], [1, 2, 3], "en-dash range"),
    ("step 2 then page 3", 10, [2], [2], "step number is not a page"),
    ("ref 5; page 1", 10, [0], [0], "reference number is not a page"),
    ("Footnote 9 on page 10", 10, [9], [9], "footnote number is not a page"),
    ("Appendix 2, pages 8 and 9", 10, [7, 8], [7, 8], "appendix number is not a page"),
    ("Chapter 3", 10, [2], [], "chapter number is not a page"),
    ("Figs. 2 and page 3", 10, [2], [2], "plural figure abbreviation"),
    ("page 3 of 10", 10, [9], [2, 9], "'of 10' reads as page 10"),
    ("3 pages: 2, 4, 6", 10, [3], [2, 1, 3, 5], "a count read as a page"),
    ("The relevant pages are 4 and 2, most relevant first.", 5, [1, 3], [3, 1], "prose"),
    ("Page 2.", 3, [0, 1, 2], [1], "three gold pages"),
    ("Page III", 10, [2], [2], "roman numeral after 'page'"),
    ("pages ii and iv", 10, [3], [1, 3], "lower-case roman list"),
    ("Pages II-IV", 10, [3], [1, 2, 3], "roman range"),
    ("I think it is page 4 and I am sure.", 10, [0], [3], "the pronoun 'I' is not page 1"),
]
# Layout cases: page_size 612x792, page images 306x396 px (scale 0.5). Each case: (reply,
# n_pages, page_id, gold [(page, bbox)], box convention, hand regions [(page, bbox) or None],
# hand pages, note); bboxes in page coordinates.
G = (0, [50, 60, 250, 100.5])
LAYOUT = [
    ("page 1: [25, 30, 125, 50]", 3, [0], [G], "pixels", [(0, [50, 60, 250, 100])], [0],
     "inside the gold layout"),
    ("page 1: [25, 30, 125, 50.25]", 3, [0], [G], "pixels", [(0, [50, 60, 250, 100.5])], [0],
     "exact"),
    ("page 2: [25, 30, 125, 50.25]", 3, [0], [G], "pixels", [None], [1], "right box, wrong page"),
    ("page 1: [25, 30, 125, 50.25]\npage 1: [25, 30, 75, 50.25]", 3, [0], [G], "pixels",
     [(0, [50, 60, 250, 100.5]), (0, [50, 60, 150, 100.5])], [0],
     "overlapping regions are summed: above 1 at k >= 2"),
    ("page 1: [25, 30, 125, 50.25]\npage 1: [25,30, 125,  50.25]", 3, [0], [G], "pixels",
     [(0, [50, 60, 250, 100.5])], [0], "identical region written twice counts once"),
    ("page 1: [125, 30, 200, 50]", 3, [0], [(0, [50, 60, 250, 100])], "pixels",
     [(0, [250, 60, 400, 100])], [0], "touching edge: no overlap (strict <)"),
    ("page 7: [150, 50, 150, 225]", 10, [6], [(6, [300, 100, 300, 450])], "pixels", [None], [6],
     "zero-area gold only (a real question): 0; the degenerate reply box does not parse"),
    ("page 1: [0, 0, 50, 50]", 3, [0], [(0, [300, 100, 300, 450]), (0, [0, 0, 100, 100])],
     "pixels", [(0, [0, 0, 100, 100])], [0], "zero-area gold plus a covered one"),
    ("page 150: [18, 52.5, 281, 366.5]", 200, [181], [(149, [36, 105, 562, 733])], "pixels",
     [(149, [36, 105, 562, 733])], [149],
     "gold layout on a page outside page_id (two real questions): page recall 0, layout 1"),
    ("page 1: [0, 0, 5, 5]\npage 3: [30, 40, 250, 150]", 3, [0, 2],
     [(0, [50, 60, 250, 100.5]), (2, [60, 80, 500, 300])], "pixels",
     [(0, [0, 0, 10, 10]), (2, [60, 80, 500, 300])], [0, 2], "second region covers"),
    ("page 1: [a, b]\npage 1: [25, 30, 125, 50.25]", 3, [0], [G], "pixels",
     [None, (0, [50, 60, 250, 100.5])], [0], "unparseable box keeps its place"),
    ("page 7: [25, 30, 125, 50.25]\npage 1: [25, 30, 125, 50.25]", 3, [0], [G], "pixels",
     [(0, [50, 60, 250, 100.5])], [0], "region beyond the shown pages dropped"),
    ("\n".join(f"page 2: [{i}, 0, {i + 1}, 1]" for i in range(10))
     + "\npage 1: [25, 30, 125, 50.25]", 3, [0], [G], "pixels",
     [(1, None)] * 10 + [(0, [50, 60, 250, 100.5])], [1, 0], "covering region 11th"),
    ("2", 3, [1], [(1, [100, 200, 300, 400])], "pixels", [], [1], "pages only, no regions"),
    ("page 1: [300, 390, 400, 500]", 3, [0], [(0, [500, 700, 612, 792])], "pixels",
     [(0, [600, 780, 800, 1000])], [0], "region partly outside the page (not clipped)"),
    ("page 1: [125, 50.25, 25, 30]", 3, [0], [G], "pixels", [(0, [50, 60, 250, 100.5])], [0],
     "corners written reversed are reordered"),
    ("**page 1**: [25, 30, 125, 50.25]", 3, [0], [G], "pixels", [], [0],
     "markdown breaks the region form: pages only"),
    ("PAGE 1: [25, 30, 125, 50.25]", 3, [0], [G], "pixels", [(0, [50, 60, 250, 100.5])], [0],
     "uppercase"),
    ("page 1: [0.5, 0.5, 1.0, 1.0]", 3, [0], [(0, [306, 396, 612, 792])], "normalized",
     [(0, [306, 396, 612, 792])], [0], "normalized convention"),
    ("page 1: [0, 0, 306, 396]", 3, [0], [(0, [0, 0, 300, 300]), (0, [400, 400, 500, 600])],
     "pixels", [(0, [0, 0, 612, 792])], [0], "one region covers two gold layouts"),
    ("page 2: [0, 0, 306, 396]\npage 1: [0, 0, 153, 198]", 3, [0],
     [(0, [0, 0, 612, 792])], "pixels", [None, (0, [0, 0, 306, 396])], [1, 0],
     "half the page at rank 2"),
    ("", 3, [0], [G], "pixels", [], [], "empty reply"),
    ("page I: [25, 30, 125, 50.25]", 3, [0], [G], "pixels", [(0, [50, 60, 250, 100.5])], [0],
     "roman page number of a region"),
]
# fmt: on


def tail(result):
    vals = result.split("Results= ")[1].split(" & ")
    return vals[-2], vals[-1]  # macro, micro (strings of 100*x)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--refs", required=True, help="folder holding metric_eval.py")
    parser.add_argument("--out", default=str(HERE / "mmdocir_official.json"))
    args = parser.parse_args()
    import numpy

    M = argparse.Namespace(**functions(
        Path(args.refs) / "metric_eval.py", NAMES,
        {"np": numpy, "round": lambda x, n: x, "print": lambda *a, **k: None,
         "top_k_indices": lambda scores, k: list(scores)[:k]},
    ))  # fmt: skip

    cases, agg_rows = [], []
    for i, (reply, n, gold, ranked, note) in enumerate(PAGE):
        assert parse_pages(reply, n) == ranked, (reply, parse_pages(reply, n), ranked)
        exp = {f"recall@{k}": M.recall(ranked[:k], gold) for k in (1, 3, 5)}
        dom = D[i % len(D)]
        cases.append(
            {
                "level": "page",
                "output": reply,
                "n_pages": n,
                "page_id": gold,
                "ranked": ranked,
                "domain": dom,
                "expected": exp,
                "note": note,
            }
        )
        agg_rows.append({"domain": dom, "page_id": gold, "scores_page": ranked})
    page_agg = {}
    for k in (1, 3, 5):
        macro, micro = tail(M.evaluate_page(agg_rows, topk=k, metric="recall"))
        page_agg[f"recall@{k}"] = micro
        page_agg[f"recall@{k}_macro"] = macro

    lay_rows = []
    for i, (reply, n, gold, glays, conv, regions, pages, note) in enumerate(LAYOUT):
        got = [(p, t) for p, t in parse_regions(reply) if 0 <= p < n]
        got = list(dict.fromkeys((p, "".join(t.split())) for p, t in got))
        assert len(got) == len(regions), (reply, got, regions)
        upages = list(dict.fromkeys(p for p, _ in got)) if got else parse_pages(reply, n)
        assert upages == pages, (reply, upages, pages)
        indices = [
            (None, r[0], *r[1]) if r and r[1] is not None else (None, -1, 0, 0, 0, 0)
            for r in regions
        ]
        mapping = [{"page": p, "bbox": b} for p, b in glays]
        exp = {f"recall@{k}": M.recall(pages[:k], gold) for k in (1, 3, 5)}
        for k in (1, 5, 10):
            exp[f"layout_recall@{k}"] = M.recall_layout(
                list(range(len(indices)))[:k], indices, mapping
            )
        dom = D[(i * 2) % len(D)]
        cases.append(
            {
                "level": "layout",
                "output": reply,
                "n_pages": n,
                "page_id": gold,
                "layouts": glays,
                "convention": conv,
                "regions": [None if r is None or r[1] is None else r for r in regions],
                "ranked": pages,
                "domain": dom,
                "expected": exp,
                "note": note,
            }
        )
        lay_rows.append(
            {
                "domain": dom,
                "page_id": gold,
                "scores_page": pages,
                "scores_layout": list(range(len(indices))),
                "layout_indices": indices,
                "layout_mapping": mapping,
            }
        )
    layout_agg = {}
    for k in (1, 3, 5):
        macro, micro = tail(M.evaluate_page(lay_rows, topk=k, metric="recall"))
        layout_agg[f"recall@{k}"], layout_agg[f"recall@{k}_macro"] = micro, macro
    for k in (1, 5, 10):
        macro, micro = tail(M.evaluate_layout(lay_rows, topk=k, metric="recall"))
        layout_agg[f"layout_recall@{k}"], layout_agg[f"layout_recall@{k}_macro"] = micro, macro

    out = {
        "provenance": (
            f"Expected values computed by running {SRC} functions recall, recall_layout "
            "(per case) and evaluate_page / evaluate_layout (aggregates, all cases of a level in "
            "order, each case in its 'domain'; 'News' has no case, so it counts 0 in the macro) on "
            "the hand reading of each reply: 'ranked' = the pages the reply names, in order, "
            "0-based; 'regions' = the regions it writes, in order, as (page, bbox in page "
            "coordinates), null for a region that covers nothing (box unparseable, or on a page "
            "holding no gold layout). Two lines of the script were replaced for the generative "
            "protocol: top_k_indices(scores, k) returns the reply's own ranking [:k] (the "
            "documented adaptation), and round() is the identity so aggregates are exact (the "
            "script prints round(100*x, 1)); aggregate values are the strings of 100*x it "
            "prints. Layout cases: page_size 612x792, page images 306x396 px (scale 0.5)."
        ),
        "regenerate": (
            "python tests/data/scoring/regen_mmdocir_official.py --refs DIR (DIR holds the "
            "released metric_eval.py); hand readings are asserted against "
            "tasks.common.page_refs first."
        ),
        "page_size": [612, 792],
        "image_size": [306, 396],
        "cases": cases,
        "aggregates": {"page": page_agg, "layout": layout_agg},
    }
    Path(args.out).write_text(
        json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"{len(cases)} cases -> {args.out}")


if __name__ == "__main__":
    main()
