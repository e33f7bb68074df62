"""hybrid:select=adaptive (input-adaptive routing) against dense, static hybrid and its eager
reference, on three tiny families; the online estimate against scores from full attention."""

import pytest

torch = pytest.importorskip("torch")

from harness.api.intervention import InterventionError, build_intervention  # noqa: E402
from harness.api.specs import parse_intervention  # noqa: E402
from harness.attention import route as routing  # noqa: E402
from harness.attention.dispatch import set_window_kernel  # noqa: E402
from harness.attention.window import full_bool_mask, masked_softmax  # noqa: E402
from interventions._adaptive import layer_budgets  # noqa: E402
from interventions.ablate import Ablate  # noqa: E402
from interventions.hybrid import Hybrid  # noqa: E402
from tests.integration._interventions_util import (  # noqa: E402
    FAMILIES,
    logits,
    maxdiff,
    pair,
    text_inputs,
)

SEQ = 24
VISUAL = list(range(6, 14))  # image-token positions (of the unpadded tail)


@pytest.fixture(params=FAMILIES)
def models(request):
    return pair(request.param)


def visual_inputs(base, seed=0):
    """Left-padded text inputs whose positions VISUAL hold the model's image-token id."""
    inp = text_inputs(base, seed=seed, seq=SEQ)
    image_id = base.config.image_token_id
    inp["input_ids"][:, VISUAL] = image_id
    return inp


def fast_and_reference(spec, adapter, inp):
    """``(logits, info)`` of ``spec`` on the chunked fast path, then on the eager reference."""
    runs = []
    try:
        for kernel in ("chunked", "reference"):
            set_window_kernel(kernel)
            with spec.attach(adapter) as info:
                runs.append((logits(adapter.model, inp), info))
    finally:
        set_window_kernel("chunked")
    return runs


def test_adaptive_keeping_every_head_is_dense(models):
    base, adapter = models
    inp = visual_inputs(base, seed=1)
    every = adapter.geometry.num_total_heads
    with Hybrid(select="adaptive", keep=every, window=3).attach(adapter) as info:
        out = logits(adapter.model, inp)
    assert torch.equal(out, logits(base, inp))  # bit-identical to plain sdpa
    assert info["routed_samples"] == 2 and info["fallback_samples"] == 0  # estimate ran
    assert all(share == [1.0] * adapter.geometry.num_heads for share in info["kept_share"])


@pytest.mark.parametrize("estimate", ["visual", "far"])
@pytest.mark.parametrize("granularity", ["head", "kv_group"])
def test_adaptive_equals_eager_reference(models, estimate, granularity):
    base, adapter = models
    inp = visual_inputs(base, seed=2)
    spec = Hybrid(select="adaptive", keep=0.25, window=3, estimate=estimate,
                  granularity=granularity)  # fmt: skip
    (fast, fast_info), (ref, ref_info) = fast_and_reference(spec, adapter, inp)
    assert maxdiff(fast, ref, inp) <= 1e-5
    assert fast_info["kept_share"] == ref_info["kept_share"]  # same heads chosen
    assert fast_info["fallback_samples"] == ref_info["fallback_samples"] == 0
    assert maxdiff(fast, logits(base, inp), inp) > 1e-3  # the windows bite
    geo = adapter.geometry
    unit = 1 if granularity == "head" else geo.group_size
    kept = [round(sum(share) * 2) for share in fast_info["kept_share"]]  # 2 samples
    assert kept == [2 * b * unit for b in fast_info["budget_per_layer"]]


def test_adaptive_on_flex_equals_eager_reference(models):
    from harness.attention.execute import kernels_used, reset_kernels_used

    base, adapter = models
    inp = visual_inputs(base, seed=6)
    spec = Hybrid(select="adaptive", keep=0.25, window=3)
    outs, shares = {}, {}
    try:
        for kernel in ("flex_eager", "reference"):
            set_window_kernel(kernel)
            reset_kernels_used()
            with spec.attach(adapter) as info:
                outs[kernel] = logits(adapter.model, inp)
            shares[kernel] = info["kept_share"]
            if kernel == "flex_eager":  # each sample's group ran on flex (left padding is ok)
                assert set(kernels_used()) == {"flex_eager"}
    finally:
        set_window_kernel("auto")
    assert maxdiff(outs["flex_eager"], outs["reference"], inp) <= 1e-5
    assert shares["flex_eager"] == shares["reference"]


def test_recording_under_routing_needs_one_choice_per_batch(models):
    from harness.api.heads import Head
    from harness.attention.plan import AttentionRecorder, Plan, RecordSpec, Window, merge_plans
    from interventions._common import installed

    base, adapter = models
    inp = visual_inputs(base, seed=7)
    adaptive = Hybrid(select="adaptive", keep=0.25, window=3)
    with adaptive.attach(adapter) as info:
        logits(adapter.model, inp)
    assert any(0 < share < 1 for layer in info["kept_share"] for share in layer)  # rows differ

    def record_plan(batch):
        rows = torch.zeros(batch, SEQ, dtype=torch.bool)
        rows[:, -2:] = True
        spec = RecordSpec(AttentionRecorder(), rows, rows)
        return spec, Plan.build(record=spec, record_layers=[0, 1])

    one = {k: v[1:] for k, v in inp.items()}  # the unpadded sample
    spec, plan = record_plan(1)
    with adaptive.attach(adapter) as info, installed(adapter.model, plan, "record"):
        logits(adapter.model, one)
    assert set(spec.recorder.mass) == {0, 1}
    # the same record as under static windows on the heads routing windowed
    windowed = {Head(layer, h): Window(3) for layer, shares in enumerate(info["kept_share"])
                for h, share in enumerate(shares) if share == 0.0}  # fmt: skip
    ref, ref_plan = record_plan(1)
    with installed(adapter.model, merge_plans(Plan.build(window=windowed), ref_plan), "ref"):
        logits(adapter.model, one)
    for layer in (0, 1):
        assert torch.equal(spec.recorder.mass[layer], ref.recorder.mass[layer])
    _, plan = record_plan(2)
    with adaptive.attach(adapter), installed(adapter.model, plan, "record"):
        with pytest.raises(ValueError, match="route alike"):
            logits(adapter.model, inp)


def test_adaptive_budget_zero_equals_static_hybrid(models):
    base, adapter = models
    inp = visual_inputs(base, seed=3)
    with Hybrid(keep=0, window=4, sinks=1).attach(adapter):
        static = logits(adapter.model, inp)
    with Hybrid(select="adaptive", keep=0, window=4, sinks=1).attach(adapter) as info:
        adaptive = logits(adapter.model, inp)
    assert torch.equal(static, adaptive)
    assert info["n_full"] == 0 and info["budget_per_layer"] == [0, 0]


def _random_qkv(batch=2, heads=4, kv_heads=2, q_len=10, kv_len=10, dim=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, q_len, dim, generator=gen)
    k = torch.randn(batch, kv_heads, kv_len, dim, generator=gen)
    return q, k


@pytest.mark.parametrize("estimate", ["visual", "far"])
@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("q_len", [10, 4])  # 4: a chunk after cached keys (S_q < S_kv)
def test_online_estimate_equals_scores_from_full_attention(estimate, padded, q_len):
    q, k = _random_qkv(q_len=q_len)
    kv_len, scale = k.shape[2], 8**-0.5
    mask = None
    if padded:  # row 0 has 3 left-padding keys
        keep = torch.ones(2, kv_len, dtype=torch.bool)
        keep[0, :3] = False
        mask = full_bool_mask(None, 2, q_len, kv_len) & keep[:, None, None, :]
    vis = torch.zeros(2, kv_len, dtype=torch.bool)
    vis[0, 3:6] = True  # sample 1 has no visual token: falls back to 'far'
    route = routing.Route(1, size=3, sinks=1, rows=3, estimate=estimate, visual=lambda: vis)
    fast, fallback = routing.route_scores(route, q, k, mask, scale)
    kk = k.repeat_interleave(2, 1)
    probs = masked_softmax((q @ kk.transpose(-1, -2)) * scale,
                           full_bool_mask(mask, 2, q_len, kv_len))  # fmt: skip
    # Hand-written reference: rows q_len-3.., mass on visual keys or outside band ∪ sinks.
    start = [3, 0] if padded else [0, 0]
    expected = torch.zeros(2, 4)
    for b in range(2):
        for r in range(q_len - 3, q_len):
            pos = kv_len - q_len + r
            for key in range(kv_len):
                far = pos - key >= 3 and key >= start[b] + 1
                hit = vis[b, key] if (estimate == "visual" and vis[b].any()) else far
                expected[b] += probs[b, :, r, key] * hit / 3
    assert torch.allclose(fast, expected, atol=1e-6)
    assert fallback == (1 if estimate == "visual" else 0)


def test_choice_follows_each_input():
    # One KV head per query head; key 0..3 visual. Sample 0: head 2 looks at the visual keys,
    # sample 1: head 1 does; every other head looks at the last key.
    heads, seq, dim = 4, 8, 4
    k = torch.zeros(2, heads, seq, dim)
    k[:, :, :4, 0] = 1.0
    k[:, :, -1, 1] = 1.0
    q = torch.zeros(2, heads, seq, dim)
    q[:, :, :, 1] = 5.0
    q[0, 2, :, 0], q[0, 2, :, 1] = 5.0, 0.0
    q[1, 1, :, 0], q[1, 1, :, 1] = 5.0, 0.0
    vis = torch.zeros(2, seq, dtype=torch.bool)
    vis[:, :4] = True
    route = routing.Route(1, size=2, rows=2, visual=lambda: vis, log=routing.RouteLog())
    windowed = routing.select_windowed(route, 0, q, k, None, 1.0)
    assert windowed == [(0, 1, 3), (0, 2, 3)]
    assert route.log.kept[0] == [0, 1, 1, 0] and route.log.samples[0] == 2


def test_layer_budgets_spread_the_static_total():
    assert layer_budgets(4, 4) == [1, 1, 1, 1]
    assert layer_budgets(3, 4) == [0, 1, 1, 1]
    assert layer_budgets(5, 2) == [2, 3]
    assert sum(layer_budgets(58, 36)) == 58


def test_generate_routes_the_prefill_only(models):
    base, adapter = models
    inp = visual_inputs(base, seed=4)
    with Hybrid(select="adaptive", keep=0.25, window=3).attach(adapter) as info:
        with torch.no_grad():
            adapter.model.generate(**inp, max_new_tokens=3, do_sample=False)
    assert info["routed_samples"] == 2  # 1 prefill × 2 samples; decode steps stay dense


def test_adaptive_composes_with_ablation_and_conflicts_with_static_hybrid(models):
    base, adapter = models
    inp = visual_inputs(base, seed=5)
    adaptive = Hybrid(select="adaptive", keep=0.25, window=3)
    with adaptive.attach(adapter):
        alone = logits(adapter.model, inp)
        with Ablate(select="heads", heads=["L1H0"]).attach(adapter):
            both = logits(adapter.model, inp)
    assert maxdiff(alone, both, inp) > 1e-4
    for outer, inner in ((adaptive, Hybrid(keep=0, window=3)),
                         (Hybrid(keep=0, window=3), adaptive)):  # fmt: skip
        with outer.attach(adapter):
            with pytest.raises(InterventionError, match="'hybrid' conflicts"):
                with inner.attach(adapter):
                    pass


def test_adaptive_arguments_are_checked():
    spec = build_intervention(parse_intervention("hybrid:select=adaptive,keep=0.25,window=3"))
    assert spec.select == "adaptive" and spec.ranking is None
    for bad, match in (
        ({"ranking": "r.json"}, "reads no ranking"),  # unless layer_budget="ranking"
        ({"window_in_decode": True}, "prefill only"),
        ({"rows": 0}, "rows must be"),
        ({"estimate": "attention"}, "estimate"),
    ):
        with pytest.raises(InterventionError, match=match):
            Hybrid(select="adaptive", keep=0.1, **bad)
    with pytest.raises(InterventionError, match="per input"):
        spec.resolve(None)
    with pytest.raises(InterventionError, match="select='adaptive' only"):
        Hybrid(keep=0, estimate="far")
    with pytest.raises(InterventionError, match="select"):
        Hybrid(select="best", keep=0)


@pytest.mark.parametrize("granularity", ["head", "kv_group"])
def test_ranked_layer_budget_puts_the_budget_where_the_static_top_k_is(
    models, tmp_path, granularity
):
    """layer_budget='ranking': each layer keeps as many units as static top-k keeps there;
    which ones is still chosen per input (equal to the eager reference)."""
    from tests.integration._interventions_util import write_ranking

    base, adapter = models
    path = tmp_path / "ranking.json"
    for seed in range(50):  # a ranking whose top-k is not split evenly over the layers
        write_ranking(path, base, seed=seed)
        static = Hybrid(keep=0.25, window=3, ranking=str(path), granularity=granularity)
        with static.attach(adapter) as static_info:
            pass
        per_layer = [0] * adapter.geometry.num_layers
        for unit in static_info["full_units"]:
            per_layer[int(unit[1:].split("H" if granularity == "head" else "G")[0])] += 1
        if per_layer != layer_budgets(sum(per_layer), len(per_layer)):
            break
    spec = Hybrid(select="adaptive", keep=0.25, window=3, ranking=str(path),
                  layer_budget="ranking", granularity=granularity)  # fmt: skip
    inp = visual_inputs(base, seed=7)
    (fast, info), (ref, ref_info) = fast_and_reference(spec, adapter, inp)
    assert info["budget_per_layer"] == per_layer and info["layer_budget"] == "ranking"
    assert per_layer != layer_budgets(sum(per_layer), len(per_layer))  # differs from even
    assert maxdiff(fast, ref, inp) <= 1e-5 and info["kept_share"] == ref_info["kept_share"]
    unit = 1 if granularity == "head" else adapter.geometry.group_size
    kept = [round(sum(share) * 2) for share in info["kept_share"]]  # 2 samples
    assert kept == [2 * b * unit for b in per_layer]


def test_ranked_layer_budget_arguments_are_checked():
    with pytest.raises(InterventionError, match="pass ranking="):
        Hybrid(select="adaptive", keep=0.1, layer_budget="ranking")
    with pytest.raises(InterventionError, match="unless layer_budget='ranking'"):
        Hybrid(select="adaptive", keep=0.1, ranking="r.json")
    with pytest.raises(InterventionError, match="select='adaptive' only"):
        Hybrid(keep=0.1, ranking="r.json", layer_budget="ranking")
    with pytest.raises(InterventionError, match="layer_budget"):
        Hybrid(select="adaptive", keep=0.1, layer_budget="best")
