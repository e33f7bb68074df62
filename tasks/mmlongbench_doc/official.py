"""MMLongBench-Doc answer scoring as released, and as lmms-eval 0.7.3 scores it (pure stdlib).

- :func:`official_score` — mayubo2333/MMLongBench-Doc ``eval/eval_score.py::eval_score``
  applied to the *extracted* answer (the release's ``run_lvlm.py`` turns any exception into
  a score of 0, as here). Per format: Int ``int(gt) == int(float(pred))``; Float equal
  within 1% or after rounding to the shorter precision (≥ 2 decimals), also against gt×100
  and gt/100; Str/None cleaned (lower case; "(…)" groups, surrounding quotes, a leading "$"
  and a trailing "%" removed), exact for URLs, pages, "12-34"-like numbers, times, ISO
  dates and e-mails, else ANLS (0 at or below 0.5); List (literals parsed) sorted and
  compared all-at-once for numbers / exact kinds, else the minimum ANLS.
  Differences: list literals are read with ``ast.literal_eval`` where the release calls
  ``eval`` on the reply; the release's "mile"/"million" suffix lines change nothing there
  and nothing here.
- :func:`official_f1` — ``eval_acc_and_f1``: recall over gold answers other than "Not
  answerable", precision over *extracted* answers other than "Not answerable" (exact
  strings); 0 where the release divides by zero.
- :func:`parse_extraction` — the extractor's reply "Extracted answer: … Answer format: …"
  → the answer ("Failed to extract" when it has no such line, scored 0).
- :func:`lmms_eval_score` / :func:`lmms_eval_f1` — lmms-eval 0.7.3
  ``tasks/mmlongbench_doc/utils.py`` (``_score_answer``, ``mmlongbench_doc_aggregate_f1``) on
  the raw reply: first numbers for Int/Float, NA_CLEAN cleaned for None.

Written from reading that code; ``tests/data/scoring/modes_mmlongbench.json`` holds both to
equality case by case.
"""

from __future__ import annotations

import ast
import hashlib
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.api.errors import UsageError

__all__ = [
    "official_score",
    "official_f1",
    "parse_extraction",
    "FAILED",
    "lmms_eval_score",
    "lmms_eval_f1",
    "lm_clean",
    "NA_CLEAN",
]

FAILED = "Failed to extract"
_EXACT = (
    re.compile(r"\b\d+(-\d+|\s\d+)?\b"),  # phone-like numbers, "12-34"
    re.compile(r"\b\d{4}[-\s]\d{2}[-\s]\d{2}\b"),  # YYYY-MM-DD
    re.compile(r"\b\d{4}[-\s]\d{2}\b"),  # YYYY-MM
    re.compile(r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}"),  # e-mail
)


def _edit_distance(a: str, b: str) -> int:
    if len(a) > len(b):
        a, b = b, a
    row = list(range(len(a) + 1))
    for j, cb in enumerate(b, 1):
        new = [j]
        for i, ca in enumerate(a, 1):
            new.append(row[i - 1] if ca == cb else 1 + min(row[i - 1], row[i], new[-1]))
        row = new
    return row[-1]


def _clean(value: Any) -> str:
    text = str(value).lower().strip()
    text = re.sub(r"\s*\([^)]*\)", "", text).strip()
    text = re.sub(r"^['\"]|['\"]$", "", text).strip()
    return text.strip().lstrip("$").strip().rstrip("%").strip()


def _exact_common(text: str) -> bool:
    if text.startswith("page") or "a.m." in text or "p.m." in text:
        return True
    return any(p.fullmatch(text) for p in _EXACT)


def _exact_kind(text: str) -> bool:
    # The release: "https://", a ".py" or "ipynb" ending, and the common kinds.
    return "https://" in text or text.endswith((".py", "ipynb")) or _exact_common(text)


def _anls(gold: str, pred: str) -> float:
    longest = max(len(gold.upper()), len(pred.upper()))
    value = 1.0 - (_edit_distance(gold, pred) / longest if longest else 0.0)
    return 0.0 if value <= 0.5 else value


def _digits_after_point(value: float) -> int:
    text = str(value)
    return len(text.split(".")[-1]) if "." in text else 3


def _float_equal(reference: Any, prediction: Any) -> bool:
    reference = float(str(reference).strip().rstrip("%").strip())
    try:
        prediction = float(str(prediction).strip().rstrip("%").strip())
    except ValueError:
        return False
    for item in (reference / 100, reference, reference * 100):
        if math.isclose(item, prediction, rel_tol=0.01):
            return True
        digits = max(min(_digits_after_point(prediction), _digits_after_point(item)), 2)
        if round(prediction, digits) == round(item, digits):
            return True
    return False


def _literal_list(value: Any) -> list[Any]:
    if isinstance(value, str) and value.startswith("["):
        value = ast.literal_eval(value)
    return value if isinstance(value, list) else [value]


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _official(gold: str, pred: str, answer_format: str) -> float:
    if answer_format == "Int":
        try:
            return float(int(gold) == int(float(pred)))
        except (ValueError, OverflowError):
            return float(gold == "")
    if answer_format == "Float":
        try:
            g = float(_clean(gold))
        except ValueError:
            return float(_float_equal(gold, ""))
        try:
            p: Any = float(_clean(pred))
        except ValueError:
            p = ""
        return float(_float_equal(g, p))
    if answer_format in ("Str", "None"):
        g, p = _clean(gold), _clean(pred)
        return float(g == p) if _exact_kind(g) else _anls(g, p)
    golds, preds = _literal_list(gold), _literal_list(pred)
    if len(golds) != len(preds):
        return 0.0
    golds = sorted(_clean(x) for x in golds)
    preds = sorted(_clean(x) for x in preds)
    if _is_float(golds[0]) or _exact_kind(golds[0]):
        return float("-".join(golds) == "-".join(preds))
    return min(_anls(g, p) for g, p in zip(golds, preds))


def official_score(gold: str, pred: str, answer_format: str) -> float:
    """``eval_score(gold, pred, answer_format)`` of the release; any error scores 0."""
    if pred == FAILED:
        return 0.0
    try:
        return _official(gold, pred, answer_format)
    except Exception:  # noqa: BLE001 - the release's run loop scores any exception 0
        return 0.0


def official_f1(rows: Sequence[tuple[float, str, str]]) -> float:
    """``eval_acc_and_f1``'s F1 of ``(score, gold answer, extracted answer)`` rows."""
    answerable = [s for s, gold, _ in rows if gold != "Not answerable"]
    answered = [1 for _, _, pred in rows if pred != "Not answerable"]
    if not answerable or not answered:
        return 0.0
    recall, precision = sum(answerable) / len(answerable), sum(answerable) / len(answered)
    return 2 * recall * precision / (recall + precision) if recall + precision > 0 else 0.0


def read_extraction_prompt(prompt_file: str | None, extractor: str) -> tuple[str, str]:
    """(text, SHA-256) of the release's ``eval/prompt_for_answer_extraction.md``.

    Raises:
        UsageError: naming ``extractor`` when the file is not given or not there.
    """
    path = Path(prompt_file or "")
    if not prompt_file or not path.is_file():
        raise UsageError(
            f"extractor {extractor!r} needs extractor_prompt = the release's "
            f"eval/prompt_for_answer_extraction.md (not found: {prompt_file!r})"
        )
    raw = path.read_bytes()
    return raw.decode("utf-8"), hashlib.sha256(raw).hexdigest()


def extraction_messages(prompt: str, question: str, reply: str) -> list[dict[str, str]]:
    """The release's request for one reply (``eval/extract_answer.py``).

    The prompt is the user turn, then "Question:… Analysis:…" an assistant turn.
    """
    return [
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": f"\n\nQuestion:{question}\nAnalysis:{reply}\n"},
    ]


def parse_extraction(response: str) -> str:
    """The answer of an extractor reply ("Extracted answer: X … Answer format: Y")."""
    head = response.split("Answer format:")[0]
    if "Extracted answer:" not in head:
        return FAILED
    return head.split("Extracted answer:")[1].strip()


# -- lmms-eval 0.7.3 ---------------------------------------------------------------------------
_SUFFIXES = (" miles", " mile", " million")
_FIRST_NUMBER = re.compile(r"[-+]?\d*\.?\d+")


NA_CLEAN = "not answerable"


def lm_clean(value: Any) -> str:
    """lmms-eval's ``_clean_string``."""
    text = str(value or "").lower().strip()
    text = re.sub(r"\s*\([^)]*\)", "", text).strip()
    text = re.sub(r"^['\"]|['\"]$", "", text).strip()
    text = text.lstrip("$").strip().rstrip("%").strip()
    for suffix in _SUFFIXES:
        if text.endswith(suffix):
            text = text[: -len(suffix)].strip()
    return " ".join(text.split())


def _lm_exact(text: str) -> bool:
    # lmms-eval: "http(s)://", a ".py" or ".ipynb" ending, and the common kinds.
    web = "https://" in text or "http://" in text
    return web or text.endswith((".py", ".ipynb")) or _exact_common(text)


def _lm_anls(gold: str, pred: str) -> float:
    if not gold and not pred:
        return 1.0
    if not gold or not pred:
        return 0.0
    value = 1.0 - _edit_distance(gold, pred) / max(len(gold), len(pred))
    return 0.0 if value <= 0.5 else value


def _first_number(value: Any) -> float | None:
    match = _FIRST_NUMBER.search(str(value or "").replace(",", ""))
    return float(match.group(0)) if match else None


def _lm_list(value: Any) -> list[str]:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (SyntaxError, ValueError):
            pass
    if isinstance(value, list):
        return [str(x) for x in value]
    return [] if value is None else [str(value)]


def lmms_eval_score(gold: str, reply: str, answer_format: str) -> float:
    """lmms-eval 0.7.3's ``_score_answer(gold, reply.strip(), answer_format)``."""
    fmt = {"integer": "int", "string": "str"}.get(str(answer_format or "Str").strip().lower())
    fmt = fmt or str(answer_format or "Str").strip().lower()
    fmt = fmt if fmt in ("int", "float", "str", "list", "none") else "str"
    pred = str(reply).strip()
    if fmt in ("int", "float"):
        g, p = _first_number(gold), _first_number(pred)
        if g is None or p is None:
            return 0.0
        if fmt == "int":
            return float(int(g) == int(p))
        for item in (g / 100.0, g, g * 100.0):
            if math.isclose(item, p, rel_tol=0.01):
                return 1.0
            digits = max(min(_digits_after_point(p), _digits_after_point(item)), 2)
            if round(p, digits) == round(item, digits):
                return 1.0
        return 0.0
    if fmt == "list":
        golds = sorted(lm_clean(x) for x in _lm_list(gold))
        preds = sorted(lm_clean(x) for x in _lm_list(pred))
        if len(golds) != len(preds):
            return 0.0
        if not golds:
            return 1.0
        if _first_number(golds[0]) is not None or _lm_exact(golds[0]):
            return float(golds == preds)
        return min(_lm_anls(g, p) for g, p in zip(golds, preds))
    if fmt == "none":
        return float(lm_clean(pred) == NA_CLEAN)
    g, p = lm_clean(gold), lm_clean(pred)
    return float(g == p) if _lm_exact(g) else _lm_anls(g, p)


def lmms_eval_f1(rows: Sequence[tuple[float, str, str]]) -> float:
    """``mmlongbench_doc_aggregate_f1`` of ``(score, gold answer, raw reply)`` rows."""
    gold_pos = [s for s, gold, _ in rows if lm_clean(gold) != NA_CLEAN]
    pred_pos = [s for s, _, reply in rows if lm_clean(str(reply).strip()) != NA_CLEAN]
    recall = sum(gold_pos) / len(gold_pos) if gold_pos else 0.0
    precision = sum(pred_pos) / len(pred_pos) if pred_pos else 0.0
    return 2 * recall * precision / (recall + precision) if recall + precision else 0.0
