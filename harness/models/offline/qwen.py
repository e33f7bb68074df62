"""Offline Qwen2-VL / Qwen2.5-VL / Qwen3-VL processors (the real classes, PIL back-ends).

The PIL image processor with explicit pixel budgets; the HF Qwen *video* processors need
torchvision, so :class:`~harness.models.offline.video.PilQwenVideoProcessor` stands in: the
same resize rule (HF's own ``smart_resize``), normalisation and temporal patchify.
"""

from __future__ import annotations

from typing import Any

from harness.models.offline.tokenizer import byte_tokenizer, special_token_ids
from harness.models.offline.video import PilQwenVideoProcessor, with_pil_video

__all__ = ["QWEN_TINY_PIXELS", "qwen_processor"]

_QWEN_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}SYSTEM{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{% elif c['type'] == 'video' %}{{ '<|vision_start|><|video_pad|><|vision_end|>' }}"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<|im_end|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
QWEN_TINY_PIXELS = {
    "qwen2_vl": {"cell": 28, "image": (4, 36), "video": (4, 16)},
    "qwen2_5_vl": {"cell": 28, "image": (4, 36), "video": (4, 16)},
    "qwen3_vl": {"cell": 32, "image": (4, 36), "video": (4, 32)},
}
"""Per family: merged-cell size in px and (min, max) merged tokens per image / per video."""


def qwen_processor(
    family: str,
    vocab_size: int = 512,
    *,
    image_tokens: tuple[int, int] | None = None,
    video_tokens: tuple[int, int] | None = None,
) -> Any:
    """A real Qwen processor with an offline tokenizer (qwen2_vl, qwen2_5_vl, qwen3_vl).

    Its defaults fit the tiny test models (:func:`harness.testing.tiny.build_tiny_model`).

    Args:
        family: ``qwen2_vl``, ``qwen2_5_vl`` or ``qwen3_vl``.
        vocab_size: The model's vocabulary size.
        image_tokens: (min, max) merged tokens per image (default :data:`QWEN_TINY_PIXELS`);
            pixels = tokens · cell².
        video_tokens: (min, max) merged tokens per frame pair (Qwen3-VL: for the whole clip).

    Returns:
        ``Qwen2VLProcessor`` / ``Qwen2_5_VLProcessor`` / ``Qwen3VLProcessor``: PIL image
        processor, :class:`PilQwenVideoProcessor`, byte-level tokenizer, ChatML template
        (Qwen2/2.5: default system prompt, as the real templates; Qwen3: none).
    """
    import transformers as tf
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    classes = {"qwen2_vl": "Qwen2VLProcessor", "qwen2_5_vl": "Qwen2_5_VLProcessor"}
    classes["qwen3_vl"] = "Qwen3VLProcessor"
    if family not in classes:
        raise ValueError(f"not a Qwen family: {family!r}")
    px = QWEN_TINY_PIXELS[family]
    cell2 = px["cell"] ** 2
    lo, hi = image_tokens or px["image"]
    vlo, vhi = video_tokens or px["video"]
    if family == "qwen3_vl":
        vlo, vhi = vlo * 2, vhi * 2  # the 3-D budget counts frames, two per token group
    ids = special_token_ids(family, vocab_size)
    specials = {
        "<|image_pad|>": ids["image"],
        "<|video_pad|>": ids["video"],
        "<|vision_start|>": ids["vision_start"],
        "<|vision_end|>": ids["vision_end"],
        "<|im_end|>": ids["eos"],
        "<|endoftext|>": ids["pad"],
        "<|im_start|>": ids["bos"],
    }
    tokenizer = byte_tokenizer(vocab_size, specials, eos="<|im_end|>", pad="<|endoftext|>")
    qwen3 = family == "qwen3_vl"
    image_processor = Qwen2VLImageProcessorPil(
        min_pixels=lo * cell2,
        max_pixels=hi * cell2,
        patch_size=px["cell"] // 2,
        **({"image_mean": [0.5] * 3, "image_std": [0.5] * 3} if qwen3 else {}),
    )
    system = "" if qwen3 else "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    return with_pil_video(getattr(tf, classes[family]))(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=PilQwenVideoProcessor.build(family, vlo * cell2, vhi * cell2),
        chat_template=_QWEN_TEMPLATE.replace("SYSTEM", system),
    )
