"""POPE — Polling-based Object Probing Evaluation (object hallucination, yes/no).

Files: task.py (loading, prompt, scoring modes), mini.py (the toy's pope_mini).
"""

from tasks.pope.task import (
    PROMPT_SUFFIX,
    SUBSETS,
    Pope,
    PopeSample,
    official_answer,
)

__all__ = [
    "PopeSample",
    "Pope",
    "SUBSETS",
    "PROMPT_SUFFIX",
    "official_answer",
]
