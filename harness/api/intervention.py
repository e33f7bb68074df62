"""The intervention interface: frozen, typed configs with an ``attach`` context.

An intervention is a frozen dataclass registered with ``@intervention(name)``.
Its fields are its typed arguments (what ``InterventionSpec.args`` holds).
``attach(adapter)`` returns a context manager that installs the intervention on
the adapter's model (through the attention dispatch) and always removes it on
exit, also when the body raises. Several interventions compose by nesting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from harness.api.errors import UsageError

if TYPE_CHECKING:
    from harness.api.model import ModelAdapter
    from harness.api.specs import InterventionSpec

__all__ = ["Intervention", "InterventionError", "build_intervention"]


class InterventionError(UsageError):
    """Bad intervention arguments, or two interventions that conflict."""


@dataclasses.dataclass(frozen=True)
class Intervention:
    """Base class of intervention configs (subclasses are frozen dataclasses)."""

    registry_name: ClassVar[str] = ""
    #: Keys of the resolved dict that count events during an attach; they are summed when one
    #: cell is attached once per batch (sample-major runs, :meth:`merge_resolved`).
    resolved_counters: ClassVar[tuple[str, ...]] = ()

    def vision_use(self) -> Literal["none", "reads", "writes"] | None:
        """How this intervention touches the vision tower (decides vision-feature reuse).

        ``none``: not at all (features computed for another cell of the batch are reused);
        ``reads``: it hooks the tower to read its pass, which does not change what the tower
        computes (the pass runs in this cell and its output serves the cells after it);
        ``writes``: it changes what the tower computes (always recomputed, never shared).
        None, the default (not declared): treated as ``writes``, so reuse is opt-in: an
        intervention that declares ``none`` or ``reads`` vouches for it, and
        ``headscope run --check-vision-reuse`` recomputes every reused pass to verify it.
        Whatever is declared, a pass is not reused when the vision side changed in a way its
        key sees, nor while a hook sits on it (:mod:`harness.models.vision_memo`).
        """
        return None

    def merge_resolved(self, total: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
        """One cell's resolved record from the records of its attaches, in order.

        Runs attach each cell's intervention once per batch; the record in the results is the
        first attach's, with :attr:`resolved_counters` summed (the same as one attach over all
        batches). The records are merged as read back from the run's per-batch records
        (:mod:`harness.run.batch_records`): JSON values, lists for tuples, string dict keys.
        """
        out = dict(total)
        for key in self.resolved_counters:
            if key in part:
                out[key] = out.get(key, 0) + part[key]
        return out

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


def build_intervention(spec: InterventionSpec, default_seed: int | None = None) -> Intervention:
    """Instantiate the registered intervention named by ``spec`` with validated args.

    Args:
        spec: Name and arguments.
        default_seed: The run's seed; it becomes the ``seed`` of an intervention that has
            one when ``spec`` does not set it (so ``--seed`` drives random draws and priors).

    Raises:
        harness.api.registry.UnknownNameError: unknown name (with suggestions).
        InterventionError: unknown or ill-typed arguments.
    """
    from harness.api.checks import TypeMismatch, check_value, hints_of
    from harness.api.registry import INTERVENTIONS

    cls = INTERVENTIONS.get(spec.name)
    if not isinstance(spec.args, dict):
        raise InterventionError(
            f"intervention {spec.name!r}: args must be a mapping, got {spec.args!r:.60}"
        )
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(spec.args) - set(fields), key=str)
    if unknown:
        raise InterventionError(
            f"intervention {spec.name!r} does not take {unknown}; "
            f"it takes {sorted(fields) or 'none'}"
        )
    args = dict(spec.args)
    if default_seed is not None and "seed" in fields and "seed" not in args:
        args["seed"] = default_seed
    hints = hints_of(cls)
    for key, value in args.items():
        try:
            check_value(value, hints.get(key, Any), f"intervention {spec.name!r}: {key}")
        except TypeMismatch as exc:
            raise InterventionError(str(exc)) from None
    try:
        return cls(**args)
    except (TypeError, ValueError) as exc:
        raise InterventionError(f"intervention {spec.name!r}: {exc}") from None
