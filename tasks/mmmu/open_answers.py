"""MMMU open-question scoring: the released rule (quirks included) and headscope's lenient one.

Official (MMMU-Benchmark/MMMU ``mmmu/utils/eval_utils.py``: ``parse_open_response``,
``extract_numbers``, ``normalize_str``, ``eval_open``; lmms-eval 0.7.3 ``tasks/mmmu/utils.py``
carries the same functions, but passes the raw ``answer`` string as the gold): the reply is
lower-cased and cut into lines; from each line the shortest tail after a key word ("is ",
"so ", "answer ", … and "=" on the last line) is kept; numbers are pulled from those tails;
every candidate becomes a float rounded to 2 decimals when it parses as one, else lower-case
text. A numeric gold matches only an equal float candidate (so 3.5 does not accept "35", −2
does not accept "2"); a text gold matches when it occurs inside a text candidate — as a
substring, so "red" is found in "infrared" (one-character golds must touch a space).
Written here from reading that code; ``tests/data/scoring/modes_mmmu.json`` holds it to
equality case by case.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tasks.common.answers import as_number, normalize_text, numbers_close

__all__ = ["official_open_candidates", "official_open_match", "lenient_open_match"]

_KEYS = ("could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ", "result ")
_TRIVIAL = {":", ",", ".", "!", "?", ";", "'"}
# Three number shapes, collected in this order (the order does not matter: a set follows).
_GROUPED = re.compile(r"-?\b\d{1,3}(?:,\d{3})+\b")  # 1,234,567
_SCIENTIFIC = re.compile(r"-?\d+(?:\.\d+)?[eE][+-]?\d+")  # 1.5e3
_PLAIN = re.compile(
    r"""-?(?: \d+\.\d+ | \.\d+ | \d+\b )   # 12.5, .5 or a whole number
        (?![eE][+-]?\d+)                 # not the mantissa of scientific notation
        (?![,\d])                        # not followed by a comma group or a digit
    """,
    re.X,
)


def _normal(value: str) -> list[float | str]:
    text = value.strip()
    try:
        return [round(float(text.replace(",", "")), 2)]
    except ValueError:
        pass
    text = text.lower()
    return [" " + text, text + " "] if len(text) == 1 else [text]


def _key_tails(reply: str) -> list[str]:
    text = reply.strip().strip(".").lower()
    lines = re.split(r"\.\s(?=[A-Z])|\n", text)  # after lower(): only newlines split
    tails = []
    for k, line in enumerate(lines):
        keys = _KEYS + (("=",) if k == len(lines) - 1 else ())
        shortest = None
        for key in keys:
            if key in line:
                tail = line.split(key)[-1].strip()
                # An empty tail counts as "none yet": the next key replaces it.
                if not shortest or len(tail) < len(shortest):
                    shortest = tail
        if shortest and shortest.strip() not in _TRIVIAL:
            tails.append(shortest)
    return tails or [text]


def official_open_candidates(reply: str) -> list[float | str]:
    """The normalised candidates MMMU's ``parse_open_response`` keeps (as a sorted list)."""
    tails = _key_tails(reply)
    found: list[str] = list(tails)
    for tail in tails:
        found += _GROUPED.findall(tail) + _SCIENTIFIC.findall(tail) + _PLAIN.findall(tail)
    out: set[float | str] = set()
    for item in found:
        out.update(_normal(item))
    return sorted(out, key=lambda v: (isinstance(v, str), str(v)))


def official_open_match(reply: str, gold: str | Sequence[str]) -> bool:
    """MMMU's ``eval_open`` on ``parse_open_response(reply)``; ``gold`` a string or a list."""
    golds: list[float | str] = []
    for g in [gold] if isinstance(gold, str) else list(gold):
        golds += _normal(str(g))
    for cand in official_open_candidates(reply):
        if isinstance(cand, str):
            if any(isinstance(g, str) and g in cand for g in golds):
                return True
        elif cand in golds:
            return True
    return False


_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _numbers(text: str) -> list[float]:
    out = []
    for match in _NUMBER.finditer(text.replace("\u2212", "-")):
        token = match.group().replace(",", "")
        if any(ch.isdigit() for ch in token.split("e")[0].split("E")[0]):
            try:
                out.append(float(token))
            except ValueError:
                continue
    return out


def lenient_open_match(reply: str, golds: Sequence[str]) -> bool:
    """Headscope's tolerant open-answer rule.

    1. A numeric gold ("3.5", "-2", "1,000", "12%") matches only a number of the reply within
       1% relative (sign kept, "1.5e3" and "1,000" read as numbers; never a digit string
       after punctuation is removed, so 3.5 does not accept "35" and 1.5 does not accept
       "15 degrees").
    2. A text gold matches when its normalised words (lower case, punctuation removed)
       occur as whole words of the normalised reply ("red" is not found in "infrared").
    """
    text = f" {normalize_text(reply)} "
    numbers = _numbers(str(reply))
    for gold in golds:
        value = as_number(gold)
        if value is not None:
            if any(numbers_close(n, value, 0.01, percent=False) for n in numbers):
                return True
            continue
        g = normalize_text(gold)
        if g and f" {g} " in text:
            return True
    return False
