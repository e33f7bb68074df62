"""FlexAttention path for windowed heads: equivalence with the reference, caching, fallbacks.

Default suite: flex's *eager* implementation (``flex_eager``), which runs the same mask_mod
and block masks as the compiled kernel but materialises the scores, at small sizes. The
compiled kernel on CPU costs ~45 s of compilation per shape here, so its check is ``slow``.
"""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.nn.attention.flex_attention")

from harness.api.heads import Head  # noqa: E402
from harness.attention import flex  # noqa: E402
from harness.attention.dispatch import (  # noqa: E402
    Plan,
    Window,
    plan_scope,
    set_window_kernel,
    window_kernels_used,
)
from harness.attention.window import window_attention_reference  # noqa: E402
from harness.testing.tiny import build_tiny_model  # noqa: E402
from tests.integration._interventions_util import TinyAdapter, text_inputs  # noqa: E402


@pytest.fixture(autouse=True)
def _reset():
    flex.clear_mask_cache()
    window_kernels_used(reset=True)
    yield
    set_window_kernel("auto")


def causal_padding_mask(length, pads):
    pos = torch.arange(length)
    causal = pos[:, None] >= pos[None, :]
    keep = pos[None, None, None, :] >= torch.tensor(pads)[:, None, None, None]
    return causal[None, None] & keep


def reference(q, k, v, mask, kinds, scale):
    """Per head: the eager reference window kernel (a full head = a window longer than S)."""
    group = q.shape[1] // k.shape[1]
    out = torch.empty_like(q)
    for h, (size, sinks) in enumerate(kinds):
        kv = slice(h // group, h // group + 1)
        size = size or q.shape[2] + 1
        out[:, h : h + 1] = window_attention_reference(
            q[:, h : h + 1], k[:, kv], v[:, kv], mask, size, sinks, scale
        )
    return out


def test_length_bucket():
    assert [flex.length_bucket(n) for n in (1, 128, 129, 512, 513, 5000, 33000)] == [
        128,
        128,
        256,
        512,
        640,
        5120,
        40960,
    ]
    for n in range(1, 70000, 997):
        b = flex.length_bucket(n)
        assert n <= b and b % flex.FLEX_BLOCK == 0 and (n <= 512 or b <= 1.25 * n)
    with pytest.raises(ValueError):
        flex.length_bucket(0)


def test_left_padding_start_reads_hf_masks_and_refuses_others():
    assert flex.left_padding_start(None, 2) is None
    mask = causal_padding_mask(9, [0, 4])
    assert flex.left_padding_start(mask, 2).tolist() == [0, 4]
    right = causal_padding_mask(9, [0, 0]).clone()
    right[1, :, :, 7:] = False  # right padding: not the causal ∧ left-padding form
    assert flex.left_padding_start(right, 2) is None
    full = torch.ones(2, 1, 9, 9, dtype=torch.bool)  # bidirectional
    assert flex.left_padding_start(full, 2) is None


CASES = [  # (length, pads or None, per-head kinds, KV heads)
    (200, None, ((0, 0), (16, 0), (16, 2), (300, 1)), 2),
    (130, [0, 7], ((0, 0), (5, 0), (5, 3), (0, 0)), 2),
    (257, [3, 0, 100], ((9, 1), (9, 1), (9, 1), (9, 1)), 1),
    (129, None, ((1, 0), (128, 0), (0, 0), (127, 4)), 4),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"S{c[0]}-pads{c[1]}")
def test_flex_eager_equals_reference(case):
    length, pads, kinds, kv_heads = case
    gen = torch.Generator().manual_seed(length)
    batch, heads, dim = (1 if pads is None else len(pads)), len(kinds), 16
    q = torch.randn(batch, heads, length, dim, generator=gen)
    k = torch.randn(batch, kv_heads, length, dim, generator=gen)
    v = torch.randn(batch, kv_heads, length, dim, generator=gen)
    mask = None if pads is None else causal_padding_mask(length, pads)
    start = flex.left_padding_start(mask, batch)
    out = flex.flex_layer_attention(q, k, v, kinds, start, dim**-0.5, compiled=False)
    ref = reference(q, k, v, mask, kinds, dim**-0.5)
    assert out.shape == ref.shape
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    wrong = tuple((3, 0) for _ in kinds)  # the comparison has teeth
    bad = flex.flex_layer_attention(q, k, v, wrong, start, dim**-0.5, compiled=False)
    assert (bad - ref).abs().max() > 1e-2


def test_block_masks_are_cached_per_bucket_and_type():
    kinds_a = ((0, 0), (8, 0), (8, 0), (8, 0))
    kinds_b = ((8, 0), (8, 0), (0, 0), (8, 0))  # another layer: same two types
    for length in (140, 170, 200, 256):  # one bucket (256)
        flex.layer_block_mask(kinds_a, length, None, "cpu", compiled=False)
        flex.layer_block_mask(kinds_b, length, None, "cpu", compiled=False)
    info = flex.mask_cache_info()
    assert info["type_builds"] == 2  # full + window, built once for the bucket
    assert info["layer_builds"] == 8  # cheap assembly per (layer kinds, exact length)
    flex.layer_block_mask(kinds_a, 200, None, "cpu", compiled=False)
    assert flex.mask_cache_info()["hits"] == 1
    flex.layer_block_mask(kinds_a, 300, None, "cpu", compiled=False)  # next bucket
    assert flex.mask_cache_info()["type_builds"] == 4


def hybrid_plan(layers=2, heads=4):
    win = Window(5, sinks=1)
    return Plan.build(
        window={Head(la, h): win for la in range(layers) for h in range(heads) if h != la}
    )


@pytest.mark.parametrize("family", ["qwen2_vl", "llava"])
def test_dispatch_flex_eager_matches_reference_and_records_the_kernel(family):
    adapter = TinyAdapter(build_tiny_model(family))
    inp = text_inputs(adapter.model, seed=3, pads=[0, 5], seq=40)
    plan, real = hybrid_plan(), inp["attention_mask"].bool()
    outs = {}
    for kernel in ("reference", "flex_eager"):
        set_window_kernel(kernel)
        with torch.no_grad(), plan_scope(adapter.model, plan):
            outs[kernel] = adapter.model(**inp).logits
        assert window_kernels_used(reset=True) == {kernel: 2}  # both layers, that kernel
    torch.testing.assert_close(outs["flex_eager"][real], outs["reference"][real])


def test_flex_falls_back_to_chunked_for_decode_and_records_it():
    adapter = TinyAdapter(build_tiny_model("qwen2_vl"))
    inp = text_inputs(adapter.model, seed=4, pads=[0, 3], seq=24)
    plan = Plan.build(window={Head(0, 1): Window(4, in_decode=True)})
    set_window_kernel("flex_eager")
    with torch.no_grad(), plan_scope(adapter.model, plan):
        adapter.model.generate(**inp, max_new_tokens=3, do_sample=False)
    used = window_kernels_used(reset=True)
    assert used == {"flex_eager": 1, "chunked": 2}  # prefill on flex, two decode steps not


def test_auto_is_chunked_on_cpu_and_unknown_kernels_are_refused():
    from harness.attention.dispatch import resolved_window_kernel

    set_window_kernel("auto")
    assert resolved_window_kernel(torch.device("cpu")) == "chunked"
    assert resolved_window_kernel(torch.device("cuda", 0)) == "flex"
    with pytest.raises(ValueError, match="unknown window kernel"):
        set_window_kernel("flash")


@pytest.mark.slow
def test_compiled_flex_on_cpu_equals_reference_without_recompiling_per_length():
    from torch._dynamo.utils import counters

    kinds = ((0, 0), (24, 0), (24, 2), (24, 0))
    outs = []
    for length in (150, 190, 230):  # one bucket: the third length must not compile again
        gen = torch.Generator().manual_seed(length)
        q = torch.randn(1, 4, length, 16, generator=gen)
        k, v = (torch.randn(1, 2, length, 16, generator=gen) for _ in range(2))
        out = flex.flex_layer_attention(q, k, v, kinds, None, 0.25, compiled=True)
        torch.testing.assert_close(out, reference(q, k, v, None, kinds, 0.25))
        outs.append(sum(counters["stats"].values()))
    assert outs[2] == outs[1]  # no new graph for the third length


class ForwardingAdapter(TinyAdapter):
    """Scripted answers, but every generate() also runs the tiny model's prefill."""

    def __init__(self):
        super().__init__(build_tiny_model("qwen2_vl"))
        from harness.testing.mock import ScriptedAdapter
        from tests.toy_task import correct_on_even

        self._scripted = ScriptedAdapter(correct_on_even)

    def generate(self, requests):
        with torch.no_grad():
            self.model(**text_inputs(self.model, seed=1, pads=[0] * len(requests), seq=20))
        return self._scripted.generate(requests)


def test_results_record_the_selected_kernel_and_the_kernels_that_ran(tmp_path):
    from harness.api.specs import InterventionSpec, RunSpec, TaskSpec
    from harness.run.evaluator import run_grid

    spec = RunSpec(
        tasks=(TaskSpec("test_echo", args={"n": 2}),),
        interventions=(
            InterventionSpec("none"),
            InterventionSpec("hybrid", {"keep": 0, "window": 4}),
        ),
        output=str(tmp_path / "run"),
    )
    set_window_kernel("flex_eager")
    res = run_grid(spec, ForwardingAdapter())
    assert res.settings["window_kernel"] == {"selected": "flex_eager", "prefill": "flex_eager"}
    by_label = {e.intervention: e.intervention_resolved for e in res.entries}
    assert "window_kernels" not in by_label["none"]  # no windowed head: nothing to record
    assert set(by_label["hybrid:keep=0,window=4"]["window_kernels"]) == {"flex_eager"}


@pytest.mark.parametrize("kernel, ran", [("auto", "chunked"), ("flex_eager", "flex_eager")])
def test_bench_rows_record_the_kernel_that_ran(kernel, ran):
    from harness.bench.hybrid import run_bench

    rows = run_bench(
        geometry="tiny", lengths=(200,), keep=0.25, window=16, repeats=1, warmup=1,
        scope="attention", kernel=kernel,
    )  # fmt: skip
    assert rows[0]["window_kernel"] == kernel
    assert rows[0]["window_kernels"] == {ran: 2}  # warm-up + one timed hybrid call
    assert (rows[0]["mask_build_ms"] > 0) == (ran == "flex_eager")


def test_mask_cost_bench_builds_masks_per_bucket_not_per_sample():
    from harness.bench.mask_cost import run_mask_cost

    row = run_mask_cost(
        geometry="tiny", layers=2, samples=5, min_length=130, max_length=250, keep=0.25,
        window=16, kernel="flex_eager",
    )  # fmt: skip
    buckets = {flex.length_bucket(n) for n in row["lengths"]}
    assert row["type_builds"] == 2 * len(buckets)  # full + window type per bucket
    assert row["window_kernels"] == {"flex_eager": 2 * 5}
    assert 0 < row["mask_build_ms"] < row["hybrid_ms"]


def test_mask_cost_cli_prints_a_table_or_with_json_a_tagged_document(capsys):
    from harness.bench.mask_cost import main
    from harness.schema.bench import BenchDocument

    argv = ["--geometry", "tiny", "--layers", "1", "--samples", "2", "--min-length", "64"]
    assert main([*argv, "--max-length", "80", "--window", "16", "--json"]) == 0
    doc = BenchDocument.from_dict(json.loads(capsys.readouterr().out))
    (row,) = doc.rows
    assert doc.kind == "masks" and not doc.legacy and row["samples"] == 2
    assert main([*argv, "--max-length", "80", "--window", "16"]) == 0
    header, line = capsys.readouterr().out.splitlines()
    assert header.split() == ["samples", "hybrid_ms", "mask_build_ms", "mask_share",
                              "warmup_ms", "type_builds", "layer_builds"]  # fmt: skip
    assert line.split()[0] == "2"
