"""Video-MME: multiple-choice questions on short, medium and long videos.

Files: task.py (loading, prompt, scoring modes), mini.py (videomme_mini).
"""

from tasks.videomme.task import (
    DURATIONS,
    PROMPT_HEAD,
    VideoMME,
    VideoMMESample,
    normalise_row,
)

__all__ = [
    "VideoMME",
    "VideoMMESample",
    "DURATIONS",
    "normalise_row",
    "PROMPT_HEAD",
]
