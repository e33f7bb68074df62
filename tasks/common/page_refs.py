"""Page and region references in a retrieval reply (MMDocIR's generative protocol).

headscope's own reading rule (the benchmark's release ranks pages by retriever scores and has
no reply parser): pages are 1-based numbers in order of mention, ranges expand, and numbers
that name a figure, table, section, equation, step, note or reference, or a quantity (a
percentage, an amount of money, a decimal), are not pages.
"""

from __future__ import annotations

import re

__all__ = ["parse_pages", "parse_regions"]

_REGION = re.compile(r"page\s*(\d+)\s*[:\-,]?\s*(\[[^\]]*\])", re.I)
_NOT_PAGE = re.compile(
    r"\b(?:fig(?:ure)?s?|tables?|tab|sections?|sec|chapters?|ch|eq(?:uation)?s?|steps?|"
    r"items?|notes?|footnotes?|appendix|ref(?:erence)?s?)\.?\s*\d+(?:\.\d+)*",
    re.I,
)
# Quantities are not pages: "7%", "7 percent", "$7", "€1,200", "3.5".
_QUANTITY = re.compile(
    r"[$€£¥]\s*\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?\s*(?:%|percent\b|per\s*cent\b)|\d+\.\d+",
    re.I,
)
_RANGE = re.compile(r"(\d+)\s*(?:-|–|—|to|through|thru)\s*(?:pages?\s*)?(\d+)", re.I)


def parse_pages(text: str, n_pages: int) -> list[int]:
    """1-based page numbers in order of mention → unique 0-based pages within the document.

    Numbers that name a figure, table, section, equation, step, note or reference ("(see
    Figure 2)", "Table 3.1") are not pages, nor are quantities (a percentage "7%" / "7
    percent", an amount "$7", a decimal "3.5"); a range "3-7" / "3 to 7" / "pages 3 through 7"
    stands for every page in it (clipped to the document); out-of-document pages are dropped.
    """
    text = _QUANTITY.sub(" ", _NOT_PAGE.sub(" ", str(text)))
    out: list[int] = []
    pos = 0
    for match in _RANGE.finditer(text):
        out += _numbers(text[pos : match.start()], n_pages, out)
        a, b = sorted((int(match.group(1)), int(match.group(2))))
        out += [p for p in range(max(a, 1) - 1, min(b, n_pages)) if p not in out]
        pos = match.end()
    out += _numbers(text[pos:], n_pages, out)
    return out


def _numbers(text: str, n_pages: int, seen: list[int]) -> list[int]:
    found: list[int] = []
    for token in re.findall(r"\d+", text):
        page = int(token) - 1
        if 0 <= page < n_pages and page not in seen and page not in found:
            found.append(page)
    return found


def parse_regions(text: str) -> list[tuple[int, str]]:
    """``(0-based page, box text)`` for each "page N: [..]" region, in order."""
    return [(int(m.group(1)) - 1, m.group(2)) for m in _REGION.finditer(text)]
