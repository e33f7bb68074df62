"""Accuracy-stage wall time, cell-major vs sample-major, measured so the ratio cannot drift.

    python scripts/bench_grid.py [--parts toy,video,pages,flops] [--repeats 3] [--json OUT]

Each part's grid (``grid_inputs.py``: toy, video, pages) runs once per order in a fresh
process, the two orders interleaved over ``--repeats`` rounds (``harness/bench/interleave.py``:
cell, sample, cell, sample, ...); the ratio is cell / sample per round, median and spread.
(Timing both orders one after the other in one process let the machine's load move between
the halves: 1.53x and 1.17x drift on the video and pages grids.) The first round's two sample
logs are compared row by row, timings removed: unequal logs void the bench.

``flops``: a FLOP-model projection for the shipped real configs (``harness/assets/configs``) on
a 64-frame 448×448 video: cell-major, sample-major, and sample-major with prefetch (the next
video's CPU work hidden behind this one's GPU work), from the media and processor time per
frame measured by ``video`` (medians of its cell-major runs, or ``--media-ms-per-frame`` /
``--processor-ms-per-frame``) and an assumed GPU throughput (``--gpu-tflops``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import grid_inputs  # noqa: E402


def worker(part: str, order: str, args: argparse.Namespace) -> dict[str, Any]:
    """One grid in one order (a fresh process); wall time and the media/processor/vision split."""
    from harness.run.evaluator import run_grid

    work = Path(tempfile.mkdtemp(prefix="bench_grid_"))
    try:
        if part == "toy":
            grid = grid_inputs.toy_grid(work, args.toy_docs)
        elif part == "video":
            grid = grid_inputs.video_grid(work, args.video_docs, args.frames)
        else:
            grid = grid_inputs.pages_grid(work, args.page_docs)
        with grid_inputs.grid_timers(grid) as spent:
            t0 = time.perf_counter()
            run_grid(grid.spec(work / "out"), grid.adapter, order=order)
            wall = time.perf_counter() - t0
        if args.keep:
            shutil.copytree(work / "out" / "samples", Path(args.keep) / "samples")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    cells = len(grid.cells) * len(grid.tasks)
    inputs = sum(spent.values())
    out = {
        "part": part,
        "order": order,
        "description": grid.description,
        "wall_s": round(wall, 3),
        **{f"{k}_s": round(v, 3) for k, v in spent.items()},
        "inputs_share": round(inputs / wall, 3),
        "inputs_s_per_cell": round(inputs / cells, 3),
    }
    if part == "video" and order == "cell":  # frames decoded and processed by cell-major
        per_frame = args.video_docs * len(grid.cells) * args.frames
        out["media_ms_per_frame"] = round(1000 * spent["media"] / per_frame, 2)
        out["processor_ms_per_frame"] = round(1000 * spent["processor"] / per_frame, 2)
    return out


def _rows(root: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        p.name: [
            {k: v for k, v in json.loads(x).items() if k != "timing"}
            for x in p.read_text().splitlines()
        ]
        for p in sorted((root / "samples").glob("*.jsonl"))
    }


def compare(part: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The part's grid in both orders, interleaved in fresh processes; the ratio cell / sample."""
    from harness.bench.interleave import paired_ratio, python_worker, run_interleaved

    common = [
        f"--toy-docs={args.toy_docs}",
        f"--video-docs={args.video_docs}",
        f"--frames={args.frames}",
        f"--page-docs={args.page_docs}",
    ]
    first = {o: work / f"{part}_{o}" for o in ("cell", "sample")}
    variants = {
        o: python_worker(__file__, "--worker", f"{part}:{o}", "--keep", str(first[o]), *common)
        for o in ("cell", "sample")
    }
    runs = run_interleaved(variants, repeats=1)
    if _rows(first["cell"]) != _rows(first["sample"]):
        raise SystemExit(f"{part}: sample logs differ between the orders ({work})")
    if args.repeats > 1:
        variants = {
            o: python_worker(__file__, "--worker", f"{part}:{o}", *common)
            for o in ("cell", "sample")
        }
        more = run_interleaved(variants, repeats=args.repeats - 1)
        runs = {o: runs[o] + more[o] for o in runs}
    r = paired_ratio(runs, "cell", "sample", "wall_s")
    desc = runs["cell"][0]["description"]
    print(
        f"\n{part}: {desc}\n  cell / sample = {r['ratio']:.2f}x (spread {r['ratio_min']:.2f}-"
        f"{r['ratio_max']:.2f}, {r['repeats']} interleaved rounds, fresh processes); medians "
        f"cell {r['cell_median']} s, sample {r['sample_median']} s"
    )
    split = {}
    for order, rs in runs.items():
        med = {k: statistics.median(x[k] for x in rs) for k in rs[0] if k.endswith("_s")}
        med.update(
            {k: statistics.median(x[k] for x in rs) for k in ("inputs_share", "inputs_s_per_cell")}
        )
        split[order] = med
        print(
            f"  {order:>6} (medians): media {med['media_s']:.2f} s, processor "
            f"{med['processor_s']:.2f} s, vision {med['vision_s']:.2f} s = "
            f"{100 * med['inputs_share']:.0f} % of the stage, {med['inputs_s_per_cell']:.3f} s "
            "per cell"
        )
    out = {"part": part, "description": desc, **r, "split": split, "runs": runs}
    if part == "video":
        for key in ("media_ms_per_frame", "processor_ms_per_frame"):
            out[key] = statistics.median(x[key] for x in runs["cell"])
    return out


def _params(model: Any) -> tuple[int, int]:
    """(vision-side parameters, language-model matmul parameters) of a meta-device model.

    The language model's embedding table is a lookup (no FLOPs) and the LM head runs on the
    last position only during a prefill, so neither counts; a tied head would be counted
    once anyway (``parameters()`` deduplicates).
    """
    base = model.base_model
    lm = base.language_model
    lm_params = sum(p.numel() for p in lm.parameters())
    embed = sum(p.numel() for p in lm.get_input_embeddings().parameters())
    vision = sum(p.numel() for p in base.parameters()) - lm_params
    return vision, lm_params - embed


def _geometry(name: str, frames: int, size: int) -> dict[str, Any]:
    """Vision patches, attention spans and LLM tokens of a ``frames``-frame ``size``² video."""
    from harness.bench.real_models import load_config_dict

    family, cfg = load_config_dict(name)
    vision = cfg["vision_config"]
    text = cfg if family == "qwen2_5_vl" else cfg["text_config"]
    if family == "llava_onevision":  # SigLIP per frame (384 px, patch 14), 2x2 pooled to 196
        per_frame = (384 // 14) ** 2
        return {
            "patches": frames * per_frame,
            "spans": [per_frame] * vision["num_hidden_layers"],
            "d_vit": vision["hidden_size"],
            "tokens": frames * 196,
            "text": text,
        }
    patch = vision["patch_size"]
    per_group = (size // patch) ** 2  # patches of one temporal group (two frames)
    groups = frames // 2
    depth = vision["depth"]
    if family == "qwen2_5_vl":  # windowed layers attend within 112-px windows (8x8 patches)
        window = (vision["window_size"] // patch) ** 2
        spans = [
            per_group if i in vision["fullatt_block_indexes"] else window for i in range(depth)
        ]
    else:
        spans = [per_group] * depth
    merge = vision.get("spatial_merge_size", 2)
    return {
        "patches": groups * per_group,
        "spans": spans,
        "d_vit": vision["hidden_size"],
        "tokens": groups * per_group // merge**2,
        "text": text,
    }


def projection(args: argparse.Namespace, media_ms: float, proc_ms: float) -> dict[str, Any]:
    """Per-cell time, cell-major vs sample-major (without and with prefetch), FLOP model."""
    import torch
    import transformers as tf

    from harness.bench.real_models import MODELS, build_config

    frames, size, cells = 64, 448, args.flop_cells
    rows = []
    for name in ("qwen2_5_vl_7b", "qwen3_vl_4b", "llava_onevision_7b"):
        config = build_config(name)
        with torch.device("meta"):
            model = getattr(
                tf, type(config).__name__.replace("Config", "ForConditionalGeneration")
            )(config)
        p_vis, p_lm = _params(model)
        g = _geometry(name, frames, size)
        t = g["text"]
        seq = g["tokens"] + 100
        vit = 2 * p_vis * g["patches"] + sum(4 * g["d_vit"] * g["patches"] * s for s in g["spans"])
        d_attn = t["num_attention_heads"] * t.get(
            "head_dim", t["hidden_size"] // t["num_attention_heads"]
        )
        llm = 2 * p_lm * seq + 4 * t["num_hidden_layers"] * d_attn * seq * seq / 2
        rate = args.gpu_tflops * 1e12
        cpu_s = frames * (media_ms + proc_ms) / 1000
        vit_s, llm_s = vit / rate, llm / rate
        cell_major = cpu_s + vit_s + llm_s
        sample_major = llm_s + (cpu_s + vit_s) / cells
        # prefetch: the next video's CPU work runs while the GPU runs this one's cells
        prefetched = max(cpu_s, vit_s + cells * llm_s) / cells
        rows.append(
            {
                "model": name,
                "family": MODELS[name][0],
                "visual_tokens": g["tokens"],
                "vision_tflop": round(vit / 1e12, 2),
                "prefill_tflop": round(llm / 1e12, 2),
                "cpu_s": round(cpu_s, 2),
                "vision_s": round(vit_s, 3),
                "prefill_s": round(llm_s, 3),
                "cell_major_s_per_cell": round(cell_major, 3),
                "sample_major_s_per_cell": round(sample_major, 3),
                "saving": round(1 - sample_major / cell_major, 3),
                "prefetch_s_per_cell": round(prefetched, 3),
                "prefetch_saving_vs_sample_major": round(1 - prefetched / sample_major, 3),
                "cpu_share_sample_major": round(cpu_s / cells / sample_major, 3),
            }
        )
    print(
        f"\nFLOP-model projection: {frames} frames of {size}x{size}, {cells} cells, GPU at "
        f"{args.gpu_tflops} TFLOP/s sustained (assumed), CPU media {media_ms:.1f} + processor "
        f"{proc_ms:.1f} ms per frame (measured here, one process)"
    )
    for r in rows:
        print(
            f"  {r['model']}: {r['visual_tokens']} visual tokens; per video: CPU {r['cpu_s']} s,"
            f" vision {r['vision_tflop']} TFLOP ({r['vision_s']} s), prefill "
            f"{r['prefill_tflop']} TFLOP ({r['prefill_s']} s); per cell: cell-major "
            f"{r['cell_major_s_per_cell']} s, sample-major {r['sample_major_s_per_cell']} s "
            f"-> saving {100 * r['saving']:.0f} %; with prefetch {r['prefetch_s_per_cell']} s "
            f"({100 * r['prefetch_saving_vs_sample_major']:.0f} % less than sample-major, whose "
            f"CPU share was {100 * r['cpu_share_sample_major']:.0f} %)"
        )
    return {
        "part": "flops",
        "frames": frames,
        "size": size,
        "cells": cells,
        "gpu_tflops": args.gpu_tflops,
        "media_ms_per_frame": media_ms,
        "processor_ms_per_frame": proc_ms,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default="toy,video,pages,flops")
    p.add_argument("--repeats", type=int, default=3, help="interleaved rounds (>= 3 to report)")
    p.add_argument("--toy-docs", type=int, default=64, help="documents per mini task")
    p.add_argument("--video-docs", type=int, default=4, help="Video-MME questions (3 per video)")
    p.add_argument("--frames", type=int, default=32)
    p.add_argument("--page-docs", type=int, default=2)
    p.add_argument(
        "--gpu-tflops",
        type=float,
        default=400.0,
        help="sustained bf16 throughput assumed for the projection",
    )
    p.add_argument("--flop-cells", type=int, default=22, help="cells in the projection")
    p.add_argument("--media-ms-per-frame", type=float, default=None)
    p.add_argument("--processor-ms-per-frame", type=float, default=None)
    p.add_argument("--json", default=None, help="write the results here")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # PART:ORDER
    p.add_argument("--keep", default=None, help=argparse.SUPPRESS)  # copy the sample logs here
    args = p.parse_args(argv)
    if args.worker:
        part, order = args.worker.split(":")
        print(json.dumps(worker(part, order, args)))
        return 0
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    work = Path(tempfile.mkdtemp(prefix="bench_grid_"))
    media_cache = grid_inputs.media_cache()  # the workers write the videos once
    results: list[dict[str, Any]] = []
    try:
        for part in ("toy", "video", "pages"):
            if part in parts:
                results.append(compare(part, args, work))
        if "flops" in parts:
            video = next((r for r in results if "media_ms_per_frame" in r), {})
            media = args.media_ms_per_frame or video.get("media_ms_per_frame")
            proc = args.processor_ms_per_frame or video.get("processor_ms_per_frame")
            if media is None or proc is None:
                raise SystemExit("flops needs the video part or --media/--processor-ms-per-frame")
            results.append(projection(args, media, proc))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(media_cache, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
