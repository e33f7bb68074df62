"""Tiny recipe of GLM-4.1V (``Glm4vForConditionalGeneration``), offline.

The real ``Glm4vProcessor`` with its PIL image processor (``Glm4vImageProcessorPil``: aspect
kept, sides rounded to multiples of 28 = patch 14 · merge 2, pixel budget ``size``
``shortest_edge`` / ``longest_edge``); its video processor needs torchvision, so the recipe has
none (images and pages only). The image budget at ``geometry="real"`` is the image processor's
class default (112² to 28²·15000 px); ``"tiny"`` caps it at 36 merged cells. A GLM-4 text
decoder (M-RoPE over half of each head, as the released ``partial_rotary_factor`` 0.5) and a
2-layer GLM-4V vision tower at the real patch / merge / temporal sizes; the byte tokenizer
carries ``<|image|>``, ``<|begin_of_image|>`` / ``<|end_of_image|>`` and the video markers the
processor looks up.
"""

from __future__ import annotations

from typing import Any

from harness.models.offline.tokenizer import byte_tokenizer, special_token_ids

__all__ = ["GLM4V_TINY_CELLS", "glm4v_config", "glm4v_processor"]

GLM4V_TINY_CELLS = (4, 36)
"""(min, max) merged 28-px cells per image at ``geometry="tiny"``."""

_GLM4V_TEMPLATE = (
    "[gMASK]<sop>{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\n' }}"
    "{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}{{ '<|begin_of_image|><|image|><|end_of_image|>' }}"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)
"""zai-org/GLM-4.1V-9B-Thinking's chat template, reduced to a one-turn request: ``[gMASK]<sop>``,
role tags ``<|user|>`` / ``<|assistant|>``, each image ``<|begin_of_image|><|image|>
<|end_of_image|>``."""


def glm4v_config(text: dict[str, Any], ids: dict[str, int], geometry: str) -> Any:
    """The tiny GLM-4.1V config (GLM-4 decoder, GLM-4V vision tower, patch 14, merge 2)."""
    import transformers as tf

    from harness.models.tiny import INIT

    rope = {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "partial_rotary_factor": 0.5,
        "mrope_section": [2, 1, 1],  # the real [8, 12, 12] over 32, here over head_dim/4 = 4
    }
    vision = {
        "depth": 2,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "image_size": 336,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "out_hidden_size": text["hidden_size"],
        "initializer_range": INIT,
    }
    return tf.Glm4vConfig(
        text_config=dict(text, rope_parameters=rope),
        vision_config=vision,
        image_token_id=ids["image"],
        video_token_id=ids["video"],
        image_start_token_id=ids["vision_start"],
        image_end_token_id=ids["vision_end"],
        video_start_token_id=ids["bos"] - 3,
        video_end_token_id=ids["bos"] - 4,
    )


def _without_video(cls: type) -> type:
    """``cls`` accepting no video processor (HF's class check of one needs torchvision)."""

    def check_argument_for_proper_class(self: Any, argument_name: str, argument: Any) -> Any:
        if argument_name == "video_processor" and argument is None:
            return None
        return cls.check_argument_for_proper_class(self, argument_name, argument)

    check = {"check_argument_for_proper_class": check_argument_for_proper_class}
    return type(cls.__name__, (cls,), check)


def glm4v_processor(
    vocab_size: int = 512,
    geometry: str = "tiny",
    image_tokens: tuple[int, int] | None = None,
) -> Any:
    """A ``Glm4vProcessor`` for ``build_tiny_model("glm4v")`` (no video processor).

    Args:
        vocab_size: The model's vocabulary size.
        geometry: ``"tiny"`` (:data:`GLM4V_TINY_CELLS`) or ``"real"`` (the image processor's
            default budget).
        image_tokens: (min, max) merged cells per image, overriding the geometry's budget.
    """
    from transformers import Glm4vProcessor
    from transformers.models.glm4v.image_processing_pil_glm4v import Glm4vImageProcessorPil

    ids = special_token_ids("glm4v", vocab_size)
    specials = {
        "<|image|>": ids["image"],
        "<|video|>": ids["video"],
        "<|begin_of_image|>": ids["vision_start"],
        "<|end_of_image|>": ids["vision_end"],
        "<|endoftext|>": ids["eos"],
        "<pad>": ids["pad"],
        "[gMASK]": ids["bos"],
        "<sop>": ids["bos"] - 1,
        "<|user|>": ids["bos"] - 2,
        "<|begin_of_video|>": ids["bos"] - 3,
        "<|end_of_video|>": ids["bos"] - 4,
        "<|assistant|>": ids["bos"] - 5,
    }
    tokenizer = byte_tokenizer(
        vocab_size,
        specials,
        eos="<|endoftext|>",
        pad="<pad>",
        image_token="<|image|>",
        video_token="<|video|>",
    )
    size = {}
    budget = image_tokens or (GLM4V_TINY_CELLS if geometry == "tiny" else None)
    if budget is not None:
        size = {"size": {"shortest_edge": budget[0] * 28**2, "longest_edge": budget[1] * 28**2}}
    return _without_video(Glm4vProcessor)(
        image_processor=Glm4vImageProcessorPil(**size),
        tokenizer=tokenizer,
        video_processor=None,
        chat_template=_GLM4V_TEMPLATE,
    )
