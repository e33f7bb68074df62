"""Where a model's text decoder lives, what shape it has, and which layers have heads.

Every family's HF model nests its text decoder differently (``model.language_model.layers``
for the VLMs, ``model.layers`` for plain decoders); the attention dispatch, the probes and the
state hooks all need the same answer, so it is found here once. Pure attribute access: no
torch import.

A decoder layer's kind comes from the text config's ``layer_types`` (transformers 5.x): full,
sliding (window ``sliding_window``, Gemma3's 5:1 local/global, AyaVision, PaliGemma 2) or
chunked attention layers have heads; linear-attention (Gated DeltaNet, Mamba), conv and MoE/MLP
layers have none and are not counted (:func:`layer_kinds`, ``Geometry.attention_layers``).
Models whose decoder reads the image through cross-attention or an encoder are refused
(:func:`check_decoder_only`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.api.errors import UsageError
from harness.api.heads import Geometry

__all__ = [
    "LayerKind",
    "NON_ATTENTION_TYPES",
    "UnsupportedModelError",
    "attention_modules",
    "check_decoder_only",
    "decoder_layers",
    "geometry_of",
    "layer_kinds",
    "sliding_windows",
    "text_config",
]

NON_ATTENTION_TYPES = ("linear_attention", "conv", "moe", "mamba", "mlp", "sparse", "dense")
"""``layer_types`` entries of decoder layers without attention heads (transformers'
``ALLOWED_LAYER_TYPES``: recurrent GDN/Mamba/lightning layers, short convolutions, MoE/MLP)."""


class UnsupportedModelError(UsageError):
    """A model whose attention headscope cannot address (cross-attention, encoder-decoder)."""

    hint = "use a decoder-only VLM whose visual tokens are positions of the text sequence"


@dataclass(frozen=True)
class LayerKind:
    """One decoder layer's attention.

    Attributes:
        kind: The config's ``layer_types`` entry (``full_attention`` when it has none).
        window: Keys a query sees in a ``sliding_attention`` layer (the model's own window,
            the query included), or the chunk size of a ``chunked_attention`` layer.
    """

    kind: str
    window: int | None = None

    @property
    def has_heads(self) -> bool:
        """Whether the layer is an attention layer (its heads go through the dispatch)."""
        return self.kind not in NON_ATTENTION_TYPES

    def __str__(self) -> str:
        return self.kind if self.window is None else f"{self.kind}({self.window})"


def text_config(model: Any) -> Any:
    """The text decoder's config (``config.get_text_config()`` for composite VLM configs)."""
    config = model.config
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def decoder_layers(model: Any) -> Any:
    """The text decoder's layers (``model.language_model.layers``; Idefics3: ``text_model``)."""
    paths = ("model.language_model.layers", "model.text_model.layers", "language_model.layers")
    for path in (*paths, "model.layers", "layers"):
        obj = model
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is not None:
            return obj
    raise ValueError(f"cannot find decoder layers in {type(model).__name__}")


def layer_kinds(model: Any) -> list[LayerKind]:
    """Per decoder layer, its :class:`LayerKind` (from the text config's ``layer_types``)."""
    cfg = text_config(model)
    types = getattr(cfg, "layer_types", None) or ["full_attention"] * cfg.num_hidden_layers
    kinds = []
    for kind in types:
        window = None
        if kind in ("sliding_attention", "hybrid_sliding"):
            window = getattr(cfg, "sliding_window", None)
        elif kind == "chunked_attention":
            window = getattr(cfg, "attention_chunk_size", None)
        kinds.append(LayerKind(kind, window))
    return kinds


def sliding_windows(model: Any) -> dict[int, int]:
    """Decoder layer → the model's own sliding window, for its sliding layers only."""
    sliding = ("sliding_attention", "hybrid_sliding")  # chunked layers have no sliding band
    kinds = layer_kinds(model)
    return {i: k.window for i, k in enumerate(kinds) if k.kind in sliding and k.window}


def attention_modules(model: Any) -> dict[int, Any]:
    """Decoder layer index → its attention module (``self_attn``), attention layers only."""
    layers = decoder_layers(model)
    out = {}
    for idx, kind in enumerate(layer_kinds(model)):
        if kind.has_heads:
            attn = getattr(layers[idx], "self_attn", None)
            if attn is None:
                where = f"decoder layer {idx} ({kind}) of {type(model).__name__}"
                raise ValueError(f"{where} has no self_attn module")
            out[idx] = attn
    return out


def check_decoder_only(model: Any) -> None:
    """Raise :class:`UnsupportedModelError` for cross-attention or encoder-decoder models.

    headscope's heads, RAM, SAP and hybrid windows are defined on one decoder-only sequence
    that holds the visual tokens. Mllama feeds the image through cross-attention layers
    (its visual tokens are keys of those layers, not positions of the sequence); Florence-2,
    Pix2Struct, UDOP and the other encoder-decoders read it through an encoder.
    """
    name = type(model).__name__
    cfg = text_config(model)
    encoder = getattr(model.config, "is_encoder_decoder", False)
    if encoder or getattr(cfg, "is_encoder_decoder", False):
        raise UnsupportedModelError(
            f"{name} is an encoder-decoder model: its decoder reads the image and prompt "
            "through cross-attention to an encoder, so its heads, RAM and hybrid windows are "
            "not headscope's (they need one decoder-only sequence holding the visual tokens)"
        )
    cross = getattr(cfg, "cross_attention_layers", None)
    if cross:
        raise UnsupportedModelError(
            f"{name} reads the image through cross-attention layers {sorted(cross)}: its "
            "visual tokens are keys of those layers, not positions of the text sequence, so "
            "RAM over visual tokens, SAP and hybrid windows are undefined for it"
        )


def geometry_of(model: Any) -> Geometry:
    """Text-decoder geometry from the model's (text) config.

    ``attention_layers`` lists the layers with heads when some layers have none (Qwen3.5's
    linear-attention layers); it is None when every layer is an attention layer.
    """
    cfg = text_config(model)
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    kinds = layer_kinds(model)
    attn = tuple(i for i, kind in enumerate(kinds) if kind.has_heads)
    return Geometry(
        num_layers=cfg.num_hidden_layers,
        num_heads=heads,
        num_kv_heads=getattr(cfg, "num_key_value_heads", None) or heads,
        head_dim=head_dim,
        hidden_size=cfg.hidden_size,
        intermediate_size=getattr(cfg, "intermediate_size", 0) or 0,
        attention_layers=None if len(attn) == len(kinds) else attn,
    )
