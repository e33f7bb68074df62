"""What the ``headscope bench`` commands share: parser, plan, timing, device sync.

Every bench module builds on these public pieces; none imports another bench module's
private names. Light at import: torch and the attention package load inside the functions.

- command line: :func:`bench_parser`, :func:`add_kernel_argument`, :func:`add_json_argument`,
  :func:`print_rows`, :func:`refuse_missing_device`, :func:`refuse_unwritable_file`, and the
  flag types :func:`positive_int`,
  :func:`nonnegative_int`, :func:`fraction`, :func:`length_list` (a bad value is the parser's
  one-line error, exit code 2);
- plans: :func:`kept_heads`, :func:`full_heads`, :func:`hybrid_plan`, :func:`fake_attention`;
- timing: :func:`sync`, :func:`timed`, :func:`interleaved`, :func:`kernel_scope`.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.api.helpformat import HelpFormatter, OneLineParser

__all__ = [
    "KERNEL_CHOICES",
    "add_json_argument",
    "add_kernel_argument",
    "bench_parser",
    "fake_attention",
    "full_heads",
    "hybrid_plan",
    "interleaved",
    "kept_heads",
    "kernel_scope",
    "length_list",
    "nonnegative_int",
    "positive_int",
    "print_rows",
    "fraction",
    "refuse_missing_device",
    "refuse_unwritable_file",
    "sync",
    "timed",
]

KERNEL_CHOICES = ("auto", "chunked", "reference", "flex", "flex_eager")
"""As ``harness.attention.execute.KERNEL_CHOICES`` (kept here so ``--help`` imports no torch)."""


def bench_parser(name: str, description: str) -> argparse.ArgumentParser:
    """The parser of ``headscope bench NAME``; ``description`` (prose) is printed as written."""
    return OneLineParser(
        prog=f"headscope bench {name}",
        description=description,
        formatter_class=HelpFormatter,
    )


def _int(text: str, minimum: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"{what}, got {value}")
    return value


def positive_int(text: str) -> int:
    """Flag type: an integer ≥ 1."""
    return _int(text, 1, "must be ≥ 1")


def nonnegative_int(text: str) -> int:
    """Flag type: an integer ≥ 0."""
    return _int(text, 0, "must be ≥ 0")


def fraction(text: str) -> float:
    """Flag type: a number in [0, 1] (a fraction of heads)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1], got {value}")
    return value


def length_list(text: str) -> tuple[int, ...]:
    """Flag type: comma-separated sequence lengths, each ≥ 1 (e.g. ``8192,16384``)."""
    values = tuple(
        _int(x.strip(), 1, "each length must be ≥ 1") for x in text.split(",") if x.strip()
    )
    if not values:
        raise argparse.ArgumentTypeError("give at least one length, e.g. 8192")
    return values


def add_kernel_argument(parser: argparse.ArgumentParser) -> None:
    """``--kernel``: the window kernel the benches run (:data:`KERNEL_CHOICES`)."""
    parser.add_argument(
        "--kernel",
        default="auto",
        choices=KERNEL_CHOICES,
        help="window kernel (auto: flex on CUDA, chunked on CPU)",
    )


def add_json_argument(parser: argparse.ArgumentParser, kind: str) -> None:
    """``--json``: print the ``headscope.bench_<kind>`` document instead of the table."""
    parser.add_argument(
        "--json",
        action="store_true",
        help=f"print a headscope.bench_{kind} JSON document instead of the table "
        "(what 'headscope leaderboard' reads)",
    )


def print_rows(rows: Sequence[dict[str, Any]], columns: Sequence[str], width: int = 14) -> None:
    """Print ``rows`` as a right-aligned table; ``a.b`` reads ``row["a"]["b"]``."""

    def cell(row: dict[str, Any], column: str) -> Any:
        value: Any = row
        for key in column.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        return value

    print("  ".join(f"{c:>{width}}" for c in columns), flush=True)
    for row in rows:
        print("  ".join(f"{cell(row, c)!s:>{width}}" for c in columns), flush=True)


def refuse_missing_device(parser: argparse.ArgumentParser, device: str) -> None:
    """Exit (one line on stderr, code 2) when this machine lacks ``device``.

    The rule is the one model loading uses (:func:`harness.models.loading.missing_device`):
    ``cuda``/``cuda:i`` without CUDA, or with fewer than ``i + 1`` devices. Light at import.
    """
    from harness.models.loading import missing_device

    problem = missing_device(device)
    if problem is not None:
        parser.exit(2, f"{parser.prog}: error: --device {device}: {problem}; use --device cpu\n")


def refuse_unwritable_file(parser: argparse.ArgumentParser, path: str) -> None:
    """Exit (one line on stderr, code 2) when the file ``path`` cannot be written.

    Checked before any measurement (:func:`harness.api.paths.why_unwritable` on its folder):
    a folder in its place, a parent that is a file, ``/proc``, no permission.
    """
    from harness.api.paths import why_unwritable

    target = Path(path)
    problem = (
        f"--output {path!r} is a directory"
        if target.is_dir()
        else why_unwritable(target.parent, f"--output {path!r}: folder")
    )
    if problem is not None:
        parser.exit(2, f"{parser.prog}: error: {problem}; choose another --output\n")


def kept_heads(keep: float, heads: int) -> int:
    """Heads kept full: ``keep · heads`` rounded up to whole heads (float noise ignored)."""
    return max(0, min(heads, math.ceil(keep * heads - 1e-9)))


def full_heads(heads: int, kept: int) -> set[int]:
    """The ``kept`` heads (of ``heads``) a bench keeps full, spread evenly over the heads.

    Spread over the KV groups, as CoRe heads are: the windowed heads are then not one
    contiguous range (the dispatch gathers them), which is the realistic case.
    """
    return {(i * heads) // kept for i in range(kept)} if kept else set()


def hybrid_plan(layers: int, heads: int, kept: int, window: int, sinks: int) -> Any:
    """The bench's hybrid :class:`~harness.attention.plan.Plan` over ``layers`` layers.

    In every layer the :func:`full_heads` keep full attention and every other head gets a
    causal window of ``window`` keys (plus ``sinks`` attention-sink tokens).
    """
    from harness.attention.plan import LayerPlan, Plan, Window

    w = Window(window, sinks)
    full = full_heads(heads, kept)
    lp = LayerPlan(window={h: w for h in range(heads) if h not in full})
    return Plan({la: lp for la in range(layers)})


def fake_attention(groups: int, layer_plan: Any) -> Any:
    """Just enough of an HF attention module (layer 0, causal) to call the dispatch on."""
    from types import SimpleNamespace

    return SimpleNamespace(
        layer_idx=0, is_causal=True, num_key_value_groups=groups, _headscope_layer_plan=layer_plan
    )


def sync(device: str) -> None:
    """Wait for the device's queued work (CUDA calls return before the work is done)."""
    if device.startswith("cuda"):
        __import__("torch").cuda.synchronize()


def timed(fn: Callable[[], Any], device: str = "cpu") -> tuple[float, float]:
    """(wall ms, process CPU ms) of one call of ``fn``, synchronised on ``device``."""
    sync(device)
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    sync(device)
    return (time.perf_counter() - start) * 1000.0, (time.process_time() - cpu) * 1000.0


def interleaved(variants: Sequence[str], rep: int) -> list[str]:
    """The order of ``variants`` in repetition ``rep``: as given, reversed every other one.

    Neighbours then stay paired and a slow drift of the machine's load hits both sides.
    """
    return list(variants) if rep % 2 == 0 else list(variants)[::-1]


@contextmanager
def kernel_scope(kernel: str) -> Iterator[None]:
    """Run the block with window kernel ``kernel``; the previous one is restored after."""
    from harness.attention.dispatch import set_window_kernel, window_kernel

    previous = window_kernel()
    set_window_kernel(kernel)
    try:
        yield
    finally:
        set_window_kernel(previous)
