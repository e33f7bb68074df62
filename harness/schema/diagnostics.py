"""Diagnose files: ``headscope diagnose`` output (``diagnose/diagnostics_{paper,code}.json``).

The diagnose results file (written by ``headscope diagnose``), schema version 1::

    {
      "schema": "headscope.diagnostics", "schema_version": 1,
      "model": {...},            # adapter settings, as RunResults.model (family, pretrained...)
      "settings": {...},         # what changes numbers: attn_implementation, dtype, seed,
                                 # energy threshold, task / data, frames, resolution ...
      "variant": "paper" | "code",   # formula variant of ΔD and TME
      "n_samples": 32,           # optional: samples the per-layer values are averaged over
      "layers": [
        {"layer": 0, "module": "attention" | "ffn",
         "erank_in": f, "erank_out": f, "dS": f, "dD": f, "RID": f,
         "TME_in": f, "TME_out": f, "MixIG": f},
        ...
      ],
      "baselines": {"noise_delta": {"RID": f, "MixIG": f},   # optional stochastic baselines,
                    "noise_qkv": {"RID": f, "MixIG": f}},    # means over layers ({} if none)
      "erope_floor": f | null    # ε_RoPE: RID of states with vs without RoPE
    }

Per-layer values are means over samples. ``erank_in`` / ``erank_out`` may also be spelled
``eRank_in`` / ``eRank_out`` (the keys of :func:`harness.metrics.geometry.module_diagnostics`,
so its output can be written as is). Extra keys are allowed and ignored. Each (layer,
module) pair appears once.

:class:`DiagnosticsFile` reads one and checks every field; :mod:`leaderboards.diagnostics`
shows them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from harness.api.errors import UsageError

__all__ = [
    "DIAGNOSTICS_SCHEMA",
    "DIAGNOSTICS_VERSION",
    "LAYER_FIELDS",
    "MODULES",
    "VARIANTS",
    "DiagnosticsFile",
    "DiagnosticsFormatError",
]

DIAGNOSTICS_SCHEMA = "headscope.diagnostics"
DIAGNOSTICS_VERSION = 1
MODULES = ("attention", "ffn")
VARIANTS = ("paper", "code")
LAYER_FIELDS = ("erank_in", "erank_out", "dS", "dD", "RID", "TME_in", "TME_out", "MixIG")
_ALIASES = {"eRank_in": "erank_in", "eRank_out": "erank_out"}


class DiagnosticsFormatError(UsageError):
    """A diagnose document that does not follow its schema."""


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise DiagnosticsFormatError(f"{where}: expected a number, got {value!r}")
    return float(value)


def _layer_row(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise DiagnosticsFormatError(f"{where}: expected an object")
    raw = {_ALIASES.get(k, k): v for k, v in raw.items()}
    module = raw.get("module")
    if module not in MODULES:
        raise DiagnosticsFormatError(f"{where}: module must be one of {MODULES}, got {module!r}")
    layer = raw.get("layer")
    if isinstance(layer, bool) or not isinstance(layer, int) or layer < 0:
        raise DiagnosticsFormatError(f"{where}: layer must be an integer ≥ 0, got {layer!r}")
    missing = [k for k in LAYER_FIELDS if k not in raw]
    if missing:
        raise DiagnosticsFormatError(f"{where}: lacks {missing}")
    row = {"layer": layer, "module": module}
    row.update({k: _number(raw[k], f"{where}.{k}") for k in LAYER_FIELDS})
    return row


def _baselines(raw: Any, where: str) -> dict[str, dict[str, float]]:
    out = {}
    for name, vals in (raw or {}).items():
        if not isinstance(vals, dict):
            raise DiagnosticsFormatError(f"{where}: baselines.{name} must be an object")
        missing = [k for k in ("RID", "MixIG") if k not in vals]
        if missing:
            raise DiagnosticsFormatError(f"{where}: baselines.{name} lacks {missing}")
        out[str(name)] = {
            k: _number(vals[k], f"{where}: baselines.{name}.{k}") for k in ("RID", "MixIG")
        }
    return out


@dataclass(frozen=True)
class DiagnosticsFile:
    """One diagnose file, read and checked.

    Attributes:
        model: The ``model`` object as written (adapter settings), or None.
        settings: What changes numbers (``{}`` when none).
        variant: ``paper`` or ``code``.
        layers: Rows ``{"layer", "module", *LAYER_FIELDS}`` (aliases resolved, numbers as
            floats) sorted by (layer, module).
        baselines: ``{name: {"RID": f, "MixIG": f}}``.
        erope_floor: ε_RoPE, or None.
        n_samples: Samples averaged, or None.
    """

    model: Any
    settings: dict[str, Any]
    variant: str
    layers: tuple[dict[str, Any], ...]
    baselines: dict[str, dict[str, float]] = field(default_factory=dict)
    erope_floor: float | None = None
    n_samples: int | None = None

    @classmethod
    def from_dict(cls, doc: Any, where: str = "diagnostics") -> DiagnosticsFile:
        """Read a diagnose document (layout in the module docstring).

        Raises:
            DiagnosticsFormatError: Wrong schema or version, or a malformed field (the
                message starts with ``where``).
        """
        if not isinstance(doc, dict) or doc.get("schema") != DIAGNOSTICS_SCHEMA:
            raise DiagnosticsFormatError(
                f"{where}: not a diagnose file (schema != {DIAGNOSTICS_SCHEMA})"
            )
        if doc.get("schema_version") != DIAGNOSTICS_VERSION:
            raise DiagnosticsFormatError(
                f"{where}: diagnostics schema_version {doc.get('schema_version')!r} is not "
                f"supported (expected {DIAGNOSTICS_VERSION})"
            )
        variant = doc.get("variant")
        if variant not in VARIANTS:
            raise DiagnosticsFormatError(
                f"{where}: variant must be one of {VARIANTS}, got {variant!r}"
            )
        layers = doc.get("layers")
        if not isinstance(layers, list) or not layers:
            raise DiagnosticsFormatError(f"{where}: 'layers' must be a non-empty list")
        rows = [_layer_row(r, f"{where}: layers[{i}]") for i, r in enumerate(layers)]
        keys = [(r["layer"], r["module"]) for r in rows]
        if len(set(keys)) != len(keys):
            raise DiagnosticsFormatError(f"{where}: a (layer, module) pair appears twice")
        floor = doc.get("erope_floor")
        return cls(
            model=doc.get("model"),
            settings=doc.get("settings") or {},
            variant=variant,
            layers=tuple(sorted(rows, key=lambda r: (r["layer"], MODULES.index(r["module"])))),
            baselines=_baselines(doc.get("baselines"), where),
            erope_floor=None if floor is None else _number(floor, f"{where}: erope_floor"),
            n_samples=doc.get("n_samples"),
        )
