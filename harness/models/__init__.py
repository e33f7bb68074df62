"""Model adapters: one module per family, each a self-describing unit.

A family module registers an adapter with ``@model_family("<family>")`` and declares its
:class:`~harness.models.unit.FamilyUnit` (transformers class, layout kind and parameters, box
convention with its source, chat quirks, capabilities, SAP pixel priors, tiny recipe).
Registry discovery imports every public module below this package (no list names the
families); everything that needs the families asks :mod:`harness.models.unit`.

- ``hf.py``: the shared HF base (:class:`~harness.models.hf.HFAdapter`): loading (or
  ``tiny=true``), chat rendering, batching, generation, and ``token_spans`` /
  ``token_footprints`` from the unit's layout kind;
- ``layouts/``: the layout kinds (``grid_thw``, ``fixed_grid``, ``anyres``, ``tiles``) and the
  pixel geometry and token layouts they share (:mod:`~harness.models.layouts.geometry`,
  :mod:`~harness.models.layouts.tokens`);
- ``tiny.py``: tiny random instances from the units' recipes;
- ``offline/``: the processors that need no download (byte tokenizer, PIL video stand-ins,
  each family's tiny config and processor).

A family of a known layout kind is three files: its module, one row of
``tests/integration/family_table.py`` and the README's model-table row
(docs/adding_a_family.md).
"""
