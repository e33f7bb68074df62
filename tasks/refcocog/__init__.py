"""RefCOCOg — referring expression comprehension (REC): box the object a sentence describes.

Files: task.py (loading, prompt, scoring modes), official.py (each family's released REC
evaluator), mini.py (refcocog_mini).
"""

from tasks.refcocog.task import (
    PROMPT,
    THRESHOLDS,
    RefCOCOg,
    RefSample,
    iou_scores,
    lmms_eval_scores,
)

__all__ = [
    "RefSample",
    "RefCOCOg",
    "PROMPT",
    "iou_scores",
    "lmms_eval_scores",
    "THRESHOLDS",
]
