"""Shared helpers of the intervention tests: tiny adapters, inputs, rankings, references."""

from __future__ import annotations

import numpy as np
import torch

from harness.api.anatomy import decoder_layers, geometry_of
from harness.api.model import ModelAdapter
from harness.api.specs import ModelSpec
from harness.attention.dispatch import plan_scope, use_dispatch
from harness.schema.ranking import Ranking, TaskRam, save_ranking
from harness.testing.tiny import build_tiny_model, tiny_text_inputs

FAMILIES = ["llava", "qwen2_vl", "internvl"]
SEQ = 12
PADS = [3, 0]


class TinyAdapter(ModelAdapter):
    """Just enough adapter for interventions: ``model`` (on the dispatch) and ``geometry``."""

    def __init__(self, model):
        super().__init__(ModelSpec(name="tiny"))
        self.model = use_dispatch(model)


def pair(family, **kw):
    """(plain sdpa model, adapter over an identical model on the dispatch)."""
    return build_tiny_model(family, **kw), TinyAdapter(build_tiny_model(family, **kw))


def text_inputs(model, seed=0, pads=PADS, seq=SEQ):
    """Left-padded token inputs (one row per pad) with position ids that skip the padding."""
    inp = tiny_text_inputs(model, len(pads), seq, seed, left_pad=list(pads))
    inp["position_ids"] = (inp["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    return inp


def logits(model, inp, plan=None):
    """Logits of one no-grad forward, under ``plan`` when one is given (dispatched models)."""
    with torch.no_grad():
        if plan is None:
            return model(**inp).logits
        with plan_scope(model, plan):
            return model(**inp).logits


def real(x, inp):
    return x[inp["attention_mask"].bool()]


def maxdiff(a, b, inp):
    return float((real(a, inp) - real(b, inp)).abs().max())


def write_ranking(path, model, seed=0, tasks=("a", "b")):
    """A valid ranking file with random per-sample scores for ``model``'s geometry."""
    g = geometry_of(model)
    rng = np.random.default_rng(seed)
    per_task = {
        name: TaskRam.from_samples(
            {"name": name}, rng.random((3, g.num_layers, g.num_heads)), n_boot=10
        )
        for name in tasks
    }
    ranking = Ranking(
        model={"name": "tiny"},
        settings={"attn_implementation": "sdpa", "dtype": "float32", "seed": 0},
        tasks=per_task,
        num_layers=g.num_layers,
        num_heads=g.num_heads,
    )
    save_ranking(path, ranking)
    return ranking


def o_proj_reference(model, inp, edit):
    """Plain sdpa forward with every o_proj input edited by ``edit(layer, x)``."""
    layers = decoder_layers(model)
    handles = [
        layer.self_attn.o_proj.register_forward_pre_hook(
            lambda _m, args, i=i: (edit(i, args[0].clone()),)
        )
        for i, layer in enumerate(layers)
    ]
    try:
        return logits(model, inp)
    finally:
        for h in handles:
            h.remove()


def zero_heads_edit(heads, head_dim):
    def edit(layer, x):
        for h in heads:
            if h.layer == layer:
                x[..., h.head * head_dim : (h.head + 1) * head_dim] = 0
        return x

    return edit


def boom(*_):
    raise RuntimeError("boom")
