"""Random-weight instances of REAL published VLM architectures, from shipped configs.

The config texts in ``harness/assets/configs`` (their README gives the sources):
``qwen3_vl_4b``, ``qwen2_5_vl_7b``, ``llava_onevision_7b``. Here: the transformers config and
model of each (``shrink``: the processor geometry kept, every tower tiny, for CPU tests), the
family's processor class with PIL back-ends and an offline byte tokenizer whose special tokens
sit at the config's ids, a synthetic video and its model inputs, and the memory the weights
need (counted on the meta device). ``headscope bench ttft`` times them;
``scripts/bench_grid.py`` projects the grid's GPU saving from their configs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.api.errors import UsageError

__all__ = [
    "MODELS",
    "load_config_dict",
    "build_config",
    "build_model",
    "video_processor",
    "video_inputs",
    "synthetic_video",
    "weight_bytes",
    "memory_problem",
]

ASSETS = Path(__file__).resolve().parent.parent / "assets" / "configs"
MODELS = {
    "qwen3_vl_4b": ("qwen3_vl", "qwen3_vl_4b_instruct.json"),
    "qwen2_5_vl_7b": ("qwen2_5_vl", "qwen2_5_vl_7b_instruct.json"),
    "llava_onevision_7b": ("llava_onevision", "llava_onevision_qwen2_7b_ov.json"),
}
_CLASSES = {
    "qwen3_vl": ("Qwen3VLConfig", "Qwen3VLForConditionalGeneration"),
    "qwen2_5_vl": ("Qwen2_5_VLConfig", "Qwen2_5_VLForConditionalGeneration"),
    "llava_onevision": ("LlavaOnevisionConfig", "LlavaOnevisionForConditionalGeneration"),
}
_TINY_TEXT = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16}  # fmt: skip
_TINY_VISION = {"hidden_size": 32, "intermediate_size": 64}


def _onevision_hf(raw: dict[str, Any]) -> dict[str, Any]:
    """The original LLaVA-OneVision config as transformers' ``LlavaOnevisionConfig`` dict."""
    text_keys = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                 "num_key_value_heads", "max_position_embeddings", "rms_norm_eps", "rope_theta",
                 "vocab_size", "hidden_act", "bos_token_id", "eos_token_id",
                 "tie_word_embeddings")  # fmt: skip
    text = {k: raw[k] for k in text_keys if k in raw}
    text.update(model_type="qwen2", use_sliding_window=False)
    vision = {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304,
              "num_attention_heads": 16, "num_hidden_layers": 26, "patch_size": 14,
              "image_size": 384, "vision_use_head": False}  # fmt: skip
    return {
        "model_type": "llava_onevision", "text_config": text, "vision_config": vision,
        "image_token_index": raw["image_token_index"], "video_token_index": 151647,
        "image_grid_pinpoints": raw["image_grid_pinpoints"],
        "vision_aspect_ratio": raw["image_aspect_ratio"], "vision_feature_layer": -1,
        "vision_feature_select_strategy": "full", "projector_hidden_act": "gelu",
        "tie_word_embeddings": raw.get("tie_word_embeddings", False),
    }  # fmt: skip


def load_config_dict(name: str, shrink: bool = False) -> tuple[str, dict[str, Any]]:
    """(family, config dict) of a shipped config; ``shrink`` makes every tower tiny."""
    if name not in MODELS:
        raise UsageError(f"unknown model {name!r} (known: {sorted(MODELS)})")
    family, fname = MODELS[name]
    raw = json.loads((ASSETS / fname).read_text(encoding="utf-8"))
    cfg = _onevision_hf(raw) if family == "llava_onevision" else raw
    if shrink:
        _shrink(family, cfg)
    return family, cfg


def _shrink(family: str, cfg: dict[str, Any]) -> None:
    text = cfg if family == "qwen2_5_vl" else cfg["text_config"]  # Qwen2.5's text keys are flat
    text.update(_TINY_TEXT)
    vision = cfg["vision_config"]
    if family == "llava_onevision":
        vision.update(_TINY_VISION, num_attention_heads=2, num_hidden_layers=2)
        return
    vision.update(_TINY_VISION, num_heads=2, depth=2, out_hidden_size=_TINY_TEXT["hidden_size"])
    rope = text.get("rope_scaling") or {}
    # M-RoPE sections must sum to head_dim / 2 = 8 (real: 64); proportional to the real ones.
    rope["mrope_section"] = [3, 3, 2] if family == "qwen3_vl" else [2, 3, 3]
    if family == "qwen2_5_vl":
        vision["fullatt_block_indexes"] = [1]
    else:
        vision["deepstack_visual_indexes"] = [0]


def synthetic_video(frames: int, size: int, seed: int = 0) -> list[Any]:
    """``frames`` RGB PIL frames: a gradient drifting right plus seeded noise."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[0:size, 0:size]
    out = []
    for t in range(frames):
        base = (xs + 4 * t) % size * (255 / size)
        rgb = np.stack([base, ys * (255 / size), (base + ys) % 256], -1)
        noisy = rgb + rng.normal(0, 12, rgb.shape)
        out.append(Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)))
    return out


def video_processor(family: str, cfg: dict[str, Any], vocab: int) -> Any:
    """The family's processor class with PIL back-ends and an offline byte tokenizer."""
    if family == "llava_onevision":
        from transformers import LlavaOnevisionProcessor
        from transformers.models.llava_onevision.image_processing_pil_llava_onevision import (
            LlavaOnevisionImageProcessorPil,
        )

        from harness.models.offline.tokenizer import CHATML_TEMPLATE, llava_tokenizer
        from harness.models.offline.video import pil_video_processor, with_pil_video

        image = LlavaOnevisionImageProcessorPil(
            size={"height": 384, "width": 384}, image_grid_pinpoints=cfg["image_grid_pinpoints"]
        )
        return with_pil_video(LlavaOnevisionProcessor)(
            image_processor=image, tokenizer=llava_tokenizer(family, vocab, chatml=True),
            video_processor=pil_video_processor(384), num_image_tokens=729,
            vision_feature_select_strategy="full", vision_aspect_ratio="anyres_max_9",
            chat_template=CHATML_TEMPLATE.replace("{{ IMAGE }}", "{{ '<image>\n' }}"),
        )  # fmt: skip
    from harness.models.offline.qwen import qwen_processor

    return qwen_processor(family, vocab, video_tokens=(4, 1 << 22))


def video_inputs(
    family: str, processor: Any, frames: list[Any], fps: float = 2.0
) -> dict[str, Any]:
    """Model inputs of one chat turn asking about ``frames`` (all of them shown)."""
    msgs = [{"role": "user", "content": [
        {"type": "video"}, {"type": "text", "text": "What happens in this video?"}]}]  # fmt: skip
    text = processor.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    kwargs: dict[str, Any] = {}
    if family != "llava_onevision":
        meta = {"total_num_frames": len(frames), "fps": fps,
                "frames_indices": list(range(len(frames))), "width": frames[0].size[0],
                "height": frames[0].size[1]}  # fmt: skip
        kwargs = {"video_metadata": [meta], "do_sample_frames": False}
    return dict(processor(text=[text], videos=[frames], return_tensors="pt", **kwargs))


def build_config(name: str, shrink: bool = False, ids: dict[str, int] | None = None) -> Any:
    """The transformers config object of a shipped model (``ids``: special-token overrides)."""
    import transformers as tf

    family, cfg = load_config_dict(name, shrink)
    if ids and family == "llava_onevision":
        cfg.update(image_token_index=ids["image"], video_token_index=ids["video"])
    elif ids:
        cfg.update(image_token_id=ids["image"], video_token_id=ids["video"],
                   vision_start_token_id=ids["vision_start"],
                   vision_end_token_id=ids["vision_end"])  # fmt: skip
    return getattr(tf, _CLASSES[family][0])(**{k: v for k, v in cfg.items() if k != "model_type"})


def build_model(family: str, config: Any, dtype: Any, device: str) -> Any:
    """A random-weight model of ``config`` on ``device`` behind the headscope dispatch (seed 0)."""
    import torch
    import transformers as tf

    from harness.attention.dispatch import use_dispatch

    torch.manual_seed(0)
    with torch.device(device):  # initialise on the device: 8B parameters are slow on a CPU
        model = getattr(tf, _CLASSES[family][1])._from_config(
            config, dtype=dtype, attn_implementation="sdpa"
        )
    return use_dispatch(model.to(device).eval())


def weight_bytes(name: str, dtype: str, shrink: bool = False) -> int:
    """Bytes of ``name``'s weights in ``dtype``, counted on the meta device (nothing allocated)."""
    import torch
    import transformers as tf

    family, _ = load_config_dict(name, shrink)
    config = build_config(name, shrink)
    with torch.device("meta"):
        model = getattr(tf, _CLASSES[family][1])._from_config(config, dtype=getattr(torch, dtype))
    return sum(p.numel() * p.element_size() for p in model.parameters())


def _available_bytes(device: str) -> int | None:
    """Free memory of ``device``: available RAM (cpu) or free GPU memory (cuda); None: unknown."""
    import os

    if device == "cpu":
        try:
            return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError):
            return None
    import torch

    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return int(free)


def memory_problem(names: list[str], dtype: str, device: str, shrink: bool) -> str | None:
    """Why the largest of ``names`` cannot be built on ``device``, or None.

    Refused when its weights alone exceed the free memory; they are counted without
    allocating them (:func:`weight_bytes`).
    """
    available = _available_bytes(device)
    if available is None:
        return None
    need = {n: weight_bytes(n, dtype, shrink) for n in names}
    name = max(need, key=need.__getitem__)
    if need[name] <= available:
        return None
    gib = 1024**3
    return (
        f"{name} in {dtype} needs {need[name] / gib:.1f} GiB for its weights alone, and "
        f"{device} has {available / gib:.1f} GiB free"
    )
