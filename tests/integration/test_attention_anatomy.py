"""Which decoder layers have heads, the model's own windows, and the models refused by name.

Tiny Qwen3.5 (Gated DeltaNet linear-attention layers 0–2, full attention in layer 3), Gemma3
and AyaVision (sliding layers), Mllama (cross-attention) and Florence-2 (encoder-decoder), built
in tests/integration/_tiny_semantics.py.
"""

import pytest

torch = pytest.importorskip("torch")

from harness.api.anatomy import (  # noqa: E402
    UnsupportedModelError,
    geometry_of,
    layer_kinds,
)
from harness.api.errors import UsageError  # noqa: E402
from harness.api.heads import Geometry, Head  # noqa: E402
from harness.attention.dispatch import (  # noqa: E402
    AttentionRecorder,
    Plan,
    RecordSpec,
    Window,
    plan_scope,
    use_dispatch,
)
from interventions._selection import select_units  # noqa: E402
from tests.integration import _tiny_semantics as tiny  # noqa: E402
from tests.integration._interventions_util import TinyAdapter, logits, maxdiff  # noqa: E402


def test_linear_attention_layers_have_no_heads():
    model = tiny.qwen3_5()
    assert [str(k) for k in layer_kinds(model)] == ["linear_attention"] * 3 + ["full_attention"]
    g = geometry_of(model)
    assert g.attention_layers == (3,) and g.num_total_heads == 4
    assert g.all_heads() == [Head(3, h) for h in range(4)]
    assert g.count(0.5) == 2
    with pytest.raises(UsageError, match="layer 1 is not an attention layer"):
        g.check(Head(1, 0))
    assert geometry_of(tiny.gemma3()).attention_layers is None  # every layer has heads


def test_plans_on_a_hybrid_decoder_reach_its_attention_layers_only():
    model = use_dispatch(tiny.qwen3_5())
    eager = tiny.qwen3_5()
    eager.set_attn_implementation("eager")
    ids = torch.randint(3, tiny.TEXT_TOP, (1, 12), generator=torch.Generator().manual_seed(0))
    inp = {"input_ids": ids}
    qmask = torch.zeros(1, 12, dtype=torch.bool)
    qmask[0, -3:] = True
    kmask = torch.zeros(1, 12, dtype=torch.bool)
    kmask[0, 2:6] = True
    rec = AttentionRecorder()
    plan = Plan.build(record=RecordSpec(rec, qmask, kmask, keep_rows=True), record_layers=[3])
    logits(model, inp, plan)
    with torch.no_grad():
        att = eager(**inp, output_attentions=True).attentions  # attention layers only
    assert len(att) == 1
    assert (rec.rows[3][0] - att[0][0, :, -3:]).abs().max() <= 1e-5
    windowed = logits(model, inp, Plan.build(window={Head(3, h): Window(2) for h in range(4)}))
    assert maxdiff(windowed, logits(model, inp), {"attention_mask": torch.ones(1, 12)}) > 1e-3
    on_linear = Plan.build(record=RecordSpec(rec, qmask, kmask), record_layers=[1])
    for bad in (Plan.build(window={Head(0, 1): Window(2)}), on_linear):
        with pytest.raises(ValueError, match="not an attention layer"), plan_scope(model, bad):
            pass


def test_selection_and_hybrid_count_attention_layers_only():
    adapter = TinyAdapter(tiny.qwen3_5())
    g = adapter.geometry
    picked = select_units(g, "random", 3, seed=1)
    assert len(picked) == 3 and {h.layer for h in picked} == {3}
    scores = torch.rand(4, 4).numpy()
    scores[:3] = 5.0  # layers without heads never win, whatever a matrix holds there
    assert {h.layer for h in select_units(g, "top", 2, scores=scores)} == {3}
    assert {h.layer for h in select_units(g, "bottom", 2, scores=-scores)} == {3}
    from interventions.hybrid import Hybrid

    with Hybrid(keep=0, window=3).attach(adapter) as info:
        assert info["n_windowed"] == 4 and info["model_windows"] == {}


def test_random_draws_are_unchanged_where_every_layer_has_heads():
    g = Geometry(3, 4, 2, 8, 32)
    import numpy as np

    rng = np.random.default_rng([7, 2])
    idx = sorted(int(i) for i in rng.choice(12, size=5, replace=False))
    want = [Head(i // 4, i % 4) for i in idx]
    assert select_units(g, "random", 5, seed=7, draw=2) == want


def test_the_models_own_sliding_layers_are_shown_and_compose_with_hybrid():
    model = tiny.gemma3()
    kinds = [str(k) for k in layer_kinds(model)]
    assert kinds == ["sliding_attention(6)"] * 5 + ["full_attention"]
    assert [str(k) for k in layer_kinds(tiny.aya_vision())][-2:] == [
        "sliding_attention(6)",
        "full_attention",
    ]
    adapter = TinyAdapter(model)
    inp = tiny.image_inputs(model, 4, pads=(0, 3), seed=1, text_before=13)
    dense = logits(model, inp)
    wide = Plan.build(window={Head(la, h): Window(9) for la in range(5) for h in range(4)})
    assert maxdiff(logits(model, inp, wide), dense, inp) <= 2e-5  # the model's 6 is narrower
    from interventions.hybrid import Hybrid

    with Hybrid(keep=0, window=3).attach(adapter) as info:
        assert info["model_windows"] == {str(i): 6 for i in range(5)}


@pytest.mark.parametrize(
    "build, words",
    [
        (tiny.mllama, "MllamaForConditionalGeneration reads the image through cross-attention"),
        (tiny.florence2, "Florence2ForConditionalGeneration is an encoder-decoder model"),
    ],
)
def test_cross_attention_and_encoder_decoder_models_are_refused_by_name(build, words):
    with pytest.raises(UnsupportedModelError, match=words) as err:
        use_dispatch(build())
    assert isinstance(err.value, UsageError) and err.value.hint


def test_run_results_record_the_layer_kinds_of_mixed_decoders():
    from harness.run.provenance import collect_provenance
    from harness.testing.tiny import build_tiny_model

    gemma = collect_provenance(TinyAdapter(tiny.gemma3()))["model"]
    assert gemma["layer_kinds"] == ["sliding_attention(6)"] * 5 + ["full_attention"]
    qwen = collect_provenance(TinyAdapter(tiny.qwen3_5()))["model"]
    assert qwen["layer_kinds"][0] == "linear_attention"
    assert "layer_kinds" not in collect_provenance(TinyAdapter(build_tiny_model("llava")))["model"]


def test_rank_refuses_a_decoder_with_layers_without_heads(tmp_path, monkeypatch, capsys):
    """A ranking holds RAM for every layer × head: refused before probing, naming the layers."""
    from harness.api import model as base
    from harness.cli.main import main

    monkeypatch.setattr(base, "load_adapter", lambda spec: TinyAdapter(tiny.qwen3_5()))
    argv = ["rank", "--tasks", "refcocog_mini", "--limit", "1", "--output", str(tmp_path / "r")]
    assert main([*argv, "--no-progress", "--no-figures"]) == 2
    assert "decoder layers [0, 1, 2] have no attention heads" in capsys.readouterr().err


def test_layer_interventions_and_means_use_the_attention_layers_of_a_hybrid():
    """Noise-Δ, Noise-QKV and head means hooked self_attn of every layer (none in linear ones)."""
    from harness.api.intervention import InterventionError
    from harness.probes.means import compute_head_means
    from interventions.noise_delta import NoiseDelta
    from interventions.noise_qkv import NoiseQKV

    adapter = TinyAdapter(tiny.qwen3_5())
    inp = {"input_ids": torch.randint(3, tiny.TEXT_TOP, (1, 10))}
    clean = logits(adapter.model, inp)
    for spec in (NoiseDelta(), NoiseQKV()):
        with spec.attach(adapter) as info:
            assert info["layers"] == [3]
            assert (
                maxdiff(logits(adapter.model, inp), clean, {"attention_mask": torch.ones(1, 10)})
                > 1e-4
            )
        with pytest.raises(InterventionError, match=r"layers \[0\] are not attention layers"):
            with type(spec)(layers=[0, 3]).attach(adapter):
                pass
    means = compute_head_means(adapter.model, [inp])
    assert means.shape == (4, 4, 16)
    assert means[:3].abs().sum() == 0 and means[3].abs().sum() > 0


def test_masses_of_a_hybrid_leave_layers_without_heads_at_zero():
    """diagnose's key-region ratio reads every layer's masses: linear layers add none."""
    from harness.probes.record import ProbeError, masses_of, recording

    model = use_dispatch(tiny.qwen3_5())
    qmask = torch.zeros(1, 10, dtype=torch.bool)
    qmask[0, -2:] = True
    kmask = ~qmask
    with recording(model, qmask, {"k": kmask}) as recs:
        logits(model, {"input_ids": torch.randint(3, tiny.TEXT_TOP, (1, 10))})
    with pytest.raises(ProbeError, match=r"layers \[0, 1, 2\] recorded no attention mass"):
        masses_of(recs, 4)
    mass = masses_of(recs, 4, geometry_of(model).head_layers)["k"]
    assert (mass[:3] == 0).all() and (mass[3] > 0).all()


def test_exactly_the_cross_attention_and_encoder_decoder_classes_are_refused():
    """Over every image-text-to-text class of the pinned transformers (default configs)."""
    from types import SimpleNamespace

    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    from harness.api.anatomy import check_decoder_only

    refused = []
    for model_type in sorted(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES):
        try:
            check_decoder_only(SimpleNamespace(config=AutoConfig.for_model(model_type)))
        except UnsupportedModelError:
            refused.append(model_type)
    encoder_decoder = ["florence2", "pix2struct", "pp_formulanet", "t5gemma2", "udop"]
    assert refused == sorted([*encoder_decoder, "mllama", "vision-encoder-decoder"])


def test_the_window_record_bounds_a_model_with_its_own_sliding_layers():
    """The main job's FLOP bounds count Gemma3's local layers as already windowed."""
    from harness.run.stages import window_record

    class Cfg:
        hybrid_window, hybrid_window_fraction, hybrid_keep = None, 0.25, (0.25,)

    model = tiny.gemma3()
    lengths = {"t": {"n": 1, "min": 4000, "median": 4000, "max": 4000}}
    uniform = window_record(Cfg(), 3, lengths, geometry_of(model))
    layered = window_record(Cfg(), 3, lengths, geometry_of(model), model)
    assert layered["model_windows"] == {str(i): 6 for i in range(5)}
    assert "model_windows" not in uniform
    bound = layered["per_task"]["t"]["keep"]["0.25"]["bound"]
    assert 1.0 < bound < uniform["per_task"]["t"]["keep"]["0.25"]["bound"]
