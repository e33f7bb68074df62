"""``headscope bench decode``: dense vs streamed KV decoding (hybrid ``decode=stream``).

A random-weight causal LM (transformers' Qwen2 / Qwen3 classes) with a real model's layer,
head and KV-group counts (``--geometry``) and tiny widths (``--head-dim``, ``--hidden``), so
4K–32K contexts fit on a CPU. Per context length the cache is filled with seeded random K/V
through each cache's own ``update`` (the streamed cache then keeps sinks + the recent ring, as
after a real prefill), and ``--new-tokens`` greedy decode steps are timed, interleaved
(dense, stream, stream, dense, ...) over ``--repeats``:

- dense: transformers' ``DynamicCache``, no plan (every head reads the whole cache);
- stream: headscope's streamed cache; ``keep`` of all KV groups of the model keep their whole
  cache (spread evenly over the layers), every other group ``--sink`` + ``--recent`` tokens;
- reference: the same decode on a dense cache with per-head masks (``stream_reference``); its
  logits give ``max_logit_diff`` (the same tokens fed to both, teacher forcing).

Rows (one per length × keep): ``kv_dense_bytes``, ``kv_stream_bytes``, ``kv_ratio`` (dense ÷
streamed), ``peak_dense_bytes``/``peak_stream_bytes`` (the peak during fill + decode above
the level before it; CUDA: allocated memory; CPU: the process's resident set, Linux only, else
null), ``tpot_dense_ms``,
``tpot_stream_ms`` (median per step), ``tpot_speedup``, ``bound_speedup`` (the memory-bound
decode step: (weights + dense KV bytes) ÷ (weights + streamed KV bytes), both read once per
step), ``of_bound``, ``bound_speedup_real`` (the same bound at the geometry's real widths in
bf16), ``ttft_dense_ms``/``ttft_stream_ms`` (a real prefill + first token, for lengths up to
``--ttft-max``, else null), ``max_logit_diff``, ``tokens_equal``.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from harness.api.helpformat import add_threads_argument
from harness.api.threads import apply_threads
from harness.bench.decoders import GEOMETRIES
from harness.bench.kit import (
    add_json_argument,
    bench_parser,
    interleaved,
    length_list,
    nonnegative_int,
    positive_int,
    print_rows,
    refuse_missing_device,
    sync,
)
from harness.bench.memory import peak_reset, peak_since
from harness.schema.bench import bench_document

__all__ = ["decode_document", "main", "memory_bound", "run_bench"]


def memory_bound(weights: int, kv_dense: int, kv_stream: int) -> float:
    """Decode-step speedup bound when a step reads the weights and the whole cache once."""
    return (weights + kv_dense) / (weights + kv_stream)


def real_bound(geometry: Any, n: int, keep: float, sink: int, recent: int) -> float:
    """:func:`memory_bound` at the geometry's real widths, bf16 (weights: layers + vocab 152K)."""
    g = geometry
    attn = g.hidden_size * g.head_dim * (2 * g.num_heads + 2 * g.num_kv_heads)
    weights = 2 * (g.num_layers * (attn + 3 * g.hidden_size * g.intermediate_size))
    weights += 2 * 2 * 151936 * g.hidden_size
    per_token = 2 * 2 * g.num_layers * g.num_kv_heads * g.head_dim
    dense = per_token * n
    stream = per_token * (keep * n + (1 - keep) * min(n, sink + recent))
    return memory_bound(weights, dense, stream)


def _spec(geometry: Any) -> dict[str, Any]:
    """A :data:`GEOMETRIES` entry, or a loaded model's own ``Geometry`` (a Qwen2 decoder)."""
    if isinstance(geometry, str):
        return GEOMETRIES[geometry]
    return {"arch": "qwen2", "geometry": geometry}


def decode_document(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``headscope.bench_decode`` document of :func:`run_bench`'s rows (settings on top)."""
    settings = rows[0]["settings"] if rows else {}
    return bench_document(
        "decode", [{k: v for k, v in r.items() if k != "settings"} for r in rows],
        settings=settings,
    )  # fmt: skip


def build_model(
    name: str, head_dim: int, hidden: int, dtype: Any, seed: int, ffn: int | None = None
) -> Any:
    """A random causal LM with ``name``'s layer/head/KV counts and the given widths (eval).

    ``ffn`` defaults to ``2 · hidden``; the vocabulary has 1,024 tokens.
    """
    import torch
    import transformers as tf

    spec = _spec(name)
    g = spec["geometry"]
    cfg_cls, cls = (
        (tf.Qwen2Config, tf.Qwen2ForCausalLM)
        if spec["arch"] == "qwen2"
        else (tf.Qwen3Config, tf.Qwen3ForCausalLM)
    )
    cfg = cfg_cls(
        vocab_size=1024, hidden_size=hidden, intermediate_size=ffn or 2 * hidden,
        num_hidden_layers=g.num_layers, num_attention_heads=g.num_heads,
        num_key_value_heads=g.num_kv_heads, head_dim=head_dim,
        max_position_embeddings=1 << 18, use_sliding_window=False, tie_word_embeddings=False,
    )  # fmt: skip
    torch.manual_seed(seed)
    return cls._from_config(cfg, attn_implementation="sdpa", dtype=dtype).eval()


def kept_groups(layers: int, kv: int, keep: float) -> set[tuple[int, int]]:
    """``ceil(keep · layers · kv)`` (layer, group) pairs, spread evenly over the model."""
    import math

    total = layers * kv
    k = max(0, min(total, math.ceil(keep * total - 1e-9)))
    return {divmod((i * total) // k, kv) for i in range(k)} if k else set()


def _plan(model: Any, kept: set, sink: int, recent: int, reference: bool) -> Any:
    from harness.api.anatomy import geometry_of
    from harness.api.heads import Head
    from harness.attention.stream_cache import stream_plan

    g = geometry_of(model)
    full = {Head(la, gr * g.group_size) for la, gr in kept}
    opts = {"sink": sink, "recent": recent, "reference": reference}
    return stream_plan(g, full, None, **opts)[0]


def _fill(model: Any, cache: Any, n: int, seed: int) -> None:
    """Seeded random K/V of ``n`` positions into every layer, as a prefill would leave them."""
    import torch

    from harness.attention.stream import BOUND_ATTR

    text = model.config
    shape = (1, text.num_key_value_heads, n, text.head_dim)
    dtype, device = model.dtype, model.device
    gen = torch.Generator(device=device).manual_seed(seed)
    for i, layer in enumerate(cache.layers):
        k = torch.randn(shape, generator=gen, device=device).to(dtype)
        v = torch.randn(shape, generator=gen, device=device).to(dtype)
        layer.update(k, v)
        if hasattr(layer, "compact"):
            layer.compact(None)
            model.model.layers[i].self_attn.__dict__.pop(BOUND_ATTR, None)


def _decode(model: Any, variant: dict, n: int, feed: list, seed: int, device: str) -> tuple:
    """(logits per step, ms per step, kv bytes, peak bytes) of one variant on a filled cache."""
    import torch
    from transformers import DynamicCache

    from harness.attention.dispatch import plan_scope
    from harness.attention.stream_cache import kv_bytes, stream_cache

    base = peak_reset(device)
    with torch.inference_mode(), plan_scope(model, variant["plan"]):
        cache = stream_cache(model) if variant["streamed"] else DynamicCache(config=model.config)
        _fill(model, cache, n, seed)
        logits, times = [], []
        for tok in feed:  # the same tokens for every variant (teacher forcing)
            sync(device)
            start = time.perf_counter()
            out = model(input_ids=tok, past_key_values=cache, use_cache=True)
            row = out.logits[:, -1].float()
            row.argmax(-1)  # the greedy pick belongs to the step
            sync(device)
            times.append((time.perf_counter() - start) * 1000.0)
            logits.append(row.cpu())
        size = kv_bytes(cache)
    return torch.cat(logits), times, size, peak_since(device, base)


def _ttft(model: Any, plan: Any, streamed: bool, n: int, seed: int, device: str) -> float:
    import torch
    from transformers import DynamicCache

    from harness.attention.dispatch import plan_scope
    from harness.attention.stream_cache import stream_cache

    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 1024, (1, n), generator=gen).to(device)
    with torch.inference_mode(), plan_scope(model, plan):
        cache = stream_cache(model) if streamed else DynamicCache(config=model.config)
        sync(device)
        start = time.perf_counter()
        model(input_ids=ids, past_key_values=cache, use_cache=True).logits[:, -1].argmax(-1)
        sync(device)
    return (time.perf_counter() - start) * 1000.0


def run_bench(
    *,
    geometry: Any = "qwen3-vl-4b",
    lengths: tuple[int, ...] = (4096, 8192, 16384, 32768),
    keeps: tuple[float, ...] = (0.5, 0.2),
    sink: int = 64,
    recent: int = 256,
    new_tokens: int = 8,
    repeats: int = 2,
    ttft_max: int = 4096,
    head_dim: int = 16,
    hidden: int = 64,
    ffn: int | None = None,
    dtype: str = "float32",
    device: str = "cpu",
    threads: int | None = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Dense vs streamed decoding; one row per length × keep (see the module docstring).

    Args:
        geometry: A name of :data:`harness.bench.decoders.GEOMETRIES` or a
            :class:`~harness.api.heads.Geometry` (a loaded model's, recorded as ``"model"``):
            its layer, head and KV-group counts are used (and its real widths for
            ``bound_speedup_real``).
        lengths: Context lengths (cached positions before decoding).
        keeps: Fractions of the model's KV groups that keep their whole cache.
        sink: Sink tokens of the streamed groups.
        recent: Recent positions of the streamed groups.
        new_tokens: Decode steps timed per variant (the first is a warm-up, not counted).
        repeats: Interleaved repetitions (dense and stream alternate, reversed every other).
        ttft_max: Longest context whose time to first token is measured with a real prefill.
        head_dim: Per-head width (tiny).
        hidden: Residual width (tiny).
        ffn: FFN width (default ``2 · hidden``).
        dtype: ``float32`` or ``bfloat16``.
        device: ``cpu`` or ``cuda``.
        threads: torch CPU threads.
        seed: Weights, K/V and tokens seed.
    """
    import torch

    threads_used = apply_threads(threads)
    torch_dtype = getattr(torch, dtype)
    model = build_model(geometry, head_dim, hidden, torch_dtype, seed, ffn).to(device)
    from harness.attention.dispatch import Plan, use_dispatch

    use_dispatch(model)
    text = model.config
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    gen = torch.Generator().manual_seed(seed + 1)
    feed = [torch.randint(0, 1024, (1, 1), generator=gen).to(device) for _ in range(new_tokens)]
    real = _spec(geometry)["geometry"]
    geometry_name = geometry if isinstance(geometry, str) else "model"
    dense = {"plan": Plan(), "streamed": False}
    rows = []
    for n in lengths:
        for keep in keeps:
            kept = kept_groups(text.num_hidden_layers, text.num_key_value_heads, keep)
            stream = {"plan": _plan(model, kept, sink, recent, False), "streamed": True}
            ref = {"plan": _plan(model, kept, sink, recent, True), "streamed": False}
            got: dict[str, list] = {"dense": [], "stream": []}
            for rep in range(repeats):
                for name in interleaved(("dense", "stream"), rep):
                    variant = dense if name == "dense" else stream
                    got[name].append(_decode(model, variant, n, feed, seed, device))
            ref_logits = _decode(model, ref, n, feed, seed, device)[0]
            (d_log, _, d_kv, _), (s_log, _, s_kv, _) = got["dense"][0], got["stream"][0]
            tpot = {k: statistics.median(t for r in v for t in r[1][1:]) for k, v in got.items()}
            peak = {k: _most(r[3] for r in v) for k, v in got.items()}
            ttft = {"dense": None, "stream": None}
            if n <= ttft_max:
                ttft = {
                    "dense": _ttft(model, dense["plan"], False, n, seed, device),
                    "stream": _ttft(model, stream["plan"], True, n, seed, device),
                }
            bound = memory_bound(weights, d_kv, s_kv)
            speed = tpot["dense"] / tpot["stream"]
            frac = len(kept) / (text.num_hidden_layers * text.num_key_value_heads)
            rows.append({
                "length": n, "keep": keep, "kv_kept_fraction": round(frac, 4),
                "sink": sink, "recent": recent,
                "kv_dense_bytes": d_kv, "kv_stream_bytes": s_kv,
                "kv_ratio": round(d_kv / s_kv, 3),
                "peak_dense_bytes": peak["dense"], "peak_stream_bytes": peak["stream"],
                "tpot_dense_ms": round(tpot["dense"], 3),
                "tpot_stream_ms": round(tpot["stream"], 3),
                "tpot_speedup": round(speed, 3), "bound_speedup": round(bound, 3),
                "of_bound": round(speed / bound, 3),
                "bound_speedup_real": round(real_bound(real, n, frac, sink, recent), 3),
                "ttft_dense_ms": None if ttft["dense"] is None else round(ttft["dense"], 1),
                "ttft_stream_ms": None if ttft["stream"] is None else round(ttft["stream"], 1),
                "max_logit_diff": float((s_log - ref_logits).abs().max()),
                "tokens_equal": bool(torch.equal(s_log.argmax(-1), ref_logits.argmax(-1))),
                "dense_differs": float((d_log - ref_logits).abs().max()),
                "weights_bytes": weights,
                "settings": {
                    "geometry": geometry_name, "layers": text.num_hidden_layers,
                    "heads": text.num_attention_heads, "kv_heads": text.num_key_value_heads,
                    "head_dim": head_dim, "hidden": hidden, "ffn": text.intermediate_size,
                    "dtype": dtype, "device": device,
                    "threads": threads_used, "new_tokens": new_tokens, "repeats": repeats,
                    "seed": seed, "attn_implementation": "headscope",
                },
            })  # fmt: skip
    return rows


def _most(values: Any) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _fractions(text: str) -> tuple[float, ...]:
    import argparse

    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not numbers: {text!r}") from None
    if not values or not all(0 <= v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"give fractions in [0, 1], e.g. 0.5,0.2; got {text!r}")
    return values


COLUMNS = ("length", "keep", "kv_ratio", "tpot_dense_ms", "tpot_stream_ms", "tpot_speedup",
           "bound_speedup", "ttft_dense_ms", "ttft_stream_ms", "max_logit_diff")  # fmt: skip


def main(argv: list[str] | None = None, description: str | None = None) -> int:
    """CLI entry: ``headscope bench decode [options]``; prints a table or ``--json``."""
    parser = bench_parser("decode", description or __doc__)
    parser.add_argument("--geometry", default="qwen3-vl-4b", choices=sorted(GEOMETRIES),
                        help="layer, head and KV-group counts (widths stay tiny)")  # fmt: skip
    parser.add_argument("--lengths", type=length_list, default="4096,8192,16384,32768",
                        help="context lengths, comma-separated")  # fmt: skip
    parser.add_argument("--keep", type=_fractions, default="0.5,0.2",
                        help="fractions of KV groups kept whole, comma-separated")  # fmt: skip
    parser.add_argument("--sink", type=nonnegative_int, default=64, help="sink tokens")
    parser.add_argument("--recent", type=positive_int, default=256, help="recent positions")
    parser.add_argument("--new-tokens", type=positive_int, default=8, help="decode steps")
    parser.add_argument("--repeats", type=positive_int, default=2, help="interleaved repeats")
    parser.add_argument("--ttft-max", type=nonnegative_int, default=4096,
                        help="longest context with a measured time to first token")  # fmt: skip
    parser.add_argument("--head-dim", type=positive_int, default=16, help="per-head width")
    parser.add_argument("--hidden", type=positive_int, default=64, help="residual width")
    parser.add_argument("--ffn", type=positive_int, default=None, help="FFN width (2 x hidden)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                        help="weights and cache dtype")  # fmt: skip
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:i]")
    add_threads_argument(parser)
    parser.add_argument("--seed", type=int, default=0, help="weights, K/V and tokens seed")
    add_json_argument(parser, "decode")
    args = parser.parse_args(argv)
    if not (args.device == "cpu" or args.device.startswith("cuda")):
        parser.error(f"--device must be cpu or cuda, not {args.device!r}")
    if args.head_dim % 2:
        parser.error("--head-dim must be even (rotary embeddings)")
    refuse_missing_device(parser, args.device)
    rows = run_bench(
        geometry=args.geometry, lengths=args.lengths, keeps=args.keep, sink=args.sink,
        recent=args.recent, new_tokens=args.new_tokens, repeats=args.repeats,
        ttft_max=args.ttft_max, head_dim=args.head_dim, hidden=args.hidden, ffn=args.ffn,
        dtype=args.dtype,
        device=args.device, threads=args.threads, seed=args.seed,
    )  # fmt: skip
    if args.json:
        print(json.dumps(decode_document(rows)))
        return 0
    print_rows(rows, COLUMNS)
    return 0
