"""Offline Qwen2-VL / Qwen2.5-VL / Qwen3-VL processors (the real classes, PIL back-ends).

The PIL image processor with explicit pixel budgets; the HF Qwen *video* processors need
torchvision, so :class:`~harness.models.offline.video.PilQwenVideoProcessor` stands in: the
same resize rule (HF's own ``smart_resize``), normalisation and temporal patchify.
"""

from __future__ import annotations

from typing import Any

from harness.models.offline.tokenizer import byte_tokenizer, special_token_ids
from harness.models.offline.video import PilQwenVideoProcessor, with_pil_video

__all__ = ["QWEN_REAL_TOKENS", "QWEN_TINY_PIXELS", "qwen_config", "qwen_processor", "qwen_recipe"]

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
QWEN_REAL_TOKENS = {
    "qwen2_vl": {"image": (4, 16384), "video": (128, 768)},
    "qwen2_5_vl": {"image": (4, 16384), "video": (128, 768)},
    "qwen3_vl": {"image": (64, 16384), "video": (128, 768)},
}
"""(min, max) merged tokens at ``geometry="real"``: per image the released checkpoints'
``preprocessor_config.json`` budgets (Qwen2/2.5-VL 3136 to 12845056 px of 28-px cells;
Qwen3-VL ``size`` 65536 to 16777216 px of 32-px cells); per frame pair the
``Qwen2VLVideoProcessor`` defaults (128 to 768 cells)."""


def qwen_processor(
    family: str,
    vocab_size: int = 512,
    *,
    image_tokens: tuple[int, int] | None = None,
    video_tokens: tuple[int, int] | None = None,
    geometry: str = "tiny",
) -> Any:
    """A real Qwen processor with an offline tokenizer (qwen2_vl, qwen2_5_vl, qwen3_vl).

    Its defaults fit the tiny models (:func:`harness.models.tiny.build_tiny_model`).

    Args:
        family: ``qwen2_vl``, ``qwen2_5_vl`` or ``qwen3_vl``.
        vocab_size: The model's vocabulary size.
        image_tokens: (min, max) merged tokens per image (default :data:`QWEN_TINY_PIXELS`);
            pixels = tokens · cell².
        video_tokens: (min, max) merged tokens per frame pair (Qwen3-VL: for the whole clip).
        geometry: ``"tiny"`` (:data:`QWEN_TINY_PIXELS`) or ``"real"`` (:data:`QWEN_REAL_TOKENS`):
            the budgets used where ``image_tokens`` / ``video_tokens`` are not given.

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
    budgets = QWEN_REAL_TOKENS[family] if geometry == "real" else px
    cell2 = px["cell"] ** 2
    lo, hi = image_tokens or budgets["image"]
    vlo, vhi = video_tokens or budgets["video"]
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


def _scaled_sections(real: tuple[int, int, int], half: int) -> list[int]:
    """Scale real M-RoPE sections (summing to 64) to sum to ``half`` = head_dim / 2."""
    total = sum(real)
    out = [max(1, round(s * half / total)) for s in real[1:]]
    return [half - sum(out), *out]


# Vision towers of the Qwen families: real patch / merge / temporal sizes, tiny widths.
_QWEN_VISION: dict[str, dict[str, Any]] = {
    "qwen2_vl": {"embed_dim": 32, "mlp_ratio": 2},
    "qwen2_5_vl": {
        "hidden_size": 32,
        "intermediate_size": 64,
        "window_size": 112,
        "fullatt_block_indexes": [1],
    },
    "qwen3_vl": {
        "hidden_size": 32,
        "intermediate_size": 64,
        "patch_size": 16,
        "num_position_embeddings": 64,
        "deepstack_visual_indexes": [0],
    },
}
_QWEN_MROPE = {"qwen2_vl": (16, 24, 24), "qwen2_5_vl": (16, 24, 24), "qwen3_vl": (24, 20, 20)}
_QWEN_CONFIGS = {
    "qwen2_vl": "Qwen2VLConfig",
    "qwen2_5_vl": "Qwen2_5_VLConfig",
    "qwen3_vl": "Qwen3VLConfig",
}


def qwen_config(
    family: str, text: dict[str, Any], ids: dict[str, int], geometry: str = "tiny"
) -> Any:
    """The tiny config of a Qwen family: real patch / merge / temporal sizes at any geometry.

    Qwen2-VL / Qwen2.5-VL: patch 14, spatial merge 2, temporal patch 2 (28-px merged cells), so
    the processor's pixel budgets are the only things to shrink; Qwen2.5's window attention
    uses ``window_size`` 112 and full attention in its last vision block. Qwen3-VL: patch 16
    (32-px cells), 64 learned position embeddings (an 8×8 grid, interpolated to any image like
    the real 48×48), DeepStack from vision block 0 into decoder layer 0, interleaved M-RoPE.
    M-RoPE sections are scaled from the real ones to ``head_dim``.
    """
    import transformers as tf

    from harness.models.tiny import INIT

    rope = {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "mrope_section": _scaled_sections(_QWEN_MROPE[family], text["head_dim"] // 2),
    }
    if family == "qwen3_vl":
        rope["mrope_interleaved"] = True
    out_key = "hidden_size" if family == "qwen2_vl" else "out_hidden_size"
    vision = {
        "depth": 2,
        "num_heads": 2,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "initializer_range": INIT,
        **_QWEN_VISION[family],
        out_key: text["hidden_size"],
    }
    return getattr(tf, _QWEN_CONFIGS[family])(
        text_config=dict(text, rope_parameters=rope),
        vision_config=vision,
        image_token_id=ids["image"],
        video_token_id=ids["video"],
        vision_start_token_id=ids["vision_start"],
        vision_end_token_id=ids["vision_end"],
    )


def qwen_recipe(family: str) -> Any:
    """The :class:`~harness.models.unit.TinyRecipe` of a Qwen family (:func:`qwen_processor`)."""
    from functools import partial

    from harness.models.unit import TinyRecipe

    return TinyRecipe(
        config=partial(qwen_config, family), processor=partial(qwen_processor, family)
    )
