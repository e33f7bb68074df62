"""Page and region references in a retrieval reply (MMDocIR's generative protocol).

headscope's own reading rule (the benchmark's release ranks pages by retriever scores and has
no reply parser): pages are 1-based numbers in order of mention, ranges expand, and numbers
that name a figure, table, section, equation, step, note or reference, or a quantity (a
percentage, an amount of money, a decimal), are not pages. A roman numeral counts as its
number where it follows "page"/"pages"/"p." or continues such a list ("Page III", "pages ii
and iv", "pages II-IV"): in all capitals or all lower case, in canonical form (I to MMMCMXCIX);
a roman-looking word elsewhere ("I think", "a vivid"), or a lone "I" after "and" ("page 4 and
I think"), is not a page.
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
_ROMAN = re.compile(r"M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})")
_NUMERAL = r"(?:\d+|[IVXLCDM]+|[ivxlcdm]+)\b"
# "page(s)" or "p."/"pp." and the list it starts: numerals joined by commas, "and", ranges. A
# lone "I"/"i" continues no list ("page 4 and I think" names page 4 only).
_PAGE_LIST = re.compile(
    rf"\b(?:pages?|pp?\.)\s*{_NUMERAL}(?:\s*(?:,|&|and|or|-|–|—|to|through|thru)\s*"
    rf"(?:pages?\s*)?(?![Ii]\b){_NUMERAL})*",
    re.I,
)
_WORD = re.compile(r"\b(?:[IVXLCDM]+|[ivxlcdm]+)\b")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def _roman(word: str) -> int | None:
    """The value of a canonical roman numeral (all capitals or all lower case), else None."""
    upper = word.upper()
    if not word or not (word.isupper() or word.islower()) or not _ROMAN.fullmatch(upper):
        return None
    values = [_ROMAN_VALUES[c] for c in upper]
    return sum(-v if v < w else v for v, w in zip(values, [*values[1:], 0], strict=True))


def _arabic(match: re.Match[str]) -> str:
    """A page list with each roman numeral written as its number ("pages II-IV" → "pages 2-4")."""

    def value(word: re.Match[str]) -> str:
        number = _roman(word.group())
        return word.group() if number is None else str(number)

    return _WORD.sub(value, match.group())


def _romans_as_numbers(text: str) -> str:
    """``text`` with the roman numerals of its page lists as numbers."""
    return _PAGE_LIST.sub(_arabic, text)


def parse_pages(text: str, n_pages: int) -> list[int]:
    """1-based page numbers in order of mention → unique 0-based pages within the document.

    Numbers that name a figure, table, section, equation, step, note or reference ("(see
    Figure 2)", "Table 3.1") are not pages, nor are quantities (a percentage "7%" / "7
    percent", an amount "$7", a decimal "3.5"); a range "3-7" / "3 to 7" / "pages 3 through 7"
    stands for every page in it (clipped to the document); out-of-document pages are dropped.
    """
    text = _QUANTITY.sub(" ", _NOT_PAGE.sub(" ", _romans_as_numbers(str(text))))
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
    text = _romans_as_numbers(str(text))
    return [(int(m.group(1)) - 1, m.group(2)) for m in _REGION.finditer(text)]
