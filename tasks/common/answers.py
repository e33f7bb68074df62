"""Answer parsing and matching shared by tasks (re-exported by :mod:`tasks.common.loading`).

Yes/no normalisation, MMMU-style multiple-choice parsing with a seeded fallback, ANLS, and
number parsing with a relative tolerance. Stdlib, plus rapidfuzz for edit distances.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "normalize_text",
    "yes_no",
    "Choice",
    "parse_choice",
    "levenshtein",
    "anls",
    "parse_number",
    "parse_numbers",
    "as_number",
    "numbers_close",
]

# -- answers --------------------------------------------------------------------------------
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_text(text: str, *, drop_articles: bool = False) -> str:
    """Lower case, punctuation removed, whitespace collapsed (articles optionally dropped)."""
    out = str(text).lower().translate(_PUNCT)
    if drop_articles:
        out = _ARTICLES.sub(" ", out)
    return " ".join(out.split())


def yes_no(text: str) -> str | None:
    """``"yes"``/``"no"`` from an answer whose first word says so ("Yes.", "yes, there is").

    Falls back to a lone yes/no word anywhere in the text; None when neither or both occur.
    Words are split at punctuation as well as at spaces, so a reply missing the space after
    its full stop ("Yes.There is a fork.") still starts with "yes" (:func:`normalize_text`
    deletes punctuation and would read "yesthere").
    """
    words = re.findall(r"[^\W_]+", str(text).lower())
    if not words:
        return None
    if words[0] in ("yes", "no"):
        return words[0]
    found = {w for w in words if w in ("yes", "no")}
    return found.pop() if len(found) == 1 else None


@dataclass(frozen=True, slots=True)
class Choice:
    """A parsed multiple-choice answer; ``method`` says how it was found."""

    letter: str
    method: Literal["paren", "space", "dot", "text", "random"]


def _last(positions: dict[str, int]) -> str | None:
    return max(positions, key=lambda k: positions[k]) if positions else None


def parse_choice(
    response: str, letters: Sequence[str], options: Sequence[str], *, seed: int, doc_id: str
) -> Choice:
    """Parse a multiple-choice letter as MMMU does: "(X)", then "X ", then "X.", then option text.

    When several letters match one rule the last mention wins. When nothing matches, a letter
    is drawn with ``random.Random(f"{seed}:{doc_id}")`` — deterministic for a (seed, doc)
    pair, independent of threads, order and earlier draws.
    """
    text = (
        " "
        + str(response).strip().strip(string.punctuation.replace("(", "").replace(")", ""))
        + " "
    )
    rules: list[tuple[Literal["paren", "space", "dot"], str]] = [
        ("paren", r"\({}\)"),
        ("space", r"(?<=\s){}(?=\s)"),
        ("dot", r"(?<![A-Za-z0-9]){}\."),
    ]
    for method, pattern in rules:
        hits = {}
        for letter in letters:
            found = [m.start() for m in re.finditer(pattern.format(re.escape(letter)), text)]
            if found:
                hits[letter] = found[-1]
        best = _last(hits)
        if best is not None:
            return Choice(best, method)
    low = text.lower()
    hits = {}
    for letter, option in zip(letters, options):
        opt = str(option).strip().lower()
        if opt and (pos := low.rfind(opt)) >= 0:
            # Ties on position go to the longer option ("12" over "1").
            hits[letter] = pos * 10_000 + len(opt)
    best = _last(hits)
    if best is not None:
        return Choice(best, "text")
    return Choice(random.Random(f"{seed}:{doc_id}").choice(list(letters)), "random")


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions all cost 1), by rapidfuzz."""
    from rapidfuzz.distance import Levenshtein

    return Levenshtein.distance(a, b)


def anls(prediction: str, targets: str | Sequence[str], threshold: float = 0.5) -> float:
    """Average Normalised Levenshtein Similarity of one prediction against its gold answers.

    Strings are lower-cased and whitespace-collapsed; the score is ``1 − d / max(len)`` for the
    best gold answer, set to 0 when the normalised distance exceeds ``threshold``. The
    normalised distance is rapidfuzz's ``Levenshtein.normalized_distance`` (``d / max(len)``,
    0 for two empty strings).
    """
    from rapidfuzz.distance import Levenshtein

    golds = [targets] if isinstance(targets, str) else list(targets)
    pred = " ".join(str(prediction).lower().split())
    best = 0.0
    for gold in golds:
        g = " ".join(str(gold).lower().split())
        dist = Levenshtein.normalized_distance(pred, g)
        best = max(best, 0.0 if dist > threshold else 1.0 - dist)
    return best


_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?")


def parse_numbers(text: str) -> list[float]:
    """Every number in ``text`` in order (thousands commas, %, currency signs tolerated)."""
    out = []
    for match in _NUMBER.finditer(str(text).replace("−", "-")):
        token = match.group().replace(",", "")
        if token and token not in {"-", "+", ".", "-.", "+."}:
            try:
                out.append(float(token))
            except ValueError:
                continue
    return out


def parse_number(text: str) -> float | None:
    """The first number in ``text`` (see :func:`parse_numbers`), or None."""
    numbers = parse_numbers(text)
    return numbers[0] if numbers else None


def as_number(text: str) -> float | None:
    """``text`` as a number when it is nothing but one ("1,234", "12.5%", "$3"), else None."""
    token = str(text).strip().lower().replace(",", "").lstrip("$€£").rstrip("%").strip()
    try:
        return float(token)
    except ValueError:
        return None


def numbers_close(pred: float, target: float, rel_tol: float = 0.01, percent: bool = True) -> bool:
    """``pred`` within ``rel_tol`` of ``target`` (or of target ×100 / ÷100 when ``percent``)."""
    variants = [target, target * 100, target / 100] if percent else [target]
    for t in variants:
        if t == 0:
            if abs(pred) <= 1e-9:
                return True
        elif abs(pred - t) <= rel_tol * abs(t):
            return True
    return False
