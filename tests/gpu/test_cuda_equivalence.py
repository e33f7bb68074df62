"""The dispatch and every intervention on CUDA.

Reference for CUDA runs: the same intervention on the CPU in float32, which the CPU suite
holds to the eager references (``tests/integration``). Tolerances, stated once:

- float32 on CUDA vs float32 on CPU: ``FP32`` (abs and rel 1e-4; CUDA's kernels sum in
  other orders; TF32 is off for matmuls by default and switched off here for convolutions);
- bfloat16 on CUDA vs the same bfloat16 weights on the CPU (kernels: bf16 vs fp32 CPU
  reference): relative Frobenius error ≤ ``BF16_REL`` = 3e-2 over the real (non-padding)
  logits or outputs (bf16 keeps 8 bits of mantissa; the issue measured 3.9e-3 max abs
  between flex and chunked attention outputs in bf16).
"""

import os

import pytest

torch = pytest.importorskip("torch")

from harness.api.intervention import build_intervention  # noqa: E402
from harness.api.specs import parse_intervention  # noqa: E402
from harness.attention import flex  # noqa: E402
from harness.attention.dispatch import (  # noqa: E402
    Plan,
    Window,
    plan_scope,
    set_window_kernel,
    use_dispatch,
    window_kernels_used,
)
from harness.attention.window import window_attention_reference  # noqa: E402
from harness.probes.means import compute_head_means, save_head_means  # noqa: E402
from harness.testing.tiny import TINY_FAMILIES, build_tiny_model  # noqa: E402
from tests.integration._interventions_util import (  # noqa: E402
    TinyAdapter,
    text_inputs,
    write_ranking,
)

CUDA = torch.device(os.environ.get("HEADSCOPE_GPU_TESTS_DEVICE", "cuda"))
ON_CUDA = CUDA.type == "cuda"  # False only in a CPU dry run (see conftest)
FP32 = {"rtol": 1e-4, "atol": 1e-4}
BF16_REL = 3e-2


@pytest.fixture(autouse=True)
def _no_tf32():
    if not ON_CUDA:
        yield
        set_window_kernel("auto")
        return
    old = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32 = old
    set_window_kernel("auto")


def on(inp, device):
    return {k: (v.to(device) if hasattr(v, "to") else v) for k, v in inp.items()}


def run(adapter, inp, spec_text=None, plan=None):
    with torch.no_grad():
        if spec_text is not None:
            with build_intervention(parse_intervention(spec_text)).attach(adapter):
                return adapter.model(**inp).logits.float().cpu()
        with plan_scope(adapter.model, plan or Plan()):
            return adapter.model(**inp).logits.float().cpu()


def rel(a, b):
    return float((a - b).norm() / b.norm().clamp(min=1e-12))


@pytest.mark.parametrize("family", TINY_FAMILIES)
def test_empty_plan_is_bit_identical_to_sdpa_on_cuda(family):
    base = build_tiny_model(family).to(CUDA)
    disp = use_dispatch(build_tiny_model(family).to(CUDA))
    inp = on(text_inputs(base, seed=0, pads=[0, 4], seq=16), CUDA)
    with torch.no_grad():
        ref = base(**inp).logits
        with plan_scope(disp, Plan()):
            out = disp(**inp).logits
    assert torch.equal(out, ref)


@pytest.mark.parametrize("family", TINY_FAMILIES)
@pytest.mark.parametrize("kernel", ["flex", "chunked"])
def test_window_longer_than_the_input_is_dense_on_cuda(family, kernel):
    adapter = TinyAdapter(build_tiny_model(family).to(CUDA))
    inp = on(text_inputs(adapter.model, seed=1, pads=[0, 3], seq=20), CUDA)
    geo = adapter.geometry
    plan = Plan.build(window={h: Window(64) for h in geo.all_heads()})
    set_window_kernel(kernel)
    window_kernels_used(reset=True)
    dense = run(adapter, inp)
    windowed = run(adapter, inp, plan=plan)
    assert window_kernels_used(reset=True) == {kernel: geo.num_layers}
    real = inp["attention_mask"].bool().cpu()
    torch.testing.assert_close(windowed[real], dense[real], **FP32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("sinks, pads", [(0, None), (2, [0, 37, 200])])
def test_compiled_flex_equals_reference_on_cuda(dtype, sinks, pads):
    flex.clear_mask_cache()
    length, heads, kv_heads, dim = 700, 8, 2, 64
    kinds = tuple(flex.FULL if h in (1, 6) else (96, sinks) for h in range(heads))
    batch = 1 if pads is None else len(pads)
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(batch, heads, length, dim, generator=gen)
    k, v = (torch.randn(batch, kv_heads, length, dim, generator=gen) for _ in range(2))
    mask = None
    if pads is not None:
        pos = torch.arange(length)
        mask = (pos[:, None] >= pos[None, :])[None, None] & (
            pos[None, None, None, :] >= torch.tensor(pads)[:, None, None, None]
        )
    ref = torch.empty_like(q)
    for h, (size, s) in enumerate(kinds):  # float32 CPU eager reference
        kv = slice(h // 4, h // 4 + 1)
        ref[:, h : h + 1] = window_attention_reference(
            q[:, h : h + 1], k[:, kv], v[:, kv], mask, size or length + 1, s, dim**-0.5
        )
    start = flex.left_padding_start(None if mask is None else mask.to(CUDA), batch)
    out = flex.flex_layer_attention(
        *(t.to(CUDA, dtype) for t in (q, k, v)), kinds, start, dim**-0.5, compiled=ON_CUDA
    )
    out = out.float().cpu()
    if pads is not None:  # rows before a sample's first real token see nothing
        keep = torch.arange(length)[None, :] >= torch.tensor(pads)[:, None]
        out, ref = out.transpose(1, 2)[keep], ref.transpose(1, 2)[keep]
    if dtype == torch.float32:
        torch.testing.assert_close(out, ref, **FP32)
    else:
        assert rel(out, ref) <= BF16_REL


SPECS = [
    "none",
    "ablate:select=heads,heads=L0H1;L1H3,mode=zero",
    "ablate:select=top,k=2,mode=mean,ranking={rank},mean_reference={means}",
    "ablate:select=random,k=3,mode=uniform",
    "ablate:select=random,k=3,mode=bos",
    "hybrid:keep=1,window=5,sinks=1,ranking={rank}",
    "hybrid:keep=0,window=3",
    "noise_qkv:layers=all",
    "noise_delta:layers=all",
    "sap:prior=uniform,layers=all",
    "sap:prior=dirichlet,layers=all,semantics=distribution",
]


@pytest.mark.parametrize("family", ["qwen2_vl", "llava", "internvl"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_every_intervention_on_cuda_matches_cpu(family, dtype, tmp_path):
    cpu = TinyAdapter(build_tiny_model(family).to(dtype))
    gpu = TinyAdapter(build_tiny_model(family).to(CUDA, dtype))
    inp = text_inputs(cpu.model, seed=2, pads=[0, 5], seq=24)
    rank = os.path.join(tmp_path, "rank.json")
    write_ranking(rank, cpu.model)
    means = save_head_means(tmp_path / "means.pt", compute_head_means(cpu.model, [inp]))
    real = inp["attention_mask"].bool()
    for text in SPECS:
        spec = text.format(rank=rank, means=means)
        ref = run(cpu, inp, spec)
        out = run(gpu, on(inp, CUDA), spec)
        if dtype == torch.float32:
            torch.testing.assert_close(out[real], ref[real], **FP32, msg=spec)
        else:
            assert rel(out[real], ref[real]) <= BF16_REL, spec
        if spec.startswith("hybrid") and ON_CUDA:
            assert "flex" in window_kernels_used(reset=True)  # auto → flex on CUDA


def test_probe_masses_on_cuda_match_cpu():
    from harness.probes.record import record_masses

    cpu = TinyAdapter(build_tiny_model("qwen2_vl"))
    gpu = TinyAdapter(build_tiny_model("qwen2_vl").to(CUDA))
    inp = text_inputs(cpu.model, seed=3, pads=[0], seq=30)
    keys = {"ev": range(3, 9), "all": range(0, 20)}
    ref = record_masses(cpu.model, inp, range(24, 30), keys)
    out = record_masses(gpu.model, on(inp, CUDA), range(24, 30), keys)
    for name in keys:
        assert abs(out[name] - ref[name]).max() < 1e-5, name


def test_noise_qkv_draws_the_same_noise_on_cuda():
    from interventions.noise_qkv import matched_noise

    w = torch.randn(64, 32)
    a, _, _ = matched_noise(w, seed=5)
    b, mean, _ = matched_noise(w.to(CUDA), seed=5)
    assert b.device.type == CUDA.type and mean.device.type == CUDA.type
    torch.testing.assert_close(b.cpu(), a, **FP32)


def test_flex_on_the_qwen3_vl_4b_layer_geometry_matches_chunked():
    """32 query heads, 8 KV heads, head_dim 128, 2 kept heads, W = 1024, bf16, S = 4096."""
    from harness.attention.window import window_attention_chunked

    flex.clear_mask_cache()
    length, dim, kept = 4096, 128, (5, 21)
    kinds = tuple(flex.FULL if h in kept else (1024, 0) for h in range(32))
    gen = torch.Generator().manual_seed(7)
    q = torch.randn(1, 32, length, dim, generator=gen).to(CUDA, torch.bfloat16)
    k, v = (torch.randn(1, 8, length, dim, generator=gen).to(CUDA, torch.bfloat16) for _ in "kv")
    out = flex.flex_layer_attention(q, k, v, kinds, None, dim**-0.5, compiled=ON_CUDA)
    ref = torch.empty_like(q)
    for h in range(32):
        size = length + 1 if h in kept else 1024
        kv = slice(h // 4, h // 4 + 1)
        ref[:, h : h + 1] = window_attention_chunked(
            q[:, h : h + 1], k[:, kv], v[:, kv], None, size, 0, dim**-0.5
        )
    assert rel(out.float(), ref.float()) <= BF16_REL


@pytest.mark.parametrize("prior", ["complexity", "vision"])
def test_sap_pixel_priors_on_cuda_match_cpu(prior):
    """SAP's priors built from the pixels and the ViT attention of the same forward."""
    from tests.integration.test_interventions_sap import llava_batch

    cpu = TinyAdapter(build_tiny_model("llava"))
    gpu = TinyAdapter(build_tiny_model("llava").to(CUDA))
    inp = dict(llava_batch())
    real = inp["attention_mask"].bool()
    for semantics in ("code", "distribution"):
        spec = f"sap:prior={prior},layers=all,semantics={semantics}"
        ref = run(cpu, inp, spec)
        out = run(gpu, on(inp, CUDA), spec)
        torch.testing.assert_close(out[real], ref[real], **FP32, msg=spec)
