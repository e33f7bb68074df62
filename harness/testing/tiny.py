"""Tiny random instances of the seven VLM classes, for CPU tests (no hub access).

Every builder is seeded, float32, eval mode, CPU, built from ``transformers`` config classes
with ``attn_implementation="sdpa"`` for the whole model. Sizes are chosen so a forward over a
few hundred tokens takes milliseconds, while each vision tower still accepts real images.

Choices (documented because tiny processors in ``harness/testing/tiny_processors.py`` and
:mod:`harness.models.offline` must match them):

- Text decoder: ``num_layers`` × ``num_heads`` query heads (``num_kv_heads`` KV heads) of
  ``head_dim``; ``hidden = num_heads · head_dim``; FFN ``2 · hidden``; no sliding layers
  (so "dense" really is dense, attention.md pitfall 2). Weights use ``initializer_range`` 0.2
  (not HF's 0.02) so attention patterns are peaked and equivalence tests have teeth.
- Vocabulary: ``vocab_size`` (default 512). The top :data:`TINY_RESERVED` ids are special
  tokens, laid out by :func:`special_token_ids`; random text ids stay below them.
- Qwen2-VL / Qwen2.5-VL: real patch 14, spatial merge 2, temporal patch 2 (28-px merged cells),
  so the processor's ``min_pixels``/``max_pixels`` are the only things to shrink. Qwen2.5's
  window attention uses ``window_size`` 112 and full attention in its last vision block.
  M-RoPE sections scaled to ``head_dim`` (real [16, 24, 24] for 128 → proportional).
- Qwen3-VL: real patch 16, merge 2 (32-px cells); 64 learned position embeddings (an 8×8 grid,
  bilinearly interpolated to any image like the real 48×48); DeepStack from vision block 0 into
  decoder layer 0; interleaved M-RoPE sections scaled from [24, 20, 20].
- LLaVA-1.5: CLIP 112/14 → 8×8 = 64 image tokens (real 336/14 → 576), ``default`` strategy
  (CLS dropped), feature layer −2, ``image_seq_length`` 64.
- LLaVA-NeXT: same CLIP; anyres pinpoints are the real ones divided by 3
  (``[[112, 224], [224, 112], [224, 224], [112, 336], [336, 112]]``), 8×8 per crop.
- LLaVA-OneVision: SigLIP 112/14 → 8×8 per crop (real 384/14 → 27×27), ``full`` strategy,
  feature layer −1, pinpoints ``112·(i, j)`` for i, j in 1..3, ``anyres_max_9``; video frames
  are pooled 2×2 → 4×4.
- InternVL: tiles 112² with patch 14 → 8×8, pixel shuffle 0.5 → 4×4 = 16 tokens per tile
  (real 448² → 256), ``image_seq_length`` 16; Qwen2 text decoder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.models.offline.tokenizer import FAMILIES as TINY_FAMILIES
from harness.models.offline.tokenizer import RESERVED as TINY_RESERVED
from harness.models.offline.tokenizer import special_token_ids

if TYPE_CHECKING:
    import torch

__all__ = [
    "TINY_FAMILIES",
    "TINY_RESERVED",
    "TINY_IMAGE_SIZE",
    "build_tiny_model",
    "special_token_ids",
    "tiny_text_inputs",
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
        pins = [[size, 2 * size], [2 * size, size], [2 * size, 2 * size], [3 * size, size],
                [size, 3 * size]]  # fmt: skip
    elif family == "llava_onevision":
        n = 6 if geometry == "real" else 3
        pins = [[size * i, size * j] for i in range(1, n + 1) for j in range(1, n + 1)]
    return {"image_size": size, "pinpoints": pins}


_DEFAULT_VOCAB = 512
_INIT = 0.2


def _check_family(family: str) -> None:
    if family not in TINY_FAMILIES:
        raise ValueError(f"unknown tiny family {family!r} (known: {', '.join(TINY_FAMILIES)})")


def _scaled_sections(real: tuple[int, int, int], half: int) -> list[int]:
    """Scale real M-RoPE sections (summing to 64) to sum to ``half`` = head_dim / 2."""
    total = sum(real)
    out = [max(1, round(s * half / total)) for s in real[1:]]
    return [half - sum(out), *out]


def _text_kwargs(layers: int, heads: int, kv: int, head_dim: int, vocab: int) -> dict[str, Any]:
    hidden = heads * head_dim
    ids = {"eos": vocab - 5, "pad": vocab - 6, "bos": vocab - 7}
    return {
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": 2 * hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "max_position_embeddings": 32768,
        "initializer_range": _INIT,
        "bos_token_id": ids["bos"],
        "eos_token_id": ids["eos"],
        "pad_token_id": ids["pad"],
        "tie_word_embeddings": False,
    }


def _small_vit(**extra: Any) -> dict[str, Any]:
    base = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "initializer_range": _INIT,
    }
    base.update(extra)
    return base


# Vision towers of the Qwen families: real patch / merge / temporal sizes, tiny widths.
_QWEN_VISION: dict[str, dict[str, Any]] = {
    "qwen2_vl": {"embed_dim": 32, "mlp_ratio": 2},
    "qwen2_5_vl": {"hidden_size": 32, "intermediate_size": 64, "window_size": 112,
                   "fullatt_block_indexes": [1]},
    "qwen3_vl": {"hidden_size": 32, "intermediate_size": 64, "patch_size": 16,
                 "num_position_embeddings": 64, "deepstack_visual_indexes": [0]},
}  # fmt: skip
_QWEN_MROPE = {"qwen2_vl": (16, 24, 24), "qwen2_5_vl": (16, 24, 24), "qwen3_vl": (24, 20, 20)}


def _qwen_config(family: str, text: dict[str, Any], ids: dict[str, int]) -> Any:
    import transformers as tf

    rope = {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "mrope_section": _scaled_sections(_QWEN_MROPE[family], text["head_dim"] // 2),
    }
    if family == "qwen3_vl":
        rope["mrope_interleaved"] = True
    out_key = "hidden_size" if family == "qwen2_vl" else "out_hidden_size"
    vision = {"depth": 2, "num_heads": 2, "patch_size": 14, "spatial_merge_size": 2,
              "temporal_patch_size": 2, "initializer_range": _INIT,
              **_QWEN_VISION[family], out_key: text["hidden_size"]}  # fmt: skip
    cls = {"qwen2_vl": tf.Qwen2VLConfig, "qwen2_5_vl": tf.Qwen2_5_VLConfig,
           "qwen3_vl": tf.Qwen3VLConfig}[family]  # fmt: skip
    return cls(
        text_config=dict(text, rope_parameters=rope),
        vision_config=vision,
        image_token_id=ids["image"],
        video_token_id=ids["video"],
        vision_start_token_id=ids["vision_start"],
        vision_end_token_id=ids["vision_end"],
    )


def _config(family: str, text: dict[str, Any], vocab: int, geometry: str = "tiny") -> Any:
    import transformers as tf

    ids = special_token_ids(family, vocab)
    if family.startswith("qwen"):
        return _qwen_config(family, text, ids)
    geo = vision_geometry(family, geometry)
    size, pins = geo["image_size"], geo["pinpoints"]
    if family in ("llava", "llava_next"):
        clip = _small_vit(
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
    if family == "llava_onevision":
        siglip = _small_vit(model_type="siglip_vision_model", image_size=size, patch_size=14)
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
    vision = _small_vit(model_type="internvl_vision", image_size=[size, size], patch_size=[14, 14])
    return tf.InternVLConfig(
        text_config=dict(text, model_type="qwen2"),
        vision_config=vision,
        image_token_id=ids["image"],
        image_seq_length=(size // 28) ** 2,
        downsample_ratio=0.5,
        vision_feature_layer=-1,
    )


_CLASSES = {
    "qwen2_vl": "Qwen2VLForConditionalGeneration",
    "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
    "qwen3_vl": "Qwen3VLForConditionalGeneration",
    "llava": "LlavaForConditionalGeneration",
    "llava_next": "LlavaNextForConditionalGeneration",
    "llava_onevision": "LlavaOnevisionForConditionalGeneration",
    "internvl": "InternVLForConditionalGeneration",
}


def build_tiny_model(
    family: str,
    *,
    seed: int = 0,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    head_dim: int = 16,
    vocab_size: int = _DEFAULT_VOCAB,
    geometry: str = "tiny",
) -> Any:
    """Build a tiny random VLM of ``family`` (seeded, float32, eval mode, CPU, sdpa).

    Args:
        family: One of :data:`TINY_FAMILIES`.
        seed: Seed for the weight initialisation (same seed → identical weights).
        num_layers: Text-decoder layers.
        num_heads: Query heads per decoder layer.
        num_kv_heads: KV heads per decoder layer (must divide ``num_heads``).
        head_dim: Per-head dimension (even, ≥ 8 so M-RoPE sections stay non-empty).
        vocab_size: Vocabulary size (≥ 32); special ids per :func:`special_token_ids`.
        geometry: ``"tiny"`` (112-px towers) or ``"real"`` (the released checkpoints' tower
            sizes and pinpoints, :func:`vision_geometry`; Qwen towers are real either way).

    Returns:
        The ``*ForConditionalGeneration`` model.
    """
    import torch
    import transformers as tf

    _check_family(family)
    if num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads}")
    if head_dim % 2 or head_dim < 8:
        raise ValueError(f"head_dim must be even and ≥ 8, got {head_dim}")
    text = _text_kwargs(num_layers, num_heads, num_kv_heads, head_dim, vocab_size)
    config = _config(family, text, vocab_size, geometry)
    cls = getattr(tf, _CLASSES[family])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls._from_config(config, attn_implementation="sdpa", dtype=torch.float32)
    model.generation_config.pad_token_id = text["pad_token_id"]
    model.generation_config.eos_token_id = text["eos_token_id"]
    model.generation_config.bos_token_id = text["bos_token_id"]
    return model.eval()


def tiny_text_inputs(
    model: Any,
    batch: int,
    seq: int,
    seed: int = 0,
    *,
    left_pad: list[int] | tuple[int, ...] | None = None,
) -> dict[str, torch.Tensor]:
    """Random text-only inputs for a tiny model (special ids excluded).

    Args:
        model: A model from :func:`build_tiny_model`.
        batch: Batch size.
        seq: Padded sequence length.
        seed: Seed for the random ids.
        left_pad: Optional number of left-padding tokens per row (pad id, mask 0).

    Returns:
        ``{"input_ids": (batch, seq) long, "attention_mask": (batch, seq) long}``.
    """
    import torch

    vocab = model.config.get_text_config().vocab_size
    pad_id = model.config.get_text_config().pad_token_id
    gen = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(0, vocab - TINY_RESERVED, (batch, seq), generator=gen)
    attention_mask = torch.ones(batch, seq, dtype=torch.long)
    if left_pad is not None:
        if len(left_pad) != batch:
            raise ValueError(f"left_pad has {len(left_pad)} entries for batch {batch}")
        for row, n in enumerate(left_pad):
            if not 0 <= n < seq:
                raise ValueError(f"left_pad[{row}]={n} must be in [0, {seq})")
            input_ids[row, :n] = pad_id
            attention_mask[row, :n] = 0
    return {"input_ids": input_ids, "attention_mask": attention_mask}
