"""The attention-maps file: what chosen heads attend to on a few samples per ranked task.

``headscope rank --maps N`` (and the main job's stage 1) writes, beside ``ranking.json``, a pair
of files and the media they show (all paths relative to the folder holding ``maps.json``)::

    maps.json            the typed index (below)
    maps.npz             the arrays (numpy .npz, no pickles), keys "<sample key>.<array>"
    maps/media/<task>/<i>_<m>.png   each shown image / page / video frame, written once

``maps.json``::

    {"format": "headscope.maps", "version": 1,
     "geometry": {"num_layers": L, "num_heads": H},
     "model": {...adapter settings...},
     "settings": {"maps": N, "top": k, "bottom": k, "random": r, "seed": s,
                  "media_max_side": 1024, "values": "...", "attn_implementation": ...,
                  "dtype": ..., "ranking": "ranking.json"},
     "arrays": {"file": "maps.npz", "sha256": "<hex of the npz bytes>"},
     "tasks": {task: {
        "spec": {...the ranking's task spec...},
        "heads": [{"layer": l, "head": h, "why": "top" | "bottom" | "random",
                   "rank": r (1 = highest mean RAM of the task), "ram": mean RAM}, ...K],
        "samples": [{
           "key": "t0s0", "doc_id": "...", "prompt": "...the question text...",
           "media": [{"kind": "image" | "page" | "frame", "index": i, "path": "maps/media/...",
                      "width": W, "height": H, "stored_width": w, "stored_height": h}, ...],
           "evidence": {"kind": "box" | "tube" | "page",
                        "regions": [{"media": m, "box": [x1, y1, x2, y2] | null}, ...]},
           "frames_per_token": 1 | 2,
           "n_tokens": V,
           "ram": [RAM of this sample for each of the K heads]}, ...]}}}

Per sample, ``maps.npz`` holds (V = the sample's visual tokens, in input order):

- ``<key>.attn`` float32 ``[K, V]``: per selected head (the order of ``heads``), the mean over
  the instruction (question) rows of the post-softmax attention on each visual token (float32
  softmax of the recorded rows, as the RAM probe computes it). Summed over the evidence tokens
  it is the sample's RAM of that head (``ram``, up to float32 rounding). float32, not float16:
  low-RAM heads put ~1e-10 on a token, which float16 flushes to zero.
- ``<key>.rects`` float32 ``[V, 4]``: each token's footprint ``x1, y1, x2, y2`` (x2/y2
  exclusive) in **original** pixels of its medium: the pixels whose content reaches the token,
  the inverse of the evidence map (a box equal to a footprint selects that token). NaN rows:
  tokens without a footprint (row newlines, CLS, a video's trailing newline).
- ``<key>.media`` int16 ``[V]``: index of the token's medium in the sample's ``media`` list
  (−1: none). For video, ``frames_per_token`` > 1 means a token drawn on frame ``f`` covers
  frames ``f … f + frames_per_token − 1`` too (Qwen's temporal patches of two frames; the
  token's ``media`` is the group's first frame).
- ``<key>.evidence`` bool ``[V]``: the token is in Ω(V*), the evidence tokens of the probe.
- ``<key>.positions`` int32 ``[V]``: the token's position in the model input.

Media coordinates: footprints and evidence boxes are in the medium's original pixels
(``width`` × ``height``); the PNG is that medium scaled to ``stored_width`` × ``stored_height``
(longest side at most ``media_max_side``), so a viewer multiplies x by ``stored_width / width``
and y by ``stored_height / height``. Evidence ``box: null`` is the whole medium (a page).

Writes are atomic: the npz first, then the JSON that names its SHA-256; a reader that finds
them disagreeing (an interrupted rewrite) raises :class:`MapsFormatError`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.api.errors import UsageError
from harness.api.heads import head_label

__all__ = [
    "MAPS_FORMAT",
    "MAPS_VERSION",
    "MAPS_JSON",
    "MAPS_NPZ",
    "REQUIRED_SETTINGS",
    "MapsFormatError",
    "MapHead",
    "MediaRef",
    "Region",
    "SampleMaps",
    "TaskMaps",
    "Maps",
    "save_maps",
    "load_maps",
]

MAPS_FORMAT = "headscope.maps"
MAPS_VERSION = 1
MAPS_JSON = "maps.json"
MAPS_NPZ = "maps.npz"
_BAD_ZIP = (zipfile.BadZipFile, zlib.error)  # an npz that is not a zip, or a damaged one
#: Settings that decide what the file holds; recorded in every maps file.
REQUIRED_SETTINGS = ("maps", "top", "bottom", "random", "seed", "media_max_side", "values")
WHY = ("top", "bottom", "random")
MEDIA_KINDS = ("image", "page", "frame")
EVIDENCE_KINDS = ("box", "tube", "page")
_ARRAYS = {"attn": np.float32, "rects": np.float32, "media": np.int16}
_ARRAYS.update({"evidence": np.bool_, "positions": np.int32})


class MapsFormatError(UsageError):
    """A maps file (in memory or on disk) that does not follow the format."""


@dataclass(frozen=True)
class MapHead:
    """A selected head: ``why`` it was chosen and its place in the task's RAM order."""

    layer: int
    head: int
    why: str
    rank: int
    ram: float

    @property
    def label(self) -> str:
        """Printed form, ``L12H3``."""
        return head_label(self.layer, self.head)


@dataclass(frozen=True)
class MediaRef:
    """One shown medium: its PNG (relative to the maps folder) and its two pixel sizes."""

    kind: str
    index: int
    path: str
    width: int
    height: int
    stored_width: int
    stored_height: int


@dataclass(frozen=True)
class Region:
    """Ground-truth evidence on medium ``media``: a box in its original pixels, or all of it."""

    media: int
    box: tuple[float, float, float, float] | None


@dataclass(frozen=True, eq=False)
class SampleMaps:
    """One sample's maps (arrays as in the module docstring)."""

    key: str
    doc_id: str
    prompt: str
    media: tuple[MediaRef, ...]
    evidence_kind: str
    regions: tuple[Region, ...]
    frames_per_token: int
    ram: tuple[float, ...]
    attn: np.ndarray
    rects: np.ndarray
    token_media: np.ndarray
    evidence: np.ndarray
    positions: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        """The npz entries of this sample."""
        named = {"attn": self.attn, "rects": self.rects, "media": self.token_media}
        named.update({"evidence": self.evidence, "positions": self.positions})
        return {f"{self.key}.{k}": np.asarray(v, dtype=_ARRAYS[k]) for k, v in named.items()}

    def validate(self, where: str, n_heads: int) -> None:
        """Raise :class:`MapsFormatError` on inconsistent shapes or references."""
        v = len(self.positions)
        want = {"attn": (n_heads, v), "rects": (v, 4), "token_media": (v,), "evidence": (v,)}
        for name, shape in want.items():
            if np.shape(getattr(self, name)) != shape:
                got = np.shape(getattr(self, name))
                raise MapsFormatError(f"{where}: {name} has shape {got}, expected {shape}")
        if len(self.ram) != n_heads:
            raise MapsFormatError(f"{where}: {len(self.ram)} RAM values for {n_heads} heads")
        if self.evidence_kind not in EVIDENCE_KINDS:
            raise MapsFormatError(f"{where}: evidence kind {self.evidence_kind!r}")
        n_media = len(self.media)
        tm = np.asarray(self.token_media)
        if tm.size and (tm.min() < -1 or tm.max() >= n_media):
            raise MapsFormatError(f"{where}: token media index outside the {n_media} media")
        if any(not 0 <= r.media < n_media for r in self.regions):
            raise MapsFormatError(f"{where}: evidence on a medium outside the {n_media} media")
        for m in self.media:
            if m.kind not in MEDIA_KINDS or min(m.width, m.height) < 1:
                raise MapsFormatError(f"{where}: bad medium {m}")
        if self.frames_per_token < 1:
            raise MapsFormatError(f"{where}: frames_per_token must be ≥ 1")


@dataclass(frozen=True, eq=False)
class TaskMaps:
    """The selected heads of one task and its saved samples."""

    spec: dict
    heads: tuple[MapHead, ...]
    samples: tuple[SampleMaps, ...]


@dataclass(frozen=True, eq=False)
class Maps:
    """Attention maps of one model over its ranked tasks (see the module docstring)."""

    model: dict
    settings: dict
    num_layers: int
    num_heads: int
    tasks: dict[str, TaskMaps]
    version: int = MAPS_VERSION

    def validate(self) -> None:
        """Raise :class:`MapsFormatError` on any inconsistency."""
        if self.version != MAPS_VERSION:
            raise MapsFormatError(f"unsupported maps version {self.version!r}")
        missing = [k for k in REQUIRED_SETTINGS if k not in self.settings]
        if missing:
            raise MapsFormatError(f"settings lack {missing} (required: {REQUIRED_SETTINGS})")
        keys: set[str] = set()
        for name, task in self.tasks.items():
            for h in task.heads:
                if not (0 <= h.layer < self.num_layers and 0 <= h.head < self.num_heads):
                    raise MapsFormatError(f"task {name!r}: head {h.label} outside the model")
                if h.why not in WHY:
                    raise MapsFormatError(f"task {name!r}: head {h.label} why={h.why!r}")
            for s in task.samples:
                if s.key in keys:
                    raise MapsFormatError(f"sample key {s.key!r} used twice")
                keys.add(s.key)
                s.validate(f"task {name!r} doc {s.doc_id!r}", len(task.heads))

    def to_dict(self, arrays: dict[str, Any]) -> dict:
        """The JSON document (``arrays``: the ``{"file", "sha256"}`` of the npz)."""
        return {
            "format": MAPS_FORMAT,
            "version": self.version,
            "geometry": {"num_layers": self.num_layers, "num_heads": self.num_heads},
            "model": self.model,
            "settings": self.settings,
            "arrays": arrays,
            "tasks": {name: _task_doc(t) for name, t in self.tasks.items()},
        }


def _task_doc(task: TaskMaps) -> dict:
    heads = [
        {"layer": h.layer, "head": h.head, "why": h.why, "rank": h.rank, "ram": h.ram}
        for h in task.heads
    ]
    samples = []
    for s in task.samples:
        regions = [
            {"media": r.media, "box": None if r.box is None else list(r.box)} for r in s.regions
        ]
        samples.append(
            {
                "key": s.key,
                "doc_id": s.doc_id,
                "prompt": s.prompt,
                "media": [dict(m.__dict__) for m in s.media],
                "evidence": {"kind": s.evidence_kind, "regions": regions},
                "frames_per_token": s.frames_per_token,
                "n_tokens": int(len(s.positions)),
                "ram": [float(x) for x in s.ram],
            }
        )
    return {"spec": task.spec, "heads": heads, "samples": samples}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def save_maps(directory: str | os.PathLike, maps: Maps) -> Path:
    """Validate and write ``maps.npz`` then ``maps.json`` into ``directory``, each atomically.

    Returns:
        The path of ``maps.json``.
    """
    from harness.schema.results import replace_atomically, write_json_atomic

    maps.validate()
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    for task in maps.tasks.values():
        for s in task.samples:
            arrays.update(s.arrays())
    replace_atomically(root / MAPS_NPZ, lambda fh: np.savez(fh, **arrays), binary=True)
    doc = maps.to_dict({"file": MAPS_NPZ, "sha256": _sha256(root / MAPS_NPZ)})
    write_json_atomic(root / MAPS_JSON, doc, indent=1, allow_nan=False)
    return root / MAPS_JSON


def load_maps(path: str | os.PathLike) -> Maps:
    """Read and validate a maps file (``maps.json`` or the folder holding it).

    Raises:
        MapsFormatError: Not a maps file, another version, missing or mismatched arrays.
    """
    target = Path(path)
    if target.is_dir():
        target = target / MAPS_JSON
    try:
        doc = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as err:
        raise MapsFormatError(f"{target}: cannot read ({err})") from err
    try:
        return _from_doc(doc, target.parent)
    except MapsFormatError as err:
        raise MapsFormatError(f"{target}: {err}") from err
    # + numpy's reader on an npz that is not one (a foreign or truncated zip, pickled data)
    except (KeyError, TypeError, ValueError, AttributeError, OSError, EOFError, *_BAD_ZIP) as err:
        raise MapsFormatError(
            f"{target}: malformed maps file ({type(err).__name__}: {err})"
        ) from err


def _from_doc(doc: Any, root: Path) -> Maps:
    if not isinstance(doc, dict) or doc.get("format") != MAPS_FORMAT:
        raise MapsFormatError(f"not a headscope maps file (need format={MAPS_FORMAT!r})")
    if doc.get("version") != MAPS_VERSION:
        raise MapsFormatError(
            f"unsupported maps version {doc.get('version')!r} (this headscope reads {MAPS_VERSION})"
        )
    name = str(doc["arrays"]["file"])
    if Path(name).name != name or name in ("", ".", ".."):
        raise MapsFormatError(f"arrays file {name!r} is not a file name beside the maps file")
    npz = root / name
    if not npz.is_file() or _sha256(npz) != doc["arrays"]["sha256"]:
        raise MapsFormatError(f"{npz.name} is missing or does not match (interrupted write?)")
    with np.load(npz, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    tasks = {}
    for name, entry in doc["tasks"].items():
        heads = tuple(
            MapHead(int(h["layer"]), int(h["head"]), str(h["why"]), int(h["rank"]), float(h["ram"]))
            for h in entry["heads"]
        )
        samples = tuple(_sample(s, arrays) for s in entry["samples"])
        tasks[name] = TaskMaps(spec=dict(entry["spec"]), heads=heads, samples=samples)
    geometry = doc["geometry"]
    maps = Maps(
        model=dict(doc["model"]),
        settings=dict(doc["settings"]),
        num_layers=int(geometry["num_layers"]),
        num_heads=int(geometry["num_heads"]),
        tasks=tasks,
        version=doc["version"],
    )
    maps.validate()
    return maps


def _sample(entry: dict, arrays: dict[str, np.ndarray]) -> SampleMaps:
    key = str(entry["key"])
    missing = [k for k in _ARRAYS if f"{key}.{k}" not in arrays]
    if missing:
        raise MapsFormatError(f"sample {key!r}: arrays {missing} are not in the npz")
    ev = entry["evidence"]
    regions = tuple(
        Region(int(r["media"]), None if r["box"] is None else tuple(float(x) for x in r["box"]))
        for r in ev["regions"]
    )
    ram = tuple(math.nan if x is None else float(x) for x in entry["ram"])
    return SampleMaps(
        key=key,
        doc_id=str(entry["doc_id"]),
        prompt=str(entry["prompt"]),
        media=tuple(MediaRef(**m) for m in entry["media"]),
        evidence_kind=str(ev["kind"]),
        regions=regions,
        frames_per_token=int(entry["frames_per_token"]),
        ram=ram,
        attn=arrays[f"{key}.attn"],
        rects=arrays[f"{key}.rects"],
        token_media=arrays[f"{key}.media"],
        evidence=arrays[f"{key}.evidence"],
        positions=arrays[f"{key}.positions"],
    )
