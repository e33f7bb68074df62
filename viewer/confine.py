"""Files a run names, read only when they are what the run may name: its own small PNGs.

A run directory is data, not code, but its files name other files (``maps.json`` names the
media it shows; a results file names its sample logs). The viewer copies media into the site it
serves, so a named path is used only when it is a relative path that stays inside the folder
it is relative to once links are resolved, names a regular file (not a device, FIFO or
folder), holds at most :data:`MAX_MEDIA_BYTES` and starts with the PNG signature. Anything
else is refused with :class:`Refused`, whose message says why; callers show the sample
without that medium and print a warning. The copy itself re-checks the open file and stops at
the bound, so a file that grows or is swapped between the check and the copy is not copied
either. Names from a run become file names only through :func:`slug`.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

__all__ = ["MAX_MEDIA_BYTES", "Refused", "inside", "copy_bounded", "slug"]

#: The largest medium copied into a site (a 1024-px RGBA PNG is at most ~4 MiB).
MAX_MEDIA_BYTES = 16 << 20
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Refused(ValueError):
    """A path a run names that the viewer does not read (the message says why)."""


def inside(root: str | Path, rel: str | Path) -> Path:
    """The real path of ``root / rel`` when it is a regular file inside ``root``.

    Args:
        root: The folder ``rel`` is relative to (a run or maps folder).
        rel: The path as the run's file names it.

    Raises:
        Refused: ``rel`` is absolute, leads out of ``root`` (``..`` or a link), does not exist
            or is not a regular file, or is larger than :data:`MAX_MEDIA_BYTES`.
    """
    name = Path(str(rel))
    if name.is_absolute() or ".." in name.parts or not str(rel):
        raise Refused(f"{str(rel)!r} is not a relative path inside {str(root)!r}")
    top = Path(root).resolve()
    real = (top / name).resolve()
    if not real.is_relative_to(top):
        raise Refused(f"{str(rel)!r} links to {str(real)!r}, outside {str(root)!r}")
    try:
        info = real.stat()
    except OSError as err:
        raise Refused(f"{str(rel)!r} cannot be read ({err.strerror or err})") from err
    _check(info, rel)
    return real


def _check(info: os.stat_result, rel: str | Path) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{str(rel)!r} is not a regular file")
    if info.st_size > MAX_MEDIA_BYTES:
        raise Refused(f"{str(rel)!r} holds {info.st_size} bytes (at most {MAX_MEDIA_BYTES})")


def copy_bounded(src: str | Path, dst: str | Path) -> None:
    """Copy the PNG ``src`` (a path :func:`inside` returned) to ``dst``, at most the bound.

    ``dst`` is written only when the whole of ``src`` was read within the bound; an existing
    ``dst`` of the same size is kept (media are written once).

    Raises:
        Refused: ``src`` is now a link, not a regular file, not a PNG, or over the bound.
    """
    src, dst = Path(src), Path(dst)
    try:
        fd = os.open(src, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise Refused(f"{str(src)!r} cannot be opened ({err.strerror or err})") from err
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        _check(info, src)
        if dst.is_file() and dst.stat().st_size == info.st_size:
            return
        body = fh.read(MAX_MEDIA_BYTES + 1)
    if len(body) > MAX_MEDIA_BYTES:
        raise Refused(f"{str(src)!r} grew past {MAX_MEDIA_BYTES} bytes while being read")
    if not body.startswith(PNG_SIGNATURE):
        raise Refused(f"{str(src)!r} is not a PNG image")
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(body)


def slug(name: str) -> str:
    """A file-name-safe form of a task or run name, distinct for distinct names.

    A name made only of ``A-Za-z0-9_.-`` (and not ``.`` or ``..``) is its own slug; any other
    gets the safe characters, ``~`` and 10 hex digits of its SHA-1, so ``"pope mini"`` and
    ``"pope_mini"`` write different files (a safe name never holds ``~``).
    """
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    if safe == name and name not in ("", ".", ".."):
        return name
    return f"{safe.strip('.')}~{hashlib.sha1(name.encode('utf-8')).hexdigest()[:10]}"
