"""Streamed-KV decoding (hybrid decode=stream) equals its reference on every family.

The reference decodes on a dense cache with the equivalent per-head mask (the streamed
groups' heads windowed to sink + recent in decode: ``Stream.reference``); the streamed path
decodes on headscope's streamed cache (dynamic and static). Every registered family with a
tiny recipe, batch 1 and a left-padded batch: the same tokens and logits within 1e-5
(float32). Sink and recent are small, so streaming drops prompt tokens (the dense decode's
tokens or logits differ: the test has teeth).
"""

import functools
import re

import pytest

torch = pytest.importorskip("torch")

from PIL import Image  # noqa: E402

from harness.api.heads import Head  # noqa: E402
from harness.api.payloads import Request  # noqa: E402
from harness.attention.dispatch import Window, plan_scope, use_dispatch  # noqa: E402
from harness.attention.stream import StreamCacheMissing  # noqa: E402
from harness.attention.stream_cache import (  # noqa: E402
    kv_bytes,
    stream_cache,
    stream_plan,
    streamable_layers,
)
from harness.models.tiny import tiny_adapter  # noqa: E402
from harness.models.unit import unit_names  # noqa: E402

FAMILIES = unit_names(tiny=True)
TEXTS = ("Which colour is the square in the picture, and where is it?", "Colour?")
SINK, RECENT, NEW = 2, 5, 6


@functools.cache
def adapter(family: str):
    ad = tiny_adapter(family)
    use_dispatch(ad.model)
    return ad


def inputs(ad, batch: int):
    pixels = torch.Generator().manual_seed(3)
    img = torch.randint(0, 256, (48, 64, 3), generator=pixels, dtype=torch.uint8).numpy()
    reqs = [Request(t, images=(Image.fromarray(img),)) for t in TEXTS[:batch]]
    return ad.prepare(reqs)


def full_heads(geometry):
    """One head in the first KV group of layer 0, one in the last group of the last layer."""
    last = geometry.head_layers[-1]
    return {Head(geometry.head_layers[0], 0), Head(last, geometry.num_heads - 1)}


def generate(model, inp, plan, cache=None):
    kw = dict(max_new_tokens=NEW, do_sample=False, output_logits=True)
    with torch.no_grad(), plan_scope(model, plan):
        if cache == "static":
            n = inp["input_ids"].shape[1] + NEW
            cache = stream_cache(model, static=True, max_cache_len=n)
        elif cache == "dynamic":
            cache = stream_cache(model)
        # else: None (the model's own cache) or a cache object
        out = model.generate(**inp, **kw, return_dict_in_generate=True, past_key_values=cache)
    return out.sequences, torch.stack(out.logits), out.past_key_values


def plans(geometry, **kw):
    full = full_heads(geometry)
    win = Window(3, 1)
    return {
        mode: stream_plan(geometry, full, win, sink=SINK, recent=RECENT, reference=ref, **kw)[0]
        for mode, ref in (("stream", False), ("reference", True))
    }


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("family", FAMILIES)
def test_streamed_decoding_equals_the_dense_reference(family, batch):
    ad = adapter(family)
    model, geometry = ad.model, ad.geometry
    inp = inputs(ad, batch)
    assert inp["input_ids"].shape[1] > SINK + RECENT + 4  # streaming drops prompt tokens
    if batch > 1:
        assert not bool(inp["attention_mask"].all())  # left padded
    layers = streamable_layers(model)  # the model's own sliding layers keep their cache
    assert layers
    p = plans(geometry, layers=layers)
    ref_ids, ref_logits, ref_cache = generate(model, inp, p["reference"])
    dense_plan = stream_plan(
        geometry, full_heads(geometry), Window(3, 1), sink=0, recent=1, layers=layers
    )[0]
    dense_plan = type(dense_plan)(
        {i: type(lp)(window=lp.window) for i, lp in dense_plan.layers.items()}
    )
    dense_ids, dense_logits, _ = generate(model, inp, dense_plan)
    teeth = (dense_logits - ref_logits).abs().max().item()
    assert teeth > 1e-3, f"streaming changed nothing ({teeth})"
    for kind in ("dynamic", "static"):
        ids, out_logits, cache = generate(model, inp, p["stream"], kind)
        assert torch.equal(ids, ref_ids), kind
        diff = (out_logits - ref_logits).abs().max().item()
        assert diff <= 1e-5, (kind, diff)
        if kind == "dynamic":
            assert kv_bytes(cache) < kv_bytes(ref_cache)


def test_decode_stream_on_a_dense_cache_is_refused_with_a_hint():
    ad = adapter("llava")
    p = plans(ad.geometry)
    with pytest.raises(StreamCacheMissing, match="stream_cache"):
        generate(ad.model, inputs(ad, 1), p["stream"])


def _semantics_builds():
    from tests.integration import _tiny_semantics as tiny

    mixed = ["sliding_attention", "full_attention"] * 2
    return {
        "gemma3": (lambda: tiny.gemma3(layer_types=mixed), 4, {"text_before": 13}),
        "paligemma2": (lambda: tiny.paligemma("gemma2"), 16, {}),
        "aya_vision": (tiny.aya_vision, 4, {"text_before": 13}),
    }


@pytest.mark.parametrize("name", ["gemma3", "paligemma2", "aya_vision"])
def test_streamed_decoding_with_model_windows_softcap_and_bidirectional_prefill(name):
    """Gemma3 (image block), PaliGemma 2 (prefix, softcap 5), AyaVision: only full-attention
    layers stream; the model's own sliding layers keep transformers' cache."""
    from harness.api.anatomy import layer_kinds
    from tests.integration import _tiny_semantics as tiny

    build, n_image, kw = _semantics_builds()[name]
    model = use_dispatch(build())
    geometry = ad_geometry(model)
    full_layers = {i for i, k in enumerate(layer_kinds(model)) if k.kind == "full_attention"}
    assert 0 < len(full_layers) < len(layer_kinds(model))
    p = plans(geometry, layers=full_layers)
    assert set(p["stream"].layers) >= full_layers
    inp = tiny.image_inputs(model, n_image, pads=(0, 3), seed=8, **kw)
    ref_ids, ref_logits, _ = generate(model, inp, p["reference"])
    for kind in ("dynamic", "static") if hf_static_generates(model, inp) else ("dynamic",):
        ids, out_logits, _ = generate(model, inp, p["stream"], kind)
        assert torch.equal(ids, ref_ids), kind
        assert (out_logits - ref_logits).abs().max().item() <= 1e-5, kind


def ad_geometry(model):
    from harness.api.anatomy import geometry_of

    return geometry_of(model)


def hf_static_generates(model, inp) -> bool:
    """Whether transformers' own StaticCache generates on ``model`` (PaliGemma 2: it does not,
    'dict' object has no attribute 'ndim' in transformers 5.23; Gemma3 and AyaVision do)."""
    from transformers import StaticCache

    cache = StaticCache(config=model.config, max_cache_len=inp["input_ids"].shape[1] + 2)
    try:
        with torch.no_grad():
            model.generate(**inp, max_new_tokens=2, do_sample=False, past_key_values=cache)
    except AttributeError:
        if model.config.model_type == "paligemma":  # the known failure only
            return False
        raise
    return True


def test_hybrid_decode_stream_through_the_adapter_equals_stream_reference(tmp_path):
    """hybrid:...,decode=stream generates through adapter.generate (headscope's streamed cache)
    the texts of decode=stream_reference; the info records the KV groups kept and the extra
    query heads; decode=dense generates otherwise (the streaming drops tokens)."""
    from interventions.hybrid import Hybrid
    from tests.integration._interventions_util import write_ranking

    ad = tiny_adapter("llava")  # the toy's family (tiny Gemma3 repeats one token either way)
    use_dispatch(ad.model)
    ranking = tmp_path / "ranking.json"
    write_ranking(ranking, ad.model)
    reqs = [Request(t, images=(Image.new("RGB", (64, 48), (200, 30, 30)),), max_new_tokens=8)
            for t in TEXTS]  # fmt: skip
    out, infos = {}, {}
    for decode in ("dense", "stream", "stream_reference"):
        kw = {} if decode == "dense" else dict(decode=decode, sink=SINK, recent=RECENT)
        hybrid = Hybrid(keep=2, window=3, sinks=1, ranking=str(ranking), **kw)
        with hybrid.attach(ad) as info:
            out[decode] = [g.text for g in ad.generate(reqs)]
            ids = ad.last_output_ids
        infos[decode] = info
        out[decode].append(ids)
    assert out["stream"] == out["stream_reference"]
    assert out["stream"] != out["dense"]
    info = infos["stream"]
    g = ad.geometry
    assert info["kv_groups_total"] == len(g.head_layers) * g.num_kv_heads
    full = {tuple(map(int, re.fullmatch(r"L(\d+)H(\d+)", h).groups())) for h in info["full_heads"]}
    groups = {(la, h // g.group_size) for la, h in full}
    came = {f"L{la}H{gr * g.group_size + j}" for la, gr in groups for j in range(g.group_size)}
    assert sorted(info["extra_heads"]) == sorted(came - set(info["full_heads"]))
    assert info["kv_groups_kept"] == len(groups)
    assert 0 < info["kv_kept_fraction"] < 1
    assert "decode" not in infos["dense"]  # the default records what it recorded before


def test_hybrid_decode_options_are_checked():
    from harness.api.intervention import InterventionError
    from interventions.hybrid import Hybrid

    with pytest.raises(InterventionError, match="decode='stream' only"):
        Hybrid(keep=0, recent=8)
    with pytest.raises(InterventionError, match="adaptive"):
        Hybrid(keep=0.5, select="adaptive", decode="stream")
    with pytest.raises(InterventionError, match="window_in_decode"):
        Hybrid(keep=0, window_in_decode=True, decode="stream")
    with pytest.raises(InterventionError, match="recent must be"):
        Hybrid(keep=0, decode="stream", recent=0)
    with pytest.raises(InterventionError, match="decode"):
        Hybrid(keep=0, decode="streaming")


@pytest.mark.parametrize("family", ["llava", "aya_vision"])
@pytest.mark.parametrize("batch", [1, 2])
def test_prefill_windows_under_a_static_cache_equal_a_dynamic_cache(family, batch):
    """A static cache passes its whole buffer (keys after the prompt unfilled): windows read
    query positions from the filled part (before: offset by the unfilled slots, logits ~1 off).
    Batch 1 (nothing padded): transformers passes no mask at all in the prefill (sdpa's
    upper-left ``is_causal``); AyaVision's sliding layer (window 4096) does not stream, so
    its plain static layer met that case under decode=stream too (logits ~2 off)."""
    from transformers import StaticCache

    ad = adapter(family)
    model, geometry = ad.model, ad.geometry
    inp = inputs(ad, batch)
    win = Window(3, 1)
    plan = stream_plan(geometry, full_heads(geometry), win, sink=0, recent=1, layers=set())[0]
    dyn_ids, dyn_logits, _ = generate(model, inp, plan)
    cache = StaticCache(config=model.config, max_cache_len=inp["input_ids"].shape[1] + NEW + 5)
    ids, out_logits, _ = generate(model, inp, plan, cache)
    assert torch.equal(ids, dyn_ids)
    assert (out_logits - dyn_logits).abs().max().item() <= 1e-5


def test_beam_search_reorders_the_streamed_buffers():
    """num_beams > 1: the streamed cache's sinks and ring follow the beams (reorder_cache)."""
    ad = adapter("llava")
    model, inp, p = ad.model, inputs(ad, 2), plans(ad.geometry)
    kw = dict(max_new_tokens=NEW, do_sample=False, num_beams=3, output_logits=True)
    out = {}
    with torch.no_grad():
        for mode in ("reference", "stream"):
            with plan_scope(model, p[mode]):
                cache = stream_cache(model) if mode == "stream" else None
                res = model.generate(**inp, **kw, return_dict_in_generate=True,
                                     past_key_values=cache)  # fmt: skip
            out[mode] = (res.sequences, torch.stack(res.logits))
    assert torch.equal(out["stream"][0], out["reference"][0])
    assert (out["stream"][1] - out["reference"][1]).abs().max().item() <= 1e-5
