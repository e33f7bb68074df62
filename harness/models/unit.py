"""A model family as one self-describing unit, and the lists every other part derives from it.

A family module declares one :class:`FamilyUnit` on its adapter class (``unit = FamilyUnit(...)``
beside ``@model_family("name")``): the transformers class, the layout kind of its visual
tokens (:mod:`harness.models.layouts`) with its parameters, how it writes boxes (and where
that convention is documented: model card, processor or the official grounding code), its
chat/render quirks, what it can be shown (images, video, pages) and whether it grounds
(boxes), which SAP pixel priors read its pixels, and a :class:`TinyRecipe` (a random instance
and an offline processor at real processor geometry).

Nothing else keeps a list of families: the offline tokenizer, the tiny builders
(:mod:`harness.models.tiny`, ``--model-args tiny=true``), SAP's pixel-prior support and the
tests all ask :func:`unit_names` / :func:`unit_of`. ``tests/unit/test_family_units.py`` checks
what cannot be derived (the class exists, the recipe builds that class, the README lists the
family, ...).

The unit is the contract a family module fulfils; :class:`~harness.models.hf.HFAdapter` reads
``model_class``, ``default_pretrained``, ``box_convention`` and ``video_as`` from it and
implements ``token_spans`` / ``token_footprints`` with the unit's layout kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from harness.api.model import BoxConvention
    from harness.models.layouts.base import LayoutKind

__all__ = [
    "CAPABILITIES",
    "FamilyUnit",
    "TinyRecipe",
    "unit_for_model",
    "unit_names",
    "unit_of",
    "units",
]

CAPABILITIES = frozenset({"image", "video", "pages", "boxes"})
"""What a family can be given (``image``, ``video``, ``pages``) and whether it grounds
(``boxes``: it writes boxes in its :attr:`FamilyUnit.box_convention`)."""


@dataclass(frozen=True)
class TinyRecipe:
    """How to build a family's tiny random instance with its real processor class, offline.

    Attributes:
        config: ``config(text, ids, geometry) -> transformers config``: ``text`` holds the tiny
            text-decoder keywords (:func:`harness.models.tiny.text_kwargs`), ``ids`` the
            offline special-token ids (:func:`~harness.models.offline.tokenizer.
            special_token_ids`), ``geometry`` is ``"tiny"`` (small towers, for fast tests) or
            ``"real"`` (the released checkpoints' tower sizes, tiles and pinpoints).
        processor: ``processor(vocab_size=512, geometry="tiny", **kw) -> processor``: the
            family's real processor class with PIL back-ends and an offline byte tokenizer
            whose special tokens sit at those ids; at ``"real"`` its resize / tile / budget
            settings are the released processor's.
        finish: Optional ``finish(model)`` run after the random init (e.g. re-initialising a
            projector that transformers initialises to zero).
    """

    config: Callable[[dict[str, Any], dict[str, int], str], Any]
    processor: Callable[..., Any]
    finish: Callable[[Any], None] | None = None


@dataclass(frozen=True)
class FamilyUnit:
    """Everything headscope needs to know about a family, declared once in its module.

    Attributes:
        model_class: The ``transformers`` class name (``LlavaForConditionalGeneration``).
        layout: The layout kind of its visual tokens, with its parameters
            (:mod:`harness.models.layouts`).
        box_convention: How its answers write ``[x1, y1, x2, y2]``
            (:data:`~harness.api.model.BoxConvention`).
        box_source: Where that convention comes from (model card, processor, official
            grounding code: repository, file and function).
        default_pretrained: Hub id (or directory) loaded when no ``pretrained`` is given.
        capabilities: Subset of :data:`CAPABILITIES`.
        video_as: ``"video"``: the processor's video path; ``"images"``: frames shown as
            consecutive images (families without one).
        visual_tokens: Processor attributes holding the ids of the tokens that carry visual
            features (``image_token_id``; ``video_token_id`` where videos have their own;
            dotted paths such as ``tokenizer.image_token_id`` where the processor's own
            ``image_token_id`` is the placeholder, Gemma 3's ``<start_of_image>``).
        chat: Chat / render quirks, for the docs (system prompt, media placement, ...).
        sap_priors: SAP pixel priors (``complexity``, ``vision``) that read this family's
            pixels (:mod:`interventions._priors`); the noise priors work everywhere.
        tiny: Its tiny recipe (None: no offline instance, e.g. the bundled toy).
    """

    model_class: str
    layout: LayoutKind
    box_convention: BoxConvention
    box_source: str
    default_pretrained: str
    capabilities: frozenset[str] = CAPABILITIES
    video_as: Literal["video", "images"] = "video"
    visual_tokens: tuple[str, ...] = ("image_token_id",)
    chat: str = ""
    sap_priors: tuple[str, ...] = ()
    tiny: TinyRecipe | None = None

    def __post_init__(self) -> None:
        unknown = set(self.capabilities) - CAPABILITIES
        if unknown:
            raise ValueError(
                f"unknown capabilities {sorted(unknown)} (known: {sorted(CAPABILITIES)})"
            )


def units() -> dict[str, FamilyUnit]:
    """``{name: unit}`` of every registered family that declares its own unit (sorted).

    A unit counts only when the registered class declares it itself (a subclass such as the
    toy must declare its own, not inherit its parent's).
    """
    from harness.api.registry import MODEL_FAMILIES

    out = {}
    for name in MODEL_FAMILIES.names():
        unit = vars(MODEL_FAMILIES.get(name)).get("unit")
        if isinstance(unit, FamilyUnit):
            out[name] = unit
    return out


def unit_names(
    *,
    capability: str | None = None,
    kind: str | None = None,
    tiny: bool | None = None,
    sap_prior: str | None = None,
) -> tuple[str, ...]:
    """Names of the registered families with a unit, filtered (sorted).

    Args:
        capability: Only families with this capability.
        kind: Only families of this layout kind (``grid_thw``, ``anyres``, ...).
        tiny: True: only families with a tiny recipe; False: only those without.
        sap_prior: Only families this SAP pixel prior supports.
    """
    if capability is not None and capability not in CAPABILITIES:
        raise ValueError(f"unknown capability {capability!r} (known: {sorted(CAPABILITIES)})")
    out = []
    for name, unit in units().items():
        if capability is not None and capability not in unit.capabilities:
            continue
        if kind is not None and unit.layout.kind != kind:
            continue
        if tiny is not None and (unit.tiny is not None) != tiny:
            continue
        if sap_prior is not None and sap_prior not in unit.sap_priors:
            continue
        out.append(name)
    return tuple(out)


def unit_of(name: str) -> FamilyUnit:
    """The unit of family ``name``.

    Raises:
        UnknownNameError: no such family (with did-you-mean).
        UsageError: the family declares no unit (a plugin adapter without one).
    """
    from harness.api.errors import UsageError
    from harness.api.registry import MODEL_FAMILIES

    unit = vars(MODEL_FAMILIES.get(name)).get("unit")
    if not isinstance(unit, FamilyUnit):
        raise UsageError(
            f"model family {name!r} declares no FamilyUnit",
            hint="declare `unit = FamilyUnit(...)` on its adapter (docs/adding_a_family.md)",
        )
    return unit


def unit_for_model(model: Any) -> str | None:
    """The family whose unit declares ``type(model).__name__`` (None: none does).

    Several families may share a class (the toy is a ``LlavaForConditionalGeneration``);
    the first in name order that has a tiny recipe wins, else the first.
    """
    cls = type(model).__name__
    hits = [n for n, u in units().items() if u.model_class == cls]
    with_tiny = [n for n in hits if units()[n].tiny is not None]
    return (with_tiny or hits or [None])[0]
