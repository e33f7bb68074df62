"""headscope's engine: contracts, the attention dispatch, adapters, probes, benches, run engine.

The tree shows the architecture, bottom up: ``api/`` (the contracts every plug-in implements),
``attention/`` (the one registered attention function), ``models/``, ``media/``, ``metrics/``,
``schema/`` (the files later stages read), ``probes/`` and ``bench/``, ``run/`` (evaluator and
main job), ``cli/``. The public API is re-exported here lazily: ``import harness`` imports no
torch, transformers or media decoders, and no submodule until one of its names is used.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Public name -> module that defines it (resolved on first attribute access).
_EXPORTS: dict[str, str] = {
    "Box": "harness.api.payloads",
    "BoxEvidence": "harness.api.payloads",
    "Generation": "harness.api.payloads",
    "PageEvidence": "harness.api.payloads",
    "Request": "harness.api.payloads",
    "TubeEvidence": "harness.api.payloads",
    "Video": "harness.api.payloads",
    "Geometry": "harness.api.heads",
    "Head": "harness.api.heads",
    "INTERVENTIONS": "harness.api.registry",
    "MODEL_FAMILIES": "harness.api.registry",
    "TASKS": "harness.api.registry",
    "intervention": "harness.api.registry",
    "model_family": "harness.api.registry",
    "task": "harness.api.registry",
    "InterventionSpec": "harness.api.specs",
    "ModelSpec": "harness.api.specs",
    "RunSpec": "harness.api.specs",
    "TaskSpec": "harness.api.specs",
    "Task": "harness.api.task",
    "Intervention": "harness.api.intervention",
    "ModelAdapter": "harness.api.model",
    "load_adapter": "harness.api.model",
    "HFAdapter": "harness.models.hf",
    "run_grid": "harness.run.evaluator",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
