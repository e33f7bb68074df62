"""Tiny random instances of the registered families, from each unit's :class:`TinyRecipe`.

``--model-args tiny=true`` (any family with a recipe) and the CPU tests build models here:
seeded, float32, eval mode, CPU, built from the family's ``transformers`` config class with
``attn_implementation="sdpa"`` for the whole model, beside the family's real processor class
(PIL back-ends, offline byte tokenizer). Sizes are chosen so a forward over a few hundred
tokens takes milliseconds while each vision tower still accepts real images.

Choices every recipe shares (its processor must match them):

- Text decoder: ``num_layers`` × ``num_heads`` query heads (``num_kv_heads`` KV heads) of
  ``head_dim``; ``hidden = num_heads · head_dim``; FFN ``2 · hidden``; no sliding layers
  (so "dense" really is dense, attention.md pitfall 2). Weights use ``initializer_range`` 0.2
  (not HF's 0.02) so attention patterns are peaked and equivalence tests have teeth.
- Vocabulary: ``vocab_size`` (default 512). The top :data:`RESERVED` ids are special tokens,
  laid out by :func:`~harness.models.offline.tokenizer.special_token_ids`; random text ids
  stay below them.
- Vision towers: 2 layers of width 32 at the family's real patch, merge and (with
  ``geometry="real"``) input sizes; each recipe's module says what else it shrinks.
"""

from __future__ import annotations

from typing import Any

from harness.models.offline.tokenizer import RESERVED, special_token_ids

__all__ = [
    "INIT",
    "RESERVED",
    "build_tiny_model",
    "small_vit",
    "text_kwargs",
    "tiny_adapter",
    "tiny_processor",
]

DEFAULT_VOCAB = 512
INIT = 0.2
"""``initializer_range`` of every tiny model (peaked attention: tests have teeth)."""
GEOMETRIES = ("tiny", "real")


def text_kwargs(layers: int, heads: int, kv: int, head_dim: int, vocab: int) -> dict[str, Any]:
    """The tiny text-decoder config keywords every recipe starts from."""
    hidden = heads * head_dim
    ids = special_token_ids(None, vocab)
    return {
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": 2 * hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "max_position_embeddings": 32768,
        "initializer_range": INIT,
        "bos_token_id": ids["bos"],
        "eos_token_id": ids["eos"],
        "pad_token_id": ids["pad"],
        "tie_word_embeddings": False,
    }


def small_vit(**extra: Any) -> dict[str, Any]:
    """A 2-layer, width-32 ViT config dict (``extra`` adds or overrides keys)."""
    base = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "initializer_range": INIT,
    }
    base.update(extra)
    return base


def _recipe(family: str) -> Any:
    from harness.api.errors import UsageError
    from harness.models.unit import unit_of

    recipe = unit_of(family).tiny
    if recipe is None:
        raise UsageError(f"model family {family!r} has no tiny recipe (its unit's `tiny`)")
    return recipe


def _check_geometry(geometry: str) -> None:
    if geometry not in GEOMETRIES:
        raise ValueError(f"geometry must be 'tiny' or 'real', got {geometry!r}")


def build_tiny_model(
    family: str,
    *,
    seed: int = 0,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    head_dim: int = 16,
    vocab_size: int = DEFAULT_VOCAB,
    geometry: str = "tiny",
) -> Any:
    """Build a tiny random VLM of ``family`` (seeded, float32, eval mode, CPU, sdpa).

    Args:
        family: A registered family whose unit has a tiny recipe.
        seed: Seed for the weight initialisation (same seed → identical weights).
        num_layers: Text-decoder layers.
        num_heads: Query heads per decoder layer.
        num_kv_heads: KV heads per decoder layer (must divide ``num_heads``).
        head_dim: Per-head dimension (even, ≥ 8 so M-RoPE sections stay non-empty).
        vocab_size: Vocabulary size (≥ 32); special ids per ``special_token_ids``.
        geometry: ``"tiny"`` (small towers) or ``"real"`` (the released checkpoints' tower
            sizes, tiles and pinpoints; towers without a fixed size are real either way).

    Returns:
        The model, of the unit's ``model_class``.
    """
    import torch
    import transformers as tf

    from harness.models.unit import unit_of

    recipe = _recipe(family)
    _check_geometry(geometry)
    if num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads}")
    if head_dim % 2 or head_dim < 8:
        raise ValueError(f"head_dim must be even and ≥ 8, got {head_dim}")
    text = text_kwargs(num_layers, num_heads, num_kv_heads, head_dim, vocab_size)
    config = recipe.config(text, special_token_ids(family, vocab_size), geometry)
    cls = getattr(tf, unit_of(family).model_class)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls._from_config(config, attn_implementation="sdpa", dtype=torch.float32)
        if recipe.finish is not None:
            recipe.finish(model)
    model.generation_config.pad_token_id = text["pad_token_id"]
    model.generation_config.eos_token_id = text["eos_token_id"]
    model.generation_config.bos_token_id = text["bos_token_id"]
    return model.eval()


def tiny_processor(
    family: str, vocab_size: int = DEFAULT_VOCAB, geometry: str = "tiny", **kwargs: Any
) -> Any:
    """The offline processor of ``family``'s tiny recipe (``kwargs``: the recipe's options)."""
    recipe = _recipe(family)
    _check_geometry(geometry)
    return recipe.processor(vocab_size=vocab_size, geometry=geometry, **kwargs)


def tiny_adapter(family: str, geometry: str = "tiny", seed: int = 0, **processor_kw: Any) -> Any:
    """The family's adapter over :func:`build_tiny_model` and :func:`tiny_processor`."""
    from harness.api.registry import MODEL_FAMILIES

    model = build_tiny_model(family, seed=seed, geometry=geometry)
    processor = tiny_processor(family, geometry=geometry, **processor_kw)
    return MODEL_FAMILIES.get(family).from_parts(model, processor)
