"""Tiny recipe of InternVL (``InternVLForConditionalGeneration``), offline.

Tiles 112² with patch 14 → 8×8, pixel shuffle 0.5 → 4×4 = 16 tokens per tile at
``geometry="tiny"`` (``"real"``: 448² → 256), ``image_seq_length`` accordingly, up to 12 tiles,
thumbnail last when more than one tile; a Qwen2 text decoder; ``<img>``/``</img>`` around
``<IMG_CONTEXT>`` runs, ChatML template; video through
:func:`~harness.models.offline.video.pil_video_processor` (one tile per frame).
"""

from __future__ import annotations

from typing import Any

from harness.models.offline.llava import vision_geometry
from harness.models.offline.tokenizer import CHATML_TEMPLATE, byte_tokenizer, special_token_ids
from harness.models.offline.video import pil_video_processor, with_pil_video

__all__ = ["internvl_config", "internvl_processor"]


def internvl_config(text: dict[str, Any], ids: dict[str, int], geometry: str) -> Any:
    """The tiny InternVL config (a Qwen2 decoder, InternViT /14 with pixel shuffle 0.5)."""
    import transformers as tf

    from harness.models.tiny import small_vit

    size = vision_geometry("internvl", geometry)["image_size"]
    vision = small_vit(model_type="internvl_vision", image_size=[size, size], patch_size=[14, 14])
    return tf.InternVLConfig(
        text_config=dict(text, model_type="qwen2"),
        vision_config=vision,
        image_token_id=ids["image"],
        image_seq_length=(size // 28) ** 2,
        downsample_ratio=0.5,
        vision_feature_layer=-1,
    )


def internvl_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """An ``InternVLProcessor`` for ``build_tiny_model("internvl")``: 112² tiles of 16 tokens.

    Tiles up to 12 (``geometry="real"``: 448² of 256 tokens), thumbnail last when more than
    one tile, ``<img>``/``</img>`` around ``<IMG_CONTEXT>`` runs, ChatML template; video through
    :func:`pil_video_processor` (one 112² tile per frame).
    """
    from transformers import InternVLProcessor
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import (
        GotOcr2ImageProcessorPil,
    )

    ids = special_token_ids("internvl", vocab_size)
    specials = {
        "<IMG_CONTEXT>": ids["image"],
        "<video>": ids["video"],
        "<img>": ids["vision_start"],
        "</img>": ids["vision_end"],
        "<|im_end|>": ids["eos"],
        "<pad>": ids["pad"],
        "<|im_start|>": ids["bos"],
    }
    tokenizer = byte_tokenizer(
        vocab_size,
        specials,
        eos="<|im_end|>",
        pad="<pad>",
        start_image_token="<img>",
        end_image_token="</img>",
        context_image_token="<IMG_CONTEXT>",
        video_token="<video>",
    )
    size = vision_geometry("internvl", geometry)["image_size"]
    image_processor = GotOcr2ImageProcessorPil(
        size={"height": size, "width": size}, crop_to_patches=True, max_patches=12
    )
    return with_pil_video(InternVLProcessor)(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=pil_video_processor(size),
        image_seq_length=(size // 28) ** 2,
        chat_template=CHATML_TEMPLATE.replace("{{ IMAGE }}", "{{ '<IMG_CONTEXT>\n' }}"),
    )
