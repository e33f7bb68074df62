"""Random-weight decoders with real models' layer geometry, shared by both benchmarks.

``headscope bench hybrid`` (prefill speed) and ``headscope bench ram`` (probe memory and time)
build the same thing: transformers' Qwen2 / Qwen3 text model classes at a real model's layer
shapes (``GEOMETRIES``), with a few layers and random weights.
"""

from __future__ import annotations

from typing import Any

from harness.api.heads import Geometry

__all__ = ["ALIASES", "GEOMETRIES", "PRESETS", "build_random_decoder"]

GEOMETRIES: dict[str, dict[str, Any]] = {
    "default": {"arch": "qwen2", "geometry": Geometry(2, 16, 4, 64, 1024, 2816)},
    "qwen3-vl-4b": {"arch": "qwen3", "geometry": Geometry(36, 32, 8, 128, 2560, 9728)},
    "qwen2-7b": {"arch": "qwen2", "geometry": Geometry(28, 28, 4, 128, 3584, 18944)},
    "tiny": {"arch": "qwen3", "geometry": Geometry(2, 8, 2, 16, 128, 256)},  # smoke tests
}
ALIASES = {"llava-onevision-7b": "qwen2-7b"}  # LLaVA-OneVision-7B's LM is Qwen2-7B
for _alias, _name in ALIASES.items():
    GEOMETRIES[_alias] = GEOMETRIES[_name]
PRESETS = GEOMETRIES  # former name, still read by bench ram


def build_random_decoder(
    arch: str, geometry: Geometry, layers: int, dtype: Any, seed: int, attn: str = "sdpa"
) -> Any:
    """A random-weight Qwen2/Qwen3 text decoder with ``geometry``'s layer shapes (eval mode)."""
    import torch
    import transformers as tf

    cfg_cls, model_cls = (
        (tf.Qwen2Config, tf.Qwen2Model) if arch == "qwen2" else (tf.Qwen3Config, tf.Qwen3Model)
    )
    g = geometry
    cfg = cfg_cls(
        vocab_size=1024, hidden_size=g.hidden_size, intermediate_size=g.intermediate_size,
        num_hidden_layers=layers, num_attention_heads=g.num_heads,
        num_key_value_heads=g.num_kv_heads, head_dim=g.head_dim,
        max_position_embeddings=1 << 18, use_sliding_window=False,
    )  # fmt: skip
    torch.manual_seed(seed)
    return model_cls._from_config(cfg, attn_implementation=attn, dtype=dtype).eval()
