"""``headscope bench NAME ...``: runs the named benchmark's ``main(argv)``.

``bench hybrid`` → :func:`harness.bench.hybrid.main`;
``bench masks`` → :func:`harness.bench.mask_cost.main`;
``bench ram`` → :func:`harness.bench.ram_probe.main`;
``bench adaptive`` → :func:`harness.bench.adaptive.main`;
``bench ttft`` → :func:`harness.bench.ttft.main`;
``bench decode`` → :func:`harness.bench.decode.main`.
Every flag after the benchmark's name is passed on unchanged (``headscope bench ram --help``
lists them, under the benchmark's docstring as plain prose). Light at import: argparse only.
"""

from __future__ import annotations

import argparse
import importlib

__all__ = ["BENCHES", "SUMMARY", "add_arguments", "run"]

BENCHES = {
    "adaptive": "harness.bench.adaptive",
    "decode": "harness.bench.decode",
    "hybrid": "harness.bench.hybrid",
    "masks": "harness.bench.mask_cost",
    "ram": "harness.bench.ram_probe",
    "ttft": "harness.bench.ttft",
}

#: What each benchmark measures, for ``headscope --help`` (one entry per benchmark; a test).
SUMMARY = {
    "adaptive": "adaptive routing's cost",
    "decode": "KV memory and decode speed, dense vs streamed KV",
    "hybrid": "prefill speed, dense vs hybrid",
    "masks": "FlexAttention block-mask cost",
    "ram": "RAM probe vs eager attention",
    "ttft": "time to first token of a full VLM",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``bench NAME [flags of that benchmark...]``."""
    parser.add_argument(
        "bench",
        choices=sorted(BENCHES),
        help="which benchmark: " + "; ".join(f"{k}: {v}" for k, v in SUMMARY.items()),
    )
    parser.add_argument("bench_args", nargs=argparse.REMAINDER, help="its flags (see --help)")


def run(args: argparse.Namespace) -> int:
    """Run the chosen benchmark's ``main`` with the remaining arguments."""
    import inspect

    from harness.cli._args import prose

    module = importlib.import_module(BENCHES[args.bench])
    kwargs = {}
    if "description" in inspect.signature(module.main).parameters:  # --help as plain prose
        kwargs["description"] = prose(module.__doc__)
    return int(module.main(list(args.bench_args), **kwargs) or 0)
