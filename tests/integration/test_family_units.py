"""The family registry test: what cannot be derived from the family units is checked here.

Every test list of families derives from :func:`harness.models.unit.unit_names`; this file
holds each unit to the outside world: the transformers class exists and is what the tiny
recipe builds, the recipe's processor is the class transformers maps to that model type, the
layout kind predicts exactly the visual tokens the released-geometry processor makes (and the
count a family's test-table row records for a 640×480 image), the box convention is a known
one with a source, the README lists the family, ``--model-args tiny=true`` builds the recipe.
"""

from __future__ import annotations

import functools
import typing
from operator import attrgetter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from PIL import Image  # noqa: E402

from harness.api.errors import UsageError  # noqa: E402
from harness.api.model import BoxConvention, load_adapter  # noqa: E402
from harness.api.payloads import Request  # noqa: E402
from harness.api.registry import MODEL_FAMILIES  # noqa: E402
from harness.api.specs import ModelSpec, SpecError  # noqa: E402
from harness.models.hf import HFAdapter  # noqa: E402
from harness.models.layouts import LayoutKind  # noqa: E402
from harness.models.unit import CAPABILITIES, unit_names, unit_of, units  # noqa: E402
from harness.testing.tiny import build_tiny_model, tiny_processor  # noqa: E402
from tests.integration.family_table import ROWS  # noqa: E402

README = Path(__file__).resolve().parents[2] / "README.md"
TINY = unit_names(tiny=True)


@functools.cache
def real(family: str):
    """(model, processor) of the family's tiny recipe at the released processor geometry."""
    return build_tiny_model(family, geometry="real"), tiny_processor(family, geometry="real")


def test_every_hf_family_declares_its_own_unit():
    for name in MODEL_FAMILIES.names():
        cls = MODEL_FAMILIES.get(name)
        builtin = MODEL_FAMILIES.origin(name).startswith("harness.models.")  # not a plugin
        if builtin and isinstance(cls, type) and issubclass(cls, HFAdapter):
            assert "unit" in vars(cls), f"{name}: {cls.__name__} declares no FamilyUnit"
    assert len(TINY) >= 7 and set(TINY) <= set(units())


def test_every_family_with_a_recipe_has_one_test_table_row():
    assert set(ROWS) == set(TINY)


@pytest.mark.parametrize("family", sorted(units()))
def test_unit_fields(family):
    import transformers

    unit = unit_of(family)
    cls = MODEL_FAMILIES.get(family)
    assert hasattr(transformers, unit.model_class), unit.model_class
    assert unit.box_convention in typing.get_args(BoxConvention)
    assert len(unit.box_source) > 20  # where the convention comes from
    assert isinstance(unit.layout, LayoutKind) and unit.layout.kind
    assert set(unit.capabilities) <= CAPABILITIES and "image" in unit.capabilities
    assert set(unit.sap_priors) <= {"complexity", "vision"}
    assert unit.visual_tokens and unit.video_as in ("video", "images")
    # the adapter class reads what it needs from its unit
    assert (cls.model_class, cls.box_convention, cls.video_as) == (
        unit.model_class,
        unit.box_convention,
        unit.video_as,
    )
    assert cls.default_pretrained == unit.default_pretrained


def test_readme_model_table_lists_every_family():
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## Models") :].split("\n## ", 1)[0]
    for family in units():
        if MODEL_FAMILIES.origin(family).startswith("harness.models."):  # not a plugin
            assert f"`{family}`" in table, f"README's Models table lacks {family}"


@pytest.mark.parametrize("family", TINY)
def test_recipe_builds_the_declared_class_and_its_real_processor(family):
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

    model, processor = real(family)
    assert type(model).__name__ == unit_of(family).model_class
    want = PROCESSOR_MAPPING_NAMES[model.config.model_type]
    assert want in [c.__name__ for c in type(processor).__mro__]
    for name in unit_of(family).visual_tokens:
        assert isinstance(attrgetter(name)(processor), int)


@pytest.mark.parametrize("family", TINY)
def test_layout_kind_counts_the_released_processors_tokens(family):
    """640×480 at real geometry: the kind's footprints are exactly the visual positions."""
    model, processor = real(family)
    adapter = MODEL_FAMILIES.get(family).from_parts(model, processor)
    request = Request("What is it?", images=(Image.new("RGB", (640, 480), (9, 9, 9)),))
    ids = adapter.encode([request])["input_ids"][0].tolist()
    wanted = set(adapter.visual_token_ids())
    placeholders = [i for i, t in enumerate(ids) if t in wanted]
    found = adapter.token_footprints(request)
    assert found.positions.tolist() == placeholders
    assert len(placeholders) == ROWS[family].tokens_640x480
    assert list(adapter.token_spans(request).visual) == placeholders


@pytest.mark.parametrize("family", TINY)
def test_prepared_inputs_run_the_probes_prefill(family):
    """What ``prepare`` gives runs the prefill rank and diagnose make (no training labels)."""
    from harness.testing.tiny import tiny_adapter

    adapter = tiny_adapter(family)
    request = Request("What is it?", images=(Image.new("RGB", (64, 48), (9, 9, 9)),))
    inputs = adapter.prepare([request])
    assert "labels" not in inputs
    with torch.no_grad():
        out = adapter.model(**inputs, use_cache=False, logits_to_keep=1)
    assert out.logits.shape[:2] == (1, 1)


@pytest.mark.parametrize("family", [f for f in TINY if "video" not in unit_of(f).capabilities])
def test_video_refused_without_the_capability(family):
    from harness.api.payloads import Video
    from harness.testing.tiny import tiny_adapter

    frames = (Image.new("RGB", (64, 48)),) * 2
    request = Request("What happens?", video=Video(frames, (0, 1), fps=1.0))
    with pytest.raises(UsageError, match="takes no video"):
        tiny_adapter(family).encode([request])


def test_tiny_true_builds_the_recipe_at_real_geometry():
    adapter = load_adapter(ModelSpec("llava", args={"tiny": True}))
    model, _ = real("llava")
    assert type(adapter.model).__name__ == "LlavaForConditionalGeneration"
    for (name, ours), (_, ref) in zip(
        adapter.model.state_dict().items(), model.state_dict().items(), strict=True
    ):
        assert torch.equal(ours, ref), name
    assert adapter.processor.image_processor.crop_size["height"] == 336
    settings = adapter.settings()
    assert settings["pretrained"] == "tiny-random:llava" and settings["args"] == {"tiny": True}
    other = load_adapter(ModelSpec("llava", args={"tiny": True, "seed": 1}))
    assert other.settings()["pretrained"] == "tiny-random:llava:seed=1"
    weight = "model.language_model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(other.model.state_dict()[weight], model.state_dict()[weight])


def test_tiny_true_refusals():
    with pytest.raises(SpecError, match="takes no other --model-args"):
        load_adapter(ModelSpec("llava", args={"tiny": True, "max_pixels": 4}))
    with pytest.raises(SpecError, match="exclude each other"):
        load_adapter(ModelSpec("llava", pretrained="/x", args={"tiny": True}))
    with pytest.raises(UsageError, match="no tiny recipe"):
        load_adapter(ModelSpec("toy", args={"tiny": True}))


def test_an_hf_adapter_without_a_unit_gives_no_maps():
    """A plugin's HFAdapter without a unit (nor footprints of its own) gets the maps note."""
    from harness.probes.maps import supports_maps

    class Bare(HFAdapter):
        def token_spans(self, request, evidence=None):
            raise NotImplementedError

    model, processor = real("llava")
    assert not supports_maps(Bare.from_parts(model, processor))
    assert supports_maps(MODEL_FAMILIES.get("llava").from_parts(model, processor))
