"""Scoring modes shared by every task: ``official``, ``lmms_eval`` and ``lenient``.

Every task takes ``scoring`` (recorded in its settings, so in the results' task settings):

- ``official`` (the default): reproduces the benchmark's released evaluation code, quirks
  included (cited in each task's docstring, held to equality by the data-driven cases in
  ``tests/data/scoring/modes_*.json``).
- ``lmms_eval``: reproduces lmms-eval 0.7.3's ``process_results`` and aggregation, for the
  six tasks it has (POPE, MMMU, MLVU, Video-MME, RefCOCOg, MMLongBench-Doc); where lmms-eval
  is installed the tests call its own functions on every case and assert equality.
- ``lenient``: headscope's tolerant parser, documented rule by rule where it is defined.

Leaderboards refuse to merge numbers scored under different modes
(:func:`leaderboards.settings.check_scoring`); ``headscope rescore DIR --scoring MODE``
re-scores a finished run's logged replies under another mode.
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Sequence
from typing import Literal

from harness.api.errors import UsageError

__all__ = ["SCORING_MODES", "ScoringMode", "check_scoring", "seeded_letter", "FALLBACK_RULE"]

ScoringMode = Literal["official", "lmms_eval", "lenient"]
SCORING_MODES: tuple[str, ...] = ("official", "lmms_eval", "lenient")
#: How a seeded fallback letter is drawn (recorded in settings where a task uses one).
FALLBACK_RULE = "random.Random(f'{seed}:{doc_id}').choice(letters)"


def check_scoring(task: str, mode: str, modes: Sequence[str] = SCORING_MODES) -> str:
    """Return ``mode`` when ``task`` supports it, else raise a UsageError naming the choices.

    Raises:
        UsageError: an unknown mode (with a did-you-mean) or one this task does not have
            (``lmms_eval`` for a benchmark lmms-eval 0.7.3 does not ship).
    """
    if mode in modes:
        return mode
    if mode in SCORING_MODES:
        why = "lmms-eval 0.7.3 has no such task" if mode == "lmms_eval" else "not implemented"
        raise UsageError(
            f"{task}: scoring {mode!r} is not available for this task ({why}); it has {list(modes)}"
        )
    close = difflib.get_close_matches(str(mode), SCORING_MODES, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UsageError(f"{task}: unknown scoring {mode!r}, choose one of {list(modes)}{hint}")


def seeded_letter(letters: Sequence[str], seed: int, doc_id: str) -> str:
    """The fallback letter of one document: deterministic for (seed, doc), order-free.

    MMMU's released parser draws ``random.choice`` from a generator seeded once (42) at
    import, so its pick depends on the order documents are scored; here each document draws
    from its own generator (see :data:`FALLBACK_RULE`).
    """
    return random.Random(f"{seed}:{doc_id}").choice(list(letters))
