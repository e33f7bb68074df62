"""Inputs of the grid benches (``bench_grid.py``, ``bench_prefetch.py``): models, data, cells.

- ``toy``: the toy main job's accuracy grid (its ranking made first, untimed; the eight mini
  tasks, the main job's 22 cells, batch 16).
- ``video``: a tiny Qwen2.5-VL (real patch / merge / temporal geometry, tiny widths) with its
  real processor class at Qwen2.5-VL's own video budget (128–768 merged tokens per frame) on
  Video-MME rows over two generated H.264 videos, 448×448 and 640×360 (1,800 frames: one
  minute at 30 fps, a Video-MME "short" video; keyframe every 250 frames, x264's default).
- ``pages``: the same model on MMLongBench-Doc rows over US-Letter PDFs rendered at the
  task's 144 dpi (1224×1584 px, up to 16,384 merged tokens per image: Qwen2.5-VL's budget).

:func:`timers` splits wall time with class-level timers: ``media`` = ``task.request``
(reading, video decode, PDF render), ``processor`` = ``HFAdapter.prepare`` (chat template,
resize, patchify, tokenise), ``vision`` = the model's own ``get_image_features`` /
``get_video_features`` when they really run.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
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


@dataclass
class Grid:
    """One grid of a bench: the adapter, the task specs, the cells, their batch size."""

    adapter: Any
    tasks: tuple[Any, ...]
    cells: tuple[Any, ...]
    task_names: list[str]
    batch_size: int = 1
    description: str = ""
    gen_kwargs: dict[str, Any] | None = None

    def spec(self, output: Path) -> Any:
        """The grid's RunSpec writing into ``output``."""
        from harness.api.specs import ModelSpec, RunSpec

        return RunSpec(
            model=ModelSpec(name="toy"),
            tasks=self.tasks,
            interventions=self.cells,
            batch_size=self.batch_size,
            output=str(output),
            gen_kwargs=dict(self.gen_kwargs or {}),
        )


@contextmanager
def timers(classes: dict[str, list[tuple[type, str]]]) -> Iterator[dict[str, float]]:
    """Accumulate wall seconds per group of class methods (outermost call per thread only)."""
    spent = dict.fromkeys(classes, 0.0)
    local = threading.local()
    lock = threading.Lock()
    saved = []
    for group, targets in classes.items():
        for cls, name in targets:
            owner = next((k for k in cls.__mro__ if name in k.__dict__), None)
            if owner is None or any(o is owner and n == name for o, n, _ in saved):
                continue
            fn = owner.__dict__[name]

            def timed(*args: Any, __fn=fn, __group=group, **kwargs: Any) -> Any:
                if getattr(local, "depth", 0):
                    return __fn(*args, **kwargs)
                local.depth = 1
                t0 = time.perf_counter()
                try:
                    return __fn(*args, **kwargs)
                finally:
                    with lock:
                        spent[__group] += time.perf_counter() - t0
                    local.depth = 0

            saved.append((owner, name, fn))
            setattr(owner, name, functools.wraps(fn)(timed))
    try:
        yield spent
    finally:
        for cls, name, fn in saved:
            setattr(cls, name, fn)


def grid_timers(grid: Grid) -> Any:
    """:func:`timers` over the grid's media, processor and vision functions."""
    from harness.api.registry import TASKS
    from harness.models.hf import HFAdapter

    base = type(grid.adapter.model.base_model)
    return timers(
        {
            "media": [(TASKS.get(n), "request") for n in grid.task_names],
            "processor": [(HFAdapter, "prepare")],
            "vision": [(base, "get_image_features"), (base, "get_video_features")],
        }
    )


def toy_grid(work: Path, n: int) -> Grid:
    """The toy main job's accuracy grid (ranking made here, untimed)."""
    from harness.api.model import load_adapter
    from harness.api.specs import ModelSpec
    from harness.api.task import grounded_tasks
    from harness.probes.rank import run_rank
    from harness.run.protocol import ProtocolConfig, grid_interventions, task_spec

    cfg = ProtocolConfig(n_eval=n, n_rank=n)
    adapter = load_adapter(ModelSpec(name="toy"))
    rank_specs = [task_spec(t, cfg.n_rank, cfg) for t in grounded_tasks(cfg.tasks)]
    run_rank(adapter, rank_specs, work / "rank", seed=0, progress=False, plots=False)
    tasks = tuple(task_spec(t, cfg.n_eval, cfg) for t in cfg.tasks)
    cells = tuple(grid_interventions(cfg, work / "rank" / "ranking.json", 24))
    return Grid(
        adapter,
        tasks,
        cells,
        list(cfg.tasks),
        cfg.batch_size,
        f"toy main job ({len(cells)} cells × {len(tasks)} tasks, {n} docs each)",
    )


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


def media_cache() -> Path:
    """A fresh ``BENCH_MEDIA_CACHE`` folder for this process's workers (the caller removes it)."""
    import os
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="bench_media_"))
    os.environ["BENCH_MEDIA_CACHE"] = str(path)
    return path


def write_video(path: Path, width: int, height: int, n: int, gop: int = 60) -> None:
    """An H.264 video of ``n`` synthetic frames (keyframe every ``gop``).

    With ``BENCH_MEDIA_CACHE`` set (the bench drivers set it for their workers), the file is
    written once into that folder and copied from there by later processes: generating and
    encoding two one-minute videos costs minutes on a loaded machine, outside the timed part.
    """
    import os
    import shutil

    cache = os.environ.get("BENCH_MEDIA_CACHE")
    if cache:
        cached = Path(cache) / f"{width}x{height}_{n}_{gop}.mp4"
        if not cached.exists():
            tmp = cached.with_suffix(".tmp.mp4")
            _encode(tmp, width, height, n, gop)
            tmp.replace(cached)
        shutil.copyfile(cached, path)
        return
    _encode(path, width, height, n, gop)


def _encode(path: Path, width: int, height: int, n: int, gop: int) -> None:
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


def qwen25(vocab: int = 512) -> Any:
    """A tiny Qwen2.5-VL with its real processor class at the released budgets."""
    from harness.models.offline.qwen import qwen_processor
    from harness.models.qwen2_5_vl import Qwen2_5_VLAdapter
    from harness.testing.tiny import build_tiny_model

    processor = qwen_processor(
        "qwen2_5_vl", vocab, image_tokens=(4, 16384), video_tokens=(128, 768)
    )
    return Qwen2_5_VLAdapter.from_parts(build_tiny_model("qwen2_5_vl"), processor)


def real_qwen25(name: str = "qwen2_5_vl_7b", device: str = "cuda", dtype: str = "bfloat16") -> Any:
    """The real Qwen2.5-VL-7B architecture, random weights, with its processor at real budgets.

    The processor's offline byte tokenizer puts its special tokens at the ids the config is
    given (``harness.bench.real_models``); a lent GPU only (15 GiB of bf16 weights).
    """
    import torch

    from harness.bench.real_models import build_config, build_model, load_config_dict
    from harness.models.offline.qwen import qwen_processor
    from harness.models.offline.tokenizer import special_token_ids
    from harness.models.qwen2_5_vl import Qwen2_5_VLAdapter

    name, _, shrink = name.partition(":")  # NAME:shrink: every tower tiny (a CPU check)
    family, cfg = load_config_dict(name)
    vocab = cfg["vocab_size"]
    processor = qwen_processor(family, vocab, image_tokens=(4, 16384), video_tokens=(128, 768))
    config = build_config(name, bool(shrink), ids=special_token_ids(family, vocab))
    net = build_model(family, config, getattr(torch, dtype), device)
    return Qwen2_5_VLAdapter.from_parts(net, processor)


def video_grid(
    work: Path, docs: int, frames: int, model: str = "tiny", device: str = "cpu"
) -> Grid:
    """Video-MME rows over two one-minute videos, the 16 real cells, batch 1.

    ``model``: ``tiny`` (CPU) or ``qwen2_5_vl_7b`` (:func:`real_qwen25` on ``device``; one new
    token per answer).
    """
    from harness.api.specs import TaskSpec, parse_intervention
    from tests.fixtures import make_video_fixtures as vfx

    args = vfx.make_videomme(work / "videomme")
    for name, (w, h) in {"fixture1": (448, 448), "fixture2": (640, 360)}.items():
        write_video(Path(args["video_root"]) / "data" / f"{name}.mp4", w, h, 1800, gop=250)
    tasks = (TaskSpec("videomme", args=dict(args, num_frames=frames), limit=docs),)
    cells = tuple(parse_intervention(c) for c in REAL_CELLS)
    desc = (
        f"{model} Qwen2.5-VL, Video-MME, {frames} frames 448x448 / 640x360, {docs} docs, "
        f"{len(cells)} cells"
    )
    if model == "tiny":
        return Grid(qwen25(), tasks, cells, ["videomme"], 1, desc)
    adapter = real_qwen25(model, device)
    return Grid(adapter, tasks, cells, ["videomme"], 1, desc, {"max_new_tokens": 1})


def pages_grid(work: Path, docs: int) -> Grid:
    """MMLongBench-Doc rows over US-Letter PDFs at 144 dpi, the 16 real cells, batch 1."""
    from harness.api.specs import TaskSpec, parse_intervention
    from tests.fixtures import make_image_doc_fixtures as ifx

    args = ifx.make_mmlongbench(work / "mmlb")
    for name, n in ifx.PDF_PAGES.items():  # the fixture's PDFs at US-Letter size
        ifx.make_pdf(Path(args["doc_dir"]) / name, n, size=(612, 792))
    tasks = (TaskSpec("mmlongbench_doc", args=args, limit=docs),)
    cells = tuple(parse_intervention(c) for c in REAL_CELLS)
    desc = f"tiny Qwen2.5-VL, MMLongBench-Doc pages at 144 dpi, {docs} docs, {len(cells)} cells"
    return Grid(qwen25(), tasks, cells, ["mmlongbench_doc"], 1, desc)
