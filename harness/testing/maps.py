"""A small, valid maps file (:mod:`harness.schema.maps`) for tests of its readers (the viewer).

:func:`write_example_maps` writes ``maps.json``, ``maps.npz`` and the media PNGs of three
samples per task — a box on an image, a tube over two video frames (Qwen-style temporal pairs,
``frames_per_token`` 2) and a region on the second of two pages — with made-up attention (seeded)
on a grid of 8-px token footprints, plus one newline token without a footprint per medium.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from harness.media.store import store_png
from harness.schema.maps import MapHead, Maps, MediaRef, Region, SampleMaps, TaskMaps, save_maps

__all__ = ["write_example_maps"]

CELL = 8


def _medium(root: Path, rel: str, kind: str, index: int, size: tuple[int, int]) -> MediaRef:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, (40, 40, 60))
    ImageDraw.Draw(image).ellipse([4, 4, size[0] - 5, size[1] - 5], outline=(230, 200, 40))
    stored = store_png(image, root / rel, max_side=1024)
    return MediaRef(kind, index, rel, size[0], size[1], *stored)


def _tokens(media: list[MediaRef], per_token: int) -> tuple[np.ndarray, np.ndarray]:
    """Footprints and media index of a row-major 8-px grid per medium, then one newline."""
    rects, owner = [], []
    for m, ref in enumerate(media):
        if ref.kind == "frame" and ref.index % per_token:
            continue  # this frame's tokens are the group's first frame's
        for y in range(0, ref.height - CELL + 1, CELL):
            for x in range(0, ref.width - CELL + 1, CELL):
                rects.append((x, y, x + CELL, y + CELL))
                owner.append(m)
        rects.append((np.nan,) * 4)
        owner.append(-1)
    return np.asarray(rects, dtype=np.float32), np.asarray(owner, dtype=np.int16)


def _covered(rects, owner, regions: list[Region], media, per_token: int) -> np.ndarray:
    """Tokens whose footprint overlaps a region (on a frame: its temporal group's tokens)."""
    out = np.zeros(len(owner), dtype=bool)
    for r in regions:
        ref = media[r.media]
        first = r.media - (ref.index % per_token if ref.kind == "frame" else 0)
        box = r.box or (0, 0, ref.width, ref.height)
        with np.errstate(invalid="ignore"):
            ix = np.minimum(rects[:, 2], box[2]) - np.maximum(rects[:, 0], box[0])
            iy = np.minimum(rects[:, 3], box[3]) - np.maximum(rects[:, 1], box[1])
        out |= (owner == first) & (ix > 0) & (iy > 0)
    return out


def write_example_maps(
    directory: str | os.PathLike,
    *,
    tasks: tuple[str, ...] = ("example_task",),
    num_layers: int = 2,
    num_heads: int = 4,
    seed: int = 0,
) -> Path:
    """Write an example maps file into ``directory``; returns the path of ``maps.json``."""
    root = Path(directory)
    rng = np.random.default_rng(seed)
    all_heads = [(layer, head) for layer in range(num_layers) for head in range(num_heads)]
    out = {}
    for t, name in enumerate(tasks):
        ram = rng.uniform(size=len(all_heads))
        order = [all_heads[i] for i in np.argsort(-ram, kind="stable")]
        picked = [("top", order[0]), ("bottom", order[-1]), ("random", order[1])]
        heads = tuple(
            MapHead(lh[0], lh[1], why, order.index(lh) + 1, float(ram[all_heads.index(lh)]))
            for why, lh in picked
        )
        samples = []
        for s, kind in enumerate(("box", "tube", "page")):
            rel = f"maps/media/{name}/{s}_{{}}.png"
            if kind == "box":
                media = [_medium(root, rel.format(0), "image", 0, (64, 48))]
                regions, per_token = [Region(0, (10.0, 12.0, 30.0, 40.0))], 1
            elif kind == "tube":
                media = [_medium(root, rel.format(f), "frame", f, (48, 32)) for f in range(2)]
                regions, per_token = [Region(1, (8.0, 8.0, 24.0, 20.0))], 2
            else:
                media = [_medium(root, rel.format(p), "page", p, (40, 56)) for p in range(2)]
                regions, per_token = [Region(1, None)], 1
            rects, owner = _tokens(media, per_token)
            attn = rng.dirichlet(np.ones(len(owner)), size=len(heads))
            evidence = _covered(rects, owner, regions, media, per_token)
            samples.append(
                SampleMaps(
                    key=f"t{t}s{s}",
                    doc_id=f"{name}-{s}",
                    prompt=f"Where is the {kind} evidence?",
                    media=tuple(media),
                    evidence_kind=kind,
                    regions=tuple(regions),
                    frames_per_token=per_token,
                    ram=tuple(float(x) for x in attn[:, evidence].sum(1)),
                    attn=attn.astype(np.float32),
                    rects=rects,
                    token_media=owner,
                    evidence=evidence,
                    positions=np.arange(5, 5 + len(owner), dtype=np.int32),
                )
            )
        out[name] = TaskMaps({"name": name}, heads, tuple(samples))
    settings = {"maps": 3, "top": 1, "bottom": 1, "random": 1, "seed": seed}
    settings.update({"media_max_side": 1024, "values": "example (random) attention"})
    model = {"family": "example", "dtype": "float32", "attn_implementation": "headscope"}
    return save_maps(root, Maps(model, settings, num_layers, num_heads, out))
