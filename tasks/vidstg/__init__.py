"""VidSTG: spatio-temporal grounding of a sentence in a video (declarative or interrogative).

Files: task.py (task, evidence, scoring), data.py (annotation rows → samples, span/box parsing),
mini.py (vidstg_mini).
"""

from tasks.vidstg.task import (
    VidSTG,
    VidSTGSample,
)

__all__ = [
    "VidSTG",
    "VidSTGSample",
]
