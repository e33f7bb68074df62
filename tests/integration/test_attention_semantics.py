"""Attention semantics of VLMs beyond plain causal decoders, against masked eager references.

Tiny random Gemma3 (bidirectional image block, 5:1 sliding layers), PaliGemma (prefix-LM; its
decoder modules are ``is_causal=False``), AyaVision (Cohere2 sliding layers): the model's mask
is authoritative for every effect of a plan (tests/integration/_tiny_semantics.py builds them).
"""

import pytest

torch = pytest.importorskip("torch")

from harness.api.heads import Head  # noqa: E402
from harness.attention.dispatch import (  # noqa: E402
    Ablation,
    AttentionRecorder,
    Plan,
    RecordSpec,
    Window,
    set_window_kernel,
    use_dispatch,
)
from tests.integration import _tiny_semantics as tiny  # noqa: E402
from tests.integration._interventions_util import logits, maxdiff  # noqa: E402

PADS = (0, 3)
BUILDS = {
    "gemma3": (tiny.gemma3, 4, {"text_before": 13}),  # the image block straddles row 16
    "paligemma": (tiny.paligemma, 16, {"suffix": 3}),
    "aya_vision": (tiny.aya_vision, 4, {}),
}


@pytest.fixture(autouse=True)
def _kernel():
    yield
    set_window_kernel("auto")


def built(name):
    build, n_image, kw = BUILDS[name]
    model = build()
    return model, tiny.image_inputs(model, n_image, pads=PADS, seed=2, **kw)


def eager_copy(name):
    model = BUILDS[name][0]()
    model.set_attn_implementation("eager")
    return model


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_empty_plan_is_sdpa_and_eager(name):
    model, inp = built(name)
    ref = logits(model, inp)  # sdpa
    eager = logits(eager_copy(name), inp)
    use_dispatch(model)
    out = logits(model, inp, Plan())
    assert torch.equal(out, ref)
    assert maxdiff(out, eager, inp) <= 1e-4


def test_the_masks_are_what_families_md_says():
    """Gemma3: the image block is bidirectional; PaliGemma: the prompt is (decoder not causal)."""
    model, inp = built("gemma3")
    seen = {}
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    def probe(module, q, k, v, mask, **kw):
        seen[module.layer_idx] = (mask, kw.get("sliding_window"))
        return torch.zeros_like(q).transpose(1, 2), None

    AttentionInterface.register("probe_sem", probe)
    AttentionMaskInterface.register("probe_sem", sdpa_mask)
    model.set_attn_implementation({"text_config": "probe_sem", "vision_config": "sdpa"})
    logits(model, inp)
    img = (inp["input_ids"][0] == tiny.IMAGE).nonzero()[:, 0]
    full, local = seen[5][0][0, 0], seen[0][0][0, 0]
    assert full[img[0], img[-1]] and not full[img[-1] + 1, img[-1] + 2]
    assert seen[0][1] == 6 and seen[5][1] is None
    assert not local[img[-1], 0]  # the sliding layers' band
    pg = tiny.paligemma()
    assert not pg.model.language_model.layers[0].self_attn.is_causal


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_plans_apply_on_every_decoder_layer(name):
    """PaliGemma's decoder modules say is_causal=False: a plan on them must still run."""
    model, inp = built(name)
    dense = logits(model, inp)
    use_dispatch(model)
    heads = {Head(0, 1), Head(1, 2)}
    out = logits(model, inp, Plan.build(ablate=dict.fromkeys(heads, Ablation("zero"))))
    assert maxdiff(out, dense, inp) > 1e-3


@pytest.mark.parametrize("name", sorted(BUILDS))
@pytest.mark.parametrize("sinks", [0, 2])
def test_window_kernels_equal_the_eager_reference(name, sinks):
    model, inp = built(name)
    use_dispatch(model)
    layers = model.config.get_text_config().num_hidden_layers
    plan = Plan.build(
        window={Head(la, h): Window(2 + h, sinks) for la in range(layers) for h in (0, 2, 3)}
    )
    out = {}
    for kernel in ("reference", "chunked", "flex_eager"):
        set_window_kernel(kernel)
        out[kernel] = logits(model, inp, plan)
    assert maxdiff(out["reference"], logits(model, inp), inp) > 1e-3  # windows bite
    assert maxdiff(out["chunked"], out["reference"], inp) <= 2e-5
    assert maxdiff(out["flex_eager"], out["reference"], inp) <= 2e-5


@pytest.mark.parametrize("kernel", ["reference", "chunked"])
def test_window_on_every_head_is_gemma3s_own_sliding_layer(kernel):
    """Window(W) on all heads of a full layer == that layer made ``sliding_attention`` (eager).

    transformers builds Gemma3's sliding mask as window AND (causal OR image block); the image
    block (4 tokens) is longer than W = 2, so the block's keys ahead of a query stay and the
    ones W or more behind go, in both.
    """
    full = tiny.gemma3(sliding_window=2, layer_types=["full_attention"] * 2)
    local = tiny.gemma3(sliding_window=2, layer_types=["sliding_attention", "full_attention"])
    local.load_state_dict(full.state_dict())
    local.set_attn_implementation("eager")
    inp = tiny.image_inputs(full, 4, pads=PADS, seed=5, text_before=13)
    ref = logits(local, inp)
    use_dispatch(full)
    assert maxdiff(logits(full, inp), ref, inp) > 1e-3  # the sliding layer differs
    set_window_kernel(kernel)
    out = logits(full, inp, Plan.build(window={Head(0, h): Window(2) for h in range(4)}))
    assert maxdiff(out, ref, inp) <= 2e-5


@pytest.mark.parametrize("name", ["gemma3", "paligemma"])
def test_recorded_ram_equals_eager_attentions(name):
    """Query rows inside the bidirectional span (image / prefix) and after it."""
    model, inp = built(name)
    eager = eager_copy(name)
    use_dispatch(model)
    ids = inp["input_ids"]
    image = ids == tiny.IMAGE
    qmask = torch.zeros_like(image)
    for b in range(len(PADS)):
        img = image[b].nonzero()[:, 0]
        qmask[b, [int(img[1]), int(img[-1]) + 2, ids.shape[1] - 1]] = True
    rec = AttentionRecorder()
    layers = model.config.get_text_config().num_hidden_layers
    plan = Plan.build(
        record=RecordSpec(rec, qmask, image, keep_rows=True), record_layers=range(layers)
    )
    assert torch.equal(logits(model, inp, plan), logits(model, inp))
    with torch.no_grad():
        att = eager(**inp, output_attentions=True).attentions
    assert len(rec.mass) == layers
    for layer in range(layers):
        for b in range(len(PADS)):
            rows = qmask[b].nonzero()[:, 0]
            probs = att[layer][b][:, rows]
            ref = probs[..., image[b]].sum(-1).mean(-1)
            assert (rec.mass[layer][b] - ref).abs().max() <= 1e-5
            assert (rec.rows[layer][b, :, : len(rows)] - probs).abs().max() <= 1e-5


def test_a_none_mask_on_a_non_causal_decoder_means_no_mask():
    """PaliGemma without token types or padding: HF passes None and sdpa attends both ways."""
    model = tiny.paligemma()
    inp = tiny.image_inputs(model, 16, pads=(0, 0), seed=7)
    del inp["token_type_ids"], inp["attention_mask"]
    dense = logits(model, inp)
    use_dispatch(model)
    heads = {Head(la, h) for la in range(4) for h in range(4)}
    for kernel in ("reference", "chunked"):
        set_window_kernel(kernel)
        wide = Plan.build(window=dict.fromkeys(heads, Window(inp["input_ids"].shape[1])))
        assert (logits(model, inp, wide) - dense).abs().max() <= 2e-5
        narrow = Plan.build(window=dict.fromkeys(heads, Window(3)))
        assert (logits(model, inp, narrow) - dense).abs().max() > 1e-3  # the plan ran


SOFTCAPPED = {**BUILDS, "paligemma2": (lambda: tiny.paligemma("gemma2"), 16, {"suffix": 3})}


@pytest.mark.parametrize("name", sorted(SOFTCAPPED))
@pytest.mark.parametrize("kernel", ["auto", "reference"])
def test_windows_equal_the_models_own_eager_attention_with_the_window_mask(name, kernel):
    """The masked eager reference: each model's eager_attention_forward, windowed heads'
    masks narrowed (PaliGemma 2 caps its logits: softcap passes through every path)."""
    build, n_image, kw = SOFTCAPPED[name]
    model = build()
    inp = tiny.image_inputs(model, n_image, pads=PADS, seed=3, **{"text_before": 13, **kw})
    layers = model.config.get_text_config().num_hidden_layers
    windows = {Head(la, h): Window(3 + h, h % 2) for la in range(layers) for h in (0, 1, 3)}
    ref_model = build()
    tiny.use_eager_reference(ref_model, windows)
    ref = logits(ref_model, inp)
    tiny.use_eager_reference(ref_model)
    dense = logits(ref_model, inp)
    use_dispatch(model)
    assert maxdiff(logits(model, inp, Plan()), dense, inp) <= 1e-4
    set_window_kernel(kernel)
    out = logits(model, inp, Plan.build(window=windows))
    assert maxdiff(ref, dense, inp) > 1e-3  # windows bite
    assert maxdiff(out, ref, inp) <= 5e-5


def test_recorded_ram_of_a_softcapped_model_equals_eager_attentions():
    model = tiny.paligemma("gemma2")
    inp = tiny.image_inputs(model, 16, pads=PADS, seed=4, suffix=3)
    eager = tiny.paligemma("gemma2")
    eager.set_attn_implementation("eager")
    use_dispatch(model)
    image = inp["input_ids"] == tiny.IMAGE
    qmask = torch.zeros_like(image)
    qmask[:, -4:] = True
    rec = AttentionRecorder()
    plan = Plan.build(record=RecordSpec(rec, qmask, image, keep_rows=True), record_layers=range(4))
    assert torch.equal(logits(model, inp, plan), logits(model, inp))
    with torch.no_grad():
        att = eager(**inp, output_attentions=True).attentions
    for layer in range(4):
        probs = att[layer][:, :, -4:]
        assert (rec.rows[layer] - probs).abs().max() <= 1e-5


@pytest.mark.parametrize("semantics", ["code", "distribution"])
def test_a_prior_with_lambda_zero_leaves_a_softcapped_model_unchanged(semantics):
    """λ = 0 recomputes the prior heads' rows from the model's own (capped) logits."""
    from harness.attention.dispatch import VisualPrior

    model = tiny.paligemma("gemma2")
    inp = tiny.image_inputs(model, 16, pads=PADS, seed=6, suffix=3)
    use_dispatch(model)
    image = inp["input_ids"] == tiny.IMAGE
    keys = torch.stack([row.nonzero()[:, 0] for row in image])
    prior = VisualPrior(keys, torch.full(keys.shape, 1 / keys.shape[1]), semantics, lam=0.0)
    plan = Plan.build(prior={Head(la, h): prior for la in range(4) for h in range(4)})
    assert maxdiff(logits(model, inp, plan), logits(model, inp), inp) <= 1e-5
    lam1 = VisualPrior(keys, prior.prior, semantics, lam=1.0)
    plan1 = Plan.build(prior={Head(la, h): lam1 for la in range(4) for h in range(4)})
    assert maxdiff(logits(model, inp, plan1), logits(model, inp), inp) > 1e-4  # it runs


def test_a_plan_refuses_kwargs_it_cannot_honour():
    from types import SimpleNamespace

    from harness.attention.dispatch import headscope_attention
    from harness.attention.plan import LayerPlan

    q, k, v = (torch.randn(1, 2, 5, 8) for _ in range(3))
    module = SimpleNamespace(layer_idx=3, is_causal=True, num_key_value_groups=1)
    out, _ = headscope_attention(module, q, k, v, None, s_aux=torch.zeros(2))  # no plan: HF's
    assert out.shape == (1, 5, 2, 8)
    module._headscope_layer_plan = LayerPlan(ablate={0: Ablation("zero")})
    with pytest.raises(ValueError, match="layer 3.*'s_aux'"):
        headscope_attention(module, q, k, v, None, s_aux=torch.zeros(2))
