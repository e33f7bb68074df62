"""noise_qkv and noise_delta: exact restore, seeding, matched statistics, batch invariance."""

import pytest

torch = pytest.importorskip("torch")

from harness.api.intervention import InterventionError, build_intervention  # noqa: E402
from harness.api.specs import parse_intervention  # noqa: E402
from harness.probes.states import capture_states  # noqa: E402
from interventions.noise_delta import NoiseDelta  # noqa: E402
from interventions.noise_qkv import NoiseQKV  # noqa: E402
from tests.integration._interventions_util import (  # noqa: E402
    FAMILIES,
    boom,
    logits,
    maxdiff,
    pair,
    text_inputs,
)


def snapshot(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("family", FAMILIES)
def test_noise_qkv_replaces_and_restores_bit_exactly(family):
    base, adapter = pair(family)
    inp = text_inputs(base, seed=1)
    before, ref = snapshot(adapter.model), logits(adapter.model, inp)
    attn = adapter.model.model.language_model.layers[1].self_attn
    original = attn.k_proj.weight.detach().clone()
    with NoiseQKV(layers="1", seed=3).attach(adapter) as info:
        out = logits(adapter.model, inp)
        noisy = attn.k_proj.weight.detach().clone()
    assert info["tensors"] == ["L1.k_proj", "L1.q_proj", "L1.v_proj"]
    mean, std = info["stats"]["L1.k_proj"]
    assert abs(mean - float(original.mean())) < 1e-6 and abs(std - float(original.std())) < 1e-6
    assert abs(float(noisy.mean()) - mean) < 0.2 * std
    assert abs(float(noisy.std()) - std) < 0.2 * std
    assert not torch.equal(noisy, original) and maxdiff(out, ref, inp) > 1e-3
    after = snapshot(adapter.model)
    assert all(torch.equal(before[k], after[k]) for k in before)
    with NoiseQKV(layers="1", seed=3).attach(adapter):
        assert torch.equal(attn.k_proj.weight, noisy)  # same seed, same noise
    with NoiseQKV(layers="1", seed=4).attach(adapter):
        assert not torch.equal(attn.k_proj.weight, noisy)
    with pytest.raises(RuntimeError, match="boom"):
        with NoiseQKV(layers="all").attach(adapter):
            boom()
    after = snapshot(adapter.model)
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert torch.equal(logits(adapter.model, inp), ref)


@pytest.mark.parametrize("family", FAMILIES)
def test_noise_delta_matches_statistics_and_only_touches_its_layer(family):
    base, adapter = pair(family)
    inp = text_inputs(base, seed=2)
    real = inp["attention_mask"].bool()
    with capture_states(adapter.model) as clean:
        ref = logits(adapter.model, inp)
    with (
        NoiseDelta(layers=[1], seed=0).attach(adapter) as info,
        capture_states(adapter.model) as noisy,
    ):
        out = logits(adapter.model, inp)
    assert info["layers"] == [1] and maxdiff(out, ref, inp) > 1e-3
    assert torch.equal(noisy.delta_attn(0), clean.delta_attn(0))  # layer 0 untouched
    assert torch.equal(noisy.inputs[1], clean.inputs[1])
    for b in range(2):
        was, now = clean.delta_attn(1)[b][real[b]], noisy.delta_attn(1)[b][real[b]]
        std = float(was.std())
        assert abs(float(now.mean()) - float(was.mean())) < 0.2 * std
        assert abs(float(now.std()) - std) < 0.2 * std
        assert not torch.allclose(now, was)
    assert torch.equal(logits(adapter.model, inp), ref)  # hooks removed


def test_noise_delta_is_seeded_and_batch_invariant():
    base, adapter = pair("qwen2_vl")
    inp = text_inputs(base, seed=3)
    pad = 3  # row 0 has 3 padding tokens
    with NoiseDelta(seed=5).attach(adapter):
        batched = logits(adapter.model, inp)
        again = logits(adapter.model, inp)
        alone = logits(adapter.model, {"input_ids": inp["input_ids"][:1, pad:]})
    assert torch.equal(batched, again)
    assert (batched[0, pad:] - alone[0]).abs().max() <= 1e-5
    with NoiseDelta(seed=6).attach(adapter):
        other = logits(adapter.model, inp)
    assert maxdiff(batched, other, inp) > 1e-3


def test_noise_delta_in_generate_and_failure_cleanup():
    base, adapter = pair("llava")
    inp = text_inputs(base, seed=4, pads=[0])
    with NoiseDelta(layers="all").attach(adapter):
        with torch.no_grad():
            adapter.model.generate(**inp, max_new_tokens=3, do_sample=False)
    ref = logits(base, inp)
    layer = adapter.model.model.language_model.layers[1]
    with pytest.raises(RuntimeError, match="boom"):
        with NoiseDelta().attach(adapter):
            handle = layer.register_forward_hook(boom)
            try:
                logits(adapter.model, inp)
            finally:
                handle.remove()
    assert torch.equal(logits(adapter.model, inp), ref)


def test_noise_args_validated_and_short_form():
    for text, message in [
        ("noise_qkv:layers=7-2", "layer range"),
        ("noise_delta:seed=-1", "seed"),
        ("noise_delta:layers=banana", "layers"),
    ]:
        _, adapter = pair("llava")
        with pytest.raises(InterventionError, match=message):
            with build_intervention(parse_intervention(text)).attach(adapter):
                pass
    built = build_intervention(parse_intervention("noise_qkv:layers=all_but_first,seed=2"))
    assert (built.layers, built.seed) == ("all_but_first", 2)
