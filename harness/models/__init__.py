"""Model adapters: one module per family, registered with ``@model_family("<family>")``.

Registry discovery imports every public module below this package (no list names the
families); ``_layout.py`` holds the layout helpers several adapters share, ``hf.py`` the
shared HF base (:class:`~harness.models.hf.HFAdapter`), ``offline/`` the processors that need
no download (byte tokenizer, PIL video stand-ins).

Files to touch for a new family (docs/adding_a_family.md has the details):

1. ``harness/models/<family>.py`` — an :class:`~harness.models.hf.HFAdapter` subclass: model
   class, box convention, ``video_as``, ``token_spans`` (evidence → visual token positions),
   ``token_footprints`` (visual token → original pixels; inherited from ``LlavaAdapter``);
2. ``harness/models/offline/tokenizer.py`` ``FAMILIES`` (its special-token layout), and
   ``offline/`` pieces the family's processor needs without torchvision;
3. ``harness/testing/tiny.py`` (a tiny config) and ``harness/testing/tiny_processors.py`` (its
   processor at the tiny and the real geometry);
4. tests: adapter, evidence and conformance (``tests/integration/test_adapters_*.py``,
   ``test_evidence_*.py``, the ``FAMILIES`` of ``test_evidence_conformance.py`` and of
   ``test_sample_major.py``: vision features are reused through the model's own
   ``get_image_features`` / ``get_video_features``, :mod:`harness.models.vision_memo`);
5. ``tasks/refcocog/official.py`` and docs/scoring.md if the family releases its own grounding
   evaluator;
6. README's Models table.
"""
