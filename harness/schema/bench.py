"""Bench files: ``headscope bench NAME --json`` output and the main job's ``bench_hybrid.json``.

Every bench document carries its kind in a schema tag, version 1::

    {
      "schema": "headscope.bench_hybrid",   # headscope.bench_<kind>, kind in BENCH_KINDS
      "schema_version": 1,
      "bench": "hybrid",                    # the kind again (what older files carried alone)
      "rows": [{...}, ...],                 # one object per measurement (≥ 1)
      "model": ..., "settings": {...},      # optional: what the rows were measured on
      "details": [...]                      # optional: per-row diagnostics (bench ram)
    }

The columns of each kind's rows are documented by the bench that writes them
(:mod:`harness.bench`); :mod:`leaderboards.bench` checks the ones it shows.

Older files (written before the tag) carry only ``"bench": "hybrid"`` or ``"bench": "ram"``
(the main job's ``bench_hybrid.json``, ``bench ram --json``): they are read, with
:attr:`BenchDocument.legacy` set so readers can say so. A document without either is not a
bench file: nothing here guesses a kind from the row keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.api.errors import UsageError

__all__ = [
    "BENCH_KINDS",
    "BENCH_VERSION",
    "LEGACY_KINDS",
    "BenchDocument",
    "BenchFormatError",
    "bench_document",
    "bench_kind",
    "bench_schema",
    "is_bench_tag",
]

BENCH_KINDS = ("hybrid", "ram", "masks", "adaptive", "ttft", "decode")
BENCH_VERSION = 1
LEGACY_KINDS = ("hybrid", "ram")
"""Kinds whose untagged files (``{"bench": kind, "rows": ...}``) older headscope wrote."""
_PREFIX = "headscope.bench_"


class BenchFormatError(UsageError):
    """A bench document that does not follow its schema."""


def bench_schema(kind: str) -> str:
    """The schema tag of bench ``kind`` (``headscope.bench_<kind>``)."""
    if kind not in BENCH_KINDS:
        raise ValueError(f"unknown bench kind {kind!r} (known: {', '.join(BENCH_KINDS)})")
    return _PREFIX + kind


def bench_document(kind: str, rows: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """The tagged document of ``rows`` measured by bench ``kind``.

    ``extra``: further top-level keys (``model``, ``settings``, ``details``...).
    """
    doc = {"schema": bench_schema(kind), "schema_version": BENCH_VERSION, "bench": kind}
    return {**doc, "rows": rows, **extra}


def bench_kind(doc: Any) -> str | None:
    """The kind a document declares: its tag, else (older files) a legacy ``bench`` key.

    Returns None for anything else, a tag of an unknown kind included (:meth:`from_dict`
    says what is wrong with it).
    """
    if not isinstance(doc, dict):
        return None
    tag = doc.get("schema")
    if isinstance(tag, str) and tag.startswith(_PREFIX):
        kind = tag.removeprefix(_PREFIX)
        return kind if kind in BENCH_KINDS else None
    if tag is None and doc.get("bench") in LEGACY_KINDS and isinstance(doc.get("rows"), list):
        return str(doc["bench"])
    return None


def is_bench_tag(doc: Any) -> bool:
    """True when ``doc`` carries a ``headscope.bench_*`` tag (known kind or not)."""
    return isinstance(doc, dict) and str(doc.get("schema", "")).startswith(_PREFIX)


@dataclass(frozen=True)
class BenchDocument:
    """One bench file, read.

    Attributes:
        kind: One of :data:`BENCH_KINDS`.
        rows: The measurement rows as written.
        model: The model the rows were measured on, when recorded (a name or an object).
        settings: Top-level settings (``{}`` when none).
        extra: Every other top-level key (``details``...).
        legacy: True for an untagged file of an older headscope.
    """

    kind: str
    rows: tuple[dict[str, Any], ...]
    model: Any = None
    settings: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    legacy: bool = False

    @classmethod
    def from_dict(cls, doc: Any, where: str = "bench file") -> BenchDocument:
        """Read a bench document (tagged, or untagged with a legacy ``bench`` key).

        Raises:
            BenchFormatError: Not a bench document, an unknown kind or version, a ``bench``
                key that contradicts the tag, or rows that are not a non-empty list of
                objects.
        """
        if not isinstance(doc, dict):
            raise BenchFormatError(f"{where}: expected a JSON object")
        tag = doc.get("schema")
        if is_bench_tag(doc) and bench_kind(doc) is None:
            raise BenchFormatError(
                f"{where}: unknown bench schema {tag!r} (known: "
                f"{', '.join(_PREFIX + k for k in BENCH_KINDS)})"
            )
        kind = bench_kind(doc)
        if kind is None:
            raise BenchFormatError(
                f'{where}: not a headscope bench file (no "schema": "{_PREFIX}<kind>"); '
                "rerun the bench with --json, which tags its output"
            )
        legacy = tag is None
        if not legacy:
            version = doc.get("schema_version")
            if version != BENCH_VERSION:
                raise BenchFormatError(
                    f"{where}: {tag} schema_version {version!r} is not supported (expected "
                    f"{BENCH_VERSION}; a newer headscope wrote it?)"
                )
            if doc.get("bench", kind) != kind:
                raise BenchFormatError(f"{where}: 'bench' {doc['bench']!r} contradicts {tag}")
        rows = doc.get("rows")
        if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
            raise BenchFormatError(f"{where}: 'rows' must be a non-empty list of objects")
        settings = doc.get("settings") or {}
        if not isinstance(settings, dict):
            raise BenchFormatError(f"{where}: 'settings' must be an object")
        known = {"schema", "schema_version", "bench", "rows", "model", "settings"}
        return cls(
            kind=kind,
            rows=tuple(rows),
            model=doc.get("model"),
            settings=settings,
            extra={k: v for k, v in doc.items() if k not in known},
            legacy=legacy,
        )

    def to_dict(self) -> dict[str, Any]:
        """The tagged document (an untagged file read back gets its tag)."""
        top: dict[str, Any] = {}
        if self.model is not None:
            top["model"] = self.model
        if self.settings:
            top["settings"] = self.settings
        return bench_document(self.kind, list(self.rows), **top, **self.extra)
