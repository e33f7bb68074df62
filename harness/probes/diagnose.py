"""``headscope diagnose``: representation geometry of attention and FFN updates (paper B).

Per sample (batch 1, all tokens of the unpadded input), :func:`harness.probes.states.capture_states`
records inside every decoder layer the block input ``X``, the post-attention state
``X + ΔX_attn`` (input of ``post_attention_layernorm``) and the block output — not
``hidden_states``, which differ for DeepStack models. For each layer and module (attention:
input → post-attention; FFN: post-attention → output) and each formula variant (``paper``,
``code``) :func:`harness.metrics.geometry.module_diagnostics` gives eRank in/out, ΔS, ΔD, RID,
TME in/out and MixIG (float64 Gram eigendecompositions, energy-truncated subspaces; S < H is
fine). Values are means over samples.

Baselines (attention module, mean over layers): the registered interventions ``noise_delta``
(ΔX_attn → matched Gaussian noise) and ``noise_qkv`` (q/k/v weights → matched noise). With
``baseline_layers="each"`` (default) layer ``l`` is measured in a forward where only layer
``l`` is noised, so its input is the clean one (the forward stops after layer ``l``); any
other value (``"all"``, ``"0-3"``...) is passed to the interventions as their ``layers`` and
every layer is measured in that single noised forward.

ε_RoPE floor: RID(X₀ without RoPE → X₀ with RoPE), X₀ = the first decoder layer's
post-attention state. "Without RoPE" = the same input with the text decoder's rotary module
forced to the identity rotation (a forward hook makes it return ``cos = 1``, ``sin = 0``;
M-RoPE included, the vision tower untouched). Mean over samples.

Key-region degree ratio (grounded samples): over all layers and heads, Σ attention mass from
the question (instruction) tokens to the evidence tokens Ω(V*) divided by Σ mass from the same
tokens to all visual tokens; split by whether the generated answer is correct (the task's
first metric ≥ ``threshold``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from harness.api.payloads import EvidenceError
from harness.probes.record import masses_of, prefill, prepare_single, recording, span_masks

__all__ = [
    "VARIANTS",
    "EROPE_METHOD",
    "rotary_identity",
    "module_rows",
    "diagnose_sample",
]

VARIANTS = ("paper", "code")
MODULES = ("attention", "ffn")
FIELDS = ("erank_in", "erank_out", "dS", "dD", "RID", "TME_in", "TME_out", "MixIG")
EROPE_METHOD = (
    "RID(first decoder layer's post-attention state with the text rotary embedding forced to "
    "identity (cos=1, sin=0) -> the same state with RoPE), same input"
)
KEY_REGION_DEFINITION = (
    "sum over layers, heads and question tokens of the attention mass on the evidence tokens "
    "/ the same sum over all visual tokens"
)


class _Stop(Exception):
    """Raised by a hook to end a forward once the layers of interest have run."""


@contextmanager
def rotary_identity(model: Any) -> Iterator[int]:
    """Make the text decoder's rotary embedding the identity rotation (cos = 1, sin = 0).

    Yields:
        The number of rotary modules patched (0: the decoder has no rotary module).
    """
    from harness.api.anatomy import decoder_layers

    layers = decoder_layers(model)
    owner = next((m for m in model.modules() if getattr(m, "layers", None) is layers), None)
    found = [
        m
        for m in (owner.modules() if owner is not None else ())
        if type(m).__name__.endswith("RotaryEmbedding") and "Vision" not in type(m).__name__
    ]

    def identity(_module: Any, _args: Any, output: Any) -> Any:
        cos, sin = output
        return cos.new_ones(cos.shape), sin.new_zeros(sin.shape)

    handles = [m.register_forward_hook(identity) for m in found]
    try:
        yield len(found)
    finally:
        for handle in handles:
            handle.remove()


def _run(model: Any, inputs: Any, stop_after: int | None = None) -> None:
    """Prefill; with ``stop_after`` the forward is cut after that decoder layer."""
    if stop_after is None:
        prefill(model, inputs)
        return
    from harness.api.anatomy import decoder_layers

    def stop(*_: Any) -> None:
        raise _Stop

    handle = decoder_layers(model)[stop_after].register_forward_hook(stop)
    try:
        prefill(model, inputs)
    except _Stop:
        pass
    finally:
        handle.remove()


def _np(tensor: Any) -> Any:
    return tensor[0].double().numpy()


def module_rows(cap: Any, layers: list[int], variant: str, energy: float) -> list[dict]:
    """Diagnostics rows ``{"layer", "module", *FIELDS}`` of captured states (sample 0)."""
    from harness.metrics.geometry import module_diagnostics

    rows = []
    for layer in layers:
        x, mid, out = (_np(s[layer]) for s in (cap.inputs, cap.post_attn, cap.post_ffn))
        for module, (a, b) in zip(MODULES, ((x, mid), (mid, out))):
            diag = module_diagnostics(a, b, variant, energy)
            diag["erank_in"], diag["erank_out"] = diag.pop("eRank_in"), diag.pop("eRank_out")
            rows.append({"layer": layer, "module": module, **{k: diag[k] for k in FIELDS}})
    return rows


def _attention_only(cap: Any, layer: int, energy: float) -> dict[str, dict[str, float]]:
    from harness.metrics.geometry import module_diagnostics

    x, mid = _np(cap.inputs[layer]), _np(cap.post_attn[layer])
    out = {}
    for variant in VARIANTS:
        diag = module_diagnostics(x, mid, variant, energy)
        out[variant] = {"RID": diag["RID"], "MixIG": diag["MixIG"]}
    return out


def _baseline(adapter: Any, inputs: Any, name: str, layers_spec: str, seed: int, energy: float):
    """``{variant: {"RID": [per layer], "MixIG": [...]}}`` of the attention update under noise."""
    from harness.api.intervention import build_intervention
    from harness.api.specs import InterventionSpec
    from harness.probes.states import capture_states

    model = adapter.model
    n_layers = adapter.geometry.num_layers
    runs = (
        [([layer], layer) for layer in range(n_layers)]
        if layers_spec == "each"
        else [(layers_spec, None)]
    )
    per_layer: dict[int, dict[str, dict[str, float]]] = {}
    for spec, stop in runs:
        interv = build_intervention(InterventionSpec(name, {"layers": spec, "seed": seed}))
        chosen = None if stop is None else [stop]
        with interv.attach(adapter), capture_states(model, layers=chosen) as cap:
            _run(model, inputs, stop)
        for layer in chosen or range(n_layers):
            per_layer[layer] = _attention_only(cap, layer, energy)
    return {
        v: {m: [per_layer[la][v][m] for la in sorted(per_layer)] for m in ("RID", "MixIG")}
        for v in VARIANTS
    }


def diagnose_sample(
    adapter: Any,
    task: Any,
    doc: Any,
    *,
    energy: float = 0.99,
    baselines: tuple[str, ...] = ("noise_delta", "noise_qkv"),
    baseline_layers: str = "each",
    seed: int = 0,
    erope: bool = True,
    key_region: bool = True,
    generate: bool = True,
    threshold: float = 0.5,
) -> dict[str, Any]:
    """All diagnostics of one sample.

    Returns:
        ``{"rows": {variant: [...]}, "baselines": {name: {variant: {"RID": [...], ...}}},
        "erope": {variant: f} | None, "key_region": {"ratio", "correct", "score", "metric"}
        | {"skipped": reason} | None}``.
    """
    from harness.probes.states import capture_states

    model = adapter.model
    request = task.request(doc)
    spans, why = None, None
    if key_region:
        try:
            evidence = task.evidence(doc, request)
            if evidence is None:
                raise EvidenceError("the task gives no evidence")
            spans = adapter.token_spans(request, evidence)
            if not spans.evidence or not spans.instruction or not spans.visual:
                raise EvidenceError("no evidence, instruction or visual tokens")
        except EvidenceError as exc:
            spans, why = None, str(exc)
    inputs = prepare_single(adapter, request, spans)
    length = int(inputs["input_ids"].shape[1])
    with ExitStack() as stack:
        cap = stack.enter_context(capture_states(model))
        recs = None
        if spans is not None:
            keys = {"evidence": spans.evidence, "visual": spans.visual}
            qmask, kmasks = span_masks(length, spans.instruction, keys)
            recs = stack.enter_context(recording(model, qmask, kmasks))
        _run(model, inputs)
    layers = sorted(cap.inputs)
    out: dict[str, Any] = {
        "rows": {v: module_rows(cap, layers, v, energy) for v in VARIANTS},
        "baselines": {
            name: _baseline(adapter, inputs, name, baseline_layers, seed, energy)
            for name in baselines
        },
        "erope": None,
        "key_region": None if why is None else {"skipped": why},
    }
    if erope:
        with rotary_identity(model) as patched, capture_states(model, layers=[0]) as flat:
            _run(model, inputs, stop_after=0)
        if patched:
            from harness.metrics.geometry import erope_floor

            with_rope, without = _np(cap.post_attn[0]), _np(flat.post_attn[0])
            out["erope"] = {v: erope_floor(with_rope, without, v, energy) for v in VARIANTS}
    if recs is not None:
        from harness.metrics.ram import key_region_degree_ratio

        geometry = adapter.geometry
        m = masses_of(recs, geometry.num_layers, geometry.head_layers)
        kr: dict[str, Any] = {"ratio": key_region_degree_ratio(m["evidence"], m["visual"])}
        if generate:
            kr.update(_correctness(adapter, task, doc, request, seed, threshold))
        out["key_region"] = kr
    return out


def _correctness(adapter, task, doc, request, seed: int, threshold: float) -> dict[str, Any]:
    from harness.api.task import ScoringContext

    metric = task.metrics[0].name
    generation = adapter.generate([request])[0]
    ctx = ScoringContext(
        adapter.parse_box,
        seed,
        family=adapter.registry_name or None,
        parse_video_box=getattr(adapter, "parse_video_box", None),
    )
    scores = task.score(doc, generation, ctx)
    value = scores.get(metric)
    text = generation.text[:200]  # enough to eyeball the answer in the file
    if value is None:
        return {"metric": metric, "score": None, "correct": None, "output": text}
    value = float(value)
    higher = task.metrics[0].higher_is_better
    correct = value >= threshold if higher else value <= threshold
    return {"metric": metric, "score": value, "correct": correct, "output": text}
