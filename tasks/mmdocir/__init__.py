"""MMDocIR — page- and layout-level evidence retrieval in long documents, asked generatively.

Files: task.py (task, scoring modes), data.py (annotation rows → samples), official.py (the
release's page/layout recall), mini.py (mmdocir_mini).
"""

from tasks.mmdocir.task import (
    DocIRSample,
    MMDocIR,
    parse_pages,
    parse_regions,
    recall_at,
)

__all__ = [
    "DocIRSample",
    "MMDocIR",
    "parse_pages",
    "parse_regions",
    "recall_at",
]
