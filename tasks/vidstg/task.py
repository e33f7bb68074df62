"""VidSTG: spatio-temporal grounding of a sentence in a video (declarative or interrogative).

- Data: annotations from the VidSTG repository (``{train,val,test}_annotations.json``, a JSON
  list of entries), videos and boxes from VidOR (per-video annotation JSONs under
  ``annotation/{training,validation}/<dir>/<vid>.json`` holding ``video_path`` and
  ``trajectories``). VidSTG train/val come from VidOR training, test from VidOR validation.
  No Hugging Face copy exists; point ``annotation_dir``, ``vidor_annotation_dir`` and
  ``video_root`` at local folders. Entries that carry ``trajectories`` themselves need no VidOR
  annotation file.
- Splits: train, val (602 videos, 8,956 sentences; the default), test.
- Licence: VidOR videos come from YFCC100M (Creative Commons); annotations are for research use
  (see the VidOR and VidSTG terms).
- Paper: Zhang et al., "Where Does It Exist: Spatio-Temporal Video Grounding for Multi-Form
  Sentences", CVPR 2020.

Conventions are normalised once, in :func:`tasks.vidstg.data.normalise_entry` (exclusive
frame ends, tubes as per-frame boxes, VidOR boxes as xyxy pixel boxes); one sample per sentence.

Request: ``num_frames`` frames sampled uniformly over ``used_segment``; the model answers
``"<start>-<end> [x1, y1, x2, y2]"`` with 0-based positions among the shown frames (end
inclusive) and one box in the family's coordinate convention on a shown frame (also read when
written "(x1, y1, x2, y2) = (…)": :func:`tasks.vidstg.data.box_text`), parsed by the
adapter as a box on a video frame (``ScoringContext.parse_video_box`` with the number of shown
frames: Qwen2.5-VL's pixels are those of the frames as its *video* processor resized them).
Boxes, tubes and that resize use the annotation's ``width`` × ``height``: a video whose decoded
frames have another size is bad data (an error naming the sample, or a counted skip with
``--skip-bad-docs``).

Scoring (``scoring``, recorded in settings): ``official`` (default) is TubeDETR's VidSTG
evaluator (antoyang/TubeDETR ``datasets/vidstg_eval.py``) with the shown frames as its frame
ids (:func:`tasks.vidstg.data.tubedetr_scores`): tIoU from the frame numbers of the predicted
``[id[start], id[end] + 1)`` and gold spans, vIoU over the shown frames, vIoU@R strictly
above R, every sentence counted. Adaptations of the generative protocol: the frame ids are
the shown frames (not TubeDETR's 5 fps sampling); the reply is read by :func:`parse_span`
(first span outside the boxes; ends swapped, then clamped to the shown frames) and the one
box is used on every frame; no span or no box scores 0 (TubeDETR always predicts both).
TubeDETR's ``summarize`` reports per sentence type (the ``_declarative`` /
``_interrogative`` metrics); the unsuffixed ones are its mean over all sentences. Every case
of ``tests/data/scoring/modes_vidstg.json``, computed by running that evaluator, is matched
exactly. ``lenient`` (headscope's earlier rule) is below.

Lenient metrics (:func:`tasks.vidstg.data.tube_scores`), over the shown frames only: with
``P`` the shown positions the model names and ``G`` those whose source frame lies in
``temporal_gt``, ``tIoU = |P∩G| / |P∪G|`` and ``vIoU = Σ_{p∈P∩G} IoU(box, gt_p) / |P∪G|``.
m_tIoU and m_vIoU average them; vIoU@R is the fraction with ``vIoU > R`` (R = 0.3, 0.5). A
sentence whose ``temporal_gt`` contains no shown frame cannot be scored at this frame budget: it
is left out (``n`` says how many entered) and the ``evaluable`` metric reports the fraction
kept. Each metric is also reported per sentence type (suffix ``_declarative`` /
``_interrogative``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from harness.api.errors import UsageError
from harness.api.payloads import EvidenceError, Generation, Request, TubeEvidence, Video
from harness.api.registry import task
from harness.api.scoring import check_scoring
from harness.api.task import (
    UNIT_INTERVAL,
    MetricDef,
    MetricValue,
    SampleError,
    ScoringContext,
    Task,
    TaskLoadError,
    mean_stderr,
)
from harness.media.video import VideoFinder, frame_positions_in_span, sample_frames, uniform_indices
from tasks.common.loading import require
from tasks.vidstg.data import (
    SENTENCE_TYPES,
    VidSTGSample,
    box_text,
    normalise_entry,
    parse_span,
    tube_scores,
    tubedetr_scores,
)

__all__ = ["VidSTG", "VidSTGSample"]


def _metric_defs() -> tuple[MetricDef, ...]:
    out = []
    for suffix in ("", *(f"_{t}" for t in SENTENCE_TYPES)):
        who = f" ({suffix[1:]} sentences)" if suffix else ""
        out += [
            MetricDef(
                f"m_tIoU{suffix}",
                True,
                f"mean temporal IoU over shown frames{who}",
                bounds=UNIT_INTERVAL,
            ),
            MetricDef(
                f"m_vIoU{suffix}", True, f"mean spatio-temporal IoU{who}", bounds=UNIT_INTERVAL
            ),
            MetricDef(
                f"vIoU@0.3{suffix}", True, f"fraction with vIoU > 0.3{who}", bounds=UNIT_INTERVAL
            ),
            MetricDef(
                f"vIoU@0.5{suffix}", True, f"fraction with vIoU > 0.5{who}", bounds=UNIT_INTERVAL
            ),
        ]
    out.append(
        MetricDef(
            "evaluable",
            True,
            "fraction of sentences with a shown frame in the span",
            bounds=UNIT_INTERVAL,
        )
    )
    return tuple(out)


@task("vidstg")
class VidSTG(Task):
    """VidSTG spatio-temporal grounding (see the module docstring).

    Args:
        num_frames: Frames sampled uniformly over each sentence's ``used_segment``.
        annotation_dir: Folder with ``{split}_annotations.json``.
        annotation_file: One annotation JSON (overrides ``annotation_dir``).
        vidor_annotation_dir: VidOR annotation root (searched recursively for ``<vid>.json``).
        video_root: VidOR video root (``video_path`` of the VidOR annotation, else
            ``<vid>.mp4`` anywhere below).
        sentence_type: "declarative", "interrogative" or "all".
        scoring: "official" (TubeDETR's evaluator on the shown frames) or "lenient" (the
            shown-frame set metrics above); lmms-eval has no VidSTG task.
    """

    metrics = _metric_defs()
    default_split = "val"
    grounded = True

    def __init__(
        self,
        *,
        num_frames: int = 16,
        annotation_dir: str | None = None,
        annotation_file: str | None = None,
        vidor_annotation_dir: str | None = None,
        video_root: str | None = None,
        sentence_type: Literal["declarative", "interrogative", "all"] = "all",
        scoring: str = "official",
    ) -> None:
        self.scoring = check_scoring("vidstg", scoring, ("official", "lenient"))
        if num_frames < 1:
            raise UsageError(f"num_frames must be ≥ 1, got {num_frames}")
        if sentence_type not in (*SENTENCE_TYPES, "all"):
            raise UsageError(
                f"sentence_type must be declarative, interrogative or all, not {sentence_type!r}"
            )
        self.num_frames = num_frames
        self.annotation_dir = annotation_dir
        self.annotation_file = annotation_file
        self.vidor_annotation_dir = vidor_annotation_dir
        self.sentence_type = sentence_type
        self._videos = VideoFinder(video_root, "VidSTG video")
        self._shown: dict[str, tuple[int, ...]] = {}

    # -- data -----------------------------------------------------------------------------
    def load(self, split: str | None = None, limit: int | None = None) -> list[VidSTGSample]:
        """Samples of ``split`` (one per sentence), stopping once ``limit`` are collected."""
        split = split or self.default_split
        path = self._annotation_path(split)
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise TaskLoadError(f"task 'vidstg': cannot read {str(path)!r}: {exc}") from exc
        if isinstance(entries, dict):
            entries = list(entries.values())
        vidor_files = _json_index(self.vidor_annotation_dir)
        vidor_cache: dict[str, tuple[Any, Any]] = {}  # entries of one video share its file
        samples: list[VidSTGSample] = []
        for i, entry in enumerate(entries):
            where = f"vidstg {path.name} entry {i}"
            try:
                if not isinstance(entry, dict):
                    raise SampleError(f"{where}: not a JSON object")
                where += f" (vid={entry.get('vid')!r})"
                trajectories, video_name = self._vidor(entry, vidor_files, vidor_cache, where)
                entry = {**entry, "video_path": video_name}
                found = normalise_entry(entry, trajectories, where, i)
            except SampleError as exc:
                self.bad_row(samples, where, exc)
                found = []
            for s in found:
                if self.sentence_type in ("all", s.sentence_type):
                    samples.append(s)
            if limit is not None and len(samples) >= limit:
                return samples[:limit]
        return samples

    def _annotation_path(self, split: str) -> Path:
        if self.annotation_file:
            return Path(self.annotation_file)
        if not self.annotation_dir:
            raise TaskLoadError(
                "task 'vidstg': VidSTG is not on the hub; pass annotation_dir (with "
                "{split}_annotations.json) or annotation_file, plus vidor_annotation_dir and "
                "video_root"
            )
        return Path(self.annotation_dir) / f"{split}_annotations.json"

    def _vidor(self, entry: Mapping[str, Any], files: dict[str, Path], cache: dict, where: str):
        if "trajectories" in entry:
            return entry["trajectories"], entry.get("video_path")
        vid = str(entry.get("vid"))
        if vid in cache:
            return cache[vid]
        if vid not in files:
            raise SampleError(
                f"{where}: VidOR annotation file {vid + '.json'!r} not found under "
                f"{self.vidor_annotation_dir!r}"
            )
        try:
            vidor = json.loads(files[vid].read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SampleError(
                f"{where}: cannot read VidOR file {str(files[vid])!r}: {exc}"
            ) from None
        if not isinstance(vidor, dict):
            raise SampleError(f"{where}: VidOR file {str(files[vid])!r} is not a JSON object")
        require(vidor, ("trajectories",), f"{where} VidOR file {files[vid]}")
        cache[vid] = (vidor["trajectories"], vidor.get("video_path"))
        return cache[vid]

    def shown_frames(self, sample: VidSTGSample) -> tuple[int, ...]:
        """Source indices of the frames shown for ``sample`` (deterministic, no decoding)."""
        if sample.frames:
            return tuple(range(len(sample.frames)))
        return uniform_indices(*sample.segment, self.num_frames)

    def prompt(self, sample: VidSTGSample, n: int) -> str:
        """The instruction for ``n`` shown frames."""
        if sample.sentence_type == "declarative":
            what = f'Find the subject of this sentence while it happens: "{sample.sentence}"'
        else:
            what = f'Find the object this question asks about: "{sample.sentence}"'
        return (
            f"The video is shown as {n} frames numbered 0 to {n - 1}. {what}\n"
            'Answer as "<start>-<end> [x1, y1, x2, y2]": the first and last frame numbers in '
            "which it appears, then its bounding box."
        )

    def request(self, sample: VidSTGSample) -> Request:
        """Frames of ``used_segment`` plus the grounding instruction."""
        expected = self.shown_frames(sample)
        if sample.frames:
            video = Video(tuple(sample.frames), expected)
        else:
            # Raises SampleError when the file is shorter than the annotated segment.
            path = self._videos.find(sample.video_name)
            video = sample_frames(
                path, self.num_frames, start=sample.segment[0], end=sample.segment[1]
            )
        size = video.frames[0].size if video.frames else None
        if size is not None and tuple(size) != (sample.width, sample.height):
            # Boxes, tubes and the model's resize all use the annotation's size.
            raise SampleError(
                f"vidstg doc {sample.doc_id}: the decoded frames are {size[0]}×{size[1]} but the "
                f"annotation says {sample.width}×{sample.height}; boxes would be mapped at the "
                "wrong size"
            )
        self._shown[sample.doc_id] = video.frame_indices
        return Request(text=self.prompt(sample, len(expected)), video=video, max_new_tokens=48)

    def evidence(self, sample: VidSTGSample, request: Request) -> TubeEvidence:
        """The gt tube on the shown frames' positions (EvidenceError when none is in the span)."""
        shown = request.video.frame_indices if request.video else ()
        boxes = {}
        for p in frame_positions_in_span(shown, *sample.span):
            clipped = sample.tube[shown[p]].clip(sample.width, sample.height)
            if clipped is not None:
                boxes[p] = clipped
        try:
            return TubeEvidence(boxes)
        except EvidenceError as exc:
            raise EvidenceError(f"vidstg {sample.doc_id}: {exc} {sample.span}") from None

    # -- scoring ----------------------------------------------------------------------------
    def score(self, sample: VidSTGSample, generation: Generation, ctx: ScoringContext) -> dict:
        """Temporal and spatio-temporal IoU under the scoring mode (see the module docstring)."""
        shown = self.shown_frames(sample)
        positions = parse_span(generation.text)
        size = (sample.width, sample.height)
        box = ctx.parse_video_box(box_text(generation.text), size, len(shown))
        result = tube_scores(shown, sample.span, sample.tube, positions, box)
        evaluable = result is not None
        if self.scoring == "official":
            result = tubedetr_scores(shown, sample.span, sample.tube, positions, box)
        return {
            "sentence_type": sample.sentence_type,
            "evaluable": evaluable,
            "counted": result is not None,
            "tIoU": None if result is None else result[0],
            "vIoU": None if result is None else result[1],
            "pred_positions": list(positions) if positions else None,
            "pred_box": list(box.as_tuple()) if box else None,
        }

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> list[MetricValue]:
        """Means over the counted rows (official: all; lenient: evaluable), per sentence type."""
        out = []
        for suffix, keep in (("", None), *((f"_{t}", t) for t in SENTENCE_TYPES)):
            sel = [
                r
                for r in rows
                if r.get("counted", r["evaluable"]) and keep in (None, r["sentence_type"])
            ]
            columns: dict[str, Callable[[dict], float]] = {
                "m_tIoU": lambda r: r["tIoU"],
                "m_vIoU": lambda r: r["vIoU"],
                "vIoU@0.3": lambda r: float(r["vIoU"] > 0.3),
                "vIoU@0.5": lambda r: float(r["vIoU"] > 0.5),
            }
            for name, get in columns.items():
                mean, err = mean_stderr([get(r) for r in sel])
                out.append(MetricValue(name + suffix, mean, err, len(sel)))
        mean, err = mean_stderr([float(r["evaluable"]) for r in rows])
        out.append(MetricValue("evaluable", mean, err, len(rows)))
        return out

    def sample_log(self, sample: VidSTGSample) -> dict[str, Any]:
        """Target span/category and the source indices of the frames shown."""
        return {
            "target": {"span": list(sample.span), "category": sample.target_category},
            "sentence_type": sample.sentence_type,
            "frame_indices": list(self._shown.pop(sample.doc_id, self.shown_frames(sample))),
        }

    def settings(self) -> dict[str, Any]:
        """Resolved settings that change the numbers."""
        return {
            **super().settings(),
            "num_frames": self.num_frames,
            "sentence_type": self.sentence_type,
            "scoring": self.scoring,
            "frame_sampling": "uniform segment centres over used_segment",
        }


def _json_index(root: str | None) -> dict[str, Path]:
    if not root:
        return {}
    return {p.stem: p for p in sorted(Path(root).rglob("*.json"))}
