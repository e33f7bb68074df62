"""Every tensor interventions and the dispatch create lands on the model's device and dtype.

No GPU here, so the device half runs on PyTorch's ``meta`` device: an op that mixes a meta
tensor with a (non-scalar) CPU tensor raises exactly like CUDA + CPU does, so a tensor built
on the CPU and combined with model tensors fails these tests the way it fails on a GPU. Meta
tensors hold no data, so only code paths without data-dependent Python branches run there
(whole forwards without a padding mask, the dispatch's effects, the noise draw); the rest is
covered on CUDA by ``tests/gpu``. The dtype half runs every intervention on bfloat16 and
float64 models.
"""

import os

import pytest

torch = pytest.importorskip("torch")

from harness.api.heads import Head  # noqa: E402
from harness.api.intervention import build_intervention  # noqa: E402
from harness.api.specs import parse_intervention  # noqa: E402
from harness.attention.dispatch import (  # noqa: E402
    Ablation,
    OutputHook,
    Plan,
    VisualPrior,
    Window,
    plan_scope,
    set_window_kernel,
)
from harness.probes.means import compute_head_means, save_head_means  # noqa: E402
from harness.testing.tiny import build_tiny_model  # noqa: E402
from interventions.noise_qkv import matched_noise  # noqa: E402
from tests.integration._interventions_util import (  # noqa: E402
    TinyAdapter,
    text_inputs,
    write_ranking,
)

META = torch.device("meta")


def test_meta_mixing_raises_like_cuda():
    """The premise of the meta tests: CPU tensor × meta scalar fails (as CPU × CUDA does)."""
    with pytest.raises(RuntimeError):
        torch.randn(3) * torch.ones((), device=META)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_noise_qkv_noise_lands_on_the_weight_device_and_dtype(dtype):
    weight = torch.empty(8, 4, device=META, dtype=dtype)
    noise, mean, std = matched_noise(weight, seed=3)
    assert noise.device == META and noise.dtype == dtype and noise.shape == weight.shape
    assert mean.device == META and std.device == META
    cpu = torch.randn(8, 4, dtype=dtype)
    a, _, _ = matched_noise(cpu, seed=3)
    b, _, _ = matched_noise(cpu, seed=3)
    assert torch.equal(a, b) and a.dtype == dtype  # seeded: the same draw on every call


def _meta_model(family="qwen2_vl"):
    adapter = TinyAdapter(build_tiny_model(family, num_heads=4, num_kv_heads=2))
    adapter.model.to(META)
    return adapter


def _meta_ids(batch=2, seq=12):
    return torch.randint(0, 100, (batch, seq)).to(META)


def _effects_plan(batch, seq):
    keys = torch.arange(2, 6).repeat(batch, 1)
    prior = torch.full((batch, 4), 0.25)
    vp = VisualPrior(keys.to(META), prior.to(META), semantics="code")
    vd = VisualPrior(keys.to(META), prior.to(META), semantics="distribution")
    mean = torch.zeros(16)  # a CPU mean reference: the dispatch must move it
    hook = OutputHook(lambda x, ctx: x * 2.0, "double")
    return Plan.build(
        window={Head(0, 0): Window(3), Head(0, 1): Window(4, sinks=1)},
        ablate={
            Head(0, 2): Ablation("zero"),
            Head(1, 0): Ablation("mean", mean=mean),
            Head(1, 1): Ablation("uniform"),
            Head(1, 2): Ablation("bos"),
        },
        prior={Head(0, 3): vp, Head(1, 3): vd},
        hooks={Head(0, 0): hook},
    )


@pytest.mark.parametrize("kernel", ["chunked", "reference"])
def test_dispatch_effects_run_on_the_model_device(kernel):
    adapter = _meta_model()
    ids = _meta_ids()
    set_window_kernel(kernel)
    try:
        with torch.no_grad(), plan_scope(adapter.model, _effects_plan(2, 12)):
            out = adapter.model(input_ids=ids).logits
    finally:
        set_window_kernel("auto")
    assert out.device == META and out.dtype == torch.float32


@pytest.mark.parametrize(
    "spec",
    ["hybrid:keep=0,window=3,sinks=1", "ablate:select=heads,heads=L0H1;L1H2,mode=uniform"],
)
def test_interventions_run_on_the_model_device(spec):
    adapter = _meta_model("llava")
    with build_intervention(parse_intervention(spec)).attach(adapter), torch.no_grad():
        out = adapter.model(input_ids=_meta_ids()).logits
    assert out.device == META


SPECS = [
    "none",
    "ablate:select=heads,heads=L0H1,mode=zero",
    "ablate:select=top,k=2,mode=mean,ranking={rank},mean_reference={means}",
    "ablate:select=random,k=3,mode=uniform",
    "ablate:select=random,k=3,mode=bos",
    "hybrid:keep=1,window=3,sinks=1,ranking={rank}",
    "noise_qkv:layers=all",
    "noise_delta:layers=all",
    "sap:prior=uniform,layers=all",
    "sap:prior=dirichlet,layers=all,semantics=distribution",
]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64], ids=str)
def test_every_intervention_keeps_the_model_dtype(dtype, tmp_path):
    model = build_tiny_model("qwen2_vl").to(dtype)
    adapter = TinyAdapter(model)
    inp = text_inputs(model, seed=1)
    rank = os.path.join(tmp_path, "rank.json")
    write_ranking(rank, model)
    means = save_head_means(tmp_path / "means.pt", compute_head_means(model, [inp]))
    for text in SPECS:
        spec = parse_intervention(text.format(rank=rank, means=means))
        with build_intervention(spec).attach(adapter), torch.no_grad():
            out = adapter.model(**inp).logits
        assert out.dtype == dtype, text
        assert torch.isfinite(out[inp["attention_mask"].bool()]).all(), text
