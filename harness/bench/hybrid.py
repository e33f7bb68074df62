"""``headscope bench hybrid``: prefill time of CoRe-guided hybrid attention vs dense.

Builds a random-weight decoder (transformers' Qwen2 / Qwen3 text model classes) with a real
model's layer geometry (``--geometry``) and a few layers, then times dense vs hybrid prefill on
identical inputs, interleaving repetitions, through the ``headscope`` dispatch (dense = empty
plan, which is bit-identical to sdpa). Hybrid keeps ``ceil(keep · H)`` heads per layer full and
gives every other head a causal sliding window of ``--window`` keys (plus ``--sinks``). Each
row carries the median times, the speedup and, next to it, the FLOP-model bound of metrics.md
computed with the fraction of heads actually kept.

``--scope attention`` times one layer's attention function alone on random q/k/v (laid out as
HF passes them); ``--scope layer`` (default) times the whole decoder forward. Also reported:
the empty-plan dispatch overhead against plain sdpa (``dispatch_overhead``). ``--device cuda``
synchronizes around every timing.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from harness.api.heads import Geometry
from harness.api.threads import apply_threads
from harness.bench.decoders import ALIASES, GEOMETRIES, build_random_decoder
from harness.bench.kit import (
    add_kernel_argument,
    bench_parser,
    fake_attention,
    fraction,
    hybrid_plan,
    interleaved,
    kept_heads,
    kernel_scope,
    length_list,
    nonnegative_int,
    positive_int,
    refuse_missing_device,
    timed,
)
from harness.schema.bench import bench_document

__all__ = ["flop_speedup_bound", "run_bench", "main"]


def flop_speedup_bound(
    geometry: Geometry,
    n: int,
    window: int,
    full_fraction: float,
    *,
    linear: bool = True,
    model_windows: dict[int, int] | None = None,
) -> float:
    """Prefill speedup bound of hybrid attention (metrics.md FLOP model, per token per layer).

    linear ≈ 2·P_layer (attention projections + gated MLP); full attention ≈ 2·H·d_h·n
    (causal); window ≈ 4·H·d_h·w. speedup = (lin + full) / (lin + f·full + (1 − f)·win).

    With ``model_windows`` (the model's own sliding layers: Gemma3's local layers) or layers
    without heads (``geometry.attention_layers``: Qwen3.5's linear-attention layers), the
    bound is summed layer by layer instead: a layer's own attention costs the cheaper of full
    causal and its window, a hybrid-windowed head there the cheaper of that and the hybrid
    window, a kept head the layer's own cost; a layer without heads adds only its linear
    FLOPs to both sides (its own token mixing, the same in both, is left out, so the result
    stays an upper bound).

    Args:
        geometry: Decoder geometry (hidden, heads, KV heads, head_dim, FFN width).
        n: Sequence length.
        window: Window size w.
        full_fraction: Fraction f of heads that keep full attention.
        linear: Include the linear (projection + MLP) FLOPs; False gives the attention-only
            bound (for ``--scope attention``).
        model_windows: Decoder layer → the model's own sliding window (None or {}: none).
    """
    g = geometry
    attn_params = g.hidden_size * g.head_dim * (2 * g.num_heads + 2 * g.num_kv_heads)
    lin = 2 * (attn_params + 3 * g.hidden_size * g.intermediate_size) if linear else 0
    full = 2 * g.num_heads * g.head_dim * n
    win = 4 * g.num_heads * g.head_dim * min(window, n)
    if not model_windows and g.attention_layers is None:
        return (lin + full) / (lin + full_fraction * full + (1 - full_fraction) * win)
    dense = hybrid = 0.0
    heads = set(g.head_layers)
    for layer in range(g.num_layers):
        if layer not in heads:
            dense, hybrid = dense + lin, hybrid + lin
            continue
        own = (model_windows or {}).get(layer)
        base = full if own is None else min(full, 4 * g.num_heads * g.head_dim * min(own, n))
        dense += lin + base
        hybrid += lin + full_fraction * base + (1 - full_fraction) * min(base, win)
    return dense / hybrid


def run_bench(
    *,
    geometry: str | Geometry = "default",
    layers: int = 2,
    lengths: tuple[int, ...] = (8192, 16384),
    keep: float = 0.1,
    window: int = 512,
    sinks: int = 0,
    repeats: int = 3,
    scope: str = "layer",
    dtype: str = "float32",
    device: str = "cpu",
    threads: int | None = None,
    seed: int = 0,
    warmup: int = 1,
    preset: str | None = None,
    kernel: str = "auto",
) -> list[dict]:
    """Time dense vs hybrid prefill; return one row per length (see module docstring).

    Args:
        geometry: A name of :data:`GEOMETRIES` (or of :data:`ALIASES`), or a
            :class:`~harness.api.heads.Geometry` itself (a loaded model's own, recorded as
            ``"model"``; the random decoder of ``scope="layer"`` is then a Qwen2 one).
        layers: Decoder layers built (``scope="layer"``).
        lengths: Prefill lengths (tokens, batch 1, no padding).
        keep: Fraction of heads kept full per layer (rounded up to whole heads).
        window: Sliding window W of the other heads.
        sinks: Attention-sink tokens of the windowed heads.
        repeats: Timed repetitions; sdpa, dense and hybrid are interleaved in each.
        scope: ``attention`` (one layer's attention function) or ``layer`` (whole forward).
        dtype: ``float32`` or ``bfloat16``.
        device: ``cpu`` or ``cuda``.
        threads: torch CPU threads (default: torch's choice).
        seed: Weights and inputs seed.
        warmup: Untimed runs of each variant per length.
        preset: Former name of ``geometry``; wins when given.
        kernel: Window kernel (``harness.attention.dispatch.set_window_kernel``); each row
            records the kernels that ran in its hybrid calls (``window_kernels``, layer calls
            per kernel, warm-up included) and the block-mask build time (``mask_build_ms``,
            flex only, warm-up and compilation included).

    Returns:
        Rows: ``length, keep, window, dense_ms, hybrid_ms, speedup, bound, of_bound, sdpa_ms,
        dispatch_overhead`` (dense / sdpa − 1), robust extras, raw times, settings.
    """
    import torch

    if isinstance(geometry, Geometry) and preset is None:
        name, spec = "model", {"arch": "qwen2", "geometry": geometry}
    else:
        name = ALIASES.get(preset or geometry, preset or geometry)
        spec = GEOMETRIES[name]
    apply_threads(threads or None)  # above the cores: capped, with a note
    geo: Geometry = spec["geometry"]
    torch_dtype, kept = getattr(torch, dtype), kept_heads(keep, geo.num_heads)
    plan = hybrid_plan(layers, geo.num_heads, kept, window, sinks)
    settings = {
        "geometry": name, "arch": spec["arch"], "layers": layers if scope == "layer" else 1,
        "dtype": dtype, "device": device, "threads": torch.get_num_threads(), "scope": scope,
        "sinks": sinks, "repeats": repeats, "warmup": warmup, "heads_kept_per_layer": kept,
        "kept_fraction": round(kept / geo.num_heads, 4), "window_kernel": kernel,
        "dims": {"hidden": geo.hidden_size, "heads": geo.num_heads, "kv_heads": geo.num_kv_heads,
                 "head_dim": geo.head_dim, "ffn": geo.intermediate_size},
    }  # fmt: skip
    model = None
    if scope == "layer":
        model = build_random_decoder(spec["arch"], geo, layers, torch_dtype, seed).to(device)
    rows: list[dict] = []
    with kernel_scope(kernel):
        for n in lengths:
            gen = torch.Generator().manual_seed(seed + n)
            if model is not None:
                ids = torch.randint(0, 1024, (1, n), generator=gen).to(device)
                run = _layer_runners(model, ids, plan)
            else:
                run = _attention_runners(geo, n, torch_dtype, gen, plan, device)
            _used(reset=True)
            built = _build_ms()
            for _ in range(warmup):  # allocator, thread pools: not timed
                for fn in run.values():
                    fn()
            times: dict[str, list[float]] = {variant: [] for variant in run}
            cpu: dict[str, list[float]] = {variant: [] for variant in run}
            for rep in range(repeats):  # sdpa-dense-hybrid, then reversed: neighbours stay paired
                for variant in interleaved(list(run), rep):
                    wall, used = timed(run[variant], device)
                    times[variant].append(wall)
                    cpu[variant].append(used)
            med = {variant: statistics.median(vals) for variant, vals in times.items()}
            cpu_med = {variant: statistics.median(vals) for variant, vals in cpu.items()}
            bound = flop_speedup_bound(
                geo, n, window, kept / geo.num_heads, linear=scope == "layer"
            )
            rows.append({
                "length": n, "keep": keep, "window": window,
                "dense_ms": round(med["dense"], 2), "hybrid_ms": round(med["hybrid"], 2),
                "speedup": round(med["dense"] / med["hybrid"], 3), "bound": round(bound, 3),
                "of_bound": round(med["dense"] / med["hybrid"] / bound, 3),
                # Median of per-repetition ratios of adjacent runs: robust to slow load drifts.
                "speedup_paired": round(statistics.median(
                    d / h for d, h in zip(times["dense"], times["hybrid"])), 3),
                "sdpa_ms": round(med["sdpa"], 2),
                "dispatch_overhead": round(med["dense"] / med["sdpa"] - 1.0, 4),
                "times_ms": {k: [round(x, 1) for x in v] for k, v in times.items()},
                # Process CPU time: steadier than wall time on a shared machine (CPU runs only).
                "speedup_cpu_time": round(cpu_med["dense"] / max(cpu_med["hybrid"], 1e-9), 3),
                "cpu_ms": {k: [round(x, 1) for x in v] for k, v in cpu.items()},
                "window_kernels": _used(reset=True), "mask_build_ms": _build_ms() - built,
                **settings,
            })  # fmt: skip
    return rows


def _used(reset: bool) -> dict[str, int]:
    from harness.attention.dispatch import window_kernels_used

    return window_kernels_used(reset=reset)


def _build_ms() -> float:
    from harness.attention.flex import mask_cache_info

    return round(float(mask_cache_info()["build_ms"]), 1)


def _layer_runners(model: Any, ids: Any, plan: Any) -> dict[str, Any]:
    import torch

    from harness.attention.dispatch import ATTN_NAME, plan_scope, use_dispatch
    from harness.attention.plan import Plan

    use_dispatch(model)
    config = model.config

    def fwd(p: Plan | None) -> None:
        with torch.no_grad():
            if p is None:  # plain sdpa, switched without validation (read on every forward)
                config._attn_implementation = "sdpa"
                try:
                    model(input_ids=ids, use_cache=False)
                finally:
                    config._attn_implementation = ATTN_NAME
                return
            with plan_scope(model, p):
                model(input_ids=ids, use_cache=False)

    empty = Plan()
    return {"sdpa": lambda: fwd(None), "dense": lambda: fwd(empty), "hybrid": lambda: fwd(plan)}


def _attention_runners(geo: Geometry, n: int, dtype: Any, gen: Any, plan: Any, device: str):
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from harness.attention.dispatch import headscope_attention

    def rand(heads: int) -> Any:  # (1, S, h, D) transposed: the layout HF's modules pass
        x = torch.randn(1, n, heads, geo.head_dim, generator=gen).to(device, dtype)
        return x.transpose(1, 2)

    q, k, v = rand(geo.num_heads), rand(geo.num_kv_heads), rand(geo.num_kv_heads)
    dense_mod, hybrid_mod = (fake_attention(geo.group_size, lp) for lp in (None, plan.layers[0]))
    return {
        "sdpa": lambda: sdpa_attention_forward(dense_mod, q, k, v, None),
        "dense": lambda: headscope_attention(dense_mod, q, k, v, None),
        "hybrid": lambda: headscope_attention(hybrid_mod, q, k, v, None),
    }


def main(argv: list[str] | None = None, description: str | None = None) -> int:
    """CLI entry: ``headscope bench hybrid [options]``; prints a table or ``--json``.

    ``description``: the ``--help`` text (default: this module's docstring).
    """
    parser = bench_parser("hybrid", description or __doc__)
    parser.add_argument("--geometry", "--preset", dest="geometry", default="default",
                        choices=sorted(GEOMETRIES), help="decoder layer geometry")  # fmt: skip
    parser.add_argument(
        "--layers", type=positive_int, default=2, help="decoder layers (scope layer)"
    )
    parser.add_argument("--lengths", type=length_list, default="8192,16384", help="comma-separated")
    parser.add_argument("--keep", type=fraction, default=0.1, help="fraction of heads kept full")
    parser.add_argument(
        "--window", type=positive_int, default=512, help="window of the other heads"
    )
    parser.add_argument("--sinks", type=nonnegative_int, default=0, help="attention-sink tokens")
    parser.add_argument("--repeats", type=positive_int, default=3, help="timed repetitions")
    parser.add_argument(
        "--warmup", type=nonnegative_int, default=1, help="untimed runs per variant"
    )
    parser.add_argument("--scope", choices=("attention", "layer"), default="layer",
                        help="one layer's attention function, or the whole forward")  # fmt: skip
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                        help="weights and activations dtype")  # fmt: skip
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:i]")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--seed", type=int, default=0, help="weights and inputs seed")
    add_kernel_argument(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a headscope.bench_hybrid JSON document",
    )
    args = parser.parse_args(argv)
    if not (args.device == "cpu" or args.device.startswith("cuda")):
        parser.error(f"--device must be cpu or cuda, not {args.device!r}")
    refuse_missing_device(parser, args.device)
    rows = run_bench(
        geometry=args.geometry, layers=args.layers,
        lengths=args.lengths,
        keep=args.keep, window=args.window, sinks=args.sinks, repeats=args.repeats,
        scope=args.scope, dtype=args.dtype, device=args.device, threads=args.threads,
        seed=args.seed, warmup=args.warmup, kernel=args.kernel,
    )  # fmt: skip
    if args.json:
        print(json.dumps(bench_document("hybrid", rows)))
        return 0
    cols = ("length", "keep", "window", "dense_ms", "hybrid_ms", "speedup", "bound",
            "of_bound", "sdpa_ms", "dispatch_overhead")  # fmt: skip
    print("  ".join(f"{c:>17}" for c in cols))
    for row in rows:
        print("  ".join(f"{row[c]!s:>17}" for c in cols))
    return 0
