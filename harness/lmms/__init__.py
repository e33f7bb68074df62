"""lmms-eval plugin: evaluate any headscope model family, with any intervention, in lmms-eval.

Install with ``pip install 'headscope[lmms]'`` (see ``docs/lmms_eval.md``). lmms-eval finds the
model through the ``lmms_eval.models`` entry-point group (:mod:`harness.lmms.manifest`), then
imports :class:`harness.lmms.model.HeadscopeLMM`. This package's ``__init__`` imports nothing
heavy: lmms-eval and torch are only imported by :mod:`harness.lmms.model`.
"""
