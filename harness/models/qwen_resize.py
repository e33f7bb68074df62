"""The size a Qwen-VL processor resizes an image or video frame to, from recorded parameters.

Qwen2-VL, Qwen2.5-VL and Qwen3-VL all resize still images with the image processor
``Qwen2VLImageProcessor(Pil)`` (transformers' ``AutoImageProcessor`` maps all three families to
it): ``smart_resize(height, width, factor=patch_size * merge_size,
min_pixels=size["shortest_edge"], max_pixels=size["longest_edge"])`` in
``transformers/models/qwen2_vl/image_processing_pil_qwen2_vl.py`` (its ``_preprocess``). The
adapters record those resolved values in their settings (:func:`resize_record`, key ``resize``);
the adapter's own ``resized_size`` and ``headscope rescore`` both compute the size through
:func:`resized_size`, so the two cannot drift. Light at import: transformers is imported only
when a size is computed.

Video frames go through the *video* processor, whose pixel budget is its own ``size`` (loaded
from ``video_preprocessor_config.json``, else from ``preprocessor_config.json``) and whose rule
may depend on the number of frames. Two rules, both from the installed transformers:

- ``Qwen2VLVideoProcessor.resize`` (Qwen2-VL, Qwen2.5-VL;
  ``transformers/models/qwen2_vl/video_processing_qwen2_vl.py``): the 2-D ``smart_resize`` of
  each frame with ``max_pixels = size["longest_edge"]``; when ``cap_pixels_per_frame`` is set,
  ``max_pixels = max(min(longest_edge, total * temporal_patch_size // num_frames),
  int(shortest_edge * 1.05))`` with ``total = int(max_video_tokens * factor**2 * 0.9)``.
- ``Qwen3VLVideoProcessor.resize`` (``.../qwen3_vl/video_processing_qwen3_vl.py``): the 3-D
  ``smart_resize(num_frames, h, w, temporal_factor, factor, min, max)`` over the whole clip;
  with ``cap_pixels_per_frame``, ``max_pixels = max(min(max_video_tokens * factor**2,
  longest_edge // num_frames), int(shortest_edge * 1.05)) * num_frames``.

``cap_pixels_per_frame`` unset means off (the installed transformers warns and keeps it off).
:func:`video_resize_record` records what the loaded video processor will use (settings key
``video_resize``); :func:`video_resized_size` computes a frame's size from it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "SMART_RESIZE",
    "VIDEO_RESIZE_QWEN2",
    "VIDEO_RESIZE_QWEN3",
    "resize_record",
    "resized_size",
    "video_resize_record",
    "video_resized_size",
]

#: The resize rule Qwen's image processor applies (a transformers function, dotted path).
SMART_RESIZE = "transformers.models.qwen2_vl.image_processing_pil_qwen2_vl.smart_resize"
_KEYS = ("factor", "min_pixels", "max_pixels")
#: The resize rules of Qwen's video processors (transformers methods, dotted paths).
VIDEO_RESIZE_QWEN2 = (
    "transformers.models.qwen2_vl.video_processing_qwen2_vl.Qwen2VLVideoProcessor.resize"
)
VIDEO_RESIZE_QWEN3 = (
    "transformers.models.qwen3_vl.video_processing_qwen3_vl.Qwen3VLVideoProcessor.resize"
)
_VIDEO_KEYS = ("factor", "temporal_factor", "min_pixels", "max_pixels")


def resize_record(image_processor: Any) -> dict[str, Any]:
    """The resize parameters of a loaded Qwen image processor, exactly as it will use them.

    Returns:
        ``{"rule": SMART_RESIZE, "factor": patch_size * merge_size, "min_pixels":
        size["shortest_edge"], "max_pixels": size["longest_edge"]}``.
    """
    size = image_processor.size
    return {
        "rule": SMART_RESIZE,
        "factor": int(image_processor.patch_size) * int(image_processor.merge_size),
        "min_pixels": int(size["shortest_edge"]),
        "max_pixels": int(size["longest_edge"]),
    }


def resized_size(image_size: tuple[int, int], resize: dict[str, Any]) -> tuple[int, int]:
    """(width, height) an image of ``image_size`` (width, height) is resized to under ``resize``.

    Args:
        image_size: Original (width, height).
        resize: A :func:`resize_record` (as recorded in a results file's model settings).

    Raises:
        ValueError: ``resize`` names another rule or lacks a parameter; or the image is
            refused by the rule itself (transformers refuses aspect ratios above 200).
    """
    if not isinstance(resize, dict) or resize.get("rule") != SMART_RESIZE:
        rule = resize.get("rule") if isinstance(resize, dict) else resize
        raise ValueError(f"unknown resize rule {rule!r}; this headscope knows {SMART_RESIZE!r}")
    missing = [k for k in _KEYS if not isinstance(resize.get(k), int)]
    if missing:
        raise ValueError(f"resize record {resize!r} lacks integer {missing}")
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    h, w = smart_resize(
        int(image_size[1]),
        int(image_size[0]),
        factor=resize["factor"],
        min_pixels=resize["min_pixels"],
        max_pixels=resize["max_pixels"],
    )
    return w, h


def video_resize_record(video_processor: Any, rule: str) -> dict[str, Any]:
    """The resize parameters of a loaded Qwen video processor, exactly as it will use them.

    Args:
        video_processor: The processor's ``video_processor``.
        rule: :data:`VIDEO_RESIZE_QWEN2` or :data:`VIDEO_RESIZE_QWEN3` (the adapter's family).

    Returns:
        ``{"rule", "factor": patch_size * merge_size, "temporal_factor": temporal_patch_size,
        "min_pixels": size["shortest_edge"], "max_pixels": size["longest_edge"],
        "cap_pixels_per_frame": bool, "max_video_tokens": int or None}``.
    """
    vp, size = video_processor, video_processor.size
    tokens = getattr(vp, "max_video_tokens", None)
    return {
        "rule": rule,
        "factor": int(vp.patch_size) * int(vp.merge_size),
        "temporal_factor": int(vp.temporal_patch_size),
        "min_pixels": int(size["shortest_edge"]),
        "max_pixels": int(size["longest_edge"]),
        "cap_pixels_per_frame": bool(getattr(vp, "cap_pixels_per_frame", None)),
        "max_video_tokens": None if tokens is None else int(tokens),
    }


def video_resized_size(
    frame_size: tuple[int, int], num_frames: int, resize: dict[str, Any]
) -> tuple[int, int]:
    """(width, height) each frame of a ``num_frames``-frame video of ``frame_size`` becomes.

    Args:
        frame_size: Original frame (width, height).
        num_frames: Frames passed to the processor (before it pads to a multiple of
            ``temporal_factor``).
        resize: A :func:`video_resize_record` (as recorded in a results file).

    Raises:
        ValueError: ``resize`` names another rule or lacks a parameter; ``num_frames`` < 1;
            or the rule itself refuses the frame (aspect ratio above 200; Qwen3-VL: fewer
            frames than ``temporal_factor``).
    """
    rule = resize.get("rule") if isinstance(resize, dict) else resize
    if rule not in (VIDEO_RESIZE_QWEN2, VIDEO_RESIZE_QWEN3):
        raise ValueError(
            f"unknown video resize rule {rule!r}; this headscope knows "
            f"{VIDEO_RESIZE_QWEN2!r} and {VIDEO_RESIZE_QWEN3!r}"
        )
    missing = [k for k in _VIDEO_KEYS if not isinstance(resize.get(k), int)]
    cap = resize.get("cap_pixels_per_frame")
    if not isinstance(cap, bool) or (cap and not isinstance(resize.get("max_video_tokens"), int)):
        missing.append("cap_pixels_per_frame/max_video_tokens")
    if missing:
        raise ValueError(f"video resize record {resize!r} lacks valid {missing}")
    n = int(num_frames)
    if n < 1:
        raise ValueError(f"a video has at least one frame, got num_frames={num_frames}")
    factor, tf = resize["factor"], resize["temporal_factor"]
    lo, hi = resize["min_pixels"], resize["max_pixels"]
    w, h = int(frame_size[0]), int(frame_size[1])
    if rule == VIDEO_RESIZE_QWEN2:
        if cap:
            total = int(resize["max_video_tokens"] * factor * factor * 0.9)
            hi = max(min(hi, total * tf // n), int(lo * 1.05))
        # The video module's smart_resize is a copy of this one (it imports torchvision).
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

        rh, rw = smart_resize(h, w, factor=factor, min_pixels=lo, max_pixels=hi)
        return rw, rh
    if cap:
        hi = max(min(resize["max_video_tokens"] * factor * factor, hi // n), int(lo * 1.05)) * n
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import smart_resize as resize3

    rh, rw = resize3(n, h, w, temporal_factor=tf, factor=factor, min_pixels=lo, max_pixels=hi)
    return rw, rh
