"""Prefetch overlap on CPU: wall time ≈ max(media, model) instead of their sum.

    python scripts/bench_prefetch.py [--parts video,pages] [--repeats 3] [--json OUT]

Each part runs its grid (``grid_inputs.py``: the tiny Qwen2.5-VL with its real processor, the
16 real cells, batch 1) sample-major with a model stand-in: ``generate`` sleeps a fixed time
per cell and batch (``--model-ms``) without holding the CPU, as a GPU forward leaves the CPU
free, and answers one token. The media side is real: reading, decoding / rendering, the
processor (``prepare_batch``, timed wherever it runs). ``off`` prepares each batch when its
turn comes (the sum); ``on`` prepares the next one in the background while the cells sleep.
Variants run interleaved in fresh processes (``harness/bench/interleave.py``): per-round
ratio off / on, median and spread, beside the ideal (media + model) / max(media, model).

On a lent GPU (``scripts/device_check.py``, stage ``prefetch``): ``--model qwen2_5_vl_7b
--device cuda --in-process`` runs the real architecture (random weights, bf16, one new token)
instead of the stand-in, off and on alternated in one process after one warm-up run (one
model build; a fresh process per run would spend the budget on building it).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import grid_inputs  # noqa: E402

DEFAULTS = {"video": {"docs": 6, "model_ms": 250.0}, "pages": {"docs": 5, "model_ms": 150.0}}


def stand_in(adapter: Any, model_ms: float) -> dict[str, float]:
    """Replace ``adapter.generate`` by a fixed sleep per call; returns its running total."""
    from harness.api.payloads import Generation

    slept = {"model_s": 0.0, "calls": 0}

    def generate(requests: list[Any], inputs: Any = None) -> list[Any]:
        time.sleep(model_ms / 1000.0)
        slept["model_s"] += model_ms / 1000.0
        slept["calls"] += 1
        return [Generation(text="A", prompt_tokens=1, output_tokens=1) for _ in requests]

    adapter.generate = generate
    return slept


def _timed_prepare() -> dict[str, float]:
    """Time ``prepare_batch`` wherever it runs (the background thread included)."""
    from harness.run import sample_major

    real, media = sample_major.prepare_batch, {"s": 0.0}

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            media["s"] += time.perf_counter() - t0

    sample_major.prepare_batch = timed
    return media


def _grid(part: str, work: Path, docs: int, frames: int, model: str, device: str) -> Any:
    if part == "video":
        return grid_inputs.video_grid(work, docs, frames, model, device)
    return grid_inputs.pages_grid(work, docs)


def _one(grid: Any, out: Path, mode: str, media: dict, slept: dict) -> dict[str, Any]:
    from harness.run.evaluator import run_grid

    media["s"], before = 0.0, slept["model_s"]
    t0 = time.perf_counter()
    run_grid(grid.spec(out), grid.adapter, prefetch=mode == "on")
    wall = time.perf_counter() - t0
    return {
        "mode": mode,
        "wall_s": round(wall, 3),
        "media_s": round(media["s"], 3),
        "model_s": round(slept["model_s"] - before, 3),
    }


def worker(part: str, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """One run of ``part`` with prefetch ``on`` or ``off`` (a fresh process each)."""
    work = Path(tempfile.mkdtemp(prefix="bench_prefetch_"))
    try:
        grid = _grid(part, work, args.docs, args.frames, args.model, args.device)
        slept = stand_in(grid.adapter, args.model_ms) if args.model == "tiny" else {"model_s": 0}
        return {"part": part, **_one(grid, work / "out", mode, _timed_prepare(), slept)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def in_process(part: str, args: argparse.Namespace) -> dict[str, Any]:
    """Prefetch off / on alternated ``repeats`` times in one process (one model build)."""
    from harness.bench.interleave import paired_ratio

    work = Path(tempfile.mkdtemp(prefix="bench_prefetch_"))
    try:
        grid = _grid(part, work, args.docs, args.frames, args.model, args.device)
        slept = stand_in(grid.adapter, args.model_ms) if args.model == "tiny" else {"model_s": 0}
        media = _timed_prepare()
        _one(grid, work / "warm", "off", media, slept)  # kernels, allocator, caches
        runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
        for i in range(args.repeats):
            for mode in ("off", "on"):
                runs[mode].append(_one(grid, work / f"{mode}{i}", mode, media, slept))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    r = paired_ratio(runs, "off", "on", "wall_s")
    media = sorted(x["media_s"] for x in runs["off"])[len(runs["off"]) // 2]
    rest = r["off_median"] - media  # the model (and the harness) when nothing overlaps
    return {
        "ideal": round(r["off_median"] / max(media, rest), 3),
        "part": part,
        "model": args.model,
        "device": args.device,
        "in_process": True,
        **r,
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", default="video,pages")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--frames", type=int, default=32)
    p.add_argument("--docs", type=int, default=None, help="documents (default per part)")
    p.add_argument("--model-ms", type=float, default=None, help="stand-in ms per cell, batch")
    p.add_argument("--model", default="tiny", help="tiny (stand-in forward) or qwen2_5_vl_7b")
    p.add_argument("--device", default="cpu", help="the real model's device (cuda)")
    p.add_argument("--in-process", action="store_true", help="alternate in one process")
    p.add_argument("--json", default=None)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # PART:MODE
    args = p.parse_args(argv)
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    if args.worker:
        part, mode = args.worker.split(":")
        _defaults(args, part)
        print(json.dumps(worker(part, mode, args)))
        return 0
    results = []
    media_cache = grid_inputs.media_cache()  # the workers write the videos once
    for part in parts:
        if args.in_process:
            _defaults(args, part)
            res = in_process(part, args)
            print(json.dumps(res))
            results.append(res)
            continue
        results.append(_interleaved(part, args))
    shutil.rmtree(media_cache, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


def _defaults(args: argparse.Namespace, part: str) -> None:
    args.docs = args.docs or DEFAULTS[part]["docs"]
    args.model_ms = args.model_ms or DEFAULTS[part]["model_ms"]


def _interleaved(part: str, args: argparse.Namespace) -> dict[str, Any]:
    from harness.bench.interleave import paired_ratio, python_worker, run_interleaved

    common = ["--frames", str(args.frames), "--model", args.model, "--device", args.device]
    if args.docs:
        common += ["--docs", str(args.docs)]
    if args.model_ms:
        common += ["--model-ms", str(args.model_ms)]
    runs = run_interleaved(
        {m: python_worker(__file__, "--worker", f"{part}:{m}", *common) for m in ("off", "on")},
        repeats=args.repeats,
    )
    r = paired_ratio(runs, "off", "on", "wall_s")
    media = [x["media_s"] for x in runs["off"] + runs["on"]]
    model = runs["off"][0]["model_s"]
    ideals = sorted((m + model) / max(m, model) for m in (x["media_s"] for x in runs["off"]))
    ideal = ideals[len(ideals) // 2]
    print(
        f"{part}: wall off / on = {r['ratio']:.2f}x (spread {r['ratio_min']:.2f}-"
        f"{r['ratio_max']:.2f}, {r['repeats']} interleaved rounds, fresh processes); "
        f"medians off {r['off_median']} s, on {r['on_median']} s; media {min(media):.1f}-"
        f"{max(media):.1f} s, model stand-in {model:.1f} s -> ideal (media + model) / "
        f"max = {ideal:.2f}x"
    )
    return {"part": part, **r, "ideal": round(ideal, 3), "runs": runs}


if __name__ == "__main__":
    raise SystemExit(main())
