"""headscope's engine.

Registry, typed specs and results, model adapters, attention dispatch, token-span
mapping, metrics, evaluator and CLI.

Importing this package does no heavy work: torch, transformers and media
decoders load lazily inside the functions that need them.
"""

from harness.api.heads import Geometry, Head
from harness.api.payloads import (
    Box,
    BoxEvidence,
    Generation,
    PageEvidence,
    Request,
    TubeEvidence,
    Video,
)
from harness.api.registry import INTERVENTIONS, MODEL_FAMILIES, TASKS, intervention, model_family, task
from harness.api.specs import InterventionSpec, ModelSpec, RunSpec, TaskSpec

__version__ = "0.1.0"

__all__ = [
    "Box",
    "BoxEvidence",
    "Generation",
    "Geometry",
    "Head",
    "INTERVENTIONS",
    "InterventionSpec",
    "MODEL_FAMILIES",
    "ModelSpec",
    "PageEvidence",
    "Request",
    "RunSpec",
    "TASKS",
    "TaskSpec",
    "TubeEvidence",
    "Video",
    "__version__",
    "intervention",
    "model_family",
    "task",
]
