"""MLVU: multi-task long video understanding, multiple-choice dev set.

Files: task.py (loading, prompt, scoring modes), mini.py (mlvu_mini).
"""

from tasks.mlvu.task import (
    MC_TYPES,
    MLVU,
    PRIMER,
    MLVUSample,
    macro_average,
    normalise_row,
)

__all__ = [
    "MLVU",
    "MLVUSample",
    "MC_TYPES",
    "normalise_row",
    "macro_average",
    "PRIMER",
]
