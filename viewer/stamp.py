"""Whether a built site is up to date with its inputs (``view --serve`` then serves it as is).

The *fingerprint* of a build is a SHA-256 over: the site's options, every file under the
input directories (relative path, size, modification time; the site folder itself left out;
links not followed), and the viewer's own code, templates and assets (contents). It is written
to :data:`STAMP` in the site folder after a build completes, so an interrupted build never
looks current. The media of sample pages are rebuilt by the tasks (:mod:`viewer.media`); a
change to a task's code or data outside the inputs is not seen here: run ``headscope view``
without ``--serve`` to rebuild.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["STAMP", "fingerprint", "is_current", "write_stamp"]

#: File in the site folder holding the fingerprint of the build that wrote it.
STAMP = ".headscope-view.inputs"
_PACKAGE = Path(__file__).resolve().parent


def _files(root: Path, skip: Path) -> list[tuple[str, int, int]]:
    """``(path relative to root, size, mtime_ns)`` of every file under ``root`` but ``skip``."""
    if root.is_file():
        st = root.stat()
        return [(root.name, st.st_size, st.st_mtime_ns)]
    out = []
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if (here / d).resolve() != skip)
        for name in sorted(names):
            try:
                st = (here / name).lstat()
            except OSError:
                continue
            out.append(((here / name).relative_to(root).as_posix(), st.st_size, st.st_mtime_ns))
    return out


def fingerprint(inputs: Sequence[str | Path], site: str | Path, options: dict[str, Any]) -> str:
    """The fingerprint of a build of ``inputs`` into ``site`` with ``options`` (module doc)."""
    digest = hashlib.sha256()
    skip = Path(site).resolve()
    digest.update(json.dumps(options, sort_keys=True, default=str).encode())
    for raw in inputs:
        root = Path(raw)
        digest.update(f"\0input {root.resolve()}\0".encode())
        digest.update(json.dumps(_files(root, skip)).encode())
    for path in sorted(_PACKAGE.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".js", ".css", ".jinja"):
            digest.update(f"\0{path.relative_to(_PACKAGE).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def is_current(site: str | Path, value: str) -> bool:
    """Whether ``site`` holds a complete build whose fingerprint is ``value``."""
    stamp = Path(site) / STAMP
    try:
        return stamp.is_file() and stamp.read_text().strip() == value
    except OSError:
        return False


def write_stamp(site: str | Path, value: str) -> None:
    """Record ``value`` as the fingerprint of the build just written into ``site``."""
    (Path(site) / STAMP).write_text(value + "\n")
