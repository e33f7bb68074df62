"""The image size a Qwen-VL processor resizes to, from recorded parameters (no processor needed).

Qwen2-VL, Qwen2.5-VL and Qwen3-VL all resize still images with the image processor
``Qwen2VLImageProcessor(Pil)`` (transformers' ``AutoImageProcessor`` maps all three families to
it): ``smart_resize(height, width, factor=patch_size * merge_size,
min_pixels=size["shortest_edge"], max_pixels=size["longest_edge"])`` in
``transformers/models/qwen2_vl/image_processing_pil_qwen2_vl.py`` (its ``_preprocess``). The
adapters record those resolved values in their settings (:func:`resize_record`, key ``resize``);
the adapter's own ``resized_size`` and ``headscope rescore`` both compute the size through
:func:`resized_size`, so the two cannot drift. Light at import: transformers is imported only
when a size is computed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SMART_RESIZE", "resize_record", "resized_size"]

#: The resize rule Qwen's image processor applies (a transformers function, dotted path).
SMART_RESIZE = "transformers.models.qwen2_vl.image_processing_pil_qwen2_vl.smart_resize"
_KEYS = ("factor", "min_pixels", "max_pixels")


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
