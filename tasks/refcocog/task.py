"""RefCOCOg — referring expression comprehension (REC): box the object a sentence describes.

- Dataset: ``lmms-lab/RefCOCOg`` (renamed ``lmms-lab-encoder/RefCOCOg`` in July 2026; both ids
  are tried), splits ``val`` (7,573 rows) and ``test`` (~5k). Local copies: ``data_files`` /
  ``data_dir`` (parquet, JSON, JSONL); relative image paths resolve on ``image_root``.
- Fields: ``question_id``, ``image``, ``question``, ``answer`` (list of referring expressions),
  ``segmentation`` (flat polygon), ``bbox`` (**[x, y, w, h] absolute pixels**), ``iscrowd``,
  ``file_name``. One sample per expression (``doc_id`` ``"{question_id}#{k}"``).
- Licence: RefCOCOg annotations Apache-2.0 (Google refexp); images MSCOCO (Flickr terms).
- Paper: Mao et al., "Generation and Comprehension of Unambiguous Object Descriptions",
  CVPR 2016 (umd split: Nagaraja et al., ECCV 2016).
- Normalisation (once, in :meth:`RefCOCOg.load`): ``bbox`` → :class:`~harness.api.payloads.Box`
  xyxy pixels via ``Box.from_xywh``; a box with a non-finite value or a non-positive width or
  height is a malformed row, and so is a gold box lying wholly outside its image (found when
  the image is read): an error naming the row, or with ``--skip-bad-docs`` a counted skip.
- Prompt: "Please provide the bounding box coordinate of the region this sentence describes:
  {expression}." (InternVL's and Qwen-VL's evaluators prompt with their own templates; this
  one is shared). The coordinate convention of the answer belongs to the model family: its
  adapter's ``ScoringContext.parse_box`` (``lenient``) or its released evaluator
  (``official``); the task owns the IoU.
- Metrics: ``acc@0.5`` (IoU ≥ 0.5, the headline), ``miou``, ``acc@0.3``, ``acc@0.7``,
  ``center_acc`` (predicted centre inside the gold box), ``parse_rate``, ``swapped_rate``
  (boxes written with x1 > x2 or y1 > y2, counted in every mode).
- Scoring (``scoring``): RefCOCOg releases no scorer for generated boxes, so ``official``
  (the default) is REC accuracy as each model family's released grounding evaluator computes
  it (:mod:`tasks.refcocog.official`: InternVL's and Qwen-VL's ``evaluate_grounding.py``,
  lmms-eval for LLaVA-NeXT/OneVision, else the ``standard`` rule = ``lenient``), chosen by
  ``ScoringContext.family``. ``lmms_eval``: :func:`lmms_eval_scores`. ``lenient``: the
  adapter's ``parse_box`` (its coordinate convention; box forms of
  :func:`harness.api.model.box_numbers`: "[x1, y1, x2, y2]", Qwen2-VL's "(x1,y1),(x2,y2)"
  with or without ``<|box_start|>``, numbers like ".1", "1e2"; reversed ends swapped), the
  box clipped to the image; an unparseable answer or one wholly outside the image scores 0.
- Evidence: the gold box (clipped to the image) on image 0.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from harness.api.model import box_numbers
from harness.api.payloads import Box, BoxEvidence, EvidenceError, Generation, Request
from harness.api.registry import task
from harness.api.scoring import check_scoring
from harness.api.task import UNIT_INTERVAL, MetricDef, SampleError, ScoringContext, Task
from tasks.common.loading import (
    DataFiles,
    RowImage,
    RowSource,
    image_rows,
    image_size,
    open_image,
    parse_list,
    require,
    resolve_path,
    row_id,
)
from tasks.refcocog.official import EVALUATORS, OFFICIAL_RULES, official_rule

__all__ = ["RefSample", "RefCOCOg", "PROMPT", "iou_scores", "lmms_eval_scores", "THRESHOLDS"]
_LMMS_BOX = re.compile(
    r"\[\s*(-?\d+(?:\.\d+)?),\s*(-?\d+(?:\.\d+)?),\s*(-?\d+(?:\.\d+)?),\s*(-?\d+(?:\.\d+)?)\s*\]"
)

PROMPT = "Please provide the bounding box coordinate of the region this sentence describes: {}."
THRESHOLDS = (0.3, 0.5, 0.7)


@dataclass(frozen=True, slots=True)
class RefSample:
    """One referring expression and its box.

    Attributes:
        doc_id: ``"{question_id}#{k}"`` (k-th expression of the row).
        expression: The referring expression.
        box: Gold box, xyxy absolute pixels of the original image.
        image: Image source (PIL image, :class:`~tasks.common.loading.RowImage`, bytes or path).
        file_name: COCO file name, for logs.
    """

    doc_id: str
    expression: str
    box: Box
    image: Any
    file_name: str = ""


def parse_bbox_xywh(value: Any, where: str) -> Box:
    """``[x, y, w, h]`` (list or its string repr) → xyxy :class:`Box`; SampleError if malformed."""
    vals = parse_list(value, where, "bbox")
    if len(vals) != 4:
        raise SampleError(f"{where}: bbox needs 4 numbers [x, y, w, h], got {vals!r}")
    try:
        x, y, w, h = (float(v) for v in vals)
    except (TypeError, ValueError):
        raise SampleError(f"{where}: bbox {vals!r} is not numeric") from None
    if not all(math.isfinite(v) for v in (x, y, w, h)):
        raise SampleError(f"{where}: bbox {vals!r} has a non-finite value")
    # Compare the corners, not w/h: a tiny width can vanish in x + w.
    if not (w > 0 and h > 0 and x + w > x and y + h > y):
        raise SampleError(f"{where}: bbox {vals!r} has a non-positive width or height")
    return Box.from_xywh(x, y, w, h)


def lmms_eval_scores(text: str, gold: Box, size: tuple[int, int]) -> dict[str, float]:
    """lmms-eval 0.7.3 ``tasks/refcocog/utils_rec.py`` on one reply.

    The gold box is normalised to [0, 1] by the image size; the prediction is the first
    "[a, b, c, d]" of plain decimals read as [0, 1] xyxy, else [0, 0, 0, 0]; no clipping and
    no reordering; IoU as ``compute_iou`` (areas of reversed boxes go negative), accuracy at
    IoU ≥ t, centre accuracy = the predicted centre inside the gold box.
    """
    w, h = size
    g = (gold.x1 / w, gold.y1 / h, gold.x2 / w, gold.y2 / h)
    match = _LMMS_BOX.search(text)
    p = tuple(float(v) for v in match.groups()) if match else (0.0, 0.0, 0.0, 0.0)
    inter = max(0.0, min(g[2], p[2]) - max(g[0], p[0])) * max(
        0.0, min(g[3], p[3]) - max(g[1], p[1])
    )
    union = (g[2] - g[0]) * (g[3] - g[1]) + (p[2] - p[0]) * (p[3] - p[1]) - inter
    iou = inter / union if union else 0.0
    cx, cy = (p[0] + p[2]) / 2, (p[1] + p[3]) / 2
    out = {f"acc@{t}": float(iou >= t) for t in THRESHOLDS}
    centre = g[0] <= cx <= g[2] and g[1] <= cy <= g[3]
    return out | {"miou": iou, "center_acc": float(centre), "parse_rate": float(match is not None)}


def iou_scores(pred: Box | None, gold: Box, size: tuple[int, int]) -> dict[str, float]:
    """REC per-sample scores of a predicted box (None = unparseable) against the gold box."""
    clipped = pred.clip(*size) if pred is not None else None
    iou = clipped.iou(gold) if clipped is not None else 0.0
    if clipped is not None:
        cx, cy = (clipped.x1 + clipped.x2) / 2, (clipped.y1 + clipped.y2) / 2
        centre = gold.x1 <= cx <= gold.x2 and gold.y1 <= cy <= gold.y2
    else:
        centre = False
    out = {f"acc@{t}": float(iou >= t) for t in THRESHOLDS}
    out |= {"miou": iou, "center_acc": float(centre), "parse_rate": float(pred is not None)}
    return out


@task("refcocog")
class RefCOCOg(RowSource, Task):
    """RefCOCOg referring expression comprehension.

    Args:
        dataset_id: HF dataset id (old or renamed).
        data_files: Local parquet/JSON(L) file(s), or ``{split: files}``.
        data_dir: Local folder of such files.
        image_root: Folder that relative image paths are resolved against.
        revision: Hub revision.
        scoring: "official" (the default: the model family's released grounding
            evaluator, :mod:`tasks.refcocog.official`), "lmms_eval" (:func:`lmms_eval_scores`)
            or "lenient" (the adapter's ``parse_box``, clipping; :func:`iou_scores`).
    """

    metrics: ClassVar[tuple[MetricDef, ...]] = (
        MetricDef("acc@0.5", True, "share of predicted boxes with IoU ≥ 0.5", bounds=UNIT_INTERVAL),
        MetricDef("miou", True, "mean IoU (0 for unparseable answers)", bounds=UNIT_INTERVAL),
        MetricDef("acc@0.3", True, "share with IoU ≥ 0.3", bounds=UNIT_INTERVAL),
        MetricDef("acc@0.7", True, "share with IoU ≥ 0.7", bounds=UNIT_INTERVAL),
        MetricDef(
            "center_acc", True, "share whose centre lies in the gold box", bounds=UNIT_INTERVAL
        ),
        MetricDef("parse_rate", True, "share of answers holding a box", bounds=UNIT_INTERVAL),
        MetricDef(
            "swapped_rate",
            False,
            "share of boxes written with x1 > x2 or y1 > y2",
            bounds=UNIT_INTERVAL,
        ),
    )
    default_split: ClassVar[str] = "val"
    grounded: ClassVar[bool] = True

    def __init__(
        self,
        *,
        dataset_id: str = "lmms-lab-encoder/RefCOCOg",
        data_files: DataFiles | None = None,
        data_dir: str | None = None,
        image_root: str | None = None,
        revision: str | None = None,
        scoring: str = "official",
    ) -> None:
        self.scoring = check_scoring("refcocog", scoring)
        self._init_source(dataset_id, data_files, data_dir, revision)
        self.image_root = image_root

    def settings(self) -> dict[str, Any]:
        """Scoring mode (under ``official``, its family → rule table) and the arguments passed."""
        rules = {"official_rules": OFFICIAL_RULES} if self.scoring == "official" else {}
        return {"scoring": self.scoring, **rules} | super().settings()

    def load(self, split: str | None = None, limit: int | None = None) -> list[RefSample]:
        """Load rows and expand them to one sample per expression."""
        split = split or self.default_split
        meta, media = image_rows("refcocog", self.source_rows("refcocog", split))
        out: list[RefSample] = []
        for i, row in enumerate(meta):
            where = row_id("refcocog", i, row, "question_id")
            try:
                box, exprs = self._check_row(row, where)
            except SampleError as exc:
                self.bad_row(out, where, exc)
                if limit is not None and len(out) >= limit:
                    return out
                continue
            for k, expr in enumerate(exprs):
                out.append(
                    RefSample(
                        doc_id=f"{row['question_id']}#{k}",
                        expression=expr.strip().rstrip("."),
                        box=box,
                        image=RowImage(media, i, "image"),
                        file_name=str(row.get("file_name") or ""),
                    )
                )
                if limit is not None and len(out) >= limit:
                    return out
        return out

    @staticmethod
    def _check_row(row: dict[str, Any], where: str) -> tuple[Box, list[str]]:
        require(row, ["question_id", "answer", "bbox"], where)
        box = parse_bbox_xywh(row["bbox"], where)
        answer = row["answer"]
        exprs = [answer] if isinstance(answer, str) and not answer.startswith("[") else None
        exprs = exprs or parse_list(answer, where, "answer")
        if not exprs or not all(isinstance(e, str) and e.strip() for e in exprs):
            raise SampleError(f"{where}: answer {answer!r} holds no referring expression")
        return box, exprs

    def _image_source(self, sample: RefSample) -> Any:
        src = sample.image.raw() if isinstance(sample.image, RowImage) else sample.image
        return resolve_path(src, self.image_root)

    def prompt(self, sample: RefSample) -> str:
        """The REC instruction for one expression."""
        return PROMPT.format(sample.expression)

    def request(self, sample: RefSample) -> Request:
        """The image and the REC instruction."""
        image = open_image(self._image_source(sample), f"refcocog doc {sample.doc_id}")
        if sample.box.clip(*image.size) is None:  # malformed evidence: never scored silently
            raise SampleError(
                f"refcocog doc {sample.doc_id}: gold box {sample.box.as_tuple()} lies outside "
                f"the {image.size[0]}×{image.size[1]} image"
            )
        return Request(text=self.prompt(sample), images=(image,), max_new_tokens=32)

    def evidence(self, sample: RefSample, request: Request) -> BoxEvidence:
        """The gold box on the image, clipped to it."""
        width, height = request.images[0].size
        clipped = sample.box.clip(width, height)
        if clipped is None:
            raise EvidenceError(
                f"refcocog doc {sample.doc_id}: box {sample.box.as_tuple()} lies outside the "
                f"{width}×{height} image"
            )
        return BoxEvidence(box=clipped, image_index=0)

    def score(self, sample: RefSample, generation: Generation, ctx: ScoringContext) -> dict:
        """IoU-based scores under the task's mode (``official``: the family's evaluator)."""
        size = image_size(self._image_source(sample), f"refcocog doc {sample.doc_id}")
        rule = official_rule(ctx.family) if self.scoring == "official" else self.scoring
        if rule == "lmms_eval":
            out = lmms_eval_scores(generation.text, sample.box, size)
        elif rule in EVALUATORS:
            out = EVALUATORS[rule](generation.text, sample.box.as_tuple(), size, THRESHOLDS)
        else:  # lenient, or official for a family with no released evaluator
            out = iou_scores(ctx.parse_box(generation.text, size), sample.box, size)
        raw = box_numbers(generation.text)
        out["swapped_rate"] = float(raw is not None and (raw[0] > raw[2] or raw[1] > raw[3]))
        return out

    def sample_log(self, sample: RefSample) -> dict[str, Any]:
        """Gold box (xyxy pixels) and the expression."""
        return {"target": list(sample.box.as_tuple()), "expression": sample.expression}
