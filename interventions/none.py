"""The baseline: no intervention.

It still runs through headscope's attention dispatch with an empty plan (which
reproduces plain ``sdpa`` exactly), so the baseline and every intervention run
under the same attention implementation and are comparable.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from harness.api.intervention import Intervention
from harness.api.registry import intervention


@intervention("none")
@dataclass(frozen=True)
class NoIntervention(Intervention):
    """Leave the model as it is (the comparable baseline)."""

    def vision_use(self) -> Literal["none", "reads", "writes"]:
        """Nothing is changed: the vision tower's features are reused (``"none"``)."""
        return "none"

    @contextmanager
    def attach(self, adapter: Any) -> Iterator[dict[str, Any]]:
        """Yield without changing anything."""
        yield {"name": "none"}
