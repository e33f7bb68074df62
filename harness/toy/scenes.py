"""Deterministic scenes of coloured shapes: the data of the embedded ``toy`` model's mini tasks.

Everything here is torch-free (PIL, stdlib) so task modules can import it cheaply.

Scenes are drawn with :mod:`harness.toy.world` (64×64 images, a 4×4 grid of one-token cells).

Splits are disjoint twice over: every sample is drawn from its own random stream named by
(kind, split, seed, index) ("seed space"), and a sample is kept only if the hash of its content
falls in its split's partition (80% train, 10% validation, 10% test), so no validation or test
scene/question can ever occur in training, whatever the seeds.

Public API: :func:`generate_samples`, :func:`generate_sample`, :class:`MiniSample`, constants
``KINDS`` and ``SPLITS``; the drawing vocabulary (:class:`SceneObject`, :func:`render`, the grid
and colour constants) lives in :mod:`harness.toy.world` and is re-exported here.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.toy.builders import BUILDERS
from harness.toy.world import (
    CANVAS_RGB,
    CELL,
    COLORS,
    GRID,
    IMAGE_SIZE,
    SHAPES,
    Box,
    SceneObject,
    box_cell,
    cell_box,
    normalised_box_text,
    render,
)

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = [
    "KINDS",
    "SPLITS",
    "HELD_OUT_SIZE",
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

# The kinds are the builders' names, in the order the mini tasks are listed everywhere.
KINDS = tuple(BUILDERS)
SPLITS = ("train", "validation", "test")
# Content-hash buckets out of 10 per split.
_PARTITION = {"train": range(0, 8), "validation": range(8, 9), "test": range(9, 10)}
_MAX_TRIES = 10_000
HELD_OUT_SIZE = 10_000
"""Samples in each held-out split (validation, test) of a mini task: its data, which a
``--limit`` beyond it does not extend (as a real benchmark's size caps a limit)."""


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
