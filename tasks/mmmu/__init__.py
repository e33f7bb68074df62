"""MMMU — massive multi-discipline multimodal understanding (college-level exam questions).

Files: task.py (loading, prompt, scoring modes), open_answers.py (open-question rules), mini.py
(mmmu_mini).
"""

from tasks.mmmu.task import (
    LETTERS,
    MC_SUFFIX,
    MMMU,
    OPEN_SUFFIX,
    MMMUSample,
    open_match,
)

__all__ = [
    "MMMUSample",
    "MMMU",
    "MC_SUFFIX",
    "OPEN_SUFFIX",
    "LETTERS",
    "open_match",
]
