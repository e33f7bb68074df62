"""Head sets as files: one documented per-layer JSON format (``headscope.heads``).

A head set is what a method says about the heads of one model: a score per head (RAM, a
visual-head score, a retrieval gate) and/or a chosen subset. Written by ``headscope heads
export`` / ``import``, read wherever a ranking is accepted (``ranking=FILE`` of ``ablate`` and
``hybrid``) and compared by ``headscope heads compare`` and the leaderboards::

    {"format": "headscope.heads", "version": 1,
     "name": "ram top-8 (refcocog_mini)",
     "granularity": "head",
     "geometry": {"num_layers": L, "num_units": U, "num_heads": H | null},
     "source": {"kind": "ranking" | "intervention" | "sparsemm" | "duo_attention" | "list",
                ...what it was made from: file, task, k, sparsity...},
     "layers": [{"layer": 0, "selected": [2, 5], "scores": [U floats] | null}, ...]}

- ``granularity`` is ``head`` (units are the layer's query heads, ``U = H``) or ``kv_group``
  (units are KV heads, as DuoAttention's pattern files: each unit stands for the ``H / U``
  query heads that share it; ``num_heads`` may then be unknown, null).
- ``layers`` has one entry per layer, ``0 .. L-1`` in order. ``selected`` lists the chosen
  units of the layer (0-based, sorted); ``scores`` one number per unit, higher meaning more of
  what the method looks for, or null in every layer for a set without scores (a plain list).
- Floats are written with ``repr`` precision (a round trip is exact); NaN is refused.

On a model, a set becomes ``[L, H]`` query-head scores (:meth:`HeadSet.score_matrix`): a
KV-group score is given to each of its query heads, and a set without scores scores its
selected heads 1 and the others 0 (so ``select=top`` with ``k`` = the set's size picks it).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from harness.api.errors import UsageError
from harness.api.heads import Geometry, Head

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "HEADS_FORMAT",
    "HEADS_VERSION",
    "GRANULARITIES",
    "HeadSetError",
    "HeadSet",
    "save_head_set",
    "load_head_set",
    "head_set_from_dict",
    "HeadSetComparison",
    "compare_head_sets",
]

HEADS_FORMAT = "headscope.heads"
HEADS_VERSION = 1
GRANULARITIES = ("head", "kv_group")


class HeadSetError(UsageError):
    """A head-set file (or data) that cannot be read or does not fit the model."""


@dataclass(frozen=True, eq=False)
class HeadSet:
    """Scores and/or a chosen subset of one model's attention heads.

    Attributes:
        name: A short label (shown in tables).
        num_layers: Decoder layers ``L``.
        num_units: Units per layer (query heads, or KV heads for ``kv_group``).
        granularity: ``head`` or ``kv_group``.
        scores: ``[L, U]`` float scores, or None for a set without scores.
        selected: Chosen units as ``Head(layer, unit)``, sorted.
        source: What the set was made from (kind, file, task, k...).
        num_heads: Query heads per layer where known (always for ``head``).
    """

    name: str
    num_layers: int
    num_units: int
    granularity: str = "head"
    scores: np.ndarray | None = None
    selected: tuple[Head, ...] = ()
    source: dict[str, Any] = field(default_factory=dict)
    num_heads: int | None = None

    def __post_init__(self) -> None:
        import numpy as np

        if self.granularity not in GRANULARITIES:
            raise HeadSetError(f"head set {self.name!r}: unknown granularity {self.granularity!r}")
        if self.num_layers < 1 or self.num_units < 1:
            raise HeadSetError(f"head set {self.name!r}: empty grid {self.grid}")
        if self.granularity == "head":
            object.__setattr__(self, "num_heads", self.num_units)
        if self.scores is not None:
            arr = np.asarray(self.scores, dtype=np.float64)
            if arr.shape != self.grid:
                raise HeadSetError(
                    f"head set {self.name!r}: scores of shape {arr.shape}, grid {self.grid}"
                )
            if not np.isfinite(arr).all():
                raise HeadSetError(f"head set {self.name!r}: scores must be finite numbers")
            object.__setattr__(self, "scores", arr)
        for unit in self.selected:
            if unit.layer >= self.num_layers or unit.head >= self.num_units:
                raise HeadSetError(f"head set {self.name!r}: {unit} outside the grid {self.grid}")
        object.__setattr__(self, "selected", tuple(sorted(set(self.selected))))
        if self.scores is None and not self.selected:
            raise HeadSetError(f"head set {self.name!r} has neither scores nor selected heads")

    @property
    def grid(self) -> tuple[int, int]:
        """``(L, U)``."""
        return (self.num_layers, self.num_units)

    def top(self, k: int, *, bottom: bool = False) -> HeadSet:
        """The same scores with the top (or bottom) ``k`` units selected (ties: lower index)."""
        from harness.metrics import ram

        if self.scores is None:
            raise HeadSetError(f"head set {self.name!r} has no scores to take a top-{k} from")
        total = self.num_layers * self.num_units
        if not 0 <= k <= total:
            raise HeadSetError(f"k={k} outside 0..{total} for head set {self.name!r}")
        pick = ram.bottom_heads if bottom else ram.top_heads
        return replace(self, selected=tuple(pick(self.scores, k)) if k else ())

    def _check_model(self, geometry: Geometry) -> None:
        units = geometry.num_heads if self.granularity == "head" else geometry.num_kv_heads
        if (self.num_layers, self.num_units) != (geometry.num_layers, units) or (
            self.num_heads is not None and self.num_heads != geometry.num_heads
        ):
            what = "heads" if self.granularity == "head" else "KV heads"
            raise HeadSetError(
                f"head set {self.name!r} is for {self.num_layers}×{self.num_units} {what}, "
                f"the model has {geometry.num_layers}×{units}"
            )

    def score_matrix(self, geometry: Geometry) -> np.ndarray:
        """``[L, H]`` query-head scores on a model of ``geometry`` (see the module doc)."""
        import numpy as np

        self._check_model(geometry)
        if self.scores is not None:
            units = self.scores
        else:
            units = np.zeros(self.grid)
            for unit in self.selected:
                units[unit.layer, unit.head] = 1.0
        if self.granularity == "kv_group":
            units = np.repeat(units, geometry.group_size, axis=1)
        return np.array(units, dtype=np.float64)

    def query_heads(self, geometry: Geometry | None = None) -> list[Head]:
        """The selected query heads (a KV group stands for all its query heads)."""
        if self.granularity == "head":
            return list(self.selected)
        size = geometry.group_size if geometry is not None else None
        if geometry is not None:
            self._check_model(geometry)
        elif self.num_heads is not None:
            size = self.num_heads // self.num_units
        if size is None:
            raise HeadSetError(
                f"head set {self.name!r} holds KV groups of a model whose query heads per "
                "layer are unknown; pass --num-heads when importing it"
            )
        return [Head(u.layer, u.head * size + j) for u in self.selected for j in range(size)]

    def to_dict(self) -> dict[str, Any]:
        """The file's JSON form (see the module doc)."""
        layers = []
        for layer in range(self.num_layers):
            chosen = [u.head for u in self.selected if u.layer == layer]
            row = None if self.scores is None else [float(x) for x in self.scores[layer]]
            layers.append({"layer": layer, "selected": chosen, "scores": row})
        return {
            "format": HEADS_FORMAT,
            "version": HEADS_VERSION,
            "name": self.name,
            "granularity": self.granularity,
            "geometry": {
                "num_layers": self.num_layers,
                "num_units": self.num_units,
                "num_heads": self.num_heads,
            },
            "source": dict(self.source),
            "layers": layers,
        }


def _int(value: Any, what: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise HeadSetError(f"{what} must be a whole number ≥ {minimum}, got {value!r}")
    return value


def head_set_from_dict(data: Any, where: str = "head set") -> HeadSet:
    """Build a :class:`HeadSet` from its JSON form, checking every field."""
    if not isinstance(data, dict) or data.get("format") != HEADS_FORMAT:
        raise HeadSetError(f"{where} is not a {HEADS_FORMAT} document")
    if data.get("version") != HEADS_VERSION:
        raise HeadSetError(
            f"{where}: unsupported version {data.get('version')!r} (this headscope reads "
            f"{HEADS_VERSION})"
        )
    geometry = data.get("geometry")
    layers = data.get("layers")
    if not isinstance(geometry, dict) or not isinstance(layers, list):
        raise HeadSetError(f"{where}: 'geometry' must be an object and 'layers' a list")
    n_layers = _int(geometry.get("num_layers"), f"{where}: num_layers", minimum=1)
    n_units = _int(geometry.get("num_units"), f"{where}: num_units", minimum=1)
    n_heads = geometry.get("num_heads")
    if n_heads is not None:
        n_heads = _int(n_heads, f"{where}: num_heads", minimum=1)
    if [row.get("layer") if isinstance(row, dict) else None for row in layers] != list(
        range(n_layers)
    ):
        raise HeadSetError(f"{where}: 'layers' must hold layers 0..{n_layers - 1} in order")
    rows = [row.get("scores") for row in layers]
    if any(r is None for r in rows) and not all(r is None for r in rows):
        raise HeadSetError(f"{where}: scores must be given in every layer or in none")
    scores = None
    if rows and rows[0] is not None:
        if not all(
            isinstance(r, list)
            and len(r) == n_units
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in r)
            for r in rows
        ):
            raise HeadSetError(f"{where}: each layer's scores must be {n_units} numbers")
        if not all(math.isfinite(x) for r in rows for x in r):
            raise HeadSetError(f"{where}: scores must be finite numbers")
        scores = rows
    selected = []
    for row in layers:
        chosen = row.get("selected", [])
        if not isinstance(chosen, list):
            raise HeadSetError(f"{where}: layer {row['layer']}: 'selected' must be a list")
        for unit in chosen:
            selected.append(Head(row["layer"], _int(unit, f"{where}: a selected unit")))
    source = data.get("source") or {}
    if not isinstance(source, dict):
        raise HeadSetError(f"{where}: 'source' must be an object")
    import numpy as np

    return HeadSet(
        name=str(data.get("name") or "heads"),
        num_layers=n_layers,
        num_units=n_units,
        granularity=str(data.get("granularity", "head")),
        scores=None if scores is None else np.asarray(scores, dtype=np.float64),
        selected=tuple(selected),
        source=source,
        num_heads=n_heads,
    )


def save_head_set(head_set: HeadSet, path: str | os.PathLike) -> None:
    """Write ``head_set`` to ``path`` atomically (temp file, then rename)."""
    from harness.schema.results import write_json_atomic

    write_json_atomic(path, head_set.to_dict(), allow_nan=False)


def load_head_set(path: str | os.PathLike) -> HeadSet:
    """Read a ``headscope.heads`` file.

    Raises:
        HeadSetError: unreadable, not JSON, or not a valid head-set document.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise HeadSetError(f"cannot read head set {os.fspath(path)!r}: {err}") from None
    return head_set_from_dict(data, f"head set {os.fspath(path)!r}")


@dataclass(frozen=True)
class HeadSetComparison:
    """How two head sets of one model agree, on query heads.

    Attributes:
        spearman: Spearman ρ of the two ``[L, H]`` score matrices (None: a set has no scores).
        k: Heads compared as each set's top ``k`` (a set without scores: its selected heads).
        jaccard: ``|A ∩ B| / |A ∪ B|`` of the two top-``k`` sets.
        overlap: ``|A ∩ B| / k`` (the share of one top-``k`` found in the other).
        shared: ``|A ∩ B|``.
    """

    spearman: float | None
    k: int
    jaccard: float
    overlap: float
    shared: int


def _common_geometry(a: HeadSet, b: HeadSet) -> Geometry:
    heads = {x.num_heads for x in (a, b) if x.num_heads is not None}
    if len(heads) > 1 or a.num_layers != b.num_layers:
        raise HeadSetError(
            f"head sets {a.name!r} ({a.num_layers}×{a.num_heads}) and {b.name!r} "
            f"({b.num_layers}×{b.num_heads}) are for different models"
        )
    if not heads:
        if a.num_units != b.num_units:
            raise HeadSetError(f"{a.name!r} and {b.name!r}: KV-head counts differ")
        heads = {a.num_units}  # both in KV-group units of unknown size: compare the groups
    n_heads = heads.pop()
    kv = {x.num_units for x in (a, b) if x.granularity == "kv_group"} or {n_heads}
    if len(kv) > 1 or n_heads % next(iter(kv)):
        raise HeadSetError(f"{a.name!r} and {b.name!r}: KV-head counts do not match")
    return Geometry(a.num_layers, n_heads, next(iter(kv)), 1, 1)


def _top_query_heads(head_set: HeadSet, geometry: Geometry, k: int) -> set[Head]:
    from harness.metrics import ram

    if head_set.scores is None:
        return set(head_set.query_heads(geometry))
    return set(ram.top_heads(head_set.score_matrix(geometry), k)) if k else set()


def compare_head_sets(a: HeadSet, b: HeadSet, k: int | None = None) -> HeadSetComparison:
    """Spearman ρ over scores, Jaccard and overlap of the top-``k`` query heads.

    Args:
        a: One head set.
        b: Another head set of the same model (a KV-group set is expanded to query heads).
        k: Top heads compared; None: the size of a set's selection (the larger of the two
            where both have one), which a set with scores only cannot give.

    Raises:
        HeadSetError: the sets are for different grids, or ``k`` cannot be chosen.
    """
    from harness.metrics import ram

    geometry = _common_geometry(a, b)
    if k is None:
        sizes = [len(x.query_heads(geometry)) for x in (a, b) if x.selected]
        if not sizes:
            raise HeadSetError(f"{a.name!r} and {b.name!r} select no heads: give k")
        k = max(sizes)
    if not 0 < k <= geometry.num_total_heads:
        raise HeadSetError(f"k={k} outside 1..{geometry.num_total_heads}")
    rho = None
    if a.scores is not None and b.scores is not None:
        rho = ram.spearman(a.score_matrix(geometry), b.score_matrix(geometry))
    top_a, top_b = _top_query_heads(a, geometry, k), _top_query_heads(b, geometry, k)
    shared = len(top_a & top_b)
    union = len(top_a | top_b)
    return HeadSetComparison(
        spearman=rho,
        k=k,
        jaccard=shared / union if union else math.nan,
        overlap=shared / k,
        shared=shared,
    )
