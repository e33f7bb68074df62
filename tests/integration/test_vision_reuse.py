"""Vision-feature reuse (sample-major runs) is opt-in and never leaks a changed tower's pass.

Three hostile plugin interventions change what the toy's vision tower computes while they are
attached, each in a way that parameter identity and version alone do not see: (1) new
``nn.Parameter`` objects assigned to the tower, (2) ``.data`` edited in place, (3) the tower's
``forward`` swapped. Undeclared (no ``vision_use()``), before or after ``none`` in the grid,
every cell's rows equal ``--cell-major``'s. Declared ``"none"`` (a lie), kinds 1 and 3 are
still caught by the reuse key; kind 2 changes nothing the key can see, and the check switch
(``check_vision_reuse``) catches it, naming the intervention.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from harness.api.intervention import Intervention
from harness.api.registry import INTERVENTIONS
from harness.api.specs import RunSpec, TaskSpec, parse_intervention
from harness.run.evaluator import run_grid
from tests.integration.test_sample_major import assert_same, rows_of


@dataclass(frozen=True)
class _Hostile(Intervention):
    """Changes the vision tower while attached; declares ``vision_use()`` only if told."""

    declare: str = ""

    def vision_use(self) -> Any:
        return self.declare if self.declare else super().vision_use()

    @contextmanager
    def attach(self, adapter: Any) -> Iterator[dict[str, Any]]:
        tower = adapter.model.base_model.vision_tower
        with self.changed(tower):
            yield {"name": self.registry_name}

    def changed(self, tower: Any) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class NewParams(_Hostile):
    """(1) Assigns new ``nn.Parameter`` objects to the patch embedding."""

    @contextmanager
    def changed(self, tower: Any) -> Iterator[None]:
        import torch

        conv = tower.embeddings.patch_embedding
        old = conv.weight
        conv.weight = torch.nn.Parameter(old.detach() * -3.0, requires_grad=False)
        try:
            yield
        finally:
            conv.weight = old


@dataclass(frozen=True)
class DataInPlace(_Hostile):
    """(2) Edits the patch embedding's ``.data`` in place (no version bump) and restores it."""

    @contextmanager
    def changed(self, tower: Any) -> Iterator[None]:
        weight = tower.embeddings.patch_embedding.weight
        saved = weight.detach().clone()
        weight.data.mul_(-3.0)
        try:
            yield
        finally:
            weight.data.copy_(saved)


@dataclass(frozen=True)
class SwapForward(_Hostile):
    """(3) Swaps a tower submodule's ``forward`` (an instance attribute)."""

    @contextmanager
    def changed(self, tower: Any) -> Iterator[None]:
        conv = tower.embeddings.patch_embedding
        original = conv.forward
        conv.forward = lambda x: original(x) * -3.0
        try:
            yield
        finally:
            del conv.forward


KINDS = {"evil_params": NewParams, "evil_data": DataInPlace, "evil_forward": SwapForward}


@pytest.fixture(scope="module")
def toy():
    from harness.api.model import load_adapter
    from harness.api.specs import ModelSpec

    return load_adapter(ModelSpec(name="toy"))


@contextmanager
def registered() -> Iterator[None]:
    with (
        INTERVENTIONS.temporary("evil_params", NewParams),
        INTERVENTIONS.temporary("evil_data", DataInPlace),
        INTERVENTIONS.temporary("evil_forward", SwapForward),
    ):
        yield


def run(toy, out, grid, order, check=False):
    spec = RunSpec(
        tasks=(TaskSpec("pope_mini", args={"n": 3}),),
        interventions=tuple(parse_intervention(i) for i in grid),
        output=str(out),
        gen_kwargs={"max_new_tokens": 4},
    )
    with registered():
        return run_grid(spec, toy, order=order, check_vision_reuse=check)


def outputs(out, name):
    """The replies of the cell whose intervention is ``name``."""
    from harness.schema.results import load_results

    (entry,) = [e for e in load_results(out).entries if e.intervention_spec["name"] == name]
    return [r["output"] for r in rows_of(out)[entry.samples_file.split("/")[-1]]]


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("where", ["before", "after"])
def test_undeclared_plugin_is_recomputed_and_equals_cell_major(toy, tmp_path, kind, where):
    grid = (kind, "none") if where == "before" else ("none", kind)
    outs = {o: tmp_path / o for o in ("cell", "sample")}
    for order, out in outs.items():
        run(toy, out, grid, order)
    assert_same(outs)
    # the plugin does change the replies: the equality above is not vacuous
    assert outputs(outs["cell"], kind) != outputs(outs["cell"], "none")


@pytest.mark.parametrize("kind", ["evil_params", "evil_forward"])
@pytest.mark.parametrize("where", ["before", "after"])
def test_the_key_sees_new_parameters_and_swapped_forwards(toy, tmp_path, kind, where):
    """Declared ``none`` (wrongly): the key still sees the change and recomputes."""
    lie = f"{kind}:declare=none"
    grid = (lie, "none") if where == "before" else ("none", lie)
    outs = {o: tmp_path / o for o in ("cell", "sample")}
    for order, out in outs.items():
        run(toy, out, grid, order)
    assert_same(outs)


@pytest.mark.parametrize("where", ["before", "after"])
def test_check_switch_names_a_wrongly_declared_plugin(toy, tmp_path, where):
    from harness.models.vision_memo import VisionReuseError

    lie = "evil_data:declare=none"
    grid = (lie, "none") if where == "before" else ("none", lie)
    with pytest.raises(VisionReuseError, match="evil_data:declare=none"):
        run(toy, tmp_path / "checked", grid, "sample", check=True)


BUILT_INS = (
    "none",
    "ablate:select=random,k=0.2,mode=zero",
    "hybrid:select=adaptive,keep=0.25,window=24",
    "noise_delta:layers=1",
    "noise_qkv:layers=1",
    "sap:prior=complexity",
    "sap:prior=vision",
)


def test_check_switch_passes_every_built_in_and_is_recorded(toy, tmp_path, monkeypatch):
    from harness.models.vision_memo import VisionMemo

    compared = []
    real = VisionMemo._compare

    def counting(self, *args):
        compared.append(self.label)
        return real(self, *args)

    monkeypatch.setattr(VisionMemo, "_compare", counting)
    results = run(toy, tmp_path / "checked", BUILT_INS, "sample", check=True)
    assert results.settings["check_vision_reuse"] is True
    # every cell that declares "none" reused (and so was checked) on each of the 3 documents
    declare_none = {parse_intervention(i).label for i in BUILT_INS if "sap" not in i}
    assert set(compared) == declare_none
    monkeypatch.undo()
    plain = run(toy, tmp_path / "plain", BUILT_INS, "sample")
    assert "check_vision_reuse" not in plain.settings
    assert rows_of(tmp_path / "checked") == rows_of(tmp_path / "plain")


def test_cli_check_vision_reuse_reaches_the_grid_and_the_main_job(tmp_path, monkeypatch):
    from harness.cli import main as cli
    from harness.run import evaluator, main_job

    seen = []
    monkeypatch.setattr(evaluator, "run_grid", lambda spec, **kw: seen.append(kw))
    monkeypatch.setattr(main_job, "run_protocol", lambda model, cfg, out: seen.append(cfg))
    argv = ["run", "--model", "toy", "--tasks", "pope_mini", "--output", str(tmp_path / "o")]
    assert cli.main([*argv, "--interventions", "none", "--check-vision-reuse"]) == 0
    assert seen == [{"order": "sample", "check_vision_reuse": True}]
    assert cli.main([*argv, "--check-vision-reuse"]) == 0
    assert seen[1].check_vision_reuse is True
    assert cli.main(argv) == 0
    assert seen[2].check_vision_reuse is False


def test_memo_key_sees_the_vision_side_beyond_parameter_versions():
    """Each change below is invisible to (parameter id, version) and hooks, and misses."""
    import torch

    from harness.models.vision_memo import VisionMemo
    from harness.testing.tiny import build_tiny_model

    model = build_tiny_model("llava")
    base, tower = model.base_model, model.base_model.vision_tower
    conv = tower.embeddings.patch_embedding
    size = model.config.vision_config.image_size
    pixels = torch.randn(1, 3, size, size)

    def encode():
        return base.get_image_features(pixel_values=pixels, return_dict=True).pooler_output

    def swap_buffer():
        name, buf = next(iter(tower.embeddings.named_buffers(recurse=False)))
        tower.embeddings.register_buffer(name, buf.clone(), persistent=False)

    changes = {
        "new parameter": lambda: setattr(conv, "weight", torch.nn.Parameter(conv.weight * 1)),
        "new storage": lambda: setattr(conv.weight, "data", conv.weight.data.clone()),
        "new buffer": swap_buffer,
        "instance forward": lambda: setattr(conv, "forward", conv.forward),
        "training flag": lambda: tower.train(),
        "plain attribute": lambda: setattr(tower.encoder.layers[0].self_attn, "scale", 0.5),
        "config value": lambda: setattr(model.config, "vision_feature_layer", -1),
    }
    with torch.no_grad(), VisionMemo(model).installed() as memo:
        for what, change in changes.items():
            before = encode()
            assert encode() is before, what  # unchanged: reused
            change()
            assert encode() is not before, what
        before = encode()
        cls = type(conv)
        original = cls.forward
        cls.forward = lambda self, x: original(self, x)
        try:
            assert encode() is not before  # the class function was patched
        finally:
            cls.forward = original
        assert encode() is before
        calls = []
        get = type(base).get_image_features
        type(base).get_image_features = lambda self, **kw: calls.append(1) or get(self, **kw)
        try:
            encode()  # the patched class function runs, not the memo's stored pass
        finally:
            type(base).get_image_features = get
        assert calls == [1] and memo.reused >= len(changes)
    with torch.no_grad(), VisionMemo(model).installed() as memo:
        first = encode()
        with memo.using(None, "undeclared"):
            assert encode() is not first  # not declared: recomputed, like "writes"
        assert encode() is first


def test_every_built_in_intervention_declares_its_vision_use():
    from harness.api.intervention import build_intervention
    from harness.api.specs import InterventionSpec

    INTERVENTIONS.discover()
    for name in INTERVENTIONS.names():
        cls = INTERVENTIONS.get(name)
        if not cls.__module__.startswith("interventions."):
            continue  # registered by another test (tests.unit.test_progress), not built in
        assert "vision_use" in vars(cls) or any(
            "vision_use" in vars(b) for b in cls.__mro__[1:] if b is not Intervention
        ), name
    assert build_intervention(InterventionSpec("none")).vision_use() == "none"
