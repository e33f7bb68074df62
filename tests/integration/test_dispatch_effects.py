"""Ablation modes, priors, output hooks and state capture of the headscope dispatch."""

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from harness.api.anatomy import decoder_layers, geometry_of  # noqa: E402
from harness.api.heads import Head  # noqa: E402
from harness.attention.dispatch import (  # noqa: E402
    Ablation,
    LayerPlan,
    OutputHook,
    Plan,
    VisualPrior,
    use_dispatch,
)
from harness.attention.execute import run_layer_plan  # noqa: E402
from harness.probes.states import capture_states  # noqa: E402
from harness.testing.tiny import TINY_FAMILIES, build_tiny_model  # noqa: E402
from tests.integration._interventions_util import logits, text_inputs  # noqa: E402

SEQ = 10
PADS = [3, 0]


def inputs(model, seed=0):
    return text_inputs(model, seed, pads=PADS, seq=SEQ)


def reference_with_values(model, inp, edit):
    """sdpa forward where o_proj inputs are edited from the layer's value states."""
    layers = decoder_layers(model)
    values, handles = {}, []
    for i, layer in enumerate(layers):
        handles.append(
            layer.self_attn.v_proj.register_forward_hook(
                lambda _m, _a, out, i=i: values.__setitem__(i, out)
            )
        )
        handles.append(
            layer.self_attn.o_proj.register_forward_pre_hook(
                lambda _m, args, i=i: (edit(i, args[0].clone(), values[i]),)
            )
        )
    try:
        return logits(model, inp)
    finally:
        for h in handles:
            h.remove()


@pytest.mark.parametrize("family", ["llava", "qwen2_vl", "internvl"])
@pytest.mark.parametrize("mode", ["uniform", "bos", "mean"])
def test_ablation_modes_match_value_references(family, mode):
    base = build_tiny_model(family)
    disp = use_dispatch(build_tiny_model(family))
    g = geometry_of(base)
    d, group = g.head_dim, g.group_size
    inp = inputs(base, seed=1)
    heads = [Head(0, 3), Head(1, 0)]
    mean = torch.linspace(-1, 1, d)
    keep = inp["attention_mask"].bool()

    def edit(layer, x, v):
        v = v.view(v.shape[0], v.shape[1], -1, d)  # [batch, pos, kv_head, dim]
        for h in (h for h in heads if h.layer == layer):
            vh = v[:, :, h.head // group]
            if mode == "mean":
                new = mean.expand_as(vh)
            elif mode == "bos":
                new = torch.stack([vh[b, PADS[b]].expand_as(vh[b]) for b in range(2)])
            else:
                w = keep[:, None, :].float() * torch.ones(SEQ, SEQ).tril()  # [batch, q, k]
                new = (w @ vh) / w.sum(-1, keepdim=True).clamp(min=1)
            x[..., h.head * d : (h.head + 1) * d] = new
        return x

    ref = reference_with_values(base, inp, edit)
    ab = Ablation(mode, mean=mean if mode == "mean" else None)
    out = logits(disp, inp, Plan.build(ablate={h: ab for h in heads}))
    assert (out[keep] - ref[keep]).abs().max() <= 1e-5
    assert (out[keep] - logits(base, inp)[keep]).abs().max() > 1e-3


def test_output_hook_sees_heads_and_can_zero():
    disp = use_dispatch(build_tiny_model("qwen2_5_vl"))
    inp = inputs(disp, seed=2)
    seen = []

    def zero(x, ctx):
        seen.append((ctx.layer, ctx.heads, tuple(x.shape)))
        return torch.zeros_like(x)

    hook = OutputHook(zero, "zero")
    heads = [Head(1, 0), Head(1, 2)]
    out = logits(disp, inp, Plan.build(hooks={h: hook for h in heads}))
    ref = logits(disp, inp, Plan.build(ablate={h: Ablation("zero") for h in heads}))
    assert torch.equal(out, ref)
    assert seen == [(1, (0, 2), (2, SEQ, 2, 16))]
    bad = OutputHook(lambda x, ctx: x[..., :3], "bad")
    with pytest.raises(ValueError, match="bad"):
        logits(disp, inp, Plan.build(hooks={Head(0, 0): bad}))


# --- priors: run_layer_plan against loop references on random tensors -------------------------


def _setup(seed=0, batch=2, heads=6, kv=3, q_len=9, kv_len=9, dim=8):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, q_len, dim, generator=gen) * 2
    k = torch.randn(batch, kv, kv_len, dim, generator=gen) * 2
    v = torch.randn(batch, kv, kv_len, dim, generator=gen)
    keys = torch.tensor([[2, 3, 4, 5], [1, 2, 3, 4]])
    prior = torch.softmax(torch.randn(2, 4, generator=gen), -1)
    pads = [0, 1]
    off = kv_len - q_len
    mask = torch.stack(
        [
            (torch.arange(kv_len)[None] <= torch.arange(off, kv_len)[:, None])
            & (torch.arange(kv_len)[None] >= p)
            for p in pads
        ]
    )[:, None]
    module = SimpleNamespace(layer_idx=0, is_causal=True, num_key_value_groups=heads // kv)
    return q, k, v, mask, keys, prior, module


def _dense_ref(q, k, v, mask, b, h, t, group, logit_edit=None, prob_edit=None):
    row = (q[b, h, t] @ k[b, h // group].T) * q.shape[-1] ** -0.5
    if logit_edit is not None:
        row = logit_edit(row)
    p = torch.softmax(row.masked_fill(~mask[b, 0, t], float("-inf")), -1)
    if prob_edit is not None:
        p = prob_edit(p)
    return p @ v[b, h // group]


@pytest.mark.parametrize("lam", [0.0, 0.5, 1.0])
def test_prior_code_semantics(lam):
    q, k, v, mask, keys, prior, module = _setup(seed=3)
    members = [0, 1, 2, 3, 5]
    vp = VisualPrior(keys, prior, "code", lam=lam)
    lp = LayerPlan(prior={h: vp for h in members})
    out, _ = run_layer_plan(module, lp, q, k, v, mask, 0.0, None, {})
    group, t = 2, q.shape[2] - 1
    for b in range(2):
        scores = []
        for h in members:
            row = (q[b, h, t] @ k[b, h // group].T) * q.shape[-1] ** -0.5
            other = mask[b, 0, t].clone()
            other[keys[b]] = False
            scores.append(row[other].mean())
        scores = torch.stack(scores)
        lo, hi = torch.quantile(scores, 0.3), torch.quantile(scores, 0.9)
        for i, h in enumerate(members + [4]):
            chosen = h in members and lo <= scores[i] <= hi

            def edit(row, b=b):
                row = row.clone()
                row[keys[b]] = (1 - lam) * row[keys[b]] + lam * prior[b]
                return row

            ref = _dense_ref(q, k, v, mask, b, h, t, group, edit if chosen else None)
            torch.testing.assert_close(out[b, t, h], ref, atol=1e-5, rtol=1e-5)
            # earlier rows never change
            torch.testing.assert_close(
                out[b, 3, h], _dense_ref(q, k, v, mask, b, h, 3, group), atol=1e-5, rtol=1e-5
            )


@pytest.mark.parametrize("lam", [0.0, 0.6, 1.0])
def test_prior_distribution_semantics(lam):
    q, k, v, mask, keys, prior, module = _setup(seed=4, q_len=4, kv_len=9)
    vp = VisualPrior(keys, prior, "distribution", lam=lam)
    members = [1, 4]
    out, _ = run_layer_plan(
        module, LayerPlan(prior={h: vp for h in members}), q, k, v, mask, 0.0, None, {}
    )
    group, off = 2, 5
    for b in range(2):
        for t in range(4):
            for h in range(6):

                def edit(p, b=b):
                    p = p.clone()
                    pv = p[keys[b]]
                    shape = pv ** (1 - lam) * prior[b] ** lam
                    p[keys[b]] = pv.sum() * shape / shape.sum()
                    return p

                sees_all = off + t > int(keys[b].max())
                use = edit if (h in members and sees_all) else None
                ref = _dense_ref(q, k, v, mask, b, h, t, group, prob_edit=use)
                torch.testing.assert_close(out[b, t, h], ref, atol=1e-5, rtol=1e-5)


def test_prior_in_model_lambda_zero_is_identity_and_one_changes():
    disp = use_dispatch(build_tiny_model("qwen2_vl"))
    inp = inputs(disp, seed=5)
    keys = torch.tensor([[4, 5, 6], [2, 3, 4]])
    prior = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    heads = geometry_of(disp).all_heads()
    base = logits(disp, inp)
    for sem in ("code", "distribution"):
        same = logits(
            disp, inp, Plan.build(prior={h: VisualPrior(keys, prior, sem, 0.0) for h in heads})
        )
        assert (same - base).abs().max() <= 1e-5
        diff = logits(
            disp, inp, Plan.build(prior={h: VisualPrior(keys, prior, sem, 1.0) for h in heads})
        )
        assert (diff[:, -1] - base[:, -1]).abs().max() > 1e-3


# --- state capture ------------------------------------------------------------------------------


@pytest.mark.parametrize("family", TINY_FAMILIES)
def test_capture_states_are_the_residual_stream(family):
    model = build_tiny_model(family, num_layers=3)
    inp = inputs(model, seed=6)
    updates = {}
    layers = decoder_layers(model)

    # the attention's residual update: o_proj's output, or its post-norm before the residual
    # add (Gemma 2/3's sandwich post_attention_layernorm, GLM-4's post_self_attn_layernorm)
    def update_of(layer):
        if hasattr(layer, "pre_feedforward_layernorm"):
            return layer.post_attention_layernorm
        return getattr(layer, "post_self_attn_layernorm", None) or layer.self_attn.o_proj

    handles = [
        update_of(layer).register_forward_hook(lambda _m, _a, out, i=i: updates.__setitem__(i, out))
        for i, layer in enumerate(layers)
    ]
    with torch.no_grad(), capture_states(model) as cap:
        out = model(**inp, output_hidden_states=True)
    for h in handles:
        h.remove()
    assert cap.calls == 1
    for i in range(3):
        torch.testing.assert_close(cap.inputs[i], out.hidden_states[i], atol=0, rtol=0)
        torch.testing.assert_close(cap.delta_attn(i), updates[i], atol=1e-5, rtol=1e-5)
    for i in range(2):
        torch.testing.assert_close(cap.post_ffn[i], cap.inputs[i + 1], atol=0, rtol=0)
    before = (len(layers[1]._forward_hooks), len(layers[1]._forward_pre_hooks))
    with torch.no_grad(), capture_states(model, layers=[1], positions=[0, 7]) as part:
        model(**inp)
    assert set(part.inputs) == {1} and part.post_attn[1].shape == (2, 2, 64)
    torch.testing.assert_close(part.post_attn[1], cap.post_attn[1][:, [0, 7]], atol=0, rtol=0)
    assert (len(layers[1]._forward_hooks), len(layers[1]._forward_pre_hooks)) == before
