"""Ratios that cannot drift: the variants compared run interleaved, each in a fresh process.

A shared machine's load moves wall times by more than the effects measured here (bench_grid
once timed cell-major and then sample-major in one process and saw 1.5× drift between the
halves). So every ratio bench runs its variants A B A B ... (``repeats`` rounds, each
variant in its own fresh process, in the same order each round), pairs the runs of one round,
and reports the median of the per-round ratios with their spread (min, max), beside each
variant's median.

A worker is any command that prints one JSON object on its last stdout line; the bench reads
the metrics it names from it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["run_interleaved", "paired_ratio", "summary_line", "python_worker"]


def python_worker(script: str, *args: str) -> list[str]:
    """The command line running ``script`` with ``args`` under this Python."""
    return [sys.executable, script, *args]


def run_interleaved(
    variants: Mapping[str, Sequence[str]],
    repeats: int = 3,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    echo: bool = True,
) -> dict[str, list[dict[str, Any]]]:
    """Run each variant's command once per round, rounds after one another.

    Args:
        variants: Name → command (argv); run in this order in every round.
        repeats: Rounds (at least 3 for a reported ratio).
        env: Extra environment variables for the workers.
        timeout: Seconds per worker run (None: no limit).
        echo: Print one line per finished run (stderr).

    Returns:
        Name → the JSON objects its runs printed, in round order.

    Raises:
        RuntimeError: A worker failed or printed no JSON (its stderr tail is in the message).
    """
    full_env = {**os.environ, **(env or {})}
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for round_ in range(repeats):
        for name, cmd in variants.items():
            proc = subprocess.run(
                list(cmd), env=full_env, capture_output=True, text=True, timeout=timeout
            )
            lines = proc.stdout.strip().splitlines()
            if proc.returncode != 0 or not lines:
                raise RuntimeError(
                    f"{name} (round {round_ + 1}) failed with exit {proc.returncode}: "
                    f"{proc.stderr[-2000:]}"
                )
            result = json.loads(lines[-1])
            out[name].append(result)
            if echo:
                print(f"  round {round_ + 1} {name}: {lines[-1]}", file=sys.stderr, flush=True)
    return out


def paired_ratio(
    runs: Mapping[str, Sequence[Mapping[str, Any]]], num: str, den: str, key: str
) -> dict[str, Any]:
    """Median and spread of ``runs[num][i][key] / runs[den][i][key]`` over rounds i.

    Also each variant's own median of ``key`` (a wall time moves with the load; the ratio of
    one round's neighbouring runs moves much less).
    """
    a = [float(r[key]) for r in runs[num]]
    b = [float(r[key]) for r in runs[den]]
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return {
        "ratio": round(statistics.median(ratios), 3),
        "ratio_min": round(min(ratios), 3),
        "ratio_max": round(max(ratios), 3),
        "ratios": [round(r, 3) for r in ratios],
        f"{num}_median": round(statistics.median(a), 4),
        f"{den}_median": round(statistics.median(b), 4),
        "repeats": len(ratios),
    }


def summary_line(label: str, r: Mapping[str, Any], num: str, den: str, unit: str = "s") -> str:
    """One printed line: ``label: num / den = ratio× (min–max, n rounds); medians``."""
    return (
        f"{label}: {num} / {den} = {r['ratio']:.2f}x (spread {r['ratio_min']:.2f}-"
        f"{r['ratio_max']:.2f}, {r['repeats']} interleaved rounds, fresh processes); medians "
        f"{num} {r[f'{num}_median']} {unit}, {den} {r[f'{den}_median']} {unit}"
    )
