"""Deterministic scenes of coloured shapes: the data of the embedded ``toy`` model's mini tasks.

Everything here is torch-free (PIL, stdlib) so task modules can import it cheaply.

A scene is a 64×64 RGB image on a grey canvas (the CLIP pixel mean: a white canvas does not
train), divided into a 4×4 grid of 16-px cells, i.e. exactly the vision tower's patches. Each
object fills one cell, inset by 2 px, so an object's evidence is exactly one image token.
Document pages also carry "text" decoys (three dark lines in a cell).

Splits are disjoint twice over: every sample is drawn from its own random stream named by
(kind, split, seed, index) ("seed space"), and a sample is kept only if the hash of its content
falls in its split's partition (80% train, 10% validation, 10% test), so no validation or test
scene/question can ever occur in training, whatever the seeds.

Public API: :func:`generate_samples`, :func:`generate_sample`, :class:`MiniSample`,
:class:`SceneObject`, :func:`normalised_box_text`, constants ``KINDS``, ``SPLITS``, ``COLORS``,
``SHAPES``, ``IMAGE_SIZE``, ``GRID``, ``CELL``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = [
    "KINDS",
    "SPLITS",
    "COLORS",
    "SHAPES",
    "IMAGE_SIZE",
    "GRID",
    "CELL",
    "CANVAS_RGB",
    "SceneObject",
    "MiniSample",
    "generate_samples",
    "generate_sample",
    "normalised_box_text",
    "cell_box",
    "box_cell",
    "render",
]

KINDS = ("pope", "refcocog", "mmmu", "vidstg", "mlvu", "videomme", "mmlongbench", "mmdocir")
SPLITS = ("train", "validation", "test")
IMAGE_SIZE = 64
GRID = 4
CELL = IMAGE_SIZE // GRID
INSET = 2
# CLIP's pixel mean (0.481, 0.458, 0.408) × 255: the normalised canvas is ~0.
CANVAS_RGB = (123, 117, 104)
TEXT_RGB = (70, 70, 70)
COLORS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "green": (30, 170, 40),
    "blue": (30, 60, 225),
    "yellow": (235, 215, 30),
    "white": (250, 250, 250),
    "black": (10, 10, 10),
}
SHAPES = ("circle", "square", "triangle")
TEXT = "text"  # shape name of a document's text decoy (colour "grey")
# Content-hash buckets out of 10 per split.
_PARTITION = {"train": range(0, 8), "validation": range(8, 9), "test": range(9, 10)}
_MAX_TRIES = 10_000

Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class SceneObject:
    """One drawn thing: a coloured shape, or a text decoy (shape ``"text"``).

    Attributes:
        color: Colour name (key of ``COLORS``; ``"grey"`` for text decoys).
        shape: One of ``SHAPES`` or ``"text"``.
        cell: (row, col) in the 4×4 grid; the object's one vision token is ``row * 4 + col``.
    """

    color: str
    shape: str
    cell: tuple[int, int]

    @property
    def name(self) -> str:
        """Words naming the object, e.g. ``"red circle"``."""
        return f"{self.color} {self.shape}"

    @property
    def box(self) -> Box:
        """Pixel box xyxy (x2/y2 exclusive) the object is drawn in."""
        return cell_box(*self.cell)


@dataclass(frozen=True)
class MiniSample:
    """One mini-task sample, in the exact form the toy model is trained on.

    Attributes:
        doc_id: Unique id ``"{kind}-{split}-{seed}-{index:06d}"``.
        kind: One of ``KINDS``.
        split: One of ``SPLITS``.
        images: The image (1), the frames (video kinds) or the pages (document kinds).
        question: Full instruction text (options included for multiple choice).
        answer: Target output string (see the module docs of each kind's format).
        options: Option texts for multiple choice (letters A.. in order), else ``()``.
        box: Evidence box on image 0 (pope when present, refcocog, mmmu) or on the evidence page
            (documents), xyxy pixels, x2/y2 exclusive; ``None`` otherwise.
        span: Video temporal span (start, end_exclusive) in frame positions (vidstg), else None.
        frame_boxes: Box per frame position of the span (vidstg), else empty.
        evidence_page: 0-based evidence page (documents), else None.
        evidence: Every evidence region as (image_index, box) pairs (all kinds; empty for a
            pope "no"): the tokens RAM should treat as Ω(V*) at object level.
        task_type: Question type (mlvu: needle/count/order; videomme: Video-MME style types;
            mmmu: colour/object; mmlongbench: object/colour; others: the kind).
        duration: Video-MME style bucket ("short": 2 frames, "medium": 4 frames), else "".
        category: POPE negative-sampling category (random/popular/adversarial), else "".
        sentence_type: VidSTG "declarative" or "interrogative", else "".
        answer_format: MMLongBench style answer format ("Str"/"Int"), else "".
        layout: Per image, the objects drawn on it.
    """

    doc_id: str
    kind: str
    split: str
    images: tuple[Image, ...]
    question: str
    answer: str
    options: tuple[str, ...] = ()
    box: Box | None = None
    span: tuple[int, int] | None = None
    frame_boxes: dict[int, Box] = field(default_factory=dict)
    evidence_page: int | None = None
    evidence: tuple[tuple[int, Box], ...] = ()
    task_type: str = ""
    duration: str = ""
    category: str = ""
    sentence_type: str = ""
    answer_format: str = ""
    layout: tuple[tuple[SceneObject, ...], ...] = ()


def cell_box(row: int, col: int) -> Box:
    """Pixel box (x2/y2 exclusive) of the object drawn in grid cell (row, col)."""
    return (
        col * CELL + INSET,
        row * CELL + INSET,
        (col + 1) * CELL - INSET,
        (row + 1) * CELL - INSET,
    )


def box_cell(box: Box) -> tuple[int, int]:
    """Grid cell (row, col) of an object box drawn by :func:`cell_box` (its inverse)."""
    return box[1] // CELL, box[0] // CELL


def normalised_box_text(box: Box, size: int = IMAGE_SIZE) -> str:
    """The toy convention for a box in text: ``"[x1, y1, x2, y2]"`` in [0, 1], two decimals."""
    return "[" + ", ".join(f"{v / size:.2f}" for v in box) + "]"


def render(objects: tuple[SceneObject, ...]) -> Image:
    """Draw one 64×64 image of ``objects`` on the grey canvas."""
    from PIL import Image as PILImage
    from PIL import ImageDraw

    img = PILImage.new("RGB", (IMAGE_SIZE, IMAGE_SIZE), CANVAS_RGB)
    draw = ImageDraw.Draw(img)
    for obj in objects:
        x1, y1, x2, y2 = obj.box
        # PIL's shape boxes are inclusive: the last drawn pixel is x2 - 1.
        x2, y2 = x2 - 1, y2 - 1
        if obj.shape == "circle":
            draw.ellipse((x1, y1, x2, y2), fill=COLORS[obj.color])
        elif obj.shape == "square":
            draw.rectangle((x1, y1, x2, y2), fill=COLORS[obj.color])
        elif obj.shape == "triangle":
            draw.polygon([(x1, y2), (x2, y2), ((x1 + x2) / 2, y1)], fill=COLORS[obj.color])
        elif obj.shape == TEXT:
            for y in (y1 + 1, y1 + 5, y1 + 9):
                draw.line((x1, y, x2 - (y % 3), y), fill=TEXT_RGB, width=1)
        else:
            raise ValueError(f"unknown shape {obj.shape!r}")
    return img


def _content_bucket(kind: str, spec: dict[str, Any]) -> int:
    key = repr((kind, spec["question"], spec["answer"], spec.get("options", ()), spec["layout"]))
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % 10


def generate_sample(kind: str, split: str, index: int, seed: int = 0) -> MiniSample:
    """Generate sample number ``index`` of ``kind``/``split`` (same arguments, same sample).

    Args:
        kind: One of ``KINDS``.
        split: One of ``SPLITS``.
        index: Sample position (≥ 0); each index has its own random stream.
        seed: Dataset seed; different seeds give different datasets.

    Returns:
        The sample, images rendered.
    """
    from harness.toy.builders import BUILDERS

    if kind not in KINDS:
        raise ValueError(f"unknown toy kind {kind!r}; expected one of {KINDS}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    build: Callable[[random.Random], dict[str, Any]] = BUILDERS[kind]
    rng = random.Random(f"headscope-toy|{kind}|{split}|{seed}|{index}")
    for _ in range(_MAX_TRIES):
        spec = build(rng)
        if _content_bucket(kind, spec) in _PARTITION[split]:
            break
    else:  # pragma: no cover - probability ~0.9**10000
        raise RuntimeError(f"could not draw a {split} sample for {kind}")
    layout = spec.pop("layout")
    return MiniSample(
        doc_id=f"{kind}-{split}-{seed}-{index:06d}",
        kind=kind,
        split=split,
        images=tuple(render(objs) for objs in layout),
        layout=layout,
        **spec,
    )


def generate_samples(kind: str, split: str, n: int, seed: int = 0) -> list[MiniSample]:
    """Generate the first ``n`` samples of a mini task split (deterministic).

    Args:
        kind: One of ``KINDS``: pope, refcocog, mmmu, vidstg, mlvu, videomme, mmlongbench,
            mmdocir.
        split: ``"train"``, ``"validation"`` or ``"test"``; validation and test never share a
            sample (content or random stream) with train.
        n: Number of samples.
        seed: Dataset seed.

    Returns:
        ``n`` samples, ``doc_id`` ``"{kind}-{split}-{seed}-{index:06d}"`` for index 0..n-1.
    """
    return [generate_sample(kind, split, i, seed) for i in range(n)]
