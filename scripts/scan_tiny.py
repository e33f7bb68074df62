"""Shrink any transformers config to a tiny random instance (for scripts/scan_families.py).

Generic rules over the config's ``to_dict()``, applied at every nesting level (text, vision,
audio, projector sub-configs): every width becomes 64 (so text, vision and projector widths
agree), every attention stack 4 query / 2 KV heads of 16, feed-forward widths 128, MoE 4
experts of width 32 picking 2, vision stacks 2 layers. A text decoder keeps one layer of each
distinct ``layer_types`` entry, in the order they first appear (Gemma3's 5 sliding : 1 full
becomes ``[sliding, full]``; Qwen3.5's ``[linear, full]``), and every per-layer list is cut to
the same layers. Geometry stays: vocabulary and special token ids, image / patch / merge sizes,
pooling, tiles. Negative and positive vision feature-layer indices are clipped into the
shrunk tower. The config is rebuilt from the edited dict by its own class (its
``__init__`` and validation run again).
"""

from __future__ import annotations

from typing import Any

WIDTH, FFN, HEADS, KV, HEAD_DIM, LAYERS = 64, 128, 4, 2, 16, 2

_WIDTHS = {
    "hidden_size",
    "d_model",
    "n_embd",
    "embed_dim",
    "out_hidden_size",
    "projection_dim",
    "text_hidden_size",
    "vision_hidden_size",
    "mm_hidden_size",
    "hidden_dim",
    "projector_hidden_size",
    "word_embed_proj_dim",
    "d_kv_model",
}
_FFN = {
    "intermediate_size",
    "ffn_dim",
    "decoder_ffn_dim",
    "encoder_ffn_dim",
    "d_ff",
    "n_inner",
    "projector_intermediate_size",
}
_MOE_FFN = {"moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size"}
_LAYERS = {
    "num_hidden_layers",
    "num_layers",
    "n_layer",
    "n_layers",
    "depth",
    "encoder_layers",
    "decoder_layers",
    "num_decoder_layers",
}
_HEADS = {
    "num_attention_heads",
    "num_heads",
    "n_head",
    "n_heads",
    "encoder_attention_heads",
    "decoder_attention_heads",
}
_KV = {"num_key_value_heads", "n_kv_heads", "num_kv_heads", "multi_query_group_num"}
_HEAD_DIMS = {
    "head_dim",
    "d_kv",
    "qk_head_dim",
    "v_head_dim",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "mamba_head_dim",
    "global_head_dim",
}
_SMALL = {
    "qk_nope_head_dim": HEAD_DIM // 2,  # MLA: nope + rope = the head dim
    "qk_rope_head_dim": HEAD_DIM // 2,
    "num_experts": 4,
    "n_routed_experts": 4,
    "num_local_experts": 4,
    "moe_num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_k": 2,
    "n_shared_experts": 1,
    "num_shared_experts": 1,
    "n_group": 1,
    "topk_group": 1,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "mamba_num_heads": 4,
    "q_lora_rank": 32,
    "kv_lora_rank": 32,
    "ssm_state_size": 16,
    "n_groups": 1,
    "first_k_dense_replace": 1,
}
_FEATURE_LAYERS = {"vision_feature_layer", "vision_feature_layers", "select_layer"}


def _layer_selection(d: dict[str, Any]) -> list[int] | None:
    """Original layer indices a shrunk decoder keeps: one of each distinct layer type."""
    types = d.get("layer_types")
    if not isinstance(types, list) or not types:
        return None
    first: dict[str, int] = {}
    for i, kind in enumerate(types):
        first.setdefault(str(kind), i)
    keep = sorted(first.values())
    if len(keep) < LAYERS:
        keep = sorted({*keep, *range(LAYERS)})[:LAYERS]
    return keep


def _indices(value: list[Any], n: int) -> bool:
    return bool(value) and all(isinstance(v, int) and 0 <= v < n for v in value)


def _clip_feature_layer(value: Any) -> Any:
    if isinstance(value, list):
        return [_clip_feature_layer(v) for v in value]
    if isinstance(value, int):
        return max(value, -(LAYERS + 1)) if value < 0 else min(value, LAYERS - 1)
    return value


def _per_layer(value: dict[Any, Any], keep: list[int]) -> dict[Any, Any]:
    """A dict keyed by layer index (``5`` or ``"05"``), cut and renumbered to the kept
    layers, each layer's overrides shrunk too."""
    out: dict[Any, Any] = {}
    for key, sub in value.items():
        old = int(key)
        if old in keep:
            new = keep.index(old)
            new_key = new if isinstance(key, int) else f"{new:0{len(key)}d}"
            out[new_key] = shrink_dict(sub) if isinstance(sub, dict) else sub
    return out


def _rescaled(sections: list[int], total: int) -> list[int]:
    """M-RoPE sections rescaled to sum to ``total`` (the shrunk rotary frequencies)."""
    new = [max(1, s * total // sum(sections)) for s in sections]
    new[0] += total - sum(new)
    return new


def _mrope(rope: dict[str, Any], head_dim: int) -> dict[str, Any]:
    sections = rope.get("mrope_section")
    if not isinstance(sections, list) or not sections or sum(sections) <= head_dim // 2:
        return rope
    return {**rope, "mrope_section": _rescaled(sections, head_dim // 2)}


def _fit_mrope(model: Any) -> None:
    """Rotary modules whose M-RoPE sections default in code (Qwen2-VL's ``[16, 24, 24]``)
    get them rescaled to their shrunk frequency count."""
    for module in model.modules():
        sections, inv_freq = (
            getattr(module, "mrope_section", None),
            getattr(module, "inv_freq", None),
        )
        if isinstance(sections, list) and inv_freq is not None:
            if sum(sections) != inv_freq.shape[-1]:
                module.mrope_section = _rescaled(sections, inv_freq.shape[-1])


def shrink_dict(d: dict[str, Any]) -> dict[str, Any]:
    """A tiny copy of one config dict (recursively: sub-config dicts are shrunk too)."""
    out = dict(d)
    keep = _layer_selection(d)
    mla = {k: d.get(k) for k in ("head_dim", "qk_rope_head_dim", "qk_nope_head_dim")}
    n_layers = len(keep) if keep is not None else None
    old_layers = next((d[k] for k in _LAYERS if isinstance(d.get(k), int)), None)
    for key, value in d.items():
        if key == "per_layer_config" and isinstance(value, dict):
            out[key] = _per_layer(value, keep or list(range(LAYERS)))
        elif isinstance(value, dict) and ("model_type" in value or key.endswith("config")):
            out[key] = shrink_dict(value)
        elif key == "rope_parameters" and isinstance(value, dict):
            out[key] = _mrope(value, HEAD_DIM)
        elif key in _FEATURE_LAYERS:
            out[key] = _clip_feature_layer(value)
        elif isinstance(value, bool) or not isinstance(value, (int, list)):
            continue
        elif isinstance(value, list):
            if old_layers and len(value) == old_layers:  # one entry per layer
                out[key] = [value[i] for i in keep or range(min(old_layers, LAYERS))]
            elif key.endswith("_layers") and old_layers and _indices(value, old_layers):
                new = n_layers or LAYERS  # layer indices (Mllama's cross-attention layers)
                out[key] = sorted({min(v, new - 1) for v in value})
        elif key in _WIDTHS and value > WIDTH:
            out[key] = WIDTH
        elif key in _FFN and value > FFN:
            out[key] = FFN
        elif key in _MOE_FFN and value > 32:
            out[key] = 32
        elif key in _LAYERS and value > 0:
            out[key] = n_layers or min(value, LAYERS)
        elif key in _HEADS and value > 0:
            out[key] = min(value, HEADS)
        elif key in _KV and value > 0:
            heads = next((d[k] for k in _HEADS if isinstance(d.get(k), int)), value)
            out[key] = HEADS if value >= heads else min(value, KV)
        elif key == "head_dim" and mla["qk_rope_head_dim"] == value:
            out[key] = _SMALL["qk_rope_head_dim"]  # MLA's head dim is the rope part (DeepSeek-V3)
        elif key in _HEAD_DIMS and value > HEAD_DIM:
            out[key] = HEAD_DIM
        elif key in _SMALL and value > _SMALL[key]:
            out[key] = _SMALL[key]
    return out


def tiny_config(model_type: str) -> Any:
    """The default config of ``model_type``, shrunk (see the module docstring)."""
    from transformers import AutoConfig

    config = AutoConfig.for_model(model_type)
    small = shrink_dict(config.to_dict())
    small.pop("transformers_version", None)
    return type(config).from_dict(small)


def default_builds(model_type: str, class_name: str) -> str:
    """Whether the full-size default config builds at all (on the meta device): ``ok`` or
    the error, to tell a shrink problem from a default config that does not build."""
    import torch
    import transformers
    from transformers import AutoConfig

    try:
        with torch.device("meta"):
            getattr(transformers, class_name)._from_config(AutoConfig.for_model(model_type))
        return "ok"
    except Exception as err:  # noqa: BLE001 - reported, not raised
        return f"{type(err).__name__}: {str(err).strip()[:120]}"


def tiny_model(model_type: str, class_name: str) -> Any:
    """A random tiny instance of ``class_name`` from its shrunk default config, in eval."""
    import torch
    import transformers

    torch.manual_seed(0)
    cls = getattr(transformers, class_name)
    model = cls._from_config(tiny_config(model_type), dtype=torch.float32)
    _fit_mrope(model)
    return model.eval()
