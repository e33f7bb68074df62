"""Accuracy-stage wall time, cell-major vs sample-major, in one run (issue 32).

    python scripts/bench_grid.py [--parts toy,video,pages,flops] [--json OUT]

Parts (each runs the same grid twice in this process, ``order="cell"`` then
``order="sample"``, into fresh directories; ratios are what count, wall times move with the
load of a shared machine):

- ``toy``: the toy main job's accuracy stage (its ranking made first, untimed; the eight mini
  tasks, 64 documents each, the main job's 22 cells, batch 16).
- ``video``: a tiny Qwen2.5-VL (real patch / merge / temporal geometry, tiny widths) with its
  real processor class at Qwen2.5-VL's own video budget (128–768 merged tokens per frame) on
  Video-MME rows over two generated H.264 videos, 448×448 and 640×360 (1,800 frames: one
  minute at 30 fps, a Video-MME "short" video; keyframe every 250 frames, x264's default),
  32 frames per question, 16 cells, batch 1.
- ``pages``: the same model and cells on MMLongBench-Doc rows over US-Letter PDFs rendered at
  the task's 144 dpi (1224×1584 px, up to 16,384 merged tokens per image: Qwen2.5-VL's budget).
- ``flops``: a FLOP-model projection of the saving for the shipped real configs
  (``harness/assets/configs``) on a 64-frame 448×448 video, from the media and processor time
  per frame measured by ``video`` (or ``--media-ms-per-frame`` / ``--processor-ms-per-frame``)
  and an assumed GPU throughput (``--gpu-tflops``).

Time is split with class-level timers: ``media`` = ``task.request`` (reading, video decode,
PDF render), ``processor`` = ``HFAdapter.prepare`` (chat template, resize, patchify,
tokenise), ``vision`` = the model's own ``get_image_features`` / ``get_video_features`` when
they really run (under the memo, a reuse costs nothing).
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

REAL_CELLS = (
    "none",
    *(
        f"ablate:select=random,k={k},mode=zero,draws=5,draw={d}"
        for k in (0.1, 0.2)
        for d in range(5)
    ),
    "hybrid:select=adaptive,keep=0.1,window=512",
    "hybrid:select=adaptive,keep=0.25,window=512",
    "sap:prior=complexity,semantics=distribution",
    "noise_delta:layers=1",
    "noise_qkv:layers=1",
)
"""16 cells that need no ranking: baseline, 2 × 5 random ablations, two adaptive hybrids, SAP
(its pixel prior reads the vision pass), two noise baselines."""


@contextmanager
def timers(classes: dict[str, list[tuple[type, str]]]) -> Iterator[dict[str, float]]:
    """Accumulate wall seconds per group of class methods (outermost call only)."""
    spent = dict.fromkeys(classes, 0.0)
    depth = {"n": 0}
    saved = []
    for group, targets in classes.items():
        for cls, name in targets:
            owner = next((k for k in cls.__mro__ if name in k.__dict__), None)
            if owner is None or any(o is owner and n == name for o, n, _ in saved):
                continue
            cls, fn = owner, owner.__dict__[name]

            def timed(*args: Any, __fn=fn, __group=group, **kwargs: Any) -> Any:
                if depth["n"]:
                    return __fn(*args, **kwargs)
                depth["n"] += 1
                t0 = time.perf_counter()
                try:
                    return __fn(*args, **kwargs)
                finally:
                    spent[__group] += time.perf_counter() - t0
                    depth["n"] -= 1

            saved.append((cls, name, fn))
            setattr(cls, name, functools.wraps(fn)(timed))
    try:
        yield spent
    finally:
        for cls, name, fn in saved:
            setattr(cls, name, fn)


def timed_grid(spec: Any, adapter: Any, order: str, task_names: list[str]) -> dict[str, Any]:
    """Run ``spec`` in ``order``; wall seconds and the media / processor / vision split."""
    from harness.api.registry import TASKS
    from harness.models.hf import HFAdapter
    from harness.run.evaluator import run_grid

    base = type(adapter.model.base_model)
    groups = {
        "media": [(TASKS.get(n), "request") for n in task_names],
        "processor": [(HFAdapter, "prepare")],
        "vision": [(base, "get_image_features"), (base, "get_video_features")],
    }
    with timers(groups) as spent:
        t0 = time.perf_counter()
        run_grid(spec, adapter, order=order)
        wall = time.perf_counter() - t0
    cells = len(spec.interventions) * len(spec.tasks)
    inputs = sum(spent.values())
    return {
        "order": order,
        "wall_s": round(wall, 2),
        **{f"{k}_s": round(v, 2) for k, v in spent.items()},
        "inputs_share": round(inputs / wall, 3),
        "inputs_s_per_cell": round(inputs / cells, 3),
    }


def compare(name: str, spec_of: Any, adapter: Any, task_names: list[str]) -> dict[str, Any]:
    """The grid in both orders; the ratio cell / sample."""
    rows = [timed_grid(spec_of(o), adapter, o, task_names) for o in ("cell", "sample")]
    ratio = rows[0]["wall_s"] / rows[1]["wall_s"]
    out = {"part": name, "rows": rows, "speedup": round(ratio, 2)}
    print(
        f"\n{name}: cell-major {rows[0]['wall_s']} s, sample-major {rows[1]['wall_s']} s "
        f"-> {ratio:.2f}x"
    )
    for r in rows:
        print(
            f"  {r['order']:>6}: media {r['media_s']} s, processor {r['processor_s']} s, "
            f"vision {r['vision_s']} s = {100 * r['inputs_share']:.0f} % of the stage, "
            f"{r['inputs_s_per_cell']} s per cell"
        )
    return out


# -- (a) the toy main job's accuracy stage -----------------------------------------------------
def part_toy(work: Path, n: int) -> dict[str, Any]:
    from harness.api.model import load_adapter
    from harness.api.specs import ModelSpec, RunSpec
    from harness.api.task import grounded_tasks
    from harness.probes.rank import run_rank
    from harness.run.protocol import ProtocolConfig, grid_interventions, task_spec

    cfg = ProtocolConfig(n_eval=n, n_rank=n)
    adapter = load_adapter(ModelSpec(name="toy"))
    rank_specs = [task_spec(t, cfg.n_rank, cfg) for t in grounded_tasks(cfg.tasks)]
    run_rank(adapter, rank_specs, work / "rank", seed=0, progress=False, plots=False)
    tasks = tuple(task_spec(t, cfg.n_eval, cfg) for t in cfg.tasks)
    interventions = tuple(grid_interventions(cfg, work / "rank" / "ranking.json", 24))

    def spec_of(order: str) -> Any:
        return RunSpec(
            model=ModelSpec(name="toy"),
            tasks=tasks,
            interventions=interventions,
            batch_size=cfg.batch_size,
            output=str(work / f"toy_{order}"),
        )

    out = compare(
        f"toy main job ({len(interventions)} cells × {len(tasks)} tasks, {n} docs each)",
        spec_of,
        adapter,
        list(cfg.tasks),
    )
    _check_same(work / "toy_cell", work / "toy_sample")
    return out


# -- (b) a tiny Qwen2.5-VL with its real processor at real geometry ----------------------------
def _frames(width: int, height: int, n: int, seed: int) -> Iterator[Any]:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:height, 0:width]
    for t in range(n):
        base = (xs + 3 * t) % width * (255 / width)
        rgb = np.stack([base, ys * (255 / height), (base + ys + t) % 256], -1)
        rgb = rgb + rng.normal(0, 6, rgb.shape)
        yield Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8))


def _write_video(path: Path, width: int, height: int, n: int, gop: int = 60) -> None:
    import av

    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {
            "g": str(gop),
            "keyint_min": str(gop),
            "sc_threshold": "0",
            "crf": "23",
            "preset": "veryfast",
        }
        for img in _frames(width, height, n, seed=width):
            for packet in stream.encode(av.VideoFrame.from_image(img)):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def _qwen25(vocab: int = 512) -> Any:
    from harness.models.offline.qwen import qwen_processor
    from harness.models.qwen2_5_vl import Qwen2_5_VLAdapter
    from harness.testing.tiny import build_tiny_model

    processor = qwen_processor(
        "qwen2_5_vl", vocab, image_tokens=(4, 16384), video_tokens=(128, 768)
    )
    return Qwen2_5_VLAdapter.from_parts(build_tiny_model("qwen2_5_vl"), processor)


def part_video(work: Path, docs: int, frames: int) -> dict[str, Any]:
    from harness.api.specs import RunSpec, TaskSpec, parse_intervention
    from tests.fixtures import make_video_fixtures as vfx

    args = vfx.make_videomme(work / "videomme")
    for name, (w, h) in {"fixture1": (448, 448), "fixture2": (640, 360)}.items():
        _write_video(Path(args["video_root"]) / "data" / f"{name}.mp4", w, h, 1800, gop=250)
    adapter = _qwen25()
    tasks = (TaskSpec("videomme", args=dict(args, num_frames=frames), limit=docs),)
    cells = tuple(parse_intervention(c) for c in REAL_CELLS)

    def spec_of(order: str) -> Any:
        return RunSpec(tasks=tasks, interventions=cells, output=str(work / f"video_{order}"))

    out = compare(
        f"tiny Qwen2.5-VL, Video-MME, {frames} frames 448x448 / 640x360, {docs} docs, "
        f"{len(cells)} cells",
        spec_of,
        adapter,
        ["videomme"],
    )
    _check_same(work / "video_cell", work / "video_sample")
    cell = out["rows"][0]
    per_frame = docs * len(cells) * frames  # frames decoded and processed by cell-major
    out["media_ms_per_frame"] = round(1000 * cell["media_s"] / per_frame, 2)
    out["processor_ms_per_frame"] = round(1000 * cell["processor_s"] / per_frame, 2)
    return out


def part_pages(work: Path, docs: int) -> dict[str, Any]:
    from harness.api.specs import RunSpec, TaskSpec, parse_intervention
    from tests.fixtures import make_image_doc_fixtures as ifx

    args = ifx.make_mmlongbench(work / "mmlb")
    for name, n in ifx.PDF_PAGES.items():  # the fixture's PDFs at US-Letter size
        ifx.make_pdf(Path(args["doc_dir"]) / name, n, size=(612, 792))
    adapter = _qwen25()
    tasks = (TaskSpec("mmlongbench_doc", args=args, limit=docs),)
    cells = tuple(parse_intervention(c) for c in REAL_CELLS)

    def spec_of(order: str) -> Any:
        return RunSpec(tasks=tasks, interventions=cells, output=str(work / f"pages_{order}"))

    out = compare(
        f"tiny Qwen2.5-VL, MMLongBench-Doc pages at 144 dpi, {docs} docs, {len(cells)} cells",
        spec_of,
        adapter,
        ["mmlongbench_doc"],
    )
    _check_same(work / "pages_cell", work / "pages_sample")
    return out


def _check_same(cell: Path, sample: Path) -> None:
    """The two orders' logs, rows without timings, are equal (else the bench is void)."""

    def rows(root: Path) -> dict[str, list[dict[str, Any]]]:
        return {
            p.name: [
                {k: v for k, v in json.loads(x).items() if k != "timing"}
                for x in p.read_text().splitlines()
            ]
            for p in sorted((root / "samples").glob("*.jsonl"))
        }

    if rows(cell) != rows(sample):
        raise SystemExit(f"sample logs differ between {cell} and {sample}")


# -- (c) FLOP-model projection for the shipped real configs ------------------------------------
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
    """Per-cell GPU time, cell-major vs sample-major, from a FLOP model (printed)."""
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
            f"-> saving {100 * r['saving']:.0f} %"
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
    args = p.parse_args(argv)
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    work = Path(tempfile.mkdtemp(prefix="bench_grid_"))
    results: list[dict[str, Any]] = []
    try:
        if "toy" in parts:
            results.append(part_toy(work, args.toy_docs))
        if "video" in parts:
            results.append(part_video(work, args.video_docs, args.frames))
        if "pages" in parts:
            results.append(part_pages(work, args.page_docs))
        if "flops" in parts:
            video = next((r for r in results if "media_ms_per_frame" in r), {})
            media = args.media_ms_per_frame or video.get("media_ms_per_frame")
            proc = args.processor_ms_per_frame or video.get("processor_ms_per_frame")
            if media is None or proc is None:
                raise SystemExit("flops needs the video part or --media/--processor-ms-per-frame")
            results.append(projection(args, media, proc))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
