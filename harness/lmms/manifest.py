"""The ``lmms_eval.models`` entry point: registers the ``headscope`` model with lmms-eval.

lmms-eval (≥ 0.7) builds its model registry from ``ModelManifest`` objects and loads
third-party ones from the ``lmms_eval.models`` entry-point group at import time; a
``@register_model`` decorator in a module lmms-eval never imports is not enough. The entry
point (declared in ``pyproject.toml``) names :func:`manifests`, a callable, so importing this
module stays free of lmms-eval until lmms-eval itself calls it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MODEL_ID", "CLASS_PATH", "manifests"]

MODEL_ID = "headscope"
"""Name to pass as ``--model`` to lmms-eval."""

CLASS_PATH = "harness.lmms.model.HeadscopeLMM"
"""Import path of the model class (imported lazily by lmms-eval)."""


def manifests() -> list[Any]:
    """The model manifests this plugin contributes (called by lmms-eval's registry)."""
    from lmms_eval.models.registry_v2 import ModelManifest

    return [ModelManifest(model_id=MODEL_ID, simple_class_path=CLASS_PATH)]
