"""ablate and hybrid interventions against eager references, on three tiny families."""

import pytest

torch = pytest.importorskip("torch")

from harness.api.heads import Head  # noqa: E402
from harness.api.intervention import InterventionError, build_intervention  # noqa: E402
from harness.api.specs import InterventionSpec  # noqa: E402
from harness.attention.dispatch import current_plan, set_window_kernel  # noqa: E402
from harness.probes.means import compute_head_means, save_head_means  # noqa: E402
from harness.schema.ranking import load_ranking  # noqa: E402
from interventions.ablate import Ablate  # noqa: E402
from interventions.hybrid import Hybrid  # noqa: E402
from tests.integration._interventions_util import (  # noqa: E402
    FAMILIES,
    SEQ,
    boom,
    logits,
    maxdiff,
    o_proj_reference,
    pair,
    text_inputs,
    write_ranking,
    zero_heads_edit,
)


@pytest.fixture(params=FAMILIES)
def family(request):
    return request.param


@pytest.fixture
def ranked(family, tmp_path):
    base, adapter = pair(family)
    path = tmp_path / "ranking.json"
    write_ranking(path, base)
    return base, adapter, str(path)


def test_ablate_top_zero_equals_o_proj_reference(ranked):
    base, adapter, path = ranked
    inp = text_inputs(base, seed=1)
    spec = Ablate(select="top", k=0.25, mode="zero", ranking=path)
    with spec.attach(adapter) as info:
        out = logits(adapter.model, inp)
    expected = load_ranking(path).top_heads(None, 2)  # 25% of 8 heads
    assert info["heads"] == sorted(str(h) for h in expected) and info["n_heads"] == 2
    ref = o_proj_reference(base, inp, zero_heads_edit(expected, adapter.geometry.head_dim))
    assert maxdiff(out, ref, inp) <= 1e-5
    assert maxdiff(out, logits(base, inp), inp) > 1e-3  # the ablation bites
    assert maxdiff(logits(adapter.model, inp), logits(base, inp), inp) == 0.0  # removed


def test_ablate_bottom_per_task_and_kv_group(ranked):
    base, adapter, path = ranked
    ranking = load_ranking(path)
    spec = Ablate(select="bottom", k=1, ranking=path, ranking_task="b", granularity="kv_group")
    with spec.attach(adapter) as info:
        pass
    g = adapter.geometry
    groups = ranking.matrix("b").reshape(g.num_layers, g.num_kv_heads, -1).mean(-1)
    layer, kv = divmod(int(groups.argmin()), g.num_kv_heads)
    members = [Head(layer, kv * g.group_size + j) for j in range(g.group_size)]
    assert info["units"] == [f"L{layer}G{kv}"]
    assert info["heads"] == [str(h) for h in members]
    inp = text_inputs(base, seed=2)
    with spec.attach(adapter):
        out = logits(adapter.model, inp)
    ref = o_proj_reference(base, inp, zero_heads_edit(members, g.head_dim))
    assert maxdiff(out, ref, inp) <= 1e-5


def test_ablate_k_zero_equals_baseline(ranked):
    base, adapter, path = ranked
    inp = text_inputs(base, seed=3)
    for select in ("top", "random"):
        with Ablate(select=select, k=0, ranking=path).attach(adapter) as info:
            out = logits(adapter.model, inp)
        assert info["heads"] == []
        assert maxdiff(out, logits(base, inp), inp) == 0.0


def test_random_draws_are_seeded(family):
    _, adapter = pair(family)

    def heads(seed, draw):
        with Ablate(select="random", k=3, seed=seed, draws=4, draw=draw).attach(adapter) as i:
            return i["heads"], i["seed"], i["draw"]

    assert heads(0, 1) == heads(0, 1)
    assert heads(0, 1)[0] != heads(0, 2)[0] or heads(0, 1)[0] != heads(0, 3)[0]
    assert heads(0, 1)[0] != heads(1, 1)[0] or heads(0, 2)[0] != heads(1, 2)[0]
    assert heads(5, 0)[1:] == (5, 0) and len(heads(5, 0)[0]) == 3
    variants = Ablate(select="random", k=2, draws=3).draw_variants()
    assert [v.draw for v in variants] == [0, 1, 2]


def test_explicit_heads_and_mean_mode(family, tmp_path):
    base, adapter = pair(family)
    inp = text_inputs(base, seed=4)
    g = adapter.geometry
    means = compute_head_means(base, [text_inputs(base, seed=9)])
    assert tuple(means.shape) == (g.num_layers, g.num_heads, g.head_dim)
    path = save_head_means(tmp_path / "means.npz", means)
    heads = [Head(0, 1), Head(1, 2)]
    spec = Ablate(select="heads", heads=["L0H1", "L1H2"], mode="mean", mean_reference=str(path))
    with spec.attach(adapter) as info:
        out = logits(adapter.model, inp)
    assert info["heads"] == ["L0H1", "L1H2"]
    d = g.head_dim

    def edit(layer, x):
        for h in heads:
            if h.layer == layer:
                x[..., h.head * d : (h.head + 1) * d] = means[h.layer, h.head]
        return x

    assert maxdiff(out, o_proj_reference(base, inp, edit), inp) <= 1e-5


def test_hybrid_equals_window_reference_kernel(ranked):
    base, adapter, path = ranked
    inp = text_inputs(base, seed=5)
    spec = Hybrid(keep=2, window=3, sinks=1, ranking=path)
    with spec.attach(adapter) as info:
        fast = logits(adapter.model, inp)
        set_window_kernel("reference")
        try:
            ref = logits(adapter.model, inp)
        finally:
            set_window_kernel("chunked")
    assert info["n_full"] == 2 and info["n_windowed"] == 6
    assert info["full_heads"] == sorted(str(h) for h in load_ranking(path).top_heads(None, 2))
    assert maxdiff(fast, ref, inp) <= 1e-5
    assert maxdiff(fast, logits(base, inp), inp) > 1e-3


def test_hybrid_window_covering_sequence_is_dense(ranked):
    base, adapter, path = ranked
    inp = text_inputs(base, seed=6)
    with Hybrid(keep=0, window=SEQ).attach(adapter) as info:
        out = logits(adapter.model, inp)
    assert info["n_windowed"] == adapter.geometry.num_total_heads
    assert maxdiff(out, logits(base, inp), inp) <= 1e-5


def test_ablate_and_hybrid_on_one_head_conflict(ranked):
    _, adapter, path = ranked
    with Hybrid(keep=0, window=4).attach(adapter):
        with pytest.raises(InterventionError, match="'ablate' conflicts") as err:
            with Ablate(select="heads", heads=["L1H0"]).attach(adapter):
                pass
    assert "head 0" in str(err.value) and "layer 1" in str(err.value)
    with Ablate(select="heads", heads=["L1H0"]).attach(adapter):  # the other order
        with pytest.raises(InterventionError, match="'hybrid' conflicts"):
            with Hybrid(keep=0, window=4).attach(adapter):
                pass


def test_commuting_interventions_compose_in_either_order(ranked):
    base, adapter, path = ranked
    inp = text_inputs(base, seed=7)
    # hybrid keeps the top-2 heads dense; the ablation touches exactly those: no conflict
    a = Ablate(select="top", k=2, mode="bos", ranking=path)
    h = Hybrid(keep=2, window=3, ranking=path)
    with a.attach(adapter), h.attach(adapter):
        ah = logits(adapter.model, inp)
    with h.attach(adapter), a.attach(adapter):
        ha = logits(adapter.model, inp)
    assert torch.equal(ah, ha)
    for single in (a, h):
        with single.attach(adapter):
            assert maxdiff(ah, logits(adapter.model, inp), inp) > 1e-4


def test_failing_forward_leaves_model_clean(ranked):
    base, adapter, path = ranked
    inp = text_inputs(base, seed=8)
    before = logits(adapter.model, inp)
    layer = adapter.model.model.language_model.layers[1]
    with pytest.raises(RuntimeError, match="boom"):
        with Ablate(select="top", k=1, ranking=path).attach(adapter):
            with Hybrid(keep=2, window=2, ranking=path).attach(adapter):
                handle = layer.register_forward_hook(boom)
                try:
                    logits(adapter.model, inp)
                finally:
                    handle.remove()
    assert torch.equal(logits(adapter.model, inp), before)


def test_build_intervention_validates(tmp_path):
    def build(name, **args):
        return build_intervention(InterventionSpec(name=name, args=args))

    cases = [
        ({"select": "top"}, "needs ranking"),
        ({"select": "sideways"}, "select"),
        ({"mode": "erase", "ranking": "x"}, "mode"),
        ({"k": -1, "ranking": "x"}, "k must be"),
        ({"select": "heads"}, "needs heads"),
        ({"select": "random", "mode": "mean"}, "mean_reference"),
        ({"select": "random", "draws": 2, "draw": 2}, "draw"),
        ({"select": "random", "colour": 1}, "does not take"),
        ({"select": "random", "k": "many"}, "k must be a finite number"),
    ]
    for args, message in cases:
        with pytest.raises(InterventionError, match=message):
            build("ablate", **args)
    with pytest.raises(InterventionError, match="needs ranking"):
        build("hybrid", keep=0.1)
    with pytest.raises(InterventionError, match="window"):
        build("hybrid", keep=0, window=0)
    _, adapter = pair("llava")
    with pytest.raises(InterventionError, match="outside"):
        with build("ablate", select="heads", heads=["L9H0"]).attach(adapter):
            pass
    with pytest.raises(InterventionError, match="k=99 exceeds"):
        with build("ablate", select="random", k=99).attach(adapter):
            pass
    other = tmp_path / "other.json"
    write_ranking(other, pair("llava", num_heads=2, num_kv_heads=1)[0])
    with pytest.raises(InterventionError, match="ranking .* is for 2×2 heads"):
        with build("ablate", ranking=str(other)).attach(adapter):
            pass


def test_cli_short_form_parses(tmp_path):
    from harness.api.specs import parse_intervention

    spec = parse_intervention(f"ablate:select=top,k=0.05,mode=zero,ranking={tmp_path}/r.json")
    built = build_intervention(spec)
    assert isinstance(built, Ablate) and built.k == 0.05 and built.ranking.endswith("r.json")
    heads = build_intervention(parse_intervention("ablate:select=heads,heads=L0H1+L1H2,k=0"))
    assert heads.heads == "L0H1+L1H2"
    hybrid = build_intervention(parse_intervention("hybrid:keep=0,window=8,sinks=2"))
    assert (hybrid.window, hybrid.sinks, hybrid.window_in_decode) == (8, 2, False)


def test_hybrid_kv_group_keeps_whole_groups(ranked):
    base, adapter, path = ranked
    g = adapter.geometry
    spec = Hybrid(keep=1, window=2, granularity="kv_group", ranking=path, window_in_decode=True)
    with spec.attach(adapter) as info:
        plan = current_plan(adapter.model)
    groups = load_ranking(path).combined().reshape(g.num_layers, g.num_kv_heads, -1).mean(-1)
    layer, kv = divmod(int(groups.argmax()), g.num_kv_heads)
    kept = [f"L{layer}H{kv * g.group_size + j}" for j in range(g.group_size)]
    assert info["full_units"] == [f"L{layer}G{kv}"] and info["full_heads"] == kept
    windows = {f"L{la}H{h}": w for la, lp in plan.layers.items() for h, w in lp.window.items()}
    assert len(windows) == g.num_total_heads - g.group_size and not set(kept) & set(windows)
    assert all(w.size == 2 and w.in_decode for w in windows.values())
