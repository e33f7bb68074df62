"""Module diagnostics (paper B): RID and MixIG per layer and module, and their aggregates.

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
module) pair appears once. Files of one model under different settings or variants are
shown apart, never averaged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaderboards.formatting import Column, Table
from leaderboards.labels import MODEL_COLUMNS, model_cells, model_display, model_names
from leaderboards.settings import (
    MergeError,
    check_unique,
    combine,
    config_key,
    flatten,
    model_label,
    model_settings,
    settings_note,
    settings_row,
    split_settings,
)

__all__ = [
    "DIAGNOSTICS_SCHEMA",
    "DIAGNOSTICS_VERSION",
    "MODULES",
    "LAYER_FIELDS",
    "Diagnostics",
    "parse_diagnostics",
    "unique_diagnostics",
    "diagnostics_table",
    "diagnostics_summary_table",
]

DIAGNOSTICS_SCHEMA = "headscope.diagnostics"
DIAGNOSTICS_VERSION = 1
MODULES = ("attention", "ffn")
VARIANTS = ("paper", "code")
LAYER_FIELDS = ("erank_in", "erank_out", "dS", "dD", "RID", "TME_in", "TME_out", "MixIG")
_ALIASES = {"eRank_in": "erank_in", "eRank_out": "erank_out"}


@dataclass(frozen=True)
class Diagnostics:
    """One parsed diagnose file.

    Attributes:
        path: Where it was read from.
        model: Model display name.
        config: Flat settings (model settings, ``settings``) — the variant is kept apart.
        variant: ``paper`` or ``code``.
        layers: Rows ``{"layer", "module", *LAYER_FIELDS}`` sorted by (layer, module).
        baselines: ``{name: {"RID": f, "MixIG": f}}``.
        erope_floor: ε_RoPE, or None.
        n_samples: Samples averaged, or None.
        display: Short model name (:func:`leaderboards.labels.model_display`).
    """

    path: Path
    model: str
    config: dict[str, Any]
    variant: str
    layers: tuple[dict[str, Any], ...]
    baselines: dict[str, dict[str, float]]
    erope_floor: float | None
    n_samples: int | None
    display: str = ""


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise MergeError(f"{where}: expected a number, got {value!r}")
    return float(value)


def _layer_row(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise MergeError(f"{where}: expected an object")
    raw = {_ALIASES.get(k, k): v for k, v in raw.items()}
    module = raw.get("module")
    if module not in MODULES:
        raise MergeError(f"{where}: module must be one of {MODULES}, got {module!r}")
    layer = raw.get("layer")
    if isinstance(layer, bool) or not isinstance(layer, int) or layer < 0:
        raise MergeError(f"{where}: layer must be an integer ≥ 0, got {layer!r}")
    missing = [k for k in LAYER_FIELDS if k not in raw]
    if missing:
        raise MergeError(f"{where}: lacks {missing}")
    row = {"layer": layer, "module": module}
    row.update({k: _number(raw[k], f"{where}.{k}") for k in LAYER_FIELDS})
    return row


def parse_diagnostics(doc: Any, path: str | Path = "diagnostics") -> Diagnostics:
    """Validate a diagnose document (layout in the module docstring).

    Raises:
        leaderboards.sources.MergeError: Wrong schema/version or a malformed field.
    """
    path = Path(path)
    if not isinstance(doc, dict) or doc.get("schema") != DIAGNOSTICS_SCHEMA:
        raise MergeError(f"{path}: not a diagnose file (schema != {DIAGNOSTICS_SCHEMA})")
    if doc.get("schema_version") != DIAGNOSTICS_VERSION:
        raise MergeError(
            f"{path}: diagnostics schema_version {doc.get('schema_version')!r} is not "
            f"supported (expected {DIAGNOSTICS_VERSION})"
        )
    variant = doc.get("variant")
    if variant not in VARIANTS:
        raise MergeError(f"{path}: variant must be one of {VARIANTS}, got {variant!r}")
    layers = doc.get("layers")
    if not isinstance(layers, list) or not layers:
        raise MergeError(f"{path}: 'layers' must be a non-empty list")
    rows = [_layer_row(r, f"{path}: layers[{i}]") for i, r in enumerate(layers)]
    keys = [(r["layer"], r["module"]) for r in rows]
    if len(set(keys)) != len(keys):
        raise MergeError(f"{path}: a (layer, module) pair appears twice")
    baselines = {}
    for name, vals in (doc.get("baselines") or {}).items():
        if not isinstance(vals, dict):
            raise MergeError(f"{path}: baselines.{name} must be an object")
        missing = [k for k in ("RID", "MixIG") if k not in vals]
        if missing:
            raise MergeError(f"{path}: baselines.{name} lacks {missing}")
        baselines[str(name)] = {
            k: _number(vals[k], f"{path}: baselines.{name}.{k}") for k in ("RID", "MixIG")
        }
    floor = doc.get("erope_floor")
    return Diagnostics(
        path=path,
        model=model_label(doc.get("model")),
        config=combine(model_settings(doc.get("model")), flatten(doc.get("settings") or {})),
        variant=variant,
        layers=tuple(sorted(rows, key=lambda r: (r["layer"], MODULES.index(r["module"])))),
        baselines=baselines,
        erope_floor=None if floor is None else _number(floor, f"{path}: erope_floor"),
        n_samples=doc.get("n_samples"),
        display=model_display(doc.get("model")),
    )


def unique_diagnostics(files: Sequence[Diagnostics]) -> list[Diagnostics]:
    """Diagnostics with exact duplicates dropped; conflicting duplicates raise MergeError."""

    def key(d: Diagnostics) -> tuple:
        return (d.model, config_key(d.config), d.variant)

    def same(a: Diagnostics, b: Diagnostics) -> bool:
        return (a.layers, a.baselines, a.erope_floor) == (b.layers, b.baselines, b.erope_floor)

    out = check_unique(files, key, same, lambda d: f"diagnostics of {d.model} in {d.path}")
    return sorted(out, key=key)


def _head(differing: Sequence[str]) -> list[Column]:
    return [*MODEL_COLUMNS, *(Column(f"set:{key}", key) for key in differing), Column("variant")]


def _names(files: Sequence[Diagnostics]) -> dict[str, str]:
    return model_names((d.model, d.display or d.model) for d in files)


def diagnostics_table(files: Sequence[Diagnostics]) -> Table:
    """Per layer and module: eRank in/out, ΔS, ΔD, RID, TME in/out and MixIG."""
    files = unique_diagnostics(files)
    differing, common = split_settings(d.config for d in files)
    names = _names(files)
    rows = [
        {**model_cells(d.model, names), **settings_row(d.config, differing), "variant": d.variant}
        | r
        for d in files
        for r in d.layers
    ]
    columns = _head(differing) + [Column("layer", kind="int"), Column("module")]
    titles = {"dS": "ΔS", "dD": "ΔD", "erank_in": "eRank in", "erank_out": "eRank out"}
    columns += [Column(k, titles.get(k, k.replace("_", " ")), "float") for k in LAYER_FIELDS]
    notes = ["RID = ΔS + ΔD (innovation); MixIG = TME(out) − TME(in) (reconfiguration)."]
    notes += [n for n in [settings_note(common)] if n]
    return Table(
        "diagnostics", "Module diagnostics per layer", tuple(columns), tuple(rows), tuple(notes)
    )


def diagnostics_summary_table(files: Sequence[Diagnostics]) -> Table:
    """Mean RID / MixIG per module over layers, with the stochastic baselines and ε_RoPE."""
    files = unique_diagnostics(files)
    differing, common = split_settings(d.config for d in files)
    rows, names = [], _names(files)
    for d in files:
        head = {**model_cells(d.model, names), **settings_row(d.config, differing)}
        head["variant"] = d.variant
        for module in MODULES:
            sel = [r for r in d.layers if r["module"] == module]
            if sel:
                rows.append(
                    {
                        **head,
                        "component": module,
                        "RID": sum(r["RID"] for r in sel) / len(sel),
                        "MixIG": sum(r["MixIG"] for r in sel) / len(sel),
                        "layers": len(sel),
                    }
                )
        for name, vals in sorted(d.baselines.items()):
            rows.append({**head, "component": name, **vals})
        if d.erope_floor is not None:
            rows.append({**head, "component": "erope_floor", "RID": d.erope_floor})
    columns = _head(differing) + [
        Column("component"),
        Column("RID", kind="float"),
        Column("MixIG", kind="float"),
        Column("layers", kind="int"),
    ]
    notes = [
        "Module rows: mean over layers. Paper B reference (RID / MixIG): Noise-Δ 0.61 / −0.80, "
        "Noise-QKV 0.44 / −0.50, attention 0.06 / 0.61, FFN 0.21 / 0.02; ε_RoPE 0.062."
    ]
    notes += [n for n in [settings_note(common)] if n]
    return Table(
        "diagnostics_summary",
        "Module diagnostics summary",
        tuple(columns),
        tuple(rows),
        tuple(notes),
    )
