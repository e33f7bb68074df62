"""Lazy image handles and image decoding for tasks (re-exported by :mod:`tasks.common.loading`).

PIL and ``datasets`` are imported inside functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.api.task import SampleError

__all__ = ["RowImage", "lazy_media", "to_pil", "open_image", "image_size", "resolve_path"]


@dataclass(frozen=True, eq=False, slots=True)
class RowImage:
    """A lazy image: ``column`` of row ``index`` of a loaded table, read when needed.

    Holding these instead of decoded images keeps a 9k-row split at a few MB: the table is
    the memory-mapped Arrow dataset returned by :func:`lazy_media`.
    """

    table: Any = field(repr=False)
    index: int
    column: str

    def raw(self) -> Any:
        """The stored value (``{"bytes", "path"}`` dict, bytes or path string)."""
        return self.table[self.index][self.column]


def lazy_media(rows: Any, columns: Sequence[str]) -> tuple[Any, Any]:
    """Split a ``datasets.Dataset`` into (metadata rows, undecoded media table).

    Iterating the metadata never decodes images; image features of the media table are cast
    to ``decode=False`` so :class:`RowImage` reads only the bytes of the row it needs.
    """
    import datasets

    present = [c for c in columns if c in rows.column_names]
    media = rows.select_columns(present)
    for col in present:
        if isinstance(media.features[col], datasets.Image):
            media = media.cast_column(col, datasets.Image(decode=False))
    return rows.remove_columns(present), media


def _open_source(value: Any, where: str) -> tuple[Any, str]:
    import io

    from PIL import Image

    if isinstance(value, RowImage):
        value = value.raw()
    if isinstance(value, Image.Image):
        return value, where
    source: Any = value
    name = where
    if isinstance(value, Mapping):
        source = value.get("bytes") or value.get("path")
        name = f"{where} ({value.get('path')})" if value.get("path") else where
    if isinstance(source, str | Path):
        name = str(source)
        if not Path(source).is_file():
            raise SampleError(f"{where}: image file {name!r} not found")
        return source, name
    if isinstance(source, bytes | bytearray):
        return io.BytesIO(source), name
    raise SampleError(f"{where}: no image data (got {type(value).__name__})")


def _reason(exc: BaseException) -> str:
    """Why a file could not be decoded, for the error naming it.

    PIL raises many types: unidentified format, truncated data, malformed chunks, and
    DecompressionBombError for a header claiming over 2 × ``Image.MAX_IMAGE_PIXELS`` pixels.
    """
    from PIL import Image

    if isinstance(exc, Image.DecompressionBombError):
        return f"image too large to decode safely ({exc})"
    return f"{type(exc).__name__}: {exc}"


def to_pil(value: Any, where: str) -> Any:
    """A PIL RGB image from a PIL image, :class:`RowImage`, bytes, ``{"bytes", "path"}`` or path.

    Raises:
        SampleError: naming the file (or the row) when it is missing or unreadable.
    """
    from PIL import Image

    source, name = _open_source(value, where)
    if isinstance(source, Image.Image):
        return source.convert("RGB") if source.mode != "RGB" else source
    try:
        with Image.open(source) as img:
            return img.convert("RGB")
    except Exception as exc:  # noqa: BLE001 - any decoding failure means an unreadable file
        raise SampleError(f"{where}: cannot read image {name!r}: {_reason(exc)}") from None


def open_image(value: Any, where: str, root: str | None = None) -> Any:
    """:func:`to_pil` after resolving a :class:`RowImage` and relative paths on ``root``."""
    if isinstance(value, RowImage):
        value = value.raw()
    return to_pil(resolve_path(value, root), where)


def image_size(value: Any, where: str) -> tuple[int, int]:
    """(width, height) of an image source, reading only the file header when possible."""
    from PIL import Image

    source, name = _open_source(value, where)
    if isinstance(source, Image.Image):
        return source.size
    try:
        with Image.open(source) as img:
            return img.size
    except Exception as exc:  # noqa: BLE001 - any decoding failure means an unreadable file
        raise SampleError(f"{where}: cannot read image {name!r}: {_reason(exc)}") from None


def resolve_path(value: Any, root: str | None) -> Any:
    """Join a relative path string (or a ``{"path"}`` without bytes) onto ``root``."""
    if root is None:
        return value
    if isinstance(value, str) and not Path(value).is_absolute():
        return str(Path(root) / value)
    if isinstance(value, Mapping) and not value.get("bytes") and value.get("path"):
        return str(Path(root) / str(value["path"]))
    return value
