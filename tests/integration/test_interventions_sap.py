"""SAP against a direct eager computation; priors against independent computations."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from PIL import Image  # noqa: E402

from harness.api.intervention import InterventionError  # noqa: E402
from harness.attention.dispatch import current_plan  # noqa: E402
from harness.models.offline.qwen import qwen_processor  # noqa: E402
from harness.testing.tiny_processors import tiny_llava_processor  # noqa: E402
from interventions.ablate import Ablate  # noqa: E402
from interventions.sap import SAP  # noqa: E402
from tests.integration._interventions_util import boom, logits, pair, text_inputs  # noqa: E402

REF: dict = {}


def images(n=2, seed=0):
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 255, (120, 150, 3), dtype=np.uint8)) for _ in range(n)]


def llava_batch(texts=("hi there friend", "what")):
    proc = tiny_llava_processor()
    proc.tokenizer.padding_side = "left"
    prompts = [f"USER: <image>\n{t} ASSISTANT:" for t in texts]
    return proc(text=prompts, images=images(len(texts)), return_tensors="pt", padding=True)


def qwen_batch(family="qwen2_vl", texts=("hi", "what is it")):
    proc = qwen_processor(family)
    proc.tokenizer.padding_side = "left"
    msgs = [
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": t}]}]
        for t in texts
    ]
    prompts = [
        proc.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in msgs
    ]
    return dict(proc(text=prompts, images=images(len(texts)), return_tensors="pt", padding=True))


def cell_score(c):
    dx, dy = c[:-1, 1:] - c[:-1, :-1], c[1:, :-1] - c[:-1, :-1]
    return np.sqrt(dx**2 + dy**2).mean() + c.var()


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def llava_complexity(inp, patch=14):
    grey = inp["pixel_values"].numpy().astype(np.float64).mean(1)
    out = []
    for img in grey:
        n = img.shape[0] // patch
        scores = [
            cell_score(img[i * patch : (i + 1) * patch, j * patch : (j + 1) * patch])
            for i in range(n)
            for j in range(n)
        ]
        out.append(softmax(np.array(scores)))
    return out


def qwen_complexity(inp, patch=14, merge=2, temporal=2):
    """Rebuild each image from flattened patches with loops, then score 28-px cells."""
    px = inp["pixel_values"].numpy().astype(np.float64)
    out, row = [], 0
    for _t, h, w in inp["image_grid_thw"].tolist():
        grey = np.zeros((h * patch, w * patch))
        for bh in range(h // merge):
            for bw in range(w // merge):
                for i in range(merge):
                    for j in range(merge):
                        p = px[row].reshape(3, temporal, patch, patch).mean((0, 1))
                        y, x = (bh * merge + i) * patch, (bw * merge + j) * patch
                        grey[y : y + patch, x : x + patch] = p
                        row += 1
        c = merge * patch
        scores = [
            cell_score(grey[i * c : (i + 1) * c, j * c : (j + 1) * c])
            for i in range(h // merge)
            for j in range(w // merge)
        ]
        out.append(softmax(np.array(scores)))
    return out


def eager_sap(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kw):
    """Eager attention with SAP applied from the definitions (REF holds the setup)."""
    b_, h_, s_, _ = query.shape
    group = h_ // key.shape[1]
    k, v = key.repeat_interleave(group, 1), value.repeat_interleave(group, 1)
    logits_ = (query @ k.transpose(-1, -2)) * scaling
    allowed = torch.ones(s_, s_).tril().bool()[None] & REF["mask"].bool()[:, None, :]
    lam = REF["lam"]
    if module.layer_idx in REF["layers"]:
        for b in range(b_):
            vis, prior = REF["visual"][b], torch.tensor(REF["prior"][b], dtype=torch.float32)
            if REF["semantics"] == "distribution":
                for r in range(max(vis) + 1, s_):
                    lv = logits_[b, :, r, vis]
                    new = (1 - lam) * lv + lam * prior.log()
                    lse_old, lse_new = lv.logsumexp(-1, True), new.logsumexp(-1, True)
                    logits_[b, :, r, vis] = new - lse_new + lse_old
            else:
                other = allowed[b, -1].clone()
                other[vis] = False
                means = logits_[b, :, -1, other].mean(-1).numpy()
                lo, hi = np.quantile(means, REF["band"])
                for h in range(h_):
                    if lo <= means[h] <= hi:
                        logits_[b, h, -1, vis] = (1 - lam) * logits_[b, h, -1, vis] + lam * prior
    probs = torch.softmax(logits_.masked_fill(~allowed[:, None], float("-inf")), -1)
    return (probs.nan_to_num(0.0) @ v).transpose(1, 2).contiguous(), None


def reference_model(base):
    from transformers import AttentionInterface

    AttentionInterface.register("sap_eager_ref", eager_sap)
    base.set_attn_implementation({"text_config": "sap_eager_ref", "vision_config": "sdpa"})
    return base


@pytest.mark.parametrize("semantics,lam", [("code", 1.0), ("code", 0.6), ("distribution", 0.5)])
def test_sap_complexity_llava_equals_eager_definition(semantics, lam):
    base, adapter = pair("llava")
    inp = llava_batch()
    ids = inp["input_ids"]
    visual = [(row == adapter.model.config.image_token_id).nonzero()[:, 0].tolist() for row in ids]
    REF.update(
        mask=inp["attention_mask"],
        lam=lam,
        layers=[1],
        semantics=semantics,
        band=(0.3, 0.9),
        visual=visual,
        prior=llava_complexity(inp),
    )
    spec = SAP(prior="complexity", semantics=semantics, lam=lam, layers="all_but_first")
    with spec.attach(adapter) as info:
        out = logits(adapter.model, inp)
    assert info["semantics"] == semantics and info["forwards"] == 1 and info["layers"] == [1]
    ref = logits(reference_model(base), inp)
    real = inp["attention_mask"].bool()
    assert (out[real] - ref[real]).abs().max() <= 1e-5
    assert (out[real] - logits(adapter.model, inp)[real]).abs().max() > 1e-3  # it bites


def probe_prior(model, layer=1):
    """Record the VisualPrior the dispatch sees in ``layer`` during each forward."""
    seen = []
    attn = model.model.language_model.layers[layer].self_attn
    handle = attn.register_forward_pre_hook(
        lambda *_: seen.append(current_plan(model).layers[layer].prior.get(0))
    )
    return seen, handle


def test_vision_prior_llava_equals_eager_vit_attention():
    base, adapter = pair("llava")
    inp = llava_batch()
    base.config.vision_config._attn_implementation = "eager"
    with torch.no_grad():
        att = base.model.vision_tower(inp["pixel_values"], output_attentions=True).attentions[-1]
    expected = [softmax(a.mean((0, 1))[1:].double().numpy()) for a in att]
    seen, handle = probe_prior(adapter.model)
    with SAP(prior="vision").attach(adapter):
        logits(adapter.model, inp)
    handle.remove()
    prior = seen[0]
    for b in range(2):
        n = int(prior.valid[b].sum())
        assert np.allclose(prior.prior[b, :n].numpy(), expected[b], atol=1e-6)
        assert torch.equal(prior.keys[b, :n], (inp["input_ids"][b] == 511).nonzero()[:, 0])


@pytest.mark.parametrize(("family", "cell"), [("paligemma", 14), ("gemma3", 28)])
def test_complexity_prior_fixed_grid_equals_its_cells(family, cell):
    """PaliGemma: one token per 14-px patch; Gemma 3 (tiny 112², 16 tokens): 28-px cells."""
    from PIL import Image

    from harness.api.payloads import Request
    from harness.testing.tiny import tiny_adapter

    adapter = tiny_adapter(family)
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 256, (60 + 20 * i, 90, 3), np.uint8)) for i in (0, 1)]
    requests = [Request("What is it?", images=(im,)) for im in images]
    inp = adapter.prepare(requests)
    seen, handle = probe_prior(adapter.model)
    with SAP(prior="complexity").attach(adapter) as info:
        logits(adapter.model, inp)
    handle.remove()
    assert info["forwards"] == 1
    expected = llava_complexity(inp, patch=cell)
    ids = inp["input_ids"]
    for b in range(2):
        n = int(seen[0].valid[b].sum())
        assert n == len(expected[b]) == int((ids[b] == adapter.model.config.image_token_id).sum())
        assert np.allclose(seen[0].prior[b, :n].numpy(), expected[b], atol=1e-6)


def test_complexity_prior_glm4v_equals_its_merged_cells():
    """GLM-4.1V flattens patches as Qwen2-VL does: the same 28-px merged-cell scores."""
    from PIL import Image

    from harness.api.payloads import Request
    from harness.testing.tiny import tiny_adapter

    adapter = tiny_adapter("glm4v")
    rng = np.random.default_rng(1)
    images = [Image.fromarray(rng.integers(0, 256, (60 + 30 * i, 90, 3), np.uint8)) for i in (0, 1)]
    inp = adapter.prepare([Request("What is it?", images=(im,)) for im in images])
    seen, handle = probe_prior(adapter.model)
    with SAP(prior="complexity").attach(adapter):
        logits(adapter.model, inp)
    handle.remove()
    expected = qwen_complexity(inp)
    for b in range(2):
        n = int(seen[0].valid[b].sum())
        assert n == len(expected[b])
        assert np.allclose(seen[0].prior[b, :n].numpy(), expected[b], atol=1e-6)


def test_complexity_prior_mistral3_scores_each_images_own_cells():
    """Mistral3: padded images in one batch; each image's own part cut into 28-px cells."""
    from PIL import Image

    from harness.api.payloads import Request
    from harness.testing.tiny import tiny_adapter

    adapter = tiny_adapter("mistral3")
    rng = np.random.default_rng(2)
    images = [Image.fromarray(rng.integers(0, 256, (60 + 50 * i, 90, 3), np.uint8)) for i in (0, 1)]
    inp = adapter.prepare([Request("What is it?", images=(im,)) for im in images])
    seen, handle = probe_prior(adapter.model)
    with SAP(prior="complexity").attach(adapter):
        logits(adapter.model, inp)
    handle.remove()
    grey = inp["pixel_values"].numpy().astype(np.float64).mean(1)
    sizes = inp["image_sizes"].tolist()
    assert any((h, w) != tuple(grey.shape[1:]) for h, w in sizes)  # one image is padded
    for b, (h, w) in enumerate(sizes):
        scores = [
            cell_score(grey[b, i * 28 : (i + 1) * 28, j * 28 : (j + 1) * 28])
            for i in range(h // 28)
            for j in range(w // 28)
        ]
        n = int(seen[0].valid[b].sum())
        assert n == len(scores)
        assert np.allclose(seen[0].prior[b, :n].numpy(), softmax(np.array(scores)), atol=1e-6)


def test_qwen_complexity_prior_same_in_forward_and_generate():
    _, adapter = pair("qwen2_vl")
    inp = qwen_batch()
    seen, handle = probe_prior(adapter.model)
    with SAP(prior="complexity").attach(adapter) as info:
        logits(adapter.model, inp)
        with torch.no_grad():
            adapter.model.generate(**inp, max_new_tokens=3, do_sample=False)
    handle.remove()
    assert info["forwards"] == 4 and len(seen) == 4
    expected = qwen_complexity(inp)
    for prior in seen:
        for b in range(2):
            n = int(prior.valid[b].sum())
            assert np.allclose(prior.prior[b, :n].numpy(), expected[b], atol=1e-6)
    assert seen[2] is seen[1] and seen[3] is seen[1]  # decode steps reuse the prefill prior


def test_generate_with_cache_equals_full_recompute_distribution():
    _, adapter = pair("llava")
    inp = llava_batch(texts=("describe",))
    with SAP(prior="complexity", semantics="distribution", lam=0.7).attach(adapter):
        with torch.no_grad():
            gen = adapter.model.generate(
                **inp,
                max_new_tokens=3,
                do_sample=False,
                output_scores=True,
                return_dict_in_generate=True,
            )
            ids = gen.sequences[:, :-1]
            full = adapter.model(
                input_ids=ids, attention_mask=torch.ones_like(ids), pixel_values=inp["pixel_values"]
            ).logits
    n = inp["input_ids"].shape[1]
    for step, score in enumerate(gen.scores):
        assert (score[0] - full[0, n - 1 + step]).abs().max() <= 1e-4


def test_noise_priors_are_seeded_per_sample_and_text_only_is_untouched():
    base, adapter = pair("internvl")
    seen, handle = probe_prior(adapter.model)
    inp = text_inputs(base, seed=3)
    with SAP(prior="uniform").attach(adapter):
        out = logits(adapter.model, inp)
    assert torch.equal(out, logits(base, inp)) and seen == [None]
    handle.remove()
    ids = inp["input_ids"].clone()
    ids[:, 5:9] = adapter.model.config.image_token_id  # visual positions without pixels
    mask = inp["attention_mask"]
    got = {}
    for prior in ("gaussian", "dirichlet"):
        for seed in (0, 1):
            seen, handle = probe_prior(adapter.model)
            with SAP(prior=prior, seed=seed).attach(adapter):
                logits(adapter.model, {"input_ids": ids, "attention_mask": mask})
                logits(adapter.model, {"input_ids": ids[1:], "attention_mask": mask[1:]})
            handle.remove()
            batched, alone = seen
            assert torch.equal(batched.prior[1], alone.prior[0])  # batching does not matter
            assert torch.equal(batched.keys[1], alone.keys[0])
            got[prior, seed] = alone.prior[0]
            assert np.isclose(float(got[prior, seed].sum()), 1.0, atol=1e-6)
    assert not torch.equal(got["gaussian", 0], got["gaussian", 1])
    assert not torch.equal(got["gaussian", 0], got["dirichlet", 0])


def test_unsupported_families_and_bad_args():
    _, adapter = pair("qwen2_vl")
    with pytest.raises(InterventionError, match="supports model types \\['llava'\\]"):
        with SAP(prior="vision").attach(adapter):
            pass
    _, intern = pair("internvl")
    with pytest.raises(InterventionError, match="complexity"):
        with SAP(prior="complexity").attach(intern):
            pass
    for args, message in [
        ({"lam": 2.0}, "lam"),
        ({"lo": 0.9, "hi": 0.3}, "lo"),
        ({"prior": "magic"}, "prior"),
        ({"semantics": "x"}, "semantics"),
    ]:
        with pytest.raises(InterventionError, match=message):
            SAP(**args)
    with pytest.raises(InterventionError, match="outside"):
        with SAP(prior="uniform", layers="0-5").attach(adapter):
            pass


def test_sap_composes_conflicts_and_cleans_up():
    base, adapter = pair("llava")
    inp = llava_batch()
    before = logits(adapter.model, inp)
    sap = SAP(prior="uniform", semantics="distribution", lam=0.5)
    with sap.attach(adapter):
        with pytest.raises(InterventionError, match="conflicts"):
            with Ablate(select="heads", heads=["L1H2"]).attach(adapter):
                pass
    outside = Ablate(select="heads", heads=["L0H2"], mode="uniform")
    with sap.attach(adapter), outside.attach(adapter):
        one = logits(adapter.model, inp)
    with outside.attach(adapter), sap.attach(adapter):
        two = logits(adapter.model, inp)
    assert torch.equal(one, two)
    layer = adapter.model.model.language_model.layers[1]
    with pytest.raises(RuntimeError, match="boom"):
        with sap.attach(adapter):
            handle = layer.register_forward_hook(boom)
            try:
                logits(adapter.model, inp)
            finally:
                handle.remove()
    assert current_plan(adapter.model) is None
    assert torch.equal(logits(adapter.model, inp), before)
