"""The headscope attention dispatch on tiny models of all seven VLM classes (CPU)."""

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from harness.api.anatomy import decoder_layers, geometry_of  # noqa: E402
from harness.api.heads import Head  # noqa: E402
from harness.attention.dispatch import (  # noqa: E402
    Ablation,
    AttentionRecorder,
    Plan,
    PlanConflictError,
    RecordSpec,
    Window,
    merge_plans,
    plan_scope,
    set_window_kernel,
    use_dispatch,
)
from harness.testing.tiny import TINY_FAMILIES, build_tiny_model, tiny_text_inputs  # noqa: E402
from tests.integration._interventions_util import (  # noqa: E402
    boom,
    logits,
    o_proj_reference,
    text_inputs,
    zero_heads_edit,
)

SEQ = 12
PADS = [0, 4]


def padded_inputs(model, seed=0):
    return text_inputs(model, seed, pads=PADS, seq=SEQ)


def real(x):
    """Logits of the real (non-padding) tokens, flattened across the batch."""
    return torch.cat([x[b, p:] for b, p in enumerate(PADS)])


@pytest.fixture(params=TINY_FAMILIES)
def family(request):
    return request.param


@pytest.fixture
def pair(family):
    """(sdpa model, dispatched model) with identical weights."""
    return build_tiny_model(family), use_dispatch(build_tiny_model(family))


def test_import_is_light():
    code = (
        "import sys, harness.attention.dispatch, harness.testing.tiny; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_geometry(family):
    g = geometry_of(build_tiny_model(family, num_layers=3, num_heads=6, num_kv_heads=3))
    assert (g.num_layers, g.num_heads, g.num_kv_heads, g.head_dim) == (3, 6, 3, 16)
    assert g.hidden_size == 96


def test_empty_plan_is_bit_identical_to_sdpa(pair):
    base, disp = pair
    inp = padded_inputs(base)
    ref = logits(base, inp)
    assert torch.equal(logits(disp, inp), ref)
    assert torch.equal(logits(disp, inp, Plan()), ref)
    nopad = tiny_text_inputs(base, 2, SEQ, 1)
    assert torch.equal(logits(disp, nopad, Plan()), logits(base, nopad))
    # a vision tower untouched: only the text config switched
    assert disp.config.vision_config._attn_implementation == "sdpa"


def test_generate_through_dispatch(pair):
    base, disp = pair
    inp = tiny_text_inputs(base, 2, SEQ, 2, left_pad=PADS)
    kw = dict(max_new_tokens=4, do_sample=False)
    with torch.no_grad():
        ref = base.generate(**inp, **kw)
        with plan_scope(disp, Plan()):
            assert torch.equal(disp.generate(**inp, **kw), ref)
        plan = Plan.build(
            window={Head(0, 1): Window(3, sinks=1, in_decode=True)},
            ablate={Head(1, 2): Ablation("bos")},
        )
        with plan_scope(disp, plan):
            out = disp.generate(**inp, **kw)
    assert out.shape == ref.shape


def test_recorded_ram_equals_eager_probabilities(family):
    model = use_dispatch(build_tiny_model(family))
    eager = build_tiny_model(family)
    eager.set_attn_implementation("eager")
    inp = padded_inputs(model, seed=3)
    qmask = torch.zeros(2, SEQ, dtype=torch.bool)
    qmask[0, [8, 10, 11]] = True
    qmask[1, [9, 11]] = True
    kmask = torch.zeros(2, SEQ, dtype=torch.bool)
    kmask[0, [1, 2, 5]] = True
    kmask[1, [4, 6, 7, 8]] = True
    rec = AttentionRecorder()
    plan = Plan.build(record=RecordSpec(rec, qmask, kmask, keep_rows=True), record_layers=[0, 1])
    out = logits(model, inp, plan)
    assert torch.equal(out, logits(model, inp))  # recording never changes outputs
    with torch.no_grad():
        att = eager(**inp, output_attentions=True).attentions
    for layer in (0, 1):
        for b in range(2):
            rows = qmask[b].nonzero()[:, 0]
            probs = att[layer][b][:, rows]  # [head, q_row, k_pos]
            ref = probs[..., kmask[b]].sum(-1).mean(-1)
            # float32 softmax round-off of sdpa-with-recording vs eager (SmolVLM: 1.3e-6)
            assert (rec.mass[layer][b] - ref).abs().max() <= 2e-6
            n = len(rows)
            assert (rec.rows[layer][b, :, :n] - probs).abs().max() <= 2e-6
            assert rec.row_positions[layer][b, :n].tolist() == rows.tolist()
    assert rec.matrix(2).shape == (2, 2, 4)


def test_zero_ablation_equals_o_proj_hook(pair):
    base, disp = pair
    inp = padded_inputs(base, seed=4)
    heads = {Head(0, 1), Head(1, 0), Head(1, 3)}
    ref = o_proj_reference(base, inp, zero_heads_edit(heads, geometry_of(base).head_dim))
    out = logits(disp, inp, Plan.build(ablate={h: Ablation("zero") for h in heads}))
    assert (real(out) - real(ref)).abs().max() <= 1e-6
    assert (real(out) - real(logits(base, inp))).abs().max() > 1e-3  # the ablation bites


def test_window_covering_sequence_equals_dense(pair):
    base, disp = pair
    inp = padded_inputs(base, seed=5)
    plan = Plan.build(window={h: Window(SEQ) for h in geometry_of(base).all_heads()})
    out = logits(disp, inp, plan)
    assert (real(out) - real(logits(base, inp))).abs().max() <= 1e-5


@pytest.mark.parametrize("sinks", [0, 2])
@pytest.mark.parametrize("pads", [False, True])
def test_window_fast_equals_eager_reference(pair, sinks, pads):
    base, disp = pair
    inp = padded_inputs(base, seed=6) if pads else tiny_text_inputs(base, 2, SEQ, 6)
    plan = Plan.build(
        window={
            Head(0, 0): Window(3, sinks),
            Head(0, 3): Window(5, sinks),
            Head(1, 1): Window(2, sinks),
        }
    )
    fast = logits(disp, inp, plan)
    set_window_kernel("reference")
    try:
        ref = logits(disp, inp, plan)
    finally:
        set_window_kernel("chunked")
    mask = inp["attention_mask"].bool()
    assert (fast[mask] - ref[mask]).abs().max() <= 1e-5
    assert (fast[mask] - logits(base, inp)[mask]).abs().max() > 1e-3  # windows bite


def test_left_padded_batch_equals_one_by_one(pair):
    _, disp = pair
    inp = padded_inputs(disp, seed=7)
    plan = Plan.build(
        window={Head(0, 0): Window(3, sinks=1), Head(1, 2): Window(4)},
        ablate={Head(0, 2): Ablation("bos"), Head(1, 1): Ablation("uniform")},
    )
    batched = logits(disp, inp, plan)
    for b, pad in enumerate(PADS):
        alone = logits(disp, {"input_ids": inp["input_ids"][b : b + 1, pad:]}, plan)
        assert (batched[b, pad:] - alone[0]).abs().max() <= 1e-5


def test_plan_scope_restores_on_error(family):
    model = use_dispatch(build_tiny_model(family))
    inp = padded_inputs(model)
    outer = Plan.build(ablate={Head(0, 0): Ablation("zero")})
    with plan_scope(model, outer):
        ref = logits(model, inp)
        with pytest.raises(RuntimeError, match="boom"):
            with plan_scope(model, Plan.build(ablate={Head(1, 1): Ablation("zero")})):
                handle = decoder_layers(model)[1].register_forward_hook(boom)
                try:
                    logits(model, inp)
                finally:
                    handle.remove()
        assert torch.equal(logits(model, inp), ref)
    assert torch.equal(logits(model, inp), logits(build_tiny_model(family), inp))


def test_plan_scope_requires_dispatch():
    with pytest.raises(RuntimeError, match="use_dispatch"):
        with plan_scope(build_tiny_model("llava"), Plan()):
            pass


def test_plan_outside_model_raises():
    model = use_dispatch(build_tiny_model("llava"))
    with pytest.raises(ValueError, match="outside"):
        with plan_scope(model, Plan.build(ablate={Head(0, 9): Ablation("zero")})):
            pass


def test_merge_plans_conflicts_and_combines():
    zero = Ablation("zero")
    a = Plan.build(ablate={Head(0, 1): zero}, window={Head(1, 0): Window(8)})
    b = Plan.build(ablate={Head(0, 1): zero, Head(0, 2): Ablation("bos")})
    merged = merge_plans(a, b)
    assert set(merged.layers[0].ablate) == {1, 2}
    assert merged.layers[1].window[0] == Window(8)
    assert merge_plans(a, Plan.build(window={Head(1, 0): Window(8)})).layers[1].window[0].size == 8
    with pytest.raises(PlanConflictError, match="L0H1"):
        merge_plans(a, Plan.build(ablate={Head(0, 1): Ablation("uniform")}))
    with pytest.raises(PlanConflictError, match="L1H0"):
        merge_plans(a, Plan.build(window={Head(1, 0): Window(4)}))
    with pytest.raises(PlanConflictError, match="head 0"):
        merge_plans(a, Plan.build(ablate={Head(1, 0): Ablation("zero")}))


def test_record_reflects_windows_and_skips_decode():
    model = use_dispatch(build_tiny_model("qwen3_vl"))
    inp = tiny_text_inputs(model, 2, SEQ, 8)  # no padding: mask is None inside attention
    qmask = torch.zeros(2, SEQ, dtype=torch.bool)
    qmask[:, [9, 11]] = True
    kmask = torch.ones(2, SEQ, dtype=torch.bool)
    rec = AttentionRecorder()
    plan = merge_plans(
        Plan.build(record=RecordSpec(rec, qmask, kmask, keep_rows=True), record_layers=[0]),
        Plan.build(window={Head(0, 2): Window(3, sinks=1)}),
    )
    with torch.no_grad(), plan_scope(model, plan):
        model.generate(**inp, max_new_tokens=3, do_sample=False)
    assert rec.calls == 1  # decode steps lack the requested rows
    rows = rec.rows[0]  # [batch, head, q_row, k_pos]
    torch.testing.assert_close(rec.mass[0], torch.ones(2, 4))
    allowed = torch.zeros(2, SEQ, dtype=torch.bool)
    allowed[0, [0, 7, 8, 9]] = True
    allowed[1, [0, 9, 10, 11]] = True
    assert torch.all(rows[:, 2][~allowed[None].expand(2, -1, -1)] == 0)
    assert torch.all(rows[:, 2][allowed[None].expand(2, -1, -1)] > 0)
    assert torch.all(rows[:, 1, 1, :12] > 0)  # a dense head sees every earlier key
