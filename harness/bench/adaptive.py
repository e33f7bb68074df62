"""``headscope bench adaptive``: cost of adaptive routing's online estimate vs the prefill it saves.

One decoder layer's attention function (``--geometry``'s shapes, batch 1, random q/k/v laid
out as HF passes them, no padding) at each ``--lengths`` value, timed in one run with the
variants interleaved in every repetition:

- ``estimate``: the routing estimate and choice alone (logits of the last ``--rows`` query
  rows against every key, softmax, visual mass, top-``budget``);
- ``hybrid``: static hybrid attention, ``ceil(keep · H)`` heads full (spread over the KV
  groups, as ``bench hybrid``), the rest windowed;
- ``hybrid_same``: static hybrid keeping the very heads adaptive routing picks for this
  input (so ``adaptive − hybrid_same`` is the routing's own cost, apart from which heads);
- ``adaptive``: the routed layer (estimate + choice + the same kernels);
- ``dense``: every head full (the empty plan = sdpa); ``--dense-repeats 0`` skips it (slow:
  quadratic).

Each row reports medians and the ratios that judge the routing: ``estimate / hybrid`` (target
≤ 10 % at 32K on CPU), ``(adaptive − hybrid) / hybrid``, ``(adaptive − hybrid_same) /
hybrid_same`` and ``estimate / (dense − hybrid)``
(the estimate's cost against the prefill time it saves). Attention alone is the strict
denominator: a whole-layer prefill adds the projections and the MLP to ``hybrid``.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from harness.api.threads import apply_threads
from harness.bench.kit import (
    bench_parser,
    fake_attention,
    fraction,
    full_heads,
    interleaved,
    kept_heads,
    length_list,
    nonnegative_int,
    positive_int,
    timed,
)
from harness.schema.bench import bench_document

__all__ = ["run_bench", "main"]


def _runners(route: Any, static: tuple, groups: int, qkv: tuple, dense: bool = False) -> dict:
    """The timed callables (no loop variables captured)."""
    from harness.attention.dispatch import headscope_attention
    from harness.attention.plan import LayerPlan
    from harness.attention.route import select_windowed

    q, k, v = qkv
    if dense:
        return {"dense": lambda: headscope_attention(fake_attention(groups, None), q, k, v, None)}
    scale = q.shape[-1] ** -0.5
    routed = fake_attention(groups, LayerPlan(route=route))
    return {
        "estimate": lambda: select_windowed(route, 0, q, k, None, scale),
        "hybrid": lambda: headscope_attention(fake_attention(groups, static[0]), q, k, v, None),
        "hybrid_same": lambda: headscope_attention(
            fake_attention(groups, static[1]), q, k, v, None
        ),
        "adaptive": lambda: headscope_attention(routed, q, k, v, None),
    }


def run_bench(
    *,
    geometry: str = "default",
    lengths: tuple[int, ...] = (32768,),
    keep: float = 0.1,
    window: int = 512,
    rows: int = 8,
    visual_fraction: float = 0.5,
    repeats: int = 3,
    dense_repeats: int = 1,
    threads: int | None = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Time estimate / hybrid / adaptive (/ dense) per length; one row per length.

    Args:
        geometry: A geometry name of ``headscope bench hybrid``.
        lengths: Prefill lengths.
        keep: Fraction of heads kept full (per layer, rounded up).
        window: Window W of the other heads.
        rows: Estimate query rows.
        visual_fraction: Share of the sequence that is visual tokens (one block after the
            first 64 tokens, as an image after a system prompt).
        repeats: Timed repetitions of estimate / hybrid / hybrid_same / adaptive.
        dense_repeats: Timed dense runs (0: skip dense).
        threads: torch CPU threads (default: torch's choice).
        seed: Inputs seed.
    """
    import torch

    from harness.attention.plan import LayerPlan, Window
    from harness.attention.route import Route, select_windowed
    from harness.bench.decoders import ALIASES, GEOMETRIES

    apply_threads(threads or None)  # above the cores: capped, with a note
    name = ALIASES.get(geometry, geometry)
    geo = GEOMETRIES[name]["geometry"]
    heads, kv, dim = geo.num_heads, geo.num_kv_heads, geo.head_dim
    kept = kept_heads(keep, heads)
    full = full_heads(heads, kept)
    static = LayerPlan(window={h: Window(window) for h in range(heads) if h not in full})

    def like(windowed: tuple[int, ...]) -> Any:
        return LayerPlan(window={h: Window(window) for h in windowed})

    out = []
    for n in lengths:
        gen = torch.Generator().manual_seed(seed + n)
        q, k, v = (
            torch.randn(1, n, h, dim, generator=gen).transpose(1, 2) for h in (heads, kv, kv)
        )
        vis = torch.zeros(1, n, dtype=torch.bool)
        vis[:, 64 : 64 + int(visual_fraction * n)] = True
        route = Route(kept, window, rows=rows, visual=lambda vis=vis: vis)
        (chosen,) = select_windowed(route, 0, q, k, None, dim**-0.5)  # the routed choice
        plans = (static, like(chosen))
        run = _runners(route, plans, geo.group_size, (q, k, v))
        with torch.no_grad():
            for fn in run.values():  # warm-up: allocator, thread pools (not timed)
                fn()
            times: dict[str, list[float]] = {key: [] for key in run}
            for rep in range(repeats):
                for key in interleaved(list(run), rep):
                    times[key].append(timed(run[key])[0])
            dense = _runners(route, plans, geo.group_size, (q, k, v), dense=True)["dense"]
            times["dense"] = [timed(dense)[0] for _ in range(dense_repeats)]
        med = {key: statistics.median(vals) for key, vals in times.items() if vals}
        row = {
            "length": n, "keep": keep, "window": window, "rows": rows,
            "heads_kept_per_layer": kept, "visual_tokens": int(vis.sum()),
            **{f"{key}_ms": round(val, 2) for key, val in med.items()},
            "estimate_over_hybrid": round(med["estimate"] / med["hybrid"], 5),
            "adaptive_overhead": round(med["adaptive"] / med["hybrid"] - 1.0, 4),
            "adaptive_over_same_heads": round(med["adaptive"] / med["hybrid_same"] - 1.0, 4),
            "heads_kept_static": sorted(full),
            "heads_kept_adaptive": [h for h in range(heads) if h not in chosen],
            "times_ms": {key: [round(x, 1) for x in vals] for key, vals in times.items()},
            "geometry": name, "scope": "attention", "dtype": "float32", "device": "cpu",
            "threads": torch.get_num_threads(), "repeats": repeats, "seed": seed,
        }  # fmt: skip
        if "dense" in med:
            saved = med["dense"] - med["hybrid"]
            row["saved_ms"] = round(saved, 2)
            row["estimate_over_saved"] = round(med["estimate"] / saved, 5) if saved > 0 else None
        out.append(row)
    return out


def main(argv: list[str] | None = None, description: str | None = None) -> int:
    """CLI entry: ``headscope bench adaptive [options]``; prints a table or ``--json``.

    ``description``: the ``--help`` text (default: this module's docstring).
    """
    from harness.bench.decoders import GEOMETRIES

    parser = bench_parser("adaptive", description or __doc__)
    add = parser.add_argument
    add("--geometry", default="default", choices=sorted(GEOMETRIES), help="decoder geometry")
    add("--lengths", type=length_list, default="32768", help="prefill lengths, comma-separated")
    add("--keep", type=fraction, default=0.1, help="fraction of heads kept full per layer")
    add("--window", type=positive_int, default=512, help="window W of the other heads")
    add("--rows", type=positive_int, default=8, help="query rows of the routing estimate")
    add("--visual-fraction", type=float, default=0.5, help="share of visual tokens, in (0, 1)")
    add("--repeats", type=positive_int, default=3, help="timed repetitions (variants interleaved)")
    add("--dense-repeats", type=nonnegative_int, default=1, help="timed dense runs; 0 skips dense")
    add("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    add("--seed", type=int, default=0, help="inputs seed")
    add(
        "--json",
        action="store_true",
        help="print a headscope.bench_adaptive JSON document",
    )
    args = parser.parse_args(argv)
    if not 0.0 < args.visual_fraction < 1.0:
        parser.error("--visual-fraction must lie in (0, 1)")
    rows = run_bench(
        geometry=args.geometry, lengths=args.lengths,
        keep=args.keep, window=args.window, rows=args.rows,
        visual_fraction=args.visual_fraction, repeats=args.repeats,
        dense_repeats=args.dense_repeats, threads=args.threads, seed=args.seed,
    )  # fmt: skip
    if args.json:
        print(json.dumps(bench_document("adaptive", rows)))
        return 0
    cols = ("length", "estimate_ms", "hybrid_ms", "adaptive_ms", "dense_ms",
            "estimate_over_hybrid", "adaptive_overhead", "adaptive_over_same_heads",
            "estimate_over_saved")  # fmt: skip
    print("  ".join(f"{c:>20}" for c in cols))
    for row in rows:
        print("  ".join(f"{row.get(c)!s:>20}" for c in cols))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
