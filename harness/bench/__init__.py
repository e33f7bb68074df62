"""Benchmark scripts (``headscope bench ...``): hybrid, ram, adaptive, masks, ttft."""

from __future__ import annotations

import argparse


def refuse_missing_device(parser: argparse.ArgumentParser, device: str) -> None:
    """Exit (one line on stderr, code 2) when this machine lacks ``device``.

    The rule is the one model loading uses (:func:`harness.models.loading.missing_device`):
    ``cuda``/``cuda:i`` without CUDA, or with fewer than ``i + 1`` devices. Light at import.
    """
    from harness.models.loading import missing_device

    problem = missing_device(device)
    if problem is not None:
        parser.exit(2, f"{parser.prog}: error: --device {device}: {problem}; use --device cpu\n")
