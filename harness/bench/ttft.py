"""``headscope bench ttft``: time to first token of a full VLM on a long video, dense vs hybrid.

The model is a random-weight instance of a REAL published architecture, vision tower
included, built from the config texts shipped in ``harness/assets/configs`` (see the README
there for their sources): ``qwen3_vl_4b``, ``qwen2_5_vl_7b``, ``llava_onevision_7b``. A
synthetic video (``--frames`` frames of ``--frame-size``² px: a moving gradient plus seeded
noise) goes through the family's processor class (PIL back-ends: torchvision not needed) with
a byte-level tokenizer whose special tokens sit at the ids the config uses. Qwen pixel
budgets are raised so ``--frame-size`` alone sets the tokens per frame (Qwen: (size / 28)²
per two frames, 32 px cells for Qwen3-VL; OneVision: 196 per frame after pooling).

Time to first token = one prefill forward (``use_cache=True``, logits of the last position)
plus the greedy pick of the first token, CUDA-synchronised; preprocessing is reported apart
(``preprocess_ms``). The vision encoder's time is taken with hooks around the vision tower, and
its share of the TTFT reported. Dense = the empty plan (identical to sdpa); hybrid = ``keep``
of the heads of every decoder layer full, the others a causal window of ``--window`` keys,
through the window kernel (``auto``: flex on CUDA). ``--shrink`` keeps the processor geometry
(patch, merge, temporal patch, crop sizes, token layout) but makes every tower tiny: the same
code path for CPU tests; real-size numbers need a GPU.
"""

from __future__ import annotations

import json
import statistics
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
    interleaved,
    kept_heads,
    kernel_scope,
    nonnegative_int,
    positive_int,
    print_rows,
    refuse_missing_device,
    sync,
)
from harness.bench.real_models import (
    MODELS,
    build_config,
    build_model,
    load_config_dict,
    memory_problem,
    synthetic_video,
    video_inputs,
    video_processor,
)
from harness.schema.bench import bench_document

__all__ = ["run_ttft", "main"]


def _vision_tower(model: Any) -> Any:
    inner = getattr(model, "model", model)
    for name in ("visual", "vision_tower", "vision_model"):
        if getattr(inner, name, None) is not None:
            return getattr(inner, name)
    raise ValueError(f"no vision tower found in {type(model).__name__}")


def _prefill(model: Any, inputs: dict[str, Any], plan: Any, device: str) -> dict[str, float]:
    import torch

    from harness.attention.dispatch import plan_scope

    vision = {"ms": 0.0, "start": 0.0}

    def before(*_: Any) -> None:
        sync(device)
        vision["start"] = time.perf_counter()

    def after(*_: Any) -> None:
        sync(device)
        vision["ms"] += (time.perf_counter() - vision["start"]) * 1000.0

    tower = _vision_tower(model)
    handles = [tower.register_forward_pre_hook(before), tower.register_forward_hook(after)]
    try:
        sync(device)
        begin = time.perf_counter()
        with torch.no_grad(), plan_scope(model, plan):
            logits = model(**inputs, use_cache=True, logits_to_keep=1).logits
            int(logits[0, -1].argmax())  # the first token (synchronises)
        total = (time.perf_counter() - begin) * 1000.0
    finally:
        for handle in handles:
            handle.remove()
    return {"ttft_ms": total, "vision_ms": vision["ms"]}


def run_ttft(
    model: str = "qwen3_vl_4b",
    *,
    frames: int = 64,
    frame_size: int = 448,
    shrink: bool = False,
    keep: float = 0.05,
    window: int = 1024,
    sinks: int = 0,
    repeats: int = 3,
    kernel: str = "auto",
    dtype: str = "bfloat16",
    device: str = "cuda",
    seed: int = 0,
) -> dict[str, Any]:
    """TTFT of ``model`` on a synthetic ``frames``-frame video, dense vs hybrid; one row."""
    import torch

    from harness.api.anatomy import geometry_of
    from harness.attention.dispatch import Plan, window_kernels_used
    from harness.bench.hybrid import flop_speedup_bound
    from harness.models.offline.tokenizer import special_token_ids

    family, cfg = load_config_dict(model, shrink)
    vocab = (cfg if family == "qwen2_5_vl" else cfg["text_config"])["vocab_size"]
    began = time.perf_counter()
    processor = video_processor(family, cfg, vocab)
    video = synthetic_video(frames, frame_size, seed)
    start = time.perf_counter()
    inputs = video_inputs(family, processor, video)
    preprocess_ms = (time.perf_counter() - start) * 1000.0
    ids = special_token_ids(family, vocab)
    net = build_model(family, build_config(model, shrink, ids), getattr(torch, dtype), device)
    build_s = time.perf_counter() - began
    for key, value in inputs.items():
        if hasattr(value, "to"):
            pixels = key.startswith("pixel_values")
            inputs[key] = value.to(device, getattr(torch, dtype)) if pixels else value.to(device)
    geo = geometry_of(net)
    kept = kept_heads(keep, geo.num_heads)
    plans = {
        "dense": Plan(),
        "hybrid": hybrid_plan(geo.num_layers, geo.num_heads, kept, window, sinks),
    }
    times: dict[str, list[dict[str, float]]] = {"dense": [], "hybrid": []}
    with kernel_scope(kernel):
        for plan in plans.values():  # warm-up: allocator, flex compilation
            _prefill(net, inputs, plan, device)
        window_kernels_used(reset=True)
        for rep in range(repeats):
            for variant in interleaved(list(plans), rep):
                times[variant].append(_prefill(net, inputs, plans[variant], device))
        used = window_kernels_used(reset=True)
    tokens = int(inputs["input_ids"].shape[1])
    visual = int(sum(int((inputs["input_ids"] == ids[k]).sum()) for k in ("image", "video")))
    row: dict[str, Any] = {"model": model, "family": family, "config": MODELS[model][1],
                           "shrunk": shrink, "frames": frames, "frame_size": frame_size,
                           "tokens": tokens, "visual_tokens": visual,
                           "preprocess_ms": round(preprocess_ms, 1),
                           "build_s": round(build_s, 1)}  # fmt: skip
    for variant, runs in times.items():
        ttft = statistics.median(r["ttft_ms"] for r in runs)
        vis = statistics.median(r["vision_ms"] for r in runs)
        row[variant] = {"ttft_ms": round(ttft, 2), "vision_ms": round(vis, 2),
                        "decoder_ms": round(ttft - vis, 2),
                        "vision_share": round(vis / ttft, 4) if ttft else None}  # fmt: skip
    dense, hybrid = row["dense"], row["hybrid"]
    row.update(
        speedup_ttft=round(dense["ttft_ms"] / hybrid["ttft_ms"], 3),
        speedup_decoder=round(dense["decoder_ms"] / max(hybrid["decoder_ms"], 1e-9), 3),
        decoder_bound=round(flop_speedup_bound(geo, tokens, window, kept / geo.num_heads), 3),
        window_kernels=used, keep=keep, heads_kept_per_layer=kept, window=window, sinks=sinks,
        window_kernel=kernel, dtype=dtype, device=device, repeats=repeats, seed=seed,
        threads=torch.get_num_threads(),
        decoder={"layers": geo.num_layers, "heads": geo.num_heads, "kv_heads": geo.num_kv_heads,
                 "head_dim": geo.head_dim, "hidden": geo.hidden_size},
    )  # fmt: skip
    return row


def main(argv: list[str] | None = None, description: str | None = None) -> int:
    """CLI entry: ``headscope bench ttft [options]``; one table row per model, as each ends.

    With ``--json`` each line is instead a ``headscope.bench_ttft`` document holding that
    model's row.

    ``description``: the ``--help`` text (default: this module's docstring).
    """
    parser = bench_parser("ttft", description or __doc__)
    parser.add_argument("--model", default="qwen3_vl_4b", help=f"comma-separated: {sorted(MODELS)}")
    parser.add_argument("--frames", type=int, default=64, help="frames of the synthetic video")
    parser.add_argument("--frame-size", type=int, default=448, help="frame width and height (px)")
    parser.add_argument("--shrink", action="store_true", help="tiny towers (CPU tests)")
    parser.add_argument(
        "--keep", type=fraction, default=0.05, help="fraction of heads kept full per layer"
    )
    parser.add_argument(
        "--window", type=positive_int, default=1024, help="window W of the other heads"
    )
    parser.add_argument(
        "--sinks", type=nonnegative_int, default=0, help="attention-sink tokens of windowed heads"
    )
    parser.add_argument(
        "--repeats",
        type=positive_int,
        default=3,
        help="timed prefills per variant (after one warm-up)",
    )
    add_kernel_argument(parser)
    parser.add_argument(
        "--dtype",
        choices=("float32", "bfloat16"),
        default="bfloat16",
        help="weights and activations",
    )
    parser.add_argument(
        "--device", default="cuda", help="cuda[:i] (real sizes) or cpu (with --shrink)"
    )
    parser.add_argument("--seed", type=int, default=0, help="weights and video seed")
    add_threads_argument(parser)
    add_json_argument(parser, "ttft")
    args = parser.parse_args(argv)
    names = [m for m in args.model.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown or not names:
        parser.error(f"unknown model(s) {unknown} (known: {sorted(MODELS)})")
    if args.frames < 2 or args.frame_size < 32:
        parser.error("need --frames ≥ 2 and --frame-size ≥ 32")
    refuse_missing_device(parser, args.device)
    apply_threads(args.threads)
    if args.device == "cpu" and not args.shrink:
        parser.exit(
            2,
            f"{parser.prog}: error: --device cpu needs --shrink: the full-size models have "
            "billions of random parameters (8-15 GiB of weights in bfloat16) and a video "
            "prefill on top; --shrink runs the same path on tiny towers\n",
        )
    problem = memory_problem(names, args.dtype, args.device, args.shrink)
    if problem is not None:
        parser.exit(2, f"{parser.prog}: error: {problem}; run one model at a time or --shrink\n")
    for name in names:
        row = run_ttft(
            name, frames=args.frames, frame_size=args.frame_size, shrink=args.shrink,
            keep=args.keep, window=args.window, sinks=args.sinks, repeats=args.repeats,
            kernel=args.kernel, dtype=args.dtype, device=args.device, seed=args.seed,
        )  # fmt: skip
        if args.json:
            print(json.dumps(bench_document("ttft", [row])), flush=True)
            continue
        cols = ("model", "tokens", "dense.ttft_ms", "hybrid.ttft_ms", "speedup_ttft",
                "speedup_decoder", "decoder_bound", "dense.vision_share")  # fmt: skip
        print_rows([row], cols, width=18)
    return 0
