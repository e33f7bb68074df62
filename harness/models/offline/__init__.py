"""Offline processors: a family's real ``transformers`` processor class without downloads.

What a processor needs from the hub is replaced by pieces built here, so a random-weight model
(``headscope bench ttft``, the tiny models of :mod:`harness.models.tiny`) gets real
preprocessing on any machine:

- :mod:`~harness.models.offline.tokenizer`: a byte-level tokenizer whose special tokens sit at
  fixed ids (:func:`~harness.models.offline.tokenizer.special_token_ids`), and the chat
  templates;
- :mod:`~harness.models.offline.video`: PIL stand-ins for the video processors that need
  torchvision, and the class wrapper that lets a processor accept them;
- :mod:`~harness.models.offline.qwen`, :mod:`~harness.models.offline.llava`,
  :mod:`~harness.models.offline.internvl`: each family's tiny config and offline processor
  (the families' :class:`~harness.models.unit.TinyRecipe` point at them).

Light at import: transformers, tokenizers, numpy and PIL load inside the functions.
"""
