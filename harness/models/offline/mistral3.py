"""Tiny recipe of Mistral3 (``Mistral3ForConditionalGeneration``, Mistral-Small-3.1), offline.

The real ``PixtralProcessor`` (``patch_size`` 14, ``spatial_merge_size`` 2: 28-px cells,
``[IMG]`` / ``[IMG_BREAK]`` / ``[IMG_END]``) over ``PixtralImageProcessorPil`` (aspect kept
within ``longest_edge``, sides rounded up to 28 px, bicubic, CLIP mean/std). At
``geometry="real"`` ``longest_edge`` and the Pixtral tower's ``image_size`` are 1540 (the
released mistralai/Mistral-Small-3.1-24B-Instruct-2503 defaults transformers' Mistral3Config
documents); ``"tiny"``: 224. A Mistral text decoder and a 2-layer Pixtral tower (2D RoPE) at
patch 14.

``PixtralProcessor``'s module imports one helper from the torchvision image processor's
module; where torchvision is missing (here: not installable beside torch),
:func:`pixtral_processor_class` puts the PIL module's identical
``get_resize_output_image_size`` in its place so the real class imports.
"""

from __future__ import annotations

from typing import Any

from harness.models.offline.tokenizer import byte_tokenizer, special_token_ids

__all__ = ["MISTRAL3_EDGE", "mistral3_config", "mistral3_processor", "pixtral_processor_class"]

MISTRAL3_EDGE = {"real": 1540, "tiny": 224}
"""``longest_edge`` of the image processor and ``image_size`` of the Pixtral tower."""

_MISTRAL3_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'user' %}{{ '[INST]' }}{% endif %}"
    "{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}{{ '[IMG]' }}"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}"
    "{% if message['role'] == 'user' %}{{ '[/INST]' }}{% endif %}{% endfor %}"
)
"""Mistral-Small-3.1's chat template reduced to a one-turn request: ``<s>[INST]``, each image
``[IMG]`` (expanded by the processor), the text, ``[/INST]`` (the released template also
prepends a default system prompt)."""


def pixtral_processor_class() -> type:
    """The ``PixtralProcessor`` class, importable without torchvision (see the module)."""
    import importlib
    import sys
    import types

    name = "transformers.models.pixtral.image_processing_pixtral"
    try:
        importlib.import_module(name)
    except ImportError:
        from transformers.models.pixtral import image_processing_pil_pixtral as pil

        shim = types.ModuleType(name)
        shim.get_resize_output_image_size = pil.get_resize_output_image_size
        sys.modules[name] = shim
    from transformers.models.pixtral.processing_pixtral import PixtralProcessor

    return PixtralProcessor


def mistral3_config(text: dict[str, Any], ids: dict[str, int], geometry: str) -> Any:
    """The tiny Mistral3 config: a Mistral decoder, Pixtral /14 tower, 2×2 patch merger."""
    import transformers as tf

    from harness.models.tiny import small_vit

    vision = small_vit(
        model_type="pixtral", image_size=MISTRAL3_EDGE[geometry], patch_size=14, head_dim=16
    )
    return tf.Mistral3Config(
        text_config=dict(text, model_type="mistral", sliding_window=None),
        vision_config=vision,
        image_token_index=ids["image"],
        spatial_merge_size=2,
        vision_feature_layer=-1,
    )


def mistral3_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """A ``PixtralProcessor`` for ``build_tiny_model("mistral3")`` (PIL image processor)."""
    from transformers.models.pixtral.image_processing_pil_pixtral import (
        PixtralImageProcessorPil,
    )

    ids = special_token_ids("mistral3", vocab_size)
    specials = {
        "[IMG]": ids["image"],
        "[IMG_BREAK]": ids["vision_start"],
        "[IMG_END]": ids["vision_end"],
        "</s>": ids["eos"],
        "<pad>": ids["pad"],
        "<s>": ids["bos"],
        "[INST]": ids["bos"] - 1,
        "[/INST]": ids["bos"] - 2,
    }
    tokenizer = byte_tokenizer(vocab_size, specials, eos="</s>", pad="<pad>", bos="<s>")
    image_processor = PixtralImageProcessorPil(size={"longest_edge": MISTRAL3_EDGE[geometry]})
    return pixtral_processor_class()(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=14,
        spatial_merge_size=2,
        chat_template=_MISTRAL3_TEMPLATE,
    )
