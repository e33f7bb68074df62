"""Benchmark scripts (``headscope bench ...``): hybrid, ram, adaptive, masks, ttft."""

from __future__ import annotations

import argparse


def bench_parser(name: str, description: str) -> argparse.ArgumentParser:
    """The parser of ``headscope bench NAME``; ``description`` (prose) is printed as written."""
    return argparse.ArgumentParser(
        prog=f"headscope bench {name}",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def refuse_missing_device(parser: argparse.ArgumentParser, device: str) -> None:
    """Exit (one line on stderr, code 2) when this machine lacks ``device``.

    The rule is the one model loading uses (:func:`harness.models.loading.missing_device`):
    ``cuda``/``cuda:i`` without CUDA, or with fewer than ``i + 1`` devices. Light at import.
    """
    from harness.models.loading import missing_device

    problem = missing_device(device)
    if problem is not None:
        parser.exit(2, f"{parser.prog}: error: --device {device}: {problem}; use --device cpu\n")
