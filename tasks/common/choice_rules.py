"""Multiple-choice letter extraction, one function per reference rule (pure stdlib).

Each function reproduces one released rule, quirks included; the test cases in
``tests/data/scoring/modes_*.json`` hold them to equality with the reference code
(provenance per case). Written here from reading the references, not copied:

- :func:`mmmu_letter` — MMMU-Benchmark/MMMU ``mmmu/utils/eval_utils.py::
  parse_multi_choice_response`` (``variant="official"``) and lmms-eval 0.7.3
  ``tasks/_task_utils/mmmu_mcq_utils.py::parse_mmmu_multi_choice_response``
  (``variant="lmms_eval"``: the space rule tests ``"X "`` without a leading space and an
  extra ``"X."`` rule runs before the option-text rule).
- :func:`lmms_eval_mcq_letter` — lmms-eval 0.7.3 ``tasks/_task_utils/mcq_extract.py::
  extract_mcq_answer`` (used by its Video-MME and MLVU ``process_results``).
- :func:`videomme_letter` — Video-MME's ``eval_your_results.py::extract_characters_regex``
  (github thanku-all/parse_answer, linked from the Video-MME README).
- :func:`mlvu_letter` — MLVU ``evaluation/multiple_choice_evaluation/choice_bench.py::
  check_ans`` (the letter it compares with the gold option letter).
- :func:`lenient_letter` — headscope's tolerant parser, rule by rule in its docstring.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

__all__ = [
    "mmmu_letter",
    "lmms_eval_mcq_letter",
    "LMMS_EVAL_PHRASES",
    "videomme_letter",
    "VIDEOMME_PREFIXES",
    "mlvu_letter",
    "lenient_letter",
]


# -- MMMU (official and lmms-eval variants) ------------------------------------------------
def _strip_each(text: str, chars: str) -> str:
    # The references strip one character kind at a time, in this order.
    for ch in chars:
        text = text.strip(ch)
    return text


def mmmu_letter(
    response: str, letters: Sequence[str], options: Sequence[str], variant: str = "official"
) -> str | None:
    """The letter MMMU's parser picks, or None where it falls back to a random letter.

    Rules in order, each tried only when the previous found nothing: ``"(X)"`` anywhere;
    ``" X "`` (official) or ``"X "`` (lmms-eval); ``"X."`` (lmms-eval only); then, for replies
    of more than five words, options whose text occurs anywhere in the reply (substrings
    included: "infrared" contains "red"). Several candidates: the one mentioned last wins
    (for letters the position of ``"(X)"`` or ``" X "``; ties and misses go to the first
    letter).
    """
    if variant not in ("official", "lmms_eval"):
        raise ValueError(f"mmmu_letter variant must be official or lmms_eval, not {variant!r}")
    text = " " + _strip_each(response, ",.!?;:'") + " "
    found = [x for x in letters if f"({x})" in text]
    bracketed = bool(found)
    if not found:
        space = " {} " if variant == "official" else "{} "
        found = [x for x in letters if space.format(x) in text]
    if not found and variant == "lmms_eval":
        found = [x for x in letters if f"{x}." in text]
    by_text = False
    if not found and len(text.split()) > 5:
        low = text.lower()
        found = [x for x, opt in zip(letters, options) if str(opt).lower() in low]
        by_text = True
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    if by_text:
        low = text.lower()
        where = [low.rfind(str(options[list(letters).index(x)]).lower()) for x in found]
    else:
        where = [text.rfind(f"({x})" if bracketed else f" {x} ") for x in found]
    return found[where.index(max(where))]


# -- lmms-eval's shared extractor -------------------------------------------------------------
LMMS_EVAL_PHRASES = (
    "the answer is", "answer is", "the correct answer is", "correct answer is",
    "the best answer is", "best answer is", "the correct option is", "correct option is",
    "the best option is", "best option is", "the choice is", "choice is",
    "the correct choice is", "correct choice is", "i choose", "i select", "i pick",
    "my answer is", "my choice is", "옵션", "정답은", "답은", "답:", "答案是", "答案为", "选",
    "答えは",
)  # fmt: skip
# Format rank of lmms-eval's extractor (higher wins, then the later position).
_RANK = {
    "start": 10,
    "end": 9,
    "phrase": 7,
    "paren": 6,
    "period": 5,
    "colon": 4,
    "close": 3,
    "space": 2,
    "any": 0,
}


def lmms_eval_mcq_letter(response: str, letters: Sequence[str] = "ABCD") -> str:
    """The letter lmms-eval 0.7.3's ``extract_mcq_answer`` returns ("" when none).

    Candidates come from ``(X)``, ``X.``, ``X:``, ``X)``, ``X `` (last position of each),
    answer phrases followed by a letter (first letter after the first phrase hit), a reply
    starting or ending with a standalone letter, and — only when nothing else matched — any
    occurrence of a letter. The highest-ranked format wins, then the later position.
    """
    if not response or not response.strip():
        return ""
    text = " " + _strip_each(response.strip(), ",.!?;:'\"") + " "
    found: list[tuple[int, int, str]] = []  # (rank, position, letter), in discovery order
    for kind, pattern in (
        ("paren", "({})"),
        ("period", "{}."),
        ("colon", "{}:"),
        ("close", "{})"),
        ("space", "{} "),
    ):
        for x in letters:
            if (pos := text.rfind(pattern.format(x))) >= 0:
                found.append((_RANK[kind], pos, x))
    low = text.lower()
    for phrase in LMMS_EVAL_PHRASES:
        hit = low.find(phrase)
        if hit >= 0:
            for x in letters:
                if (pos := text.find(x, hit + len(phrase))) >= 0:
                    found.append((_RANK["phrase"], pos, x))
    core = text.strip()
    for x in letters:
        if core.startswith(x) and (len(core) == 1 or not core[1].isalpha()):
            found.append((_RANK["start"], 0, x))
    for x in letters:
        if core.endswith(x) and (len(core) == 1 or not core[-2].isalpha()):
            found.append((_RANK["end"], len(text) - 1, x))
    if not found:
        found = [(_RANK["any"], text.rfind(x), x) for x in letters if x in text]
    if not found:
        return ""
    best = max(found, key=lambda c: (c[0], c[1]))  # max() keeps the first of equal keys
    return best[2]


# -- Video-MME ----------------------------------------------------------------------------------
# The release's prefix list misses two commas, so two pairs are glued into one string each;
# the glued strings are what it removes (so "The best option is" is never removed).
VIDEOMME_PREFIXES = (
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    "The best option is" + "The correct option is",
    "Best answer:" + "Best option:",
    "Answer:",
    "Option:",
    "The correct answer",
    "The correct option",
)
_ABCD = re.compile("[ABCD]")


def videomme_letter(response: str) -> str:
    """The letter Video-MME's ``extract_characters_regex`` returns ("" = not answered).

    The reply is stripped, the prefixes above are deleted wherever they occur, and the first
    capital A-D anywhere is the answer — also inside words ("Based on …" reads B). No capital
    A-D at all gives "" (the release then leaves the question out of its denominator).
    """
    text = response.strip()
    for prefix in VIDEOMME_PREFIXES:
        text = text.replace(prefix, "")
    match = _ABCD.search(text)
    return match.group(0) if match else ""


# -- MLVU ----------------------------------------------------------------------------------------
def mlvu_letter(response: str) -> str:
    """What MLVU's ``check_ans`` compares with the gold letter.

    With a ")" in the reply: the one character before the first ")" (the prompt ends with
    the primer "Best Option: (", so "B) …" reads B; a reply starting with ")" reads "").
    Without one: the whole reply, unchanged ("B" is B; " B", "b" and "Best option:(B" are not).
    """
    if ")" in response:
        cut = response.index(")")
        return response[cut - 1 : cut] if cut else ""
    return response


# -- lenient -------------------------------------------------------------------------------------
_MARKUP = re.compile(r"[*_`#'\"“”‘’]+")
_PHRASE = re.compile(
    r"(?:answer|option|choice)\s*(?:is|:|：|=)?\s*[\(\[（【]?\s*([A-Za-z])\s*[\)\]）】]?"
    r"(?![A-Za-z0-9])|(?:答案|选项|答)\s*(?:是|为|：|:)?\s*[\(（【]?([A-Z])",
    re.I,
)
_LEAD = re.compile(r"^\s*[\(\[（【]?([A-Za-z])(?:\s*[\)\]）】.:：,、-]|\s*$|[ \t]*\n)")
_BRACKET = re.compile(r"[\(\[（【]([A-Z])[\)\]）】]")
_ALONE = re.compile(r"(?<![A-Za-z0-9'])([A-Z])(?![A-Za-z0-9'])")


def _article(text: str, pos: int) -> bool:
    # "A dog …" / "I think …": a sentence-initial A or I followed by a lower-case word.
    before = text[:pos].rstrip()
    after = text[pos + 1 : pos + 3]
    sentence_start = not before or before[-1] in ".!?:\n"
    return (
        text[pos] in "AI"
        and sentence_start
        and len(after) == 2
        and after[0] == " "
        and (after[1].islower())
    )


def lenient_letter(response: str, letters: Sequence[str], options: Sequence[str]) -> str | None:
    """Headscope's tolerant letter parser; None when nothing is found.

    Rules, first hit wins (markdown ``* _ ` #`` and quotes removed first):

    1. An answer phrase and a letter: "answer/option/choice (is|:) X" (brackets allowed,
       any case: "The correct option is B, because …", "Best option:(B", "answer: **c**"),
       or Chinese "答案是C" / "答案：C" / "选项C" — the last such phrase.
    2. A reply that starts with a letter followed by a separator, a line break or nothing:
       "B", "b", "(B)", "B)", "[B]", "C: Berries", "C. text", "D - text", "B" then a new line,
       "(A) and (C)" (the leading letter wins).
    3. A bracketed capital anywhere: "(X)", "[X]", "（X）" — the last one.
    4. A standalone capital letter (not inside a word; a sentence-initial "A"/"I" followed by
       a lower-case word is an article/pronoun, not a letter) — the last one.
    5. An option's text as whole words (case-insensitive, trailing punctuation of the option
       ignored, so options ending in "." match) — the one mentioned last, longer on ties.

    Letters outside ``letters`` are ignored by every rule.
    """
    valid = {x.upper(): x for x in letters}
    text = _MARKUP.sub("", str(response)).strip()
    hits = []
    for m in _PHRASE.finditer(text):
        letter = m.group(1) or m.group(2)
        # A lower-case letter followed by a word is an article ("the answer is a dog").
        if letter.islower() and re.match(r"\s+\w", text[m.end() :]):
            continue
        if letter.upper() in valid:
            hits.append(letter.upper())
    if hits:
        return valid[hits[-1]]
    lead = _LEAD.match(text)
    if lead and lead.group(1).upper() in valid and not _article(text, lead.start(1)):
        return valid[lead.group(1).upper()]
    brackets = [m.group(1) for m in _BRACKET.finditer(text) if m.group(1) in valid]
    if brackets:
        return valid[brackets[-1]]
    alone = [
        m.group(1)
        for m in _ALONE.finditer(text)
        if m.group(1) in valid and not _article(text, m.start(1))
    ]
    if alone:
        return valid[alone[-1]]
    low = text.lower()
    best: tuple[int, int, str] | None = None
    for x, option in zip(letters, options):
        opt = str(option).strip().rstrip(string.punctuation).strip().lower()
        if not opt:
            continue
        found = [m.start() for m in re.finditer(rf"(?<!\w){re.escape(opt)}(?!\w)", low)]
        if found and (best is None or (found[-1], len(opt)) > best[:2]):
            best = (found[-1], len(opt), x)
    return best[2] if best else None
