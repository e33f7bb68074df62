"""Tiny random instances of the VLM classes whose attention semantics the dispatch must honour.

Built straight from transformers config classes (no hub, no processor): a few decoder layers of
4 query / 2 KV heads, head_dim 16, a one-layer vision tower at a small image size, and inputs
whose image-token runs and ``token_type_ids`` are laid out as the real processors lay them out
(one run of image tokens after a BOS, then text). Weights use ``initializer_range`` 0.2 so
attention is peaked; Gemma3's multimodal projector (initialised to zero by HF, families.md) is
re-initialised so the image block carries signal.

What each instance exercises:

- ``gemma3``: the image block is bidirectional (``token_type_ids``); layers 0–4 are
  ``sliding_attention`` with window 6, layer 5 full (5:1 like the released checkpoints).
- ``paligemma``: prefix-LM (the whole prompt attends both ways; a suffix, token type 1, is
  causal); ``text="gemma2"`` is PaliGemma 2 (Gemma 2 decoder: logit softcapping 50 → set to 5
  here so it bites, alternating sliding layers).
- ``aya_vision``: Cohere2 decoder with sliding layers (3 sliding : 1 full).
- ``qwen3_5``: Gated DeltaNet linear-attention layers between full-attention layers.
- ``mllama`` (cross-attention layers) and ``florence2`` (encoder-decoder): only to be refused.
"""

from __future__ import annotations

import torch

VOCAB = 256
IMAGE, BOI, EOI = VOCAB - 1, VOCAB - 2, VOCAB - 3
TEXT_TOP = VOCAB - 8  # random text ids stay below the special ids

_TEXT = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=128,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    initializer_range=0.2,
    pad_token_id=0,
)
_SIGLIP = dict(
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=1,
    num_attention_heads=2,
    image_size=56,
    patch_size=14,
)


def _done(model):
    torch.manual_seed(1)
    return model.eval()


def gemma3(sliding_window: int = 6, layer_types: list[str] | None = None):
    """Gemma3ForConditionalGeneration: 6 layers (5 sliding, 1 full), 4 image tokens.

    Local and global layers share one RoPE base here (the released model uses 10K / 1M), so a
    layer's type changes nothing but its mask.
    """
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration

    torch.manual_seed(0)
    types = layer_types or ["sliding_attention"] * 5 + ["full_attention"]
    text = dict(
        _TEXT,
        num_hidden_layers=len(types),
        sliding_window=sliding_window,
        layer_types=types,
        query_pre_attn_scalar=16,
        rope_parameters={
            t: {"rope_type": "default", "rope_theta": 10000.0}
            for t in ("full_attention", "sliding_attention")
        },
    )
    cfg = Gemma3Config(
        text_config=text,
        vision_config=_SIGLIP,
        mm_tokens_per_image=4,
        boi_token_index=BOI,
        eoi_token_index=EOI,
        image_token_index=IMAGE,
    )
    model = Gemma3ForConditionalGeneration(cfg)
    with torch.no_grad():  # HF initialises the projector to zero: no image signal at all
        model.model.multi_modal_projector.mm_input_projection_weight.normal_(0, 0.2)
    return _done(model)


def paligemma(text: str = "gemma", softcap: float = 5.0):
    """PaliGemmaForConditionalGeneration with a Gemma (or Gemma 2) decoder of 4 layers."""
    from transformers import PaliGemmaConfig, PaliGemmaForConditionalGeneration

    torch.manual_seed(0)
    tc = dict(_TEXT, model_type=text, num_hidden_layers=4)
    if text == "gemma2":
        tc.update(attn_logit_softcapping=softcap, sliding_window=6, query_pre_attn_scalar=16)
    vision = dict(_SIGLIP, projection_dim=64)
    cfg = PaliGemmaConfig(
        text_config=tc,
        vision_config=vision,
        image_token_index=IMAGE,
        projection_dim=64,
        hidden_size=64,
    )
    cfg.text_config.num_image_tokens = 16
    return _done(PaliGemmaForConditionalGeneration(cfg))


def aya_vision():
    """AyaVisionForConditionalGeneration: Cohere2 decoder, 3 sliding (window 6) : 1 full."""
    from transformers import AyaVisionConfig, AyaVisionForConditionalGeneration

    torch.manual_seed(0)
    text = dict(
        _TEXT,
        model_type="cohere2",
        num_hidden_layers=4,
        sliding_window=6,
        layer_types=["sliding_attention"] * 3 + ["full_attention"],
    )
    cfg = AyaVisionConfig(
        text_config=text,
        vision_config=dict(_SIGLIP, model_type="siglip_vision_model"),
        image_token_index=IMAGE,
        downsample_factor=2,
    )
    return _done(AyaVisionForConditionalGeneration(cfg))


def qwen3_5():
    """Qwen3_5ForConditionalGeneration: 4 layers, linear attention except layer 3."""
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    torch.manual_seed(0)
    text = dict(
        _TEXT,
        num_hidden_layers=4,
        linear_key_head_dim=16,
        linear_value_head_dim=16,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        layer_types=["linear_attention"] * 3 + ["full_attention"],
    )
    vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64)
    cfg = Qwen3_5Config(text_config=text, vision_config=vision)
    return _done(Qwen3_5ForConditionalGeneration(cfg))


def mllama():
    """MllamaForConditionalGeneration with one cross-attention layer (refused)."""
    from transformers import MllamaConfig, MllamaForConditionalGeneration

    torch.manual_seed(0)
    text = dict(_TEXT, num_hidden_layers=2, cross_attention_layers=[1])
    text.pop("head_dim")
    vision = dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_global_layers=1,
        attention_heads=2,
        image_size=28,
        patch_size=14,
        vision_output_dim=64,
        intermediate_layers_indices=[0],
    )
    cfg = MllamaConfig(text_config=text, vision_config=vision)
    return _done(MllamaForConditionalGeneration(cfg))


def florence2():
    """Florence2ForConditionalGeneration: BART-style encoder-decoder text model (refused)."""
    from transformers import Florence2Config, Florence2ForConditionalGeneration

    torch.manual_seed(0)
    text = dict(
        vocab_size=VOCAB,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
    )
    vision = dict(
        depths=[1],
        patch_size=[7],
        patch_stride=[4],
        patch_padding=[3],
        patch_prenorm=[False],
        embed_dim=[32],
        num_heads=[2],
        num_groups=[2],
        projection_dim=32,
    )
    cfg = Florence2Config(text_config=text, vision_config=vision, image_token_id=IMAGE)
    return _done(Florence2ForConditionalGeneration(cfg))


def image_inputs(
    model,
    n_image: int,
    text_before: int = 2,
    text_after: int = 8,
    pads: tuple[int, ...] = (0,),
    seed: int = 0,
    suffix: int = 0,
) -> dict:
    """A left-padded batch: [pad…] BOS? text, BOI, n_image × IMAGE, EOI, text (+ suffix).

    ``token_type_ids`` are 1 on image tokens (Gemma3) or, with ``suffix`` > 0, 0 on the prompt
    and 1 on the last ``suffix`` tokens (PaliGemma's prefix-LM); pixel values are random.
    """
    g = torch.Generator().manual_seed(seed)
    kind = model.config.model_type
    core = n_image + text_before + text_after + 2
    seq = max(pads) + core  # row b: ``pad`` padding tokens, then seq - pad real ones
    ids = torch.zeros(len(pads), seq, dtype=torch.long)
    att = torch.zeros(len(pads), seq, dtype=torch.long)
    types = torch.zeros(len(pads), seq, dtype=torch.long)
    for b, pad in enumerate(pads):
        row = torch.randint(3, TEXT_TOP, (seq - pad,), generator=g)
        row[text_before] = BOI
        row[text_before + 1 : text_before + 1 + n_image] = IMAGE
        row[text_before + 1 + n_image] = EOI
        ids[b, pad:], att[b, pad:] = row, 1
        if kind == "gemma3":
            types[b, pad:] = (row == IMAGE).long()
        elif suffix:
            types[b, seq - suffix :] = 1
    size = model.config.vision_config.image_size
    pix = torch.randn(len(pads), 3, size, size, generator=g)
    out = dict(input_ids=ids, attention_mask=att, pixel_values=pix)
    if kind in ("gemma3", "paligemma"):
        out["token_type_ids"] = types
    return out


def use_eager_reference(model, windows: dict | None = None, uniform: frozenset = frozenset()):
    """Run the text decoder on its own ``eager_attention_forward`` with narrowed masks.

    The masked eager reference of a window plan: each layer calls the eager attention of the
    model's modeling module (softcapping and all) with HF's mask, where every head listed in
    ``windows`` (``Head`` → ``Window``) gets :func:`harness.attention.window.window_mask` of
    that mask instead, and every head in ``uniform`` gets a zero query (equal logits: the
    uniform ablation's definition). A None mask is the module's default (causal, or none
    when ``is_causal`` is False).
    """
    import sys

    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    from harness.attention.window import window_mask

    windows = windows or {}

    def attention(module, query, key, value, mask, dropout=0.0, scaling=None, **kwargs):
        eager = sys.modules[type(module).__module__].eager_attention_forward
        batch, heads, q_len, _ = query.shape
        kv_len = key.shape[2]
        if mask is None:
            mask = torch.ones(batch, 1, q_len, kv_len, dtype=torch.bool)
            if module.is_causal:
                mask = torch.ones(q_len, kv_len, dtype=torch.bool).tril(kv_len - q_len)[None, None]
        per_head = mask.expand(batch, 1, q_len, kv_len).repeat(1, heads, 1, 1)
        zeroed = [h for h in range(heads) if _head(module.layer_idx, h) in uniform]
        if zeroed:
            query = query.clone()
            query[:, zeroed] = 0
        for head in range(heads):
            win = windows.get(_head(module.layer_idx, head))
            if win is not None and (q_len > 1 or win.in_decode):
                narrowed = window_mask(mask, batch, q_len, kv_len, win.size, win.sinks)
                per_head[:, head] = narrowed[:, 0]
        additive = torch.zeros(per_head.shape, dtype=query.dtype)
        additive = additive.masked_fill(~per_head, torch.finfo(query.dtype).min)
        return eager(
            module, query, key, value, additive, dropout=dropout, scaling=scaling, **kwargs
        )

    AttentionInterface.register("tiny_eager_reference", attention)
    AttentionMaskInterface.register("tiny_eager_reference", sdpa_mask)
    impl = {"text_config": "tiny_eager_reference"}
    for name in model.config.sub_configs:
        if name != "text_config":
            impl[name] = "eager"
    model.set_attn_implementation(impl)


def _head(layer, head):
    from harness.api.heads import Head

    return Head(layer, head)
