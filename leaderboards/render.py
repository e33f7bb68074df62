"""One table in any of the output forms (:data:`leaderboards.formatting.FORMATS`)."""

from __future__ import annotations

from leaderboards.formatting import Table, to_csv, to_json, to_markdown, to_terminal
from leaderboards.latex import to_latex

__all__ = ["render"]

_RENDERERS = {
    "md": to_markdown,
    "csv": to_csv,
    "json": to_json,
    "latex": to_latex,
    "terminal": to_terminal,
}


def render(table: Table, fmt: str) -> str:
    """Render ``table`` in one of :data:`~leaderboards.formatting.FORMATS`."""
    if fmt not in _RENDERERS:
        raise ValueError(f"unknown format {fmt!r}; choose from {sorted(_RENDERERS)}")
    return _RENDERERS[fmt](table)
