"""Rule-based answer matching of MMLongBench-Doc (used by :mod:`tasks.mmlongbench_doc.task`).

Per ``answer_format``: Int equality; Float within ±1% (also against ×100 / ÷100, for percent
forms); Str exact (case/space-insensitive, parenthetical remarks, quotes, a leading "$" and a
trailing "%" removed; dates compared as dates whatever their written form) for URLs, dates and
numbers, else ANLS (0 below 0.5);
List sorted and compared element-wise (the minimum element score, 0 if lengths differ);
None → the reply must say "not answerable".
"""

from __future__ import annotations

import ast
import re

from tasks.common.answers import anls, as_number, normalize_text, numbers_close, parse_number

__all__ = ["FORMATS", "match_answer", "not_answerable"]

FORMATS = ("Str", "Int", "Float", "List", "None")
_URL = re.compile(r"https?://|www\.|\.(com|org|net|edu|gov|io)\b", re.I)
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DATE = re.compile(
    rf"\b\d{{4}}[-/.]\d{{1,2}}[-/.]\d{{1,2}}\b|\b\d{{1,2}}[-/.]\d{{1,2}}[-/.]\d{{2,4}}\b"
    rf"|\b{_MONTH}\s+\d{{1,2}}(,?\s*\d{{4}})?\b|\b\d{{1,2}}\s+{_MONTH}\s+\d{{4}}\b",
    re.I,
)


_SAYS_NA = re.compile(
    r"not answerable|unanswerable|cannot be answered|cant be answered|not mentioned|"
    r"no information|does not (?:contain|provide|mention|specify)"
)


def not_answerable(text: str) -> bool:
    """Whether a reply (or gold answer) says the question cannot be answered.

    "Not answerable", "unanswerable", "cannot be answered", "not mentioned", "no
    information", "does not contain/provide/mention/specify", or just "none" / "N/A".
    """
    norm = normalize_text(text)
    return bool(_SAYS_NA.search(norm)) or norm in {"none", "na"}


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _clean(text: str) -> str:
    # Parenthetical remarks, quotes, a leading "$" and a trailing "%" go (as the release's
    # get_clean_string does), then case and spacing.
    out = re.sub(r"\s*\([^)]*\)", "", str(text)).strip().lower().strip(" .\"'`")
    out = out.lstrip("$").strip().rstrip("%").strip()
    return " ".join(out.split())


def _date(text: str) -> tuple[int, int, int | None] | None:
    """A written date as (year, month, day|None): ISO, "March 5, 2020", "5 March 2020"."""
    t = _clean(text).replace(",", " ")
    iso = re.fullmatch(r"(\d{4})[-/.](\d{1,2})(?:[-/.](\d{1,2}))?", t)
    if iso:
        y, m, d = iso.groups()
        return int(y), int(m), int(d) if d else None
    words = t.split()
    month = [i for i, w in enumerate(words) if w[:3] in _MONTHS and w.rstrip(".").isalpha()]
    nums = [w for w in words if w.isdigit()]
    if len(month) == 1 and len(words) == len(nums) + 1 and 1 <= len(nums) <= 2:
        year = [int(n) for n in nums if len(n) == 4]
        day = [int(n) for n in nums if len(n) <= 2]
        if len(year) == 1 and len(day) <= 1:
            return year[0], _MONTHS.index(words[month[0]][:3]) + 1, day[0] if day else None
    return None


def _exact_kind(gold: str) -> bool:
    return bool(_URL.search(gold) or _DATE.search(gold) or as_number(gold) is not None)


def _match_str(pred: str, gold: str) -> float:
    if _exact_kind(gold):
        gd, pd = _date(gold), _date(pred)
        if gd is not None and pd is not None:
            return float(gd == pd)  # "2020-03-05" == "March 5, 2020" == "5 March 2020"
        return float(_clean(pred) == _clean(gold))
    return anls(_clean(pred), _clean(gold))


def _as_list(text: str) -> list[str]:
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            value = ast.literal_eval(stripped)
            if isinstance(value, list | tuple):
                return [str(v) for v in value]
        except (ValueError, SyntaxError):
            pass
        stripped = stripped.strip("[]")
    return [p for p in re.split(r",|;|\n|\band\b", stripped) if p.strip()]


def match_answer(pred: str, gold: str, answer_format: str) -> float:
    """Rule-based score in [0, 1] of a reply against the gold answer (see module docs)."""
    if answer_format == "None" or not_answerable(gold):
        return float(not_answerable(pred))
    if answer_format in ("Int", "Float"):
        p, g = parse_number(pred), as_number(gold)
        g = g if g is not None else parse_number(gold)
        if p is None or g is None:
            return 0.0
        if answer_format == "Int":
            return float(abs(p - g) < 1e-9)
        return float(numbers_close(p, g, 0.01, percent=True))
    if answer_format == "List":
        golds, preds = sorted(_as_list(gold), key=_clean), sorted(_as_list(pred), key=_clean)
        if not golds or len(golds) != len(preds):
            return 0.0
        scores = []
        for p, g in zip(preds, golds):
            value = as_number(g)
            if value is not None:
                got = parse_number(p)
                scores.append(float(got is not None and numbers_close(got, value, 0.01)))
            else:
                scores.append(_match_str(p, g))
        return min(scores)
    return _match_str(pred, gold)
