"""Progress of long loops: live bars on a terminal, one line per finished loop elsewhere.

On an interactive terminal (the stream, stderr by default, is a TTY) a loop shows a tqdm bar
that disappears when it ends, as before. Anywhere else — CI, a cluster job, ``> log 2>&1`` —
carriage-return bar updates only bloat the log, so nothing is drawn while the loop runs and
one line is written when it ends (the evaluator's loop is one (task, intervention) cell)::

    [headscope] pope_mini × none: 64/64 samples (64 new) in 2.1 s, 30.5 samples/s

How much is shown follows the level of the ``headscope`` logger, which ``--verbosity``
sets (lmms-eval's levels): ``DEBUG`` / ``INFO`` show bars or lines, ``WARNING`` and above
show neither. A logger left unset counts as ``INFO``. Light at import: tqdm loads on first
use. The run engine and the probes both report through :class:`Progress`.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

__all__ = ["LOGGER", "Progress", "interactive", "shown", "track", "quiet_library_bars"]

#: Name of the logger whose level (``--verbosity``) decides what progress is shown.
LOGGER = "headscope"


def shown() -> bool:
    """True when progress is shown: the ``headscope`` logger's level is INFO or lower (or unset)."""
    level = logging.getLogger(LOGGER).level
    return level == logging.NOTSET or level <= logging.INFO


def interactive(stream: TextIO | None = None) -> bool:
    """True when ``stream`` (default stderr) is a terminal."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def quiet_library_bars() -> bool:
    """Turn Hugging Face's own bars (weight loading, downloads) off unless bars are drawn.

    Call once before any model is loaded (``headscope run`` does, after ``--verbosity``).

    Returns:
        True when they were turned off.
    """
    if shown() and interactive():
        return False
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # read when huggingface_hub is imported
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    return True


class Progress:
    """Progress of one loop of ``total`` units, ``initial`` of which were done before.

    Use as a context manager (or call :meth:`close`) and call :meth:`update` per unit.

    Args:
        total: Units of the whole loop.
        desc: What the loop is (``"pope_mini × none"``).
        initial: Units already done when this process started (a resumed run).
        unit: Name of one unit (``"sample"``).
        stream: Where the bar or the line goes (default: stderr at construction time).
        bar: Draw the bar on a terminal (False: another progress draws one for this loop).
        line: Write the line when not on a terminal (False: other progresses report it).
    """

    def __init__(
        self,
        total: int,
        desc: str,
        *,
        initial: int = 0,
        unit: str = "sample",
        stream: TextIO | None = None,
        bar: bool = True,
        line: bool = True,
    ) -> None:
        self.total, self.desc, self.initial, self.unit = total, desc, initial, unit
        self.n = initial
        self.stream = sys.stderr if stream is None else stream
        self._t0 = time.perf_counter()
        self._closed = False
        self._bar: Any = None
        on = shown()
        tty = interactive(self.stream)
        self._line = on and line and not tty
        if on and bar and tty:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, initial=initial, desc=desc, leave=False, file=self.stream)

    def update(self, n: int = 1) -> None:
        """Count ``n`` more finished units."""
        self.n += n
        if self._bar is not None:
            self._bar.update(n)

    def summary(self) -> str:
        """The one-line report: done / total, new in this run, elapsed time, rate."""
        elapsed = time.perf_counter() - self._t0
        new = self.n - self.initial
        rate = f"{new / elapsed:.1f} {self.unit}s/s" if new and elapsed > 0 else "nothing new"
        return (
            f"[headscope] {self.desc}: {self.n}/{self.total} {self.unit}s ({new} new) "
            f"in {elapsed:.1f} s, {rate}"
        )

    def close(self) -> None:
        """End the loop: remove the bar, or write the summary line when not on a terminal."""
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
        elif self._line:
            print(self.summary(), file=self.stream, flush=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def track(
    items: Iterable[Any],
    desc: str,
    *,
    total: int | None = None,
    unit: str = "sample",
    enabled: bool = True,
) -> Iterator[Any]:
    """Yield from ``items`` while reporting a :class:`Progress` (silent when not ``enabled``).

    Args:
        items: The loop's items (``len`` is taken unless ``total`` is given).
        desc: What the loop is.
        total: Number of items, when ``items`` has no ``len``.
        unit: Name of one item.
        enabled: False turns the report off (e.g. ``--no-progress``).
    """
    if not enabled:
        yield from items
        return
    size = len(items) if total is None else total  # type: ignore[arg-type]
    with Progress(size, desc, unit=unit) as progress:
        for item in items:
            yield item
            progress.update()
