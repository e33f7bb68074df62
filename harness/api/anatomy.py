"""Where a model's text decoder lives and what shape it has.

Every family's HF model nests its text decoder differently (``model.language_model.layers``
for the VLMs, ``model.layers`` for plain decoders); the attention dispatch, the probes and the
state hooks all need the same answer, so it is found here once. Pure attribute access: no
torch import.
"""

from __future__ import annotations

from typing import Any

from harness.api.heads import Geometry

__all__ = ["decoder_layers", "geometry_of", "text_config"]


def text_config(model: Any) -> Any:
    """The text decoder's config (``config.get_text_config()`` for composite VLM configs)."""
    config = model.config
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def decoder_layers(model: Any) -> Any:
    """The text decoder's layer list (``model.model.language_model.layers`` for the VLMs)."""
    for path in ("model.language_model.layers", "language_model.layers", "model.layers", "layers"):
        obj = model
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is not None:
            return obj
    raise ValueError(f"cannot find decoder layers in {type(model).__name__}")


def geometry_of(model: Any) -> Geometry:
    """Text-decoder geometry from the model's (text) config."""
    cfg = text_config(model)
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return Geometry(
        num_layers=cfg.num_hidden_layers,
        num_heads=heads,
        num_kv_heads=getattr(cfg, "num_key_value_heads", None) or heads,
        head_dim=head_dim,
        hidden_size=cfg.hidden_size,
        intermediate_size=getattr(cfg, "intermediate_size", 0) or 0,
    )
