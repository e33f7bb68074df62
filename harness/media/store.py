"""Media written for viewing: one PNG per shown image, page or frame, written once."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["store_png"]


def store_png(image: Any, target: str | os.PathLike, max_side: int) -> tuple[int, int]:
    """Write PIL ``image`` as a PNG at ``target``, longest side at most ``max_side``.

    Written once: an existing PNG of that size is kept (a resumed run shows the same media);
    the write is atomic (temp file beside it, then rename).

    Returns:
        The stored (width, height).
    """
    from PIL import Image

    width, height = image.size
    scale = min(1.0, max_side / max(width, height))
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    path = Path(target)
    if path.exists():
        try:
            with Image.open(path) as old:
                if old.size == size:
                    return size
        except OSError:
            pass  # unreadable leftover: written again
    path.parent.mkdir(parents=True, exist_ok=True)
    mask = os.umask(0)
    os.umask(mask)
    mode = 0o666 & ~mask  # what a plain open() gives (mkstemp alone: 0600)
    out = image.convert("RGB")
    if size != (width, height):
        out = out.resize(size, Image.Resampling.BILINEAR)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            out.save(fh, format="PNG")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return size
