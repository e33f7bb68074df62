"""Generation, ablation and routing through the dispatch on masks that are not plain causal.

References: each model's own eager attention with the plan's masks (tests/integration/
_tiny_semantics.py::use_eager_reference). Gemma3 (bidirectional image block, sliding layers)
and PaliGemma 2 (prefix-LM, sliding layers, logit softcap) generate with windows that also
apply in decode, so the decode rows' masks, the cache offset and softcapping are checked too.
"""

import pytest

torch = pytest.importorskip("torch")

from harness.api.heads import Head  # noqa: E402
from harness.attention.dispatch import (  # noqa: E402
    Ablation,
    LayerPlan,
    Plan,
    Window,
    plan_scope,
    set_window_kernel,
    use_dispatch,
)
from harness.attention.route import Route  # noqa: E402
from tests.integration import _tiny_semantics as tiny  # noqa: E402
from tests.integration._interventions_util import logits, maxdiff  # noqa: E402

BUILDS = {
    "gemma3": (tiny.gemma3, 4, {"text_before": 13}),
    "paligemma2": (lambda: tiny.paligemma("gemma2"), 16, {}),
}


@pytest.fixture(autouse=True)
def _kernel():
    yield
    set_window_kernel("auto")


def generate(model, inp, plan=None):
    kw = dict(max_new_tokens=5, do_sample=False)
    with torch.no_grad():
        if plan is None:
            return model.generate(**inp, **kw)
        with plan_scope(model, plan):
            return model.generate(**inp, **kw)


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_generation_with_decode_windows_equals_the_eager_reference(name):
    build, n_image, kw = BUILDS[name]
    model = build()
    inp = tiny.image_inputs(model, n_image, pads=(0, 3), seed=8, **kw)
    layers = model.config.get_text_config().num_hidden_layers
    windows = {Head(la, h): Window(4, 1, in_decode=True) for la in range(layers) for h in (1, 2)}
    ref_model = build()
    tiny.use_eager_reference(ref_model, windows)
    ref = generate(ref_model, inp)
    tiny.use_eager_reference(ref_model)
    assert not torch.equal(ref, generate(ref_model, inp))  # the windows change the tokens
    use_dispatch(model)
    assert torch.equal(generate(model, inp, Plan.build(window=windows)), ref)


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_uniform_ablation_spreads_over_what_the_mask_allows(name):
    """A uniform head averages every key the mask allows, keys ahead of the query included."""
    build, n_image, kw = BUILDS[name]
    model = build()
    inp = tiny.image_inputs(model, n_image, pads=(0, 3), seed=9, **kw)
    heads = frozenset({Head(0, 1), Head(1, 0), Head(1, 3)})
    ref_model = build()
    tiny.use_eager_reference(ref_model, uniform=heads)
    ref = logits(ref_model, inp)
    use_dispatch(model)
    out = logits(model, inp, Plan.build(ablate=dict.fromkeys(heads, Ablation("uniform"))))
    assert maxdiff(out, logits(model, inp), inp) > 1e-3
    assert maxdiff(out, ref, inp) <= 5e-5


@pytest.mark.parametrize("estimate", ["far", "visual"])
def test_routing_fast_path_equals_its_reference_on_an_image_block(estimate):
    model, n_image, kw = tiny.gemma3(), *BUILDS["gemma3"][1:]
    inp = tiny.image_inputs(model, n_image, pads=(0, 3), seed=10, **kw)
    visual = inp["input_ids"] == tiny.IMAGE
    route = Route(budget=2, size=3, sinks=1, rows=4, estimate=estimate, visual=lambda: visual)
    plan = Plan({la: LayerPlan(route=route) for la in range(6)})
    use_dispatch(model)
    out = {}
    for kernel in ("reference", "chunked"):
        set_window_kernel(kernel)
        out[kernel] = logits(model, inp, plan)
    assert maxdiff(out["reference"], logits(model, inp), inp) > 1e-3
    assert maxdiff(out["chunked"], out["reference"], inp) <= 2e-5
