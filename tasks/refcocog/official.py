r"""RefCOCOg ``official`` scoring: each model family's released grounding evaluator.

RefCOCOg ships no scorer for generated boxes; its number is REC accuracy (IoU ≥ 0.5 with the
gold box) as each model family's own evaluator computes it. :func:`official_rule` picks the
rule from the family (``ScoringContext.family``, recorded in the results' model settings):

- ``internvl`` → :func:`internvl_scores`: OpenGVLab/InternVL @ 2410d1d
  ``internvl_chat/eval/refcoco/evaluate_grounding.py::evaluate_chat_model``. The first match
  of ``\[*\[(.*?),(.*?),(.*?),(.*?)\]\]*``, each group read with Python's ``float`` (so
  ``1e2``, ``.1``, ``6_76`` and full-width digits parse); if that fails, or there is no
  match, the box is (0, 0, 0, 0). Numbers summing to ≥ 4 are divided by 1000, else read as
  [0, 1] fractions; x is scaled by the image width, y by its height. No clipping, no
  reordering: reversed ends give a negative area.
- ``qwen2_vl`` → :func:`qwen_vl_scores`: QwenLM/Qwen-VL @ aa00ed0
  ``eval_mm/evaluate_grounding.py`` (module body; Qwen2-VL keeps Qwen-VL's
  ``(x1,y1),(x2,y2)`` form on a [0, 1000) grid and released no evaluator of its own). The
  first match of ``\((.*?)\),\((.*?)\)``; each group must hold a comma and split into two
  ``float`` s, else (0, 0, 0, 0); all four are divided by **999**, then scaled as above.
- ``llava_next``, ``llava_onevision`` → lmms-eval's RefCOCOg rule
  (:func:`tasks.refcocog.task.lmms_eval_scores`): LLaVA-VL/LLaVA-NeXT @ 6802a4a ``README.md``
  names lmms-eval as their evaluation code.
- any other family (``qwen2_5_vl``, ``qwen3_vl``, ``llava``, ``toy``…) → ``standard``: no
  released RefCOCO evaluator (none in QwenLM/Qwen2.5-VL @ f0af299, QwenLM/Qwen3-VL @
  9658872 ``evaluation/``, haotian-liu/LLaVA @ c121f04); the adapter's convention
  (``ScoringContext.parse_box``) and the IoU of :func:`tasks.refcocog.task.iou_scores`, the same
  numbers as ``lenient``.

Both released evaluators compute in float32 tensors with IoU from torchvision's
``box_iou`` (pytorch/vision ``torchvision/ops/boxes.py::box_iou``, ``box_area``:
``(x2 - x1) * (y2 - y1)``, no +1, intersection sides clamped at 0, ``inter / union``);
:func:`box_iou_f32` rounds every step to float32 the same way, so the decision at 0.5 is
theirs bit for bit (held to equality in ``tests/data/scoring/modes_refcocog.json``).
A 0/0 IoU (NaN, e.g. from a ``nan`` coordinate) fails every threshold there and is reported
here as 0. ``acc@0.5`` is their "Precision @ 1"; ``acc@0.3/0.7``, ``miou``, ``center_acc``
(centre of their pixel box inside the gold box) and ``parse_rate`` (a box read without the
fallback) are headscope's, computed from the same box and IoU.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable

__all__ = [
    "FAMILY_RULES",
    "OFFICIAL_RULES",
    "box_iou_f32",
    "internvl_scores",
    "official_rule",
    "qwen_vl_scores",
]

Quad = tuple[float, float, float, float]

#: Family (results' ``model.family``) → rule; every other family gets ``standard``.
FAMILY_RULES: dict[str, str] = {
    "internvl": "internvl",
    "qwen2_vl": "qwen_vl",
    "llava_next": "lmms_eval",
    "llava_onevision": "lmms_eval",
}
#: The family → rule table as recorded in the task settings under ``official``.
OFFICIAL_RULES = (
    "; ".join(f"{family}: {rule}" for family, rule in FAMILY_RULES.items()) + "; other: standard"
)
_INTERNVL = re.compile(r"\[*\[(.*?),(.*?),(.*?),(.*?)\]\]*")
_QWEN_VL = re.compile(r"\((.*?)\),\((.*?)\)")
_ZERO: Quad = (0.0, 0.0, 0.0, 0.0)


def official_rule(family: str | None) -> str:
    """The rule ``official`` applies to this family: a key of ``FAMILY_RULES`` or standard."""
    return FAMILY_RULES.get(family or "", "standard")


def _f32(x: float) -> float:
    """``x`` rounded to the nearest float32 (±inf past its range, NaN kept)."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _div(a: float, b: float) -> float:
    """IEEE division (Python raises on a zero divisor; tensors do not)."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def box_iou_f32(pred: Quad, gold: Quad) -> float:
    """The ``box_iou`` of torchvision for one pair of float32 xyxy boxes, each step in float32."""
    if any(math.isnan(v) for v in pred + gold):
        return math.nan

    def area(b: Quad) -> float:
        return _f32(_f32(b[2] - b[0]) * _f32(b[3] - b[1]))

    w = max(_f32(min(pred[2], gold[2]) - max(pred[0], gold[0])), 0.0)
    h = max(_f32(min(pred[3], gold[3]) - max(pred[1], gold[1])), 0.0)
    inter = _f32(w * h)
    union = _f32(_f32(area(pred) + area(gold)) - inter)
    return _f32(_div(inter, union))


def _internvl_numbers(text: str) -> Quad | None:
    match = _INTERNVL.search(text)
    if match is None:
        return None
    try:
        return tuple(float(g) for g in match.groups())  # type: ignore[return-value]
    except (ValueError, OverflowError):
        return None


def _qwen_vl_numbers(text: str) -> Quad | None:
    match = _QWEN_VL.search(text)
    if match is None:
        return None
    try:  # a side without a comma fails the unpack, as the release's explicit check does
        (x1, y1), (x2, y2) = ([float(t) for t in g.split(",")] for g in match.groups())
    except (ValueError, OverflowError):  # not two numbers on a side
        return None
    return x1, y1, x2, y2


def _scale(box: Quad, size: tuple[int, int]) -> Quad:
    sx, sy = float(size[0]), float(size[1])
    return _f32(box[0] * sx), _f32(box[1] * sy), _f32(box[2] * sx), _f32(box[3] * sy)


def _scores(box: Quad, parsed: bool, gold: Quad, thresholds: tuple[float, ...]) -> dict:
    g = tuple(_f32(v) for v in gold)
    iou = box_iou_f32(box, g)  # type: ignore[arg-type]
    out = {f"acc@{t}": float(iou >= t) for t in thresholds}  # NaN fails every threshold
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    centre = g[0] <= cx <= g[2] and g[1] <= cy <= g[3]
    iou = 0.0 if math.isnan(iou) else iou
    return out | {"miou": iou, "center_acc": float(centre), "parse_rate": float(parsed)}


def internvl_scores(
    text: str, gold: Quad, size: tuple[int, int], thresholds: tuple[float, ...]
) -> dict[str, float]:
    """InternVL's RefCOCO evaluator on one reply (gold: xyxy pixels; size: (width, height))."""
    numbers = _internvl_numbers(text)
    box = tuple(_f32(v) for v in (numbers or _ZERO))
    if _f32(_f32(_f32(box[0] + box[1]) + box[2]) + box[3]) >= 4:
        box = tuple(_f32(v / 1000) for v in box)
    return _scores(_scale(box, size), numbers is not None, gold, thresholds)  # type: ignore[arg-type]


def qwen_vl_scores(
    text: str, gold: Quad, size: tuple[int, int], thresholds: tuple[float, ...]
) -> dict[str, float]:
    """Qwen-VL's RefCOCO evaluator on one reply (gold: xyxy pixels; size: (width, height))."""
    numbers = _qwen_vl_numbers(text)
    box = tuple(_f32(_f32(v) / 999) for v in (numbers or _ZERO))
    return _scores(_scale(box, size), numbers is not None, gold, thresholds)  # type: ignore[arg-type]


#: The family evaluators implemented here (``lmms_eval`` and ``standard`` live in refcocog).
EVALUATORS: dict[str, Callable[..., dict[str, float]]] = {
    "internvl": internvl_scores,
    "qwen_vl": qwen_vl_scores,
}
