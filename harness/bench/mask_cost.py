"""``headscope bench masks``: block-mask cost of the flex hybrid over samples of varying length.

A run of a real task prefills samples of many lengths. This bench builds a random decoder
with a real model's layer geometry (as ``bench hybrid``), draws ``--samples`` lengths
uniformly in ``[--min-length, --max-length]`` (seeded), and prefills each once under the
hybrid plan, after one untimed warm-up sample (kernel and builder compilation) at the largest
length. It reports the total hybrid prefill time, the time spent building block masks inside
it (:func:`harness.attention.flex.mask_cache_info`, CUDA-synchronised) and their ratio
(target on a GPU: ≤ 5%), the kernels that ran, and how many type masks were built (one per
length bucket and head type: never one per sample).
"""

from __future__ import annotations

import json
import time
from typing import Any

from harness.api.helpformat import add_threads_argument
from harness.api.threads import apply_threads
from harness.bench.kit import (
    add_json_argument,
    add_kernel_argument,
    bench_parser,
    fraction,
    hybrid_plan,
    kept_heads,
    kernel_scope,
    positive_int,
    print_rows,
    refuse_missing_device,
    sync,
)
from harness.schema.bench import bench_document

__all__ = ["run_mask_cost", "main"]


def run_mask_cost(
    *,
    geometry: str = "default",
    layers: int = 2,
    samples: int = 20,
    min_length: int = 4096,
    max_length: int = 16384,
    keep: float = 0.05,
    window: int = 1024,
    kernel: str = "auto",
    dtype: str = "float32",
    device: str = "cpu",
    seed: int = 0,
) -> dict[str, Any]:
    """Prefill ``samples`` random-length inputs under the hybrid plan; one result row.

    Returns:
        ``{"samples", "lengths", "hybrid_ms", "mask_build_ms", "mask_share",
        "warmup_ms", "type_builds", "layer_builds", "window_kernels", ...settings}``.
    """
    import numpy as np
    import torch

    from harness.attention import flex
    from harness.attention.dispatch import plan_scope, use_dispatch, window_kernels_used
    from harness.bench.decoders import ALIASES, GEOMETRIES, build_random_decoder

    name = ALIASES.get(geometry, geometry)
    spec = GEOMETRIES[name]
    geo = spec["geometry"]
    kept = kept_heads(keep, geo.num_heads)
    model = build_random_decoder(spec["arch"], geo, layers, getattr(torch, dtype), seed)
    model = use_dispatch(model.to(device))
    plan = hybrid_plan(layers, geo.num_heads, kept, window, 0)
    rng = np.random.default_rng(seed)
    lengths = [int(x) for x in rng.integers(min_length, max_length + 1, size=samples)]
    gen = torch.Generator().manual_seed(seed)

    def prefill(n: int) -> float:
        ids = torch.randint(0, 1024, (1, n), generator=gen).to(device)
        sync(device)
        begin = time.perf_counter()
        with torch.no_grad(), plan_scope(model, plan):
            model(input_ids=ids, use_cache=False)
        sync(device)
        return (time.perf_counter() - begin) * 1000.0

    with kernel_scope(kernel):
        warmup_ms = prefill(max_length)  # compiles; its masks stay cached like any sample's
        flex.clear_mask_cache()
        window_kernels_used(reset=True)
        total = sum(prefill(n) for n in lengths)
        info = flex.mask_cache_info()
    return {
        "samples": samples,
        "lengths": lengths,
        "hybrid_ms": round(total, 1),
        "mask_build_ms": round(float(info["build_ms"]), 1),
        "mask_share": round(float(info["build_ms"]) / total, 4),
        "warmup_ms": round(warmup_ms, 1),
        "type_builds": info["type_builds"],
        "layer_builds": info["layer_builds"],
        "window_kernels": window_kernels_used(reset=True),
        "geometry": name,
        "layers": layers,
        "keep": keep,
        "heads_kept_per_layer": kept,
        "window": window,
        "window_kernel": kernel,
        "dtype": dtype,
        "device": device,
        "seed": seed,
        "threads": torch.get_num_threads(),
    }


def main(argv: list[str] | None = None, description: str | None = None) -> int:
    """CLI entry: ``headscope bench masks [options]``; a table, or ``--json``'s document.

    ``description``: the ``--help`` text (default: this module's docstring).
    """
    from harness.bench.decoders import GEOMETRIES

    parser = bench_parser("masks", description or __doc__)
    parser.add_argument(
        "--geometry",
        default="default",
        choices=sorted(GEOMETRIES),
        help="decoder layer geometry (as bench hybrid)",
    )
    parser.add_argument("--layers", type=positive_int, default=2, help="decoder layers built")
    parser.add_argument(
        "--samples", type=int, default=20, help="prefills timed (one per drawn length)"
    )
    parser.add_argument("--min-length", type=int, default=4096, help="shortest sample (tokens)")
    parser.add_argument(
        "--max-length",
        type=int,
        default=16384,
        help="longest sample (tokens; also the warm-up length)",
    )
    parser.add_argument(
        "--keep", type=fraction, default=0.05, help="fraction of heads kept full per layer"
    )
    parser.add_argument(
        "--window", type=positive_int, default=1024, help="window W of the other heads"
    )
    add_kernel_argument(parser)
    parser.add_argument(
        "--dtype",
        choices=("float32", "bfloat16"),
        default="float32",
        help="weights and activations",
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:i]")
    parser.add_argument("--seed", type=int, default=0, help="weights, inputs and lengths seed")
    add_threads_argument(parser)
    add_json_argument(parser, "masks")
    args = parser.parse_args(argv)
    refuse_missing_device(parser, args.device)
    apply_threads(args.threads)
    if not 1 <= args.min_length <= args.max_length or args.samples < 1:
        parser.error("need 1 ≤ --min-length ≤ --max-length and --samples ≥ 1")
    row = run_mask_cost(
        geometry=args.geometry, layers=args.layers, samples=args.samples,
        min_length=args.min_length, max_length=args.max_length, keep=args.keep,
        window=args.window, kernel=args.kernel, dtype=args.dtype, device=args.device,
        seed=args.seed,
    )  # fmt: skip
    if args.json:
        print(json.dumps(bench_document("masks", [row])))
    else:
        cols = ("samples", "hybrid_ms", "mask_build_ms", "mask_share", "warmup_ms",
                "type_builds", "layer_builds")  # fmt: skip
        print_rows([row], cols)
    return 0
