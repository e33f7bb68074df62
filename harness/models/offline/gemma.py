"""Tiny recipes of Gemma 3 and PaliGemma (SigLIP towers on a fixed square canvas), offline.

Both squash each image onto the SigLIP canvas (``size`` height × width, no crop, no pad) and
cut it into 14-px patches; the real processors' classes with PIL back-ends, offline byte
tokenizers whose special tokens sit at :func:`~harness.models.offline.tokenizer.
special_token_ids`.

- Gemma 3 (``Gemma3ForConditionalGeneration``): released ``preprocessor_config.json`` of
  google/gemma-3-4b-it: ``Gemma3ImageProcessor`` 896² bilinear, mean/std 0.5, pan-and-scan off;
  ``image_seq_length`` 256; SigLIP 896/14 → 64×64 patches, average-pooled 4×4 by the projector
  to ``mm_tokens_per_image`` 256 = 16×16. ``geometry="tiny"``: 112² → 8×8 pooled 2×2 → 16.
  The image-token run sits between ``<start_of_image>`` / ``<end_of_image>`` (the processor
  expands each ``<start_of_image>`` to two newlines, ``<start_of_image>``, 256
  ``<image_soft_token>``, ``<end_of_image>`` and two newlines). The tiny decoder has one
  sliding layer (window 1024, the released value) and one global one. transformers
  initialises the projector's weight to zero, which
  makes every image feature 0: :func:`gemma3_finish` re-initialises it.
- PaliGemma (``PaliGemmaForConditionalGeneration``): google/paligemma-3b-mix-224's
  ``SiglipImageProcessor`` 224² bicubic, mean/std 0.5, ``image_seq_length`` 256 (16×16 of
  14 px, no pooling); ``geometry="tiny"``: 112² → 8×8 = 64. The processor writes
  ``<image>``×256 ``<bos>`` prompt newline (prefix-LM: the prompt attends both ways).
"""

from __future__ import annotations

from typing import Any

from harness.models.offline.tokenizer import byte_tokenizer, special_token_ids

__all__ = [
    "GEMMA_GEOMETRY",
    "gemma3_config",
    "gemma3_finish",
    "gemma3_processor",
    "paligemma_config",
    "paligemma_processor",
]

GEMMA_GEOMETRY = {
    "gemma3": {"real": (896, 256), "tiny": (112, 16)},
    "paligemma": {"real": (224, 256), "tiny": (112, 64)},
}
"""Per family and geometry: (SigLIP canvas side in px, visual tokens per image)."""

_GEMMA3_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) "
    "+ '\n' }}"
    "{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}{{ '<start_of_image>' }}"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}"
    "{{ '<end_of_turn>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}"
)
"""google/gemma-3-4b-it's chat template, reduced to what a one-turn request needs: ``<bos>``,
``<start_of_turn>user``, each image as ``<start_of_image>``, ``<end_of_turn>``, the model
turn (the released template folds a system message into the first user turn)."""


def _siglip(size: int, **extra: Any) -> dict[str, Any]:
    from harness.models.tiny import small_vit

    return small_vit(model_type="siglip_vision_model", image_size=size, patch_size=14, **extra)


def gemma3_config(text: dict[str, Any], ids: dict[str, int], geometry: str) -> Any:
    """The tiny Gemma 3 config: Gemma3 text decoder (sliding + global), SigLIP, 4×4 pooling."""
    import transformers as tf

    size, tokens = GEMMA_GEOMETRY["gemma3"][geometry]
    decoder = dict(
        text,
        model_type="gemma3_text",
        layer_types=["sliding_attention", "full_attention"][: text["num_hidden_layers"]]
        + ["full_attention"] * max(0, text["num_hidden_layers"] - 2),
        sliding_window=1024,
        query_pre_attn_scalar=text["head_dim"],
    )
    return tf.Gemma3Config(
        text_config=decoder,
        vision_config=_siglip(size),
        mm_tokens_per_image=tokens,
        boi_token_index=ids["vision_start"],
        eoi_token_index=ids["vision_end"],
        image_token_index=ids["image"],
    )


def gemma3_finish(model: Any) -> None:
    """Re-initialise the projector weight transformers initialises to zero (families.md)."""
    import torch

    from harness.models.tiny import INIT

    with torch.no_grad():
        model.model.multi_modal_projector.mm_input_projection_weight.normal_(0.0, INIT)


def gemma3_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """A ``Gemma3Processor`` for ``build_tiny_model("gemma3")`` (PIL image processor)."""
    from transformers import Gemma3Processor
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    ids = special_token_ids("gemma3", vocab_size)
    specials = {
        "<image_soft_token>": ids["image"],
        "<start_of_image>": ids["vision_start"],
        "<end_of_image>": ids["vision_end"],
        "<eos>": ids["eos"],
        "<pad>": ids["pad"],
        "<bos>": ids["bos"],
        "<start_of_turn>": ids["bos"] - 1,
        "<end_of_turn>": ids["bos"] - 2,
    }
    tokenizer = byte_tokenizer(
        vocab_size,
        specials,
        eos="<eos>",
        pad="<pad>",
        bos="<bos>",
        image_token="<image_soft_token>",
        boi_token="<start_of_image>",
        eoi_token="<end_of_image>",
    )
    size, tokens = GEMMA_GEOMETRY["gemma3"][geometry]
    image_processor = Gemma3ImageProcessorPil(
        size={"height": size, "width": size},
        resample=2,  # PILImageResampling.BILINEAR, as the released preprocessor_config
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
        do_pan_and_scan=False,
    )
    return Gemma3Processor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        image_seq_length=tokens,
        chat_template=_GEMMA3_TEMPLATE,
    )


def paligemma_config(text: dict[str, Any], ids: dict[str, int], geometry: str) -> Any:
    """The tiny PaliGemma config: a Gemma decoder and SigLIP /14 (no pooling)."""
    import transformers as tf

    size, tokens = GEMMA_GEOMETRY["paligemma"][geometry]
    hidden = text["hidden_size"]
    config = tf.PaliGemmaConfig(
        text_config=dict(text, model_type="gemma"),
        vision_config=_siglip(size, projection_dim=hidden),
        image_token_index=ids["image"],
        projection_dim=hidden,
        hidden_size=hidden,
    )
    config.text_config.num_image_tokens = tokens
    return config


def paligemma_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """A ``PaliGemmaProcessor`` for ``build_tiny_model("paligemma")`` (PIL SigLIP processor)."""
    from transformers import PaliGemmaProcessor
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    ids = special_token_ids("paligemma", vocab_size)
    specials = {
        "<image>": ids["image"],
        "<eos>": ids["eos"],
        "<pad>": ids["pad"],
        "<bos>": ids["bos"],
    }
    tokenizer = byte_tokenizer(
        vocab_size, specials, eos="<eos>", pad="<pad>", bos="<bos>", image_token="<image>"
    )
    size, tokens = GEMMA_GEOMETRY["paligemma"][geometry]
    image_processor = SiglipImageProcessorPil(
        size={"height": size, "width": size},
        resample=3,  # PILImageResampling.BICUBIC, as the released preprocessor_config
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )
    image_processor.image_seq_length = tokens
    return PaliGemmaProcessor(image_processor=image_processor, tokenizer=tokenizer)
