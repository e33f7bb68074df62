"""Module diagnostics (paper B): RID and MixIG per layer and module, and their aggregates.

Input: diagnose files (``headscope diagnose``), read by
:class:`harness.schema.diagnostics.DiagnosticsFile` (their layout is documented there). Files
of one model under different settings or variants are shown apart, never averaged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.schema.diagnostics import (
    LAYER_FIELDS,
    MODULES,
    DiagnosticsFile,
    DiagnosticsFormatError,
)
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
    "Diagnostics",
    "parse_diagnostics",
    "unique_diagnostics",
    "diagnostics_table",
    "diagnostics_summary_table",
]


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


def parse_diagnostics(doc: Any, path: str | Path = "diagnostics") -> Diagnostics:
    """Read a diagnose document (:class:`harness.schema.diagnostics.DiagnosticsFile`).

    Raises:
        leaderboards.sources.MergeError: Wrong schema/version or a malformed field.
    """
    path = Path(path)
    try:
        read = DiagnosticsFile.from_dict(doc, str(path))
    except DiagnosticsFormatError as exc:
        raise MergeError(str(exc)) from None
    return Diagnostics(
        path=path,
        model=model_label(read.model),
        config=combine(model_settings(read.model), flatten(read.settings)),
        variant=read.variant,
        layers=read.layers,
        baselines=read.baselines,
        erope_floor=read.erope_floor,
        n_samples=read.n_samples,
        display=model_display(read.model),
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
