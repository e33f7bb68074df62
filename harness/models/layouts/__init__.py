"""Layout kinds: where a family's visual tokens sit in the input and what pixels each one sees.

A family declares one layout kind (with its parameters) in its unit
(:class:`harness.models.unit.FamilyUnit`); the kind implements, once for every family that uses
it, the two evidence maps of :class:`~harness.models.hf.HFAdapter`:

- ``token_footprints(request)``: every visual token's position in the unpadded ``input_ids``
  and its footprint (the rectangle of original pixels whose content reaches it), from the
  processor's outputs (``input_ids``, ``*_grid_thw``) and the loaded processor's and model
  config's geometry (never a hard-coded size);
- ``token_spans(request, evidence)``: Ω(V*) is what the one evidence rule
  (:func:`harness.models.hf.overlapping`) selects from those footprints
  (:func:`harness.models.layouts.tokens.select_tokens`).

Kinds (each module documents the processors it replays):

| kind (module) | families |
|---|---|
| :class:`GridTHW` (``grid_thw``) | Qwen2/2.5/3-VL (GLM-4.1V) |
| :class:`FixedGrid` (``fixed_grid``) | LLaVA-1.5, the toy, PaliGemma, Gemma3 |
| :class:`Anyres` (``anyres``) | LLaVA-NeXT, LLaVA-OneVision |
| :class:`Tiles` (``tiles``) | InternVL, AyaVision, Idefics3, SmolVLM |
| :class:`RowBreak` (``row_break``) | Mistral3 (Pixtral) |

Each kind's test is a probe-derived oracle at real processor geometry:
``tests/integration/test_evidence_conformance.py`` holds ``token_spans`` to EQUALITY with the
positions whose decoder input changes when a white box is drawn on black media, traced through
the model's own vision tower made token-local (:mod:`harness.testing.trace`), for every
registered family with a tiny recipe; ``tests/integration/test_footprints.py`` checks that
each footprint selects its own token.
"""

from harness.models.layouts.anyres import Anyres
from harness.models.layouts.base import LayoutKind, SpatialKind
from harness.models.layouts.fixed_grid import FixedGrid
from harness.models.layouts.grid_thw import GridTHW
from harness.models.layouts.row_break import RowBreak
from harness.models.layouts.tiles import Tiles

__all__ = ["Anyres", "FixedGrid", "GridTHW", "LayoutKind", "RowBreak", "SpatialKind", "Tiles"]
