"""Rule-based answer matching of MMLongBench-Doc (used by :mod:`tasks.mmlongbench_doc`).

Per ``answer_format``: Int equality; Float within ±1% (also against ×100 / ÷100, for percent
forms); Str exact (case/space-insensitive) for URLs, dates and numbers, else ANLS (0 below 0.5);
List sorted and compared element-wise (the minimum element score, 0 if lengths differ);
None → the reply must say "not answerable".
"""

from __future__ import annotations

import ast
import re

from tasks._answers import anls, as_number, normalize_text, numbers_close, parse_number

__all__ = ["FORMATS", "match_answer", "not_answerable"]

FORMATS = ("Str", "Int", "Float", "List", "None")
_URL = re.compile(r"https?://|www\.|\.(com|org|net|edu|gov|io)\b", re.I)
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DATE = re.compile(
    rf"\b\d{{4}}[-/.]\d{{1,2}}[-/.]\d{{1,2}}\b|\b\d{{1,2}}[-/.]\d{{1,2}}[-/.]\d{{2,4}}\b"
    rf"|\b{_MONTH}\s+\d{{1,2}}(,?\s*\d{{4}})?\b|\b\d{{1,2}}\s+{_MONTH}\s+\d{{4}}\b",
    re.I,
)


def not_answerable(text: str) -> bool:
    """Whether a reply (or gold answer) says the question cannot be answered."""
    norm = normalize_text(text)
    return "not answerable" in norm or "unanswerable" in norm or norm in {"none", "na"}


def _clean(text: str) -> str:
    return " ".join(str(text).strip().lower().strip(" .\"'`").split())


def _exact_kind(gold: str) -> bool:
    return bool(_URL.search(gold) or _DATE.search(gold) or as_number(gold) is not None)


def _match_str(pred: str, gold: str) -> float:
    if _exact_kind(gold):
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
