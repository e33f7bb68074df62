"""MMLongBench-Doc — question answering over long PDF documents (rendered pages).

Files: task.py (task, scoring modes), answers.py (rule matching), official.py (the release's
eval_score), extractor.py (answer extractors for official scoring), mini.py (mmlongbench_mini).
"""

from tasks.mmlongbench_doc.task import (
    PROMPT_SUFFIX,
    DocSample,
    MMLongBenchDoc,
    match_answer,
    not_answerable,
)

__all__ = [
    "DocSample",
    "MMLongBenchDoc",
    "match_answer",
    "not_answerable",
    "PROMPT_SUFFIX",
]
