"""A ranking made for another model is refused where it is applied (issue 29).

Before: only the L×H shape was compared, so a ranking of another family or checkpoint with the
same shape was applied silently. Now ``ablate`` and ``hybrid`` (static, and adaptive with
``layer_budget=ranking``) refuse it unless ``foreign_ranking=true``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.api.intervention import InterventionError, build_intervention
from harness.api.model import load_adapter
from harness.api.specs import InterventionSpec, ModelSpec, RunSpec, TaskSpec
from harness.run.evaluator import run_grid
from harness.schema.ranking import Ranking, TaskRam, save_ranking

ABLATE = {"select": "top", "k": 2}
HYBRID = {"keep": 2, "window": 8}
ADAPTIVE = {"select": "adaptive", "keep": 2, "window": 8, "layer_budget": "ranking"}
CASES = [("ablate", ABLATE), ("hybrid", HYBRID), ("hybrid", ADAPTIVE)]


@pytest.fixture(scope="module")
def toy():
    return load_adapter(ModelSpec("toy"))


def _ranking(path: Path, toy, family: str, pretrained: str) -> str:
    g = toy.geometry
    per_sample = np.random.default_rng(0).random((3, g.num_layers, g.num_heads))
    task = TaskRam.from_samples({"name": "t"}, per_sample, n_boot=5)
    settings = {"attn_implementation": "sdpa", "dtype": "float32", "seed": 0}
    model = {"family": family, "pretrained": pretrained}
    save_ranking(path, Ranking(model, settings, {"t": task}, g.num_layers, g.num_heads))
    return str(path)


def _attach(toy, name, args):
    with build_intervention(InterventionSpec(name, args)).attach(toy) as info:
        return info


@pytest.mark.parametrize(("name", "args"), CASES)
@pytest.mark.parametrize(
    ("family", "pretrained", "differs"),
    [("llava", None, "family 'llava'"), ("toy", "/ckpt/other-toy", "pretrained '/ckpt/other-toy'")],
)
def test_a_ranking_of_another_model_is_refused(
    tmp_path, toy, name, args, family, pretrained, differs
):
    own = toy.settings()["pretrained"]
    path = _ranking(tmp_path / "r.json", toy, family, pretrained or own)
    with pytest.raises(InterventionError, match=f"was made for {differs}, the model is"):
        _attach(toy, name, {**args, "ranking": path})
    info = _attach(toy, name, {**args, "ranking": path, "foreign_ranking": True})
    assert info["name"] == name


@pytest.mark.parametrize(("name", "args"), CASES)
def test_the_same_checkpoint_moved_is_accepted(tmp_path, toy, name, args):
    moved = "/somewhere/else/" + Path(toy.settings()["pretrained"]).name
    path = _ranking(tmp_path / "r.json", toy, "toy", moved)
    assert _attach(toy, name, {**args, "ranking": path})["name"] == name


def test_the_grid_refuses_it_before_writing(tmp_path, toy):
    path = _ranking(tmp_path / "r.json", toy, "llava", "llava-hf/llava-1.5-7b-hf")
    out = tmp_path / "run"
    spec = RunSpec(
        model=ModelSpec("toy"),
        tasks=(TaskSpec("pope_mini", args={"n": 2}),),
        interventions=(InterventionSpec("ablate", {**ABLATE, "ranking": path}),),
        output=str(out),
    )
    with pytest.raises(InterventionError, match="foreign_ranking=true"):
        run_grid(spec, toy)
    assert not out.exists()
