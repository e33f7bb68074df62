"""Tiny offline processors matching :mod:`harness.testing.tiny` models (for CPU tests).

Each builder returns the family's real ``transformers`` processor class, with PIL image
backends (torchvision is not required) and an offline tokenizer whose special tokens sit at
the ids of :func:`harness.models.offline.tokenizer.special_token_ids`. Sizes match the tiny
configs. The pieces (tokenizer, video stand-ins, the Qwen processors) are product code in
:mod:`harness.models.offline`; the Qwen builder is
:func:`harness.models.offline.qwen.qwen_processor`.
"""

from __future__ import annotations

from typing import Any

from harness.models.offline.tokenizer import (
    CHATML_TEMPLATE,
    byte_tokenizer,
    llava_tokenizer,
    special_token_ids,
)
from harness.models.offline.video import pil_video_processor, with_pil_video
from harness.testing.tiny import vision_geometry

# --- LLaVA / LLaVA-NeXT / LLaVA-OneVision / InternVL (adapter helper for issue 3) -------------
# Real processor classes with PIL image backends; offline byte-level tokenizers whose special
# tokens sit at the ids special_token_ids gives the tiny models.

_LLAVA_TEMPLATE = (
    "{% for message in messages %}"
    "{{ message['role'].upper() + ': ' }}"
    "{% for c in message['content'] if c['type'] == 'image' %}{{ '<image>\n' }}{% endfor %}"
    "{% for c in message['content'] if c['type'] == 'video' %}{{ '<video>\n' }}{% endfor %}"
    "{% for c in message['content'] if c['type'] == 'text' %}{{ c['text'] + ' ' }}{% endfor %}"
    "{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)
_MISTRAL_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' }}{% endif %}"
    "{% for c in message['content'] if c['type'] == 'image' %}{{ '<image>\n' }}{% endfor %}"
    "{% for c in message['content'] if c['type'] == 'text' %}{{ c['text'] }}{% endfor %}"
    "{% if message['role'] == 'user' %}{{ ' [/INST]' }}{% endif %}"
    "{% endfor %}"
)


def _clip_llava_args(
    family: str, vocab_size: int, image_cls: type, size: int, **image_kw: Any
) -> dict:
    """Processor arguments LLaVA-1.5 and LLaVA-NeXT share (one CLIP /14 tower at ``size``²)."""
    return {
        "image_processor": image_cls(
            size={"shortest_edge": size}, crop_size={"height": size, "width": size}, **image_kw
        ),
        "tokenizer": llava_tokenizer(family, vocab_size, chatml=False),
        "patch_size": 14,
        "vision_feature_select_strategy": "default",
        "num_additional_image_tokens": 1,
    }


def tiny_llava_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """A ``LlavaProcessor`` for ``build_tiny_model("llava")``: CLIP 112 crop, 8×8 = 64 tokens.

    Mirrors llava-1.5-hf: resize the short side to 112 (``geometry="real"``: 336, 24×24),
    center crop, CLS dropped by the ``default`` strategy (``num_additional_image_tokens=1``),
    "USER: ... ASSISTANT:" template (video frames, if any, are shown as images by the adapter).
    """
    from transformers import LlavaProcessor
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

    size = vision_geometry("llava", geometry)["image_size"]
    args = _clip_llava_args("llava", vocab_size, LlavaImageProcessorPil, size)
    return LlavaProcessor(**args, chat_template=_LLAVA_TEMPLATE)


def tiny_llava_next_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """A ``LlavaNextProcessor`` for ``build_tiny_model("llava_next")`` (pinpoints ÷ 3, 112²).

    ``geometry="real"``: 336² crops and llava-v1.6's default pinpoints.
    """
    from transformers import LlavaNextProcessor
    from transformers.models.llava_next.image_processing_pil_llava_next import (
        LlavaNextImageProcessorPil,
    )

    geo = vision_geometry("llava_next", geometry)
    args = _clip_llava_args(
        "llava_next",
        vocab_size,
        LlavaNextImageProcessorPil,
        geo["image_size"],
        image_grid_pinpoints=geo["pinpoints"],
    )
    return LlavaNextProcessor(**args, chat_template=_MISTRAL_TEMPLATE)


def tiny_llava_onevision_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """A ``LlavaOnevisionProcessor`` for ``build_tiny_model("llava_onevision")``.

    SigLIP 112 crops (8×8 = 64 tokens; ``geometry="real"``: 384 → 27×27 and the 36 default
    pinpoints), pinpoints ``112·(i, j)``, ``anyres_max_9``, ChatML template; video through
    :func:`pil_video_processor`.
    """
    from transformers import LlavaOnevisionProcessor
    from transformers.models.llava_onevision.image_processing_pil_llava_onevision import (
        LlavaOnevisionImageProcessorPil,
    )

    geo = vision_geometry("llava_onevision", geometry)
    size = geo["image_size"]
    image_processor = LlavaOnevisionImageProcessorPil(
        size={"height": size, "width": size}, image_grid_pinpoints=geo["pinpoints"]
    )
    return with_pil_video(LlavaOnevisionProcessor)(
        image_processor=image_processor,
        tokenizer=llava_tokenizer("llava_onevision", vocab_size, chatml=True),
        video_processor=pil_video_processor(size),
        num_image_tokens=(size // 14) ** 2,
        vision_feature_select_strategy="full",
        vision_aspect_ratio="anyres_max_9",
        chat_template=CHATML_TEMPLATE.replace("{{ IMAGE }}", "{{ '<image>\n' }}"),
    )


def tiny_internvl_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
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
