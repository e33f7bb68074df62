"""Attention maps (``headscope rank --maps N``) as the heads and sample pages draw them.

The maps file (:mod:`harness.schema.maps`) sits beside ``ranking.json``. Per task, the page
data holds the selected heads (why chosen, RAM rank) and per saved sample its media (PNG
paths inside the site), the ground-truth evidence regions, and for every token with a pixel
footprint its medium, footprint (original pixels of the medium), whether it is an evidence
token, and each selected head's attention on it. Tokens without a footprint (row newlines)
cannot be drawn; the share of each head's attention they hold is kept (``off``).

Every head of a sample is drawn on one colour scale: a token's colour and opacity are its
attention share (the mean over the question's rows of the post-softmax weight on it) divided
by ``scale``, the largest share any selected head puts on any drawn token of that sample. A
head that barely looks at the image is therefore drawn (nearly) empty, whatever its own peak.
Each head's ``mass`` is its total attention share on the sample's visual tokens.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

__all__ = ["find_maps", "task_maps"]


def find_maps(ranking_path: Path, warnings: list[str]) -> Any:
    """The maps saved beside ``ranking_path`` (a :class:`harness.schema.maps.Maps`), or None.

    A maps file that does not load is left out with a warning (the rest of the site is still
    built).
    """
    from harness.schema.maps import MAPS_JSON, MapsFormatError, load_maps

    path = Path(ranking_path).parent / MAPS_JSON
    if not path.is_file():
        return None
    try:
        maps = load_maps(path)
    except MapsFormatError as exc:
        warnings.append(f"{path}: attention maps left out: {exc}")
        return None
    return _Loaded(maps, path.parent, warnings)


class _Loaded:
    """A loaded maps file, the folder its media paths are relative to, the warnings list."""

    def __init__(self, maps: Any, root: Path, warnings: list[str]) -> None:
        self.maps = maps
        self.root = root
        self.warnings = warnings


def _media(loaded: _Loaded, task: str, s: Any) -> tuple[list[dict[str, Any]], str | None]:
    """A sample's media as page data, or none (and why) when one of its paths is refused.

    Each path must name a PNG inside the maps folder (:func:`viewer.confine.inside`); the
    sample's tokens index its media, so one refused medium leaves the whole sample without
    media (its scores and attention numbers are still shown).
    """
    from viewer.confine import Refused, inside

    media = []
    for m in s.media:
        try:
            real = inside(loaded.root, m.path)
        except Refused as exc:
            note = f"media left out: {exc}"
            loaded.warnings.append(f"{loaded.root / 'maps.json'}: {task} doc {s.doc_id}: {note}")
            return [], note
        media.append(
            {
                "kind": m.kind,
                "index": m.index,
                "width": m.width,
                "height": m.height,
                "file": str(real),
            }
        )
    return media, None


def _r(value: float, digits: int = 4) -> float:
    return float(f"{value:.{digits}g}")


def task_maps(loaded: Any, task: str) -> dict[str, Any] | None:
    """Page data of ``task``'s maps (None when the file has no maps for it).

    Media are given with ``file``, their checked absolute source; the site writer copies
    each file once, drops ``file`` and sets ``src``, the path inside the site. A sample whose
    media were refused has none and says why (``media_note``).
    """
    entry = loaded.maps.tasks.get(task)
    if entry is None or not entry.samples:
        return None
    heads = [{"name": h.label, "why": h.why, "rank": h.rank, "ram": _r(h.ram)} for h in entry.heads]
    samples = []
    for s in entry.samples:
        media, note = _media(loaded, task, s)
        keep = [
            i
            for i in range(len(s.positions))
            if s.token_media[i] >= 0 and all(math.isfinite(float(v)) for v in s.rects[i])
        ]
        attn = s.attn.astype("float64")
        weights, off, mass = [], [], []
        for k in range(len(entry.heads)):
            row = attn[k]
            weights.append([_r(float(row[i])) for i in keep])
            total = float(row.sum())
            mass.append(_r(total))
            off.append(_r(1.0 - float(row[keep].sum()) / total) if total > 0 else None)
        scale = max((w for ws in weights for w in ws), default=0.0)
        samples.append(
            {
                "doc_id": s.doc_id,
                "prompt": s.prompt,
                "media": media,
                "media_note": note,
                "evidence": {
                    "kind": s.evidence_kind,
                    "regions": [
                        {"media": r.media, "box": None if r.box is None else list(r.box)}
                        for r in s.regions
                    ],
                },
                "frames_per_token": s.frames_per_token,
                "tokens": {
                    "media": [int(s.token_media[i]) for i in keep],
                    "rects": [[round(float(v), 2) for v in s.rects[i]] for i in keep],
                    "evidence": [1 if s.evidence[i] else 0 for i in keep],
                },
                "attn": weights,
                "scale": scale,
                "mass": mass,
                "off": off,
                "ram": [None if math.isnan(x) else _r(x) for x in s.ram],
            }
        )
    return {"heads": heads, "samples": samples, "settings": dict(loaded.maps.settings)}
