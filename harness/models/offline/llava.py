"""Tiny recipes of the LLaVA family (LLaVA-1.5, LLaVA-NeXT, LLaVA-OneVision), offline.

Real processor classes with PIL image backends; offline byte-level tokenizers whose special
tokens sit at the ids :func:`~harness.models.offline.tokenizer.special_token_ids` gives the
tiny models (:mod:`harness.models.tiny`).

Shrunk at ``geometry="tiny"`` (``"real"`` keeps the released checkpoints' sizes):

- LLaVA-1.5: CLIP 112/14 → 8×8 = 64 image tokens (real 336/14 → 576), ``default`` strategy
  (CLS dropped), feature layer −2, ``image_seq_length`` 64.
- LLaVA-NeXT: same CLIP; anyres pinpoints are the real ones divided by 3
  (``[[112, 224], [224, 112], [224, 224], [112, 336], [336, 112]]``), 8×8 per crop.
- LLaVA-OneVision: SigLIP 112/14 → 8×8 per crop (real 384/14 → 27×27), ``full`` strategy,
  feature layer −1, pinpoints ``112·(i, j)`` for i, j in 1..3, ``anyres_max_9``; video frames
  are pooled 2×2 → 4×4.
"""

from __future__ import annotations

from typing import Any

from harness.models.offline.tokenizer import CHATML_TEMPLATE, llava_tokenizer
from harness.models.offline.video import pil_video_processor, with_pil_video

__all__ = [
    "REAL_IMAGE_SIZE",
    "TINY_IMAGE_SIZE",
    "llava_config",
    "llava_next_processor",
    "llava_onevision_processor",
    "llava_processor",
    "vision_geometry",
]

TINY_IMAGE_SIZE = {"llava": 112, "llava_next": 112, "llava_onevision": 112, "internvl": 112}
"""Vision-tower input size (square) of the families whose tower has a fixed size."""

REAL_IMAGE_SIZE = {"llava": 336, "llava_next": 336, "llava_onevision": 384, "internvl": 448}
"""The same at the real checkpoints' geometry (``geometry="real"``): CLIP ViT-L/14-336,
SigLIP 384/14, InternViT 448/14."""


def vision_geometry(family: str, geometry: str = "tiny") -> dict[str, Any]:
    """Tower input size and anyres pinpoints of a fixed-size family, tiny or real.

    ``"real"`` is the released processors' defaults: LLaVA-NeXT's five 336-based pinpoints
    (``LlavaNextImageProcessorPil.image_grid_pinpoints``), LLaVA-OneVision's 36 pinpoints
    ``384·(i, j)``, i, j ∈ 1..6 (``LlavaOnevisionImageProcessorPil``). ``"tiny"`` divides the
    NeXT pinpoints by 3 and uses ``112·(i, j)``, i, j ∈ 1..3 for OneVision.

    Returns:
        ``{"image_size": int, "pinpoints": list | None}``.
    """
    if geometry not in ("tiny", "real"):
        raise ValueError(f"geometry must be 'tiny' or 'real', got {geometry!r}")
    size = (REAL_IMAGE_SIZE if geometry == "real" else TINY_IMAGE_SIZE)[family]
    pins = None
    if family == "llava_next":
        pins = [
            [size, 2 * size],
            [2 * size, size],
            [2 * size, 2 * size],
            [3 * size, size],
            [size, 3 * size],
        ]
    elif family == "llava_onevision":
        n = 6 if geometry == "real" else 3
        pins = [[size * i, size * j] for i in range(1, n + 1) for j in range(1, n + 1)]
    return {"image_size": size, "pinpoints": pins}


def llava_config(family: str, text: dict[str, Any], ids: dict[str, int], geometry: str) -> Any:
    """The tiny config of ``llava``, ``llava_next`` or ``llava_onevision``."""
    import transformers as tf

    from harness.models.tiny import small_vit

    geo = vision_geometry(family, geometry)
    size, pins = geo["image_size"], geo["pinpoints"]
    if family == "llava_onevision":
        siglip = small_vit(model_type="siglip_vision_model", image_size=size, patch_size=14)
        return tf.LlavaOnevisionConfig(
            text_config=dict(text, model_type="qwen2"),
            vision_config=siglip,
            image_token_index=ids["image"],
            video_token_index=ids["video"],
            image_grid_pinpoints=pins,
            vision_feature_select_strategy="full",
            vision_feature_layer=-1,
            vision_aspect_ratio="anyres_max_9",
        )
    clip = small_vit(
        model_type="clip_vision_model", image_size=size, patch_size=14, projection_dim=32
    )
    common = {
        "text_config": dict(text, model_type="llama"),
        "vision_config": clip,
        "image_token_index": ids["image"],
        "image_seq_length": (size // 14) ** 2,
        "vision_feature_select_strategy": "default",
        "vision_feature_layer": -2,
    }
    if family == "llava":
        return tf.LlavaConfig(**common)
    return tf.LlavaNextConfig(image_grid_pinpoints=pins, **common)


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


def llava_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
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


def llava_next_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
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


def llava_onevision_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
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
