"""The intervention interface: frozen, typed configs with an ``attach`` context.

An intervention is a frozen dataclass registered with ``@intervention(name)``.
Its fields are its typed arguments (what ``InterventionSpec.args`` holds).
``attach(adapter)`` returns a context manager that installs the intervention on
the adapter's model (through the attention dispatch) and always removes it on
exit, also when the body raises. Several interventions compose by nesting.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from harness.api.model import ModelAdapter
    from harness.api.specs import InterventionSpec

__all__ = ["Intervention", "InterventionError", "build_intervention"]


class InterventionError(ValueError):
    """Bad intervention arguments, or two interventions that conflict."""


@dataclasses.dataclass(frozen=True)
class Intervention:
    """Base class of intervention configs (subclasses are frozen dataclasses)."""

    registry_name: ClassVar[str] = ""

    @contextmanager
    def attach(self, adapter: ModelAdapter) -> Iterator[dict[str, Any]]:
        """Install on ``adapter.model`` for the duration of the ``with`` block.

        Yields:
            A dict describing what was applied (heads, draws, semantics), recorded
            in the results as ``intervention_resolved``.
        """
        raise NotImplementedError
        yield {}  # pragma: no cover

    def args(self) -> dict[str, Any]:
        """The config's arguments as a plain dict."""
        return dataclasses.asdict(self)


def build_intervention(spec: InterventionSpec) -> Intervention:
    """Instantiate the registered intervention named by ``spec`` with validated args.

    Raises:
        harness.api.registry.UnknownNameError: unknown name (with suggestions).
        InterventionError: unknown or ill-typed arguments.
    """
    from harness.api.registry import INTERVENTIONS

    cls = INTERVENTIONS.get(spec.name)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(spec.args) - set(fields))
    if unknown:
        raise InterventionError(
            f"intervention {spec.name!r} does not take {unknown}; "
            f"it takes {sorted(fields) or 'none'}"
        )
    hints = typing.get_type_hints(cls)
    for key, value in spec.args.items():
        _check_type(spec.name, key, value, hints.get(key))
    try:
        return cls(**spec.args)
    except (TypeError, ValueError) as exc:
        raise InterventionError(f"intervention {spec.name!r}: {exc}") from None


def _check_type(name: str, key: str, value: Any, hint: Any) -> None:
    if hint is None or hint is Any:
        return
    origin = typing.get_origin(hint)
    options = (
        typing.get_args(hint)
        if origin in (typing.Union, getattr(__import__("types"), "UnionType", None))
        else (hint,)
    )
    for opt in options:
        base = typing.get_origin(opt) or opt
        if base is typing.Literal:
            if value in typing.get_args(opt):
                return
            continue
        if opt is type(None) and value is None:
            return
        if base is float and isinstance(value, int | float) and not isinstance(value, bool):
            return
        if isinstance(base, type) and isinstance(value, base):
            return
    raise InterventionError(
        f"intervention {name!r}: argument {key}={value!r} does not match {hint}"
    )
