"""Attention maps (``headscope rank --maps N``): what chosen heads see on a few samples per task.

After the ranking, per ranked task: the heads are chosen from the task's mean RAM
(:func:`select_heads`: the top ``k``, the bottom ``k`` and ``r`` seeded random others), and for
the task's first ``N`` probed samples (the ranking's ``sample_ids``) one more recorded prefill
keeps, in the chosen heads' layers only, the mean over the instruction rows of each head's
attention row (``(1, H, S)`` per layer — the RAM probe's ``O(rows · S)`` machinery, never an
``S × S`` matrix). The values at the visual positions, each visual token's footprint in its
original image / page / frame (:meth:`token_footprints`, the evidence map's inverse), the media
as PNGs and the ground-truth evidence go to the maps file (:mod:`harness.schema.maps`).

Resume: a task whose saved heads, samples, model and settings equal what would be computed is
kept as it is; the file is rewritten (atomically) after each computed task.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.api.payloads import BoxEvidence, EvidenceError, PageEvidence, TubeEvidence
from harness.api.task import BadDoc, SampleError, build_task
from harness.probes.record import ProbeError, prefill, prepare_single, recording, span_masks
from harness.schema.maps import MapHead, MediaRef, Region, SampleMaps, TaskMaps

if TYPE_CHECKING:
    from harness.api.specs import TaskSpec
    from harness.schema.ranking import Ranking, TaskRam

__all__ = [
    "MapsConfig",
    "VALUES_NOTE",
    "check_maps_support",
    "maps_unsupported",
    "supports_maps",
    "select_heads",
    "sample_maps",
    "check_maps_files",
    "write_maps",
    "remove_maps",
]

NO_MAP_HEADS = "--maps-heads 0 and --maps-random 0 choose no head to map"
NO_MAP_HEADS_HINT = "give --maps-heads K or --maps-random R of at least 1, or --maps 0 for no maps"

VALUES_NOTE = (
    "per head, mean over the instruction rows of the post-softmax attention on each visual "
    "token (float32 softmax of the recorded rows), stored float32"
)


@dataclass(frozen=True)
class MapsConfig:
    """What to save: ``n`` samples per task; ``top``/``bottom``/``random`` heads; the seed."""

    n: int = 4
    top: int = 4
    bottom: int = 4
    random: int = 2
    seed: int = 0
    media_max_side: int = 1024

    def __post_init__(self) -> None:
        from harness.api.errors import UsageError

        if self.n > 0 and self.top + self.bottom + self.random == 0:
            raise UsageError(NO_MAP_HEADS, hint=NO_MAP_HEADS_HINT)

    def settings(self) -> dict[str, Any]:
        """The file's ``settings`` (without the model's)."""
        return {
            "maps": self.n,
            "top": self.top,
            "bottom": self.bottom,
            "random": self.random,
            "seed": self.seed,
            "media_max_side": self.media_max_side,
            "values": VALUES_NOTE,
            "head_order": "the task's mean RAM (ranking.json), ties as ablate's select=top",
            "random_draw": "numpy default_rng([seed, crc32(task)]).choice among the others",
            "samples": "the task's first `maps` ranked samples (ranking.json sample_ids)",
            "ranking": "ranking.json",
        }


def supports_maps(adapter: Any) -> bool:
    """Whether ``adapter`` gives each visual token's footprint (``token_footprints``).

    An adapter may have the method and still say it cannot answer (``gives_footprints``
    False: an HF adapter without a family unit or a footprints method of its own).
    """
    fn = getattr(adapter, "token_footprints", None)
    return callable(fn) and bool(getattr(adapter, "gives_footprints", True))


def maps_unsupported(adapter: Any) -> str:
    """Why ``adapter`` cannot save maps (one line)."""
    name = getattr(adapter, "registry_name", None) or type(adapter).__name__
    return f"model family {name!r} has no token_footprints (each visual token's pixels)"


def check_maps_support(adapter: Any) -> None:
    """Raise a :class:`~harness.api.errors.UsageError` if ``adapter`` cannot give footprints."""
    from harness.api.errors import UsageError

    if not supports_maps(adapter):
        raise UsageError(
            f"attention maps: {maps_unsupported(adapter)}",
            hint="pass --maps 0, or give the adapter token_footprints (docs/adding_a_family.md)",
        )


def select_heads(mean: Any, cfg: MapsConfig, task: str) -> tuple[MapHead, ...]:
    """Top, bottom and seeded random heads of a ``[L, H]`` mean-RAM matrix (each head once)."""
    from harness.metrics.ram import top_heads

    mean = np.asarray(mean, dtype=np.float64)
    order = top_heads(mean, mean.size)  # best first, ablate's tie rule
    rank = {h: i + 1 for i, h in enumerate(order)}
    top = order[: min(cfg.top, len(order))]
    bottom = [h for h in reversed(order) if h not in top][: cfg.bottom]
    rest = sorted(set(order) - set(top) - set(bottom))
    rng = np.random.default_rng([cfg.seed, zlib.crc32(task.encode())])
    picked = rng.choice(len(rest), size=min(cfg.random, len(rest)), replace=False)
    drawn = sorted(rest[int(i)] for i in picked)
    chosen = [("top", h) for h in top] + [("bottom", h) for h in bottom]
    chosen += [("random", h) for h in drawn]
    return tuple(
        MapHead(h.layer, h.head, why, rank[h], float(mean[h.layer, h.head])) for why, h in chosen
    )


def _media(
    request: Any, fp: Any, root: Path, rel: str, max_side: int
) -> tuple[list[MediaRef], dict]:
    """The request's media as stored PNGs, and layout source id → index in that list."""
    from harness.media.store import store_png

    shown = [("image", i, im) for i, im in enumerate(request.images)]
    shown += [("page", i, im) for i, im in enumerate(request.pages)]
    frames = request.video.frames if request.video is not None else ()
    shown += [("frame", i, im) for i, im in enumerate(frames)]
    refs, index = [], {}
    for m, (kind, i, image) in enumerate(shown):
        path = f"{rel}_{m}.png"
        stored = store_png(image, root / path, max_side)
        refs.append(MediaRef(kind, i, path, image.size[0], image.size[1], *stored))
        index[fp.frame_source(i) if kind == "frame" else m] = m  # images, pages: source = m
    return refs, index


def _regions(evidence: Any, request: Any, fp: Any, index: dict) -> tuple[str, tuple[Region, ...]]:
    def box(b: Any) -> tuple[float, ...]:
        return (float(b.x1), float(b.y1), float(b.x2), float(b.y2))

    if isinstance(evidence, BoxEvidence):
        return "box", (Region(index[evidence.image_index], box(evidence.box)),)
    if isinstance(evidence, TubeEvidence):
        frames = evidence.boxes.items()
        return "tube", tuple(Region(index[fp.frame_source(f)], box(b)) for f, b in frames)
    if isinstance(evidence, PageEvidence):
        base, out = len(request.images), []
        for page in evidence.pages:
            boxes = evidence.boxes.get(page, ())
            out += [Region(index[base + page], box(b)) for b in boxes] or [
                Region(index[base + page], None)
            ]
        return "page", tuple(out)
    raise EvidenceError(f"unsupported evidence type {type(evidence).__name__}")


def sample_maps(
    adapter: Any,
    request: Any,
    evidence: Any,
    spans: Any,
    heads: tuple[MapHead, ...],
    *,
    key: str,
    doc_id: str,
    root: Path,
    media_rel: str,
    max_side: int,
) -> SampleMaps:
    """One recorded prefill of one sample: the chosen heads' maps, footprints, media, evidence."""
    import torch

    fp = adapter.token_footprints(request)
    if tuple(fp.positions.tolist()) != tuple(spans.visual):
        raise ProbeError("token_footprints and token_spans list different visual positions")
    inputs = prepare_single(adapter, request, spans)
    length = int(inputs["input_ids"].shape[1])
    qmask, kmasks = span_masks(length, spans.instruction, {"evidence": spans.evidence})
    layers = sorted({h.layer for h in heads})
    with recording(adapter.model, qmask, kmasks, layers=layers, keep_mean=True) as recorders:
        prefill(adapter.model, inputs)
    rec = recorders["evidence"]
    missing = [layer for layer in layers if layer not in rec.mean_row]
    if missing:
        raise ProbeError(f"layers {missing} recorded no attention (not on the dispatch?)")
    pos = torch.as_tensor(fp.positions, dtype=torch.long)
    attn = np.stack([rec.mean_row[h.layer][0, h.head, pos].double().numpy() for h in heads])
    ram = tuple(float(rec.mass[h.layer][0, h.head]) for h in heads)
    media, index = _media(request, fp, root, media_rel, max_side)
    kind, regions = _regions(evidence, request, fp, index)
    token_media = np.array([index.get(int(s), -1) for s in fp.layout.source], dtype=np.int16)
    return SampleMaps(
        key=key,
        doc_id=doc_id,
        prompt=request.text,
        media=tuple(media),
        evidence_kind=kind,
        regions=regions,
        frames_per_token=int(fp.frames_per_token),
        ram=ram,
        attn=attn.astype(np.float32),
        rects=fp.layout.rects.astype(np.float32),
        token_media=token_media,
        evidence=np.isin(fp.positions, np.asarray(spans.evidence, dtype=np.int64)),
        positions=fp.positions.astype(np.int32),
    )


def _task_maps(
    adapter: Any, tspec: TaskSpec, spec: dict, heads: tuple, cfg: MapsConfig, root: Path, t: int
) -> TaskMaps:
    task = build_task(tspec.name, tspec.args)
    docs = tspec.take(task.load(split=tspec.split, limit=tspec.load_limit))
    wanted = spec["maps_doc_ids"]
    samples = []
    for doc in docs:
        if isinstance(doc, BadDoc) or str(doc.doc_id) not in wanted:
            continue
        try:
            request = task.request(doc)
            evidence = task.evidence(doc, request)
            if evidence is None:
                continue
            spans = adapter.token_spans(request, evidence)
        except (SampleError, EvidenceError):  # ranked samples map; a changed dataset may not
            continue
        if not (spans.evidence and spans.instruction):
            continue
        digest = hashlib.sha1(str(doc.doc_id).encode()).hexdigest()[:12]
        one = sample_maps(
            adapter,
            request,
            evidence,
            spans,
            heads,
            key=f"t{t}s{len(samples)}",
            doc_id=str(doc.doc_id),
            root=root,
            media_rel=f"maps/media/{tspec.name}/{digest}",
            max_side=cfg.media_max_side,
        )
        samples.append(one)
    return TaskMaps(spec=spec, heads=heads, samples=tuple(samples))


def _plan(ranking: Ranking, name: str, cfg: MapsConfig) -> tuple[dict, tuple[MapHead, ...]]:
    tram: TaskRam = ranking.tasks[name]
    ids = list(tram.sample_ids or ())[: cfg.n]
    return {**tram.spec, "maps_doc_ids": ids}, select_heads(tram.mean, cfg, name)


def check_maps_files(directory: str | Path) -> None:
    """Refuse a ``maps.json`` or ``maps.npz`` in ``directory`` that is not a regular file.

    Such a path (a folder, a device) cannot be replaced by the atomic rename that writes the
    maps; found before anything is computed, it is a usage error naming it.

    Raises:
        harness.schema.maps.MapsFormatError: naming the path.
    """
    from harness.schema.maps import MAPS_JSON, MAPS_NPZ, MapsFormatError

    for name in (MAPS_JSON, MAPS_NPZ):
        path = Path(directory) / name
        if path.exists() and not path.is_file():
            raise MapsFormatError(
                f"{path} is not a regular file, so the maps cannot be written there",
                hint="remove it, or choose another --output",
            )


def write_maps(
    adapter: Any,
    tspecs: list[TaskSpec],
    ranking: Ranking,
    output: str | Path,
    cfg: MapsConfig,
    *,
    progress: bool = True,
) -> tuple[Path, dict[str, int]]:
    """Compute (or keep, on resume) the maps of every ranked task; write ``output/maps.json``.

    Returns:
        The maps file and ``{"computed": tasks, "kept": tasks, "samples": total}``.
    """
    from harness.api.progress import track
    from harness.schema.maps import MAPS_JSON, Maps, MapsFormatError, load_maps, save_maps

    check_maps_support(adapter)
    root = Path(output)
    check_maps_files(root)  # a folder named maps.npz: refused before the maps are computed
    model = json.loads(json.dumps(dict(adapter.settings()), default=str))
    settings = cfg.settings()
    settings.update(attn_implementation=model.get("attn_implementation"), dtype=model.get("dtype"))
    old = None
    if (root / MAPS_JSON).exists():
        try:
            old = load_maps(root)
        except MapsFormatError:
            old = None  # an interrupted or foreign file: computed again
        if old is not None and (old.model, old.settings) != (model, settings):
            old = None
    names = [t.name for t in tspecs if t.name in ranking.tasks]
    specs = {t.name: t for t in tspecs}
    tasks: dict[str, TaskMaps] = {}
    counts = {"computed": 0, "kept": 0, "samples": 0}
    geometry = (ranking.num_layers, ranking.num_heads)
    items = track(names, "maps", enabled=progress)
    try:
        for t, name in enumerate(items):
            spec, heads = _plan(ranking, name, cfg)
            prev = old.tasks.get(name) if old is not None else None
            if prev is not None and prev.spec == spec and prev.heads == heads:
                tasks[name] = prev
                counts["kept"] += 1
                continue
            tasks[name] = _task_maps(adapter, specs[name], spec, heads, cfg, root, t)
            counts["computed"] += 1
            save_maps(root, Maps(model, settings, *geometry, _rekeyed(tasks)))
    finally:
        items.close()
    counts["samples"] = sum(len(t.samples) for t in tasks.values())
    if counts["computed"] or old is None or list(old.tasks) != names:
        save_maps(root, Maps(model, settings, *geometry, _rekeyed(tasks)))
    return root / MAPS_JSON, counts


def _rekeyed(tasks: dict[str, TaskMaps]) -> dict[str, TaskMaps]:
    """Sample keys ``t<task>s<sample>`` by position (kept tasks may have moved)."""
    return {
        name: replace(
            task,
            samples=tuple(replace(s, key=f"t{t}s{i}") for i, s in enumerate(task.samples)),
        )
        for t, (name, task) in enumerate(tasks.items())
    }


def remove_maps(output: str | Path) -> list[Path]:
    """Remove the attention maps an earlier rank wrote into ``output``; returns what went.

    Called when a rank writes a new ranking without maps: the earlier ones belong to the
    earlier ranking. Only what a headscope maps index names is removed: ``maps.json`` (first,
    so no reader finds it without its arrays), its ``maps.npz`` and the PNGs its samples list
    under ``maps/``, then the folders that left empty. A ``maps.json`` that is not headscope's
    keeps everything.
    """
    from harness.schema.maps import MAPS_FORMAT, MAPS_JSON, MAPS_NPZ

    root = Path(output)
    try:
        doc = json.loads((root / MAPS_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(doc, dict) or doc.get("format") != MAPS_FORMAT:
        return []
    media_root = (root / "maps").resolve()
    names = [MAPS_JSON, MAPS_NPZ]
    try:  # media only in the rank folder's own maps/; a damaged index: its media stay
        tasks = [] if (root / "maps").is_symlink() else doc["tasks"].values()
        names += [m["path"] for t in tasks for s in t["samples"] for m in s["media"]]
    except (KeyError, TypeError, AttributeError):
        pass
    removed = []
    for name in (n for n in names if isinstance(n, str)):
        path = root / name
        inside = name in (MAPS_JSON, MAPS_NPZ) or path.resolve().is_relative_to(media_root)
        if inside and path.is_file() and not path.is_symlink():
            path.unlink()
            removed.append(path)
    if (root / "maps").is_dir() and not (root / "maps").is_symlink():
        for folder in sorted(media_root.rglob("*"), key=lambda f: -len(f.parts)):
            if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
                folder.rmdir()
        if not any(media_root.iterdir()):
            media_root.rmdir()
    return removed
