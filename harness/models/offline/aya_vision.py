"""Tiny recipe of AyaVision (``AyaVisionForConditionalGeneration``), offline.

GotOcr2's crop-to-patches: the image squashed onto the best ``cols × rows`` grid of tiles
(at most 12) plus a squashed global tile, each tile cut by SigLIP into 14-px patches and
pixel-shuffled by ``downsample_factor`` 2 in the projector. ``geometry="real"`` is
CohereForAI/aya-vision-8b's: 364² tiles → 26×26 patches → 13×13 = 169 ``<|IMG_PATCH|>`` a
tile (``"tiny"``: 56² tiles → 2×2). The processor's ``patch_size · downsample_factor``
(28) must equal the tower's patch times the model's ``downsample_factor``, or the processor
writes a different number of placeholders than the projector makes (families.md).

A Cohere2 text decoder with the released layer pattern: sliding layers (window 4096) and full
layers, here all sliding but the last. The offline byte tokenizer carries the processor's
special tokens (``<image>``, ``<|START_OF_IMG|>``, ``<|END_OF_IMG|>``, ``<|IMG_PATCH|>``,
``<|IMG_LINE_BREAK|>``; ``TILE_k`` and ``TILE_GLOBAL`` are plain text, as in the released
tokenizer) and the Command-R turn tokens of the released chat template.
"""

from __future__ import annotations

from typing import Any

from harness.models.offline.tokenizer import byte_tokenizer, special_token_ids

__all__ = ["AYA_TEMPLATE", "aya_vision_config", "aya_vision_processor"]

TILE = {"real": 364, "tiny": 56}
"""Tile side per geometry (real: aya-vision-8b's ``img_size`` / image processor ``size``)."""
PATCH, DOWNSAMPLE, MAX_TILES, WINDOW = 14, 2, 12, 4096

AYA_TEMPLATE = (
    "<BOS_TOKEN>{% for message in messages %}<|START_OF_TURN_TOKEN|>"
    "{% if message['role'] == 'user' %}<|USER_TOKEN|>{% elif message['role'] == 'system' %}"
    "<|SYSTEM_TOKEN|>{% else %}<|CHATBOT_TOKEN|>{% endif %}"
    "{% for c in message['content'] %}{% if c['type'] == 'image' %}<image>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}"
    "<|END_OF_TURN_TOKEN|>{% endfor %}"
    "{% if add_generation_prompt %}<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>{% endif %}"
)
"""The shape of aya-vision-8b's template: Command-R turns, ``<image>`` where an image goes."""


def _tile(geometry: str) -> int:
    if geometry not in TILE:
        raise ValueError(f"geometry must be 'tiny' or 'real', got {geometry!r}")
    return TILE[geometry]


def aya_vision_config(text: dict[str, Any], ids: dict[str, int], geometry: str) -> Any:
    """The tiny AyaVision config (Cohere2 decoder: one sliding, one full layer; SigLIP /14)."""
    import transformers as tf

    from harness.models.tiny import small_vit

    decoder = dict(
        text,
        model_type="cohere2",
        sliding_window=WINDOW,
        layer_types=["sliding_attention"] * (text["num_hidden_layers"] - 1) + ["full_attention"],
    )
    vision = small_vit(
        model_type="siglip_vision_model", image_size=_tile(geometry), patch_size=PATCH
    )
    return tf.AyaVisionConfig(
        text_config=decoder,
        vision_config=vision,
        downsample_factor=DOWNSAMPLE,
        image_token_index=ids["image"],
        vision_feature_layer=-1,
        vision_feature_select_strategy="full",
    )


def aya_vision_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """An ``AyaVisionProcessor`` for ``build_tiny_model("aya_vision")`` (364² tiles at real)."""
    from transformers import AyaVisionProcessor
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import (
        GotOcr2ImageProcessorPil,
    )

    ids = special_token_ids("aya_vision", vocab_size)
    specials = {
        "<|IMG_PATCH|>": ids["image"],
        "<|START_OF_IMG|>": ids["vision_start"],
        "<|END_OF_IMG|>": ids["vision_end"],
        "<|END_OF_TURN_TOKEN|>": ids["eos"],
        "<PAD>": ids["pad"],
        "<BOS_TOKEN>": ids["bos"],
    }
    extra = (
        "<image>",
        "<|IMG_LINE_BREAK|>",
        "<|START_OF_TURN_TOKEN|>",
        "<|USER_TOKEN|>",
        "<|CHATBOT_TOKEN|>",
        "<|SYSTEM_TOKEN|>",
    )
    specials.update({name: 256 + k for k, name in enumerate(extra)})
    tokenizer = byte_tokenizer(
        vocab_size, specials, eos="<|END_OF_TURN_TOKEN|>", pad="<PAD>", bos="<BOS_TOKEN>"
    )
    tile = _tile(geometry)
    image_processor = GotOcr2ImageProcessorPil(
        size={"height": tile, "width": tile},
        crop_to_patches=True,
        min_patches=1,
        max_patches=MAX_TILES,
    )
    return AyaVisionProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=PATCH,
        img_size=tile,
        downsample_factor=DOWNSAMPLE,
        chat_template=AYA_TEMPLATE,
    )
