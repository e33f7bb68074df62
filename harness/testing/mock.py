"""A scripted mock model adapter.

It lets the evaluator, resume, results schema and CLI be tested without any real model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.api.model import BoxConvention, ModelAdapter
from harness.api.payloads import Generation, Request
from harness.api.specs import ModelSpec

__all__ = ["ScriptedAdapter"]


class ScriptedAdapter(ModelAdapter):
    """A model adapter whose answers come from a function of the request.

    Args:
        responder: ``request -> output text``.
        box_convention: Coordinate convention used by :meth:`parse_box`.
        fail_after: Raise ``RuntimeError`` once this many requests were answered
            (simulates a crash midway through a run).
    """

    registry_name = "mock"

    def __init__(
        self,
        responder: Callable[[Request], str],
        box_convention: BoxConvention = "normalized",
        fail_after: int | None = None,
    ) -> None:
        super().__init__(ModelSpec(name="mock"))
        self.responder = responder
        self.box_convention = box_convention  # type: ignore[misc]
        self.fail_after = fail_after
        self.calls: list[Request] = []

    def settings(self) -> dict[str, Any]:
        """Mock settings (no real model)."""
        return {
            "family": "mock",
            "pretrained": None,
            "dtype": "float32",
            "attn_implementation": "sdpa",
            "box_convention": self.box_convention,
        }

    @property
    def geometry(self) -> Any:
        """The mock has no decoder."""
        raise AttributeError("the scripted mock has no geometry")

    def generate(self, requests: list[Request]) -> list[Generation]:
        """Answer each request with ``responder(request)``."""
        out = []
        for req in requests:
            if self.fail_after is not None and len(self.calls) >= self.fail_after:
                raise RuntimeError(f"scripted crash after {self.fail_after} requests")
            self.calls.append(req)
            text = self.responder(req)
            out.append(
                Generation(
                    text=text, prompt_tokens=len(req.text.split()), output_tokens=len(text.split())
                )
            )
        return out
