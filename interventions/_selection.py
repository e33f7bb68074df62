"""Head selection shared by ``ablate`` and ``hybrid``: top/bottom by ranking, random, explicit.

Units are query heads (``granularity="head"``) or KV groups (``"kv_group"``: all query
heads that share one KV head). ``k`` counts units: a whole count, or a fraction of all units
(L·H heads, or L·H_kv groups) rounded up — the rule of :meth:`harness.api.heads.Geometry.count`.
A KV group's score is the mean of its query heads' scores. Random draws use
``numpy.random.default_rng([seed, draw])``: the same seed and draw give the same heads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.api.heads import Geometry, Head
from harness.api.intervention import InterventionError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["load_scores", "model_of", "parse_head_list", "select_units", "expand_units"]


def parse_head_list(items: Any, geometry: Geometry, who: str) -> list[Head]:
    """Parse ``["L12H3", ...]`` and check each head exists in ``geometry``."""
    if isinstance(items, str):
        items = items.replace(";", " ").replace("+", " ").split()
    heads = []
    for text in items or ():
        try:
            heads.append(geometry.check(Head.parse(str(text))))
        except ValueError as err:
            raise InterventionError(f"{who}: {err}") from None
    return sorted(set(heads))


def model_of(adapter: Any) -> dict[str, Any] | None:
    """The adapter's family and checkpoint (``settings()``), or None when it records neither."""
    settings = getattr(adapter, "settings", None)
    try:
        found = dict(settings()) if callable(settings) else {}
    except Exception:  # noqa: BLE001 - a test double without settings: nothing to compare
        return None
    model = {k: found[k] for k in ("family", "pretrained") if found.get(k) is not None}
    return model or None


def _checkpoint(value: Any) -> str:
    """A checkpoint by its last path component: a moved local copy is the same checkpoint."""
    return str(value).rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]


def _check_model(ranking: Any, model: dict[str, Any], path: str, who: str) -> None:
    made = ranking.model if isinstance(ranking.model, dict) else {}
    for key, same in (("family", str), ("pretrained", _checkpoint)):
        if made.get(key) is None or model.get(key) is None:
            continue  # not recorded: nothing to compare
        if same(made[key]) != same(model[key]):
            raise InterventionError(
                f"{who}: ranking {path!r} was made for {key} {made[key]!r}, the model is "
                f"{model[key]!r}; rank this model (headscope rank), or pass "
                "foreign_ranking=true to apply it anyway"
            )


def load_scores(
    path: str,
    task: str | None,
    geometry: Geometry,
    who: str,
    model: dict[str, Any] | None = None,
    foreign: bool = False,
) -> np.ndarray:
    """The ``[L, H]`` ranking matrix of ``task`` (None: combined) from a ranking file.

    Any head-set file (:mod:`harness.schema.headset_readers`: ``headscope heads`` files,
    SparseMM scores, a DuoAttention pattern, a plain list) is taken too: its scores on the
    model's query heads (a set without scores: 1 for its heads, 0 for the others).

    Args:
        path: The ranking (or head-set) file.
        task: Its task to use; None: combined.
        geometry: The model's geometry (the ranking's L×H must match).
        who: The intervention, for messages.
        model: The model's ``family`` and ``pretrained`` (:func:`model_of`); a ranking that
            records another family or checkpoint (compared by its last path component) is
            refused unless ``foreign``. None: not compared.
        foreign: Apply a ranking made for another model of the same L×H shape.

    Raises:
        InterventionError: the file is unreadable, lacks the task, its geometry differs, or
            it was made for another model (and ``foreign`` is False).
    """
    from harness.schema.ranking import RankingFormatError, load_ranking

    kind = _head_set_kind(path)
    if kind is not None:
        return _head_set_scores(path, kind, task, geometry, who)
    try:
        ranking = load_ranking(path)
    except (OSError, RankingFormatError) as err:
        raise InterventionError(f"{who}: cannot read ranking {path!r}: {err}") from None
    grid = (ranking.num_layers, ranking.num_heads)
    if grid != (geometry.num_layers, geometry.num_heads):
        raise InterventionError(
            f"{who}: ranking {path!r} is for {grid[0]}×{grid[1]} heads, the model has "
            f"{geometry.num_layers}×{geometry.num_heads}"
        )
    if model is not None and not foreign:
        _check_model(ranking, model, path, who)
    try:
        return ranking.matrix(task)
    except KeyError as err:
        raise InterventionError(f"{who}: {err.args[0]}") from None


def _head_set_kind(path: str) -> str | None:
    """The head-set format of ``path`` when it is not a ranking file (None: read as a ranking)."""
    from pathlib import Path

    from harness.schema.headset_readers import detect_format
    from harness.schema.headsets import HeadSetError

    try:
        kind = detect_format(Path(path))
    except HeadSetError:
        return None  # unreadable or unknown: the ranking reader says why
    return None if kind == "ranking" else kind


def _head_set_scores(path: str, kind: str, task: str | None, geometry: Geometry, who: str):
    """``[L, H]`` scores of a head-set file (headscope.heads, SparseMM, DuoAttention, a list)."""
    from harness.schema.headset_readers import read_head_set
    from harness.schema.headsets import HeadSetError

    if task is not None:
        raise InterventionError(
            f"{who}: ranking_task={task!r} applies to ranking files; {path!r} is a {kind} "
            "head set (drop ranking_task)"
        )
    try:
        return read_head_set(path, kind).score_matrix(geometry)
    except HeadSetError as err:
        raise InterventionError(f"{who}: ranking {path!r}: {err}") from None


def _unit_geometry(geometry: Geometry, granularity: str) -> Geometry:
    """A geometry whose "heads" are the units (KV groups become heads of a smaller grid)."""
    if granularity == "head":
        return geometry
    g = geometry
    return Geometry(
        g.num_layers,
        g.num_kv_heads,
        g.num_kv_heads,
        g.head_dim,
        g.hidden_size,
        attention_layers=g.attention_layers,
    )


def _unit_scores(scores: np.ndarray, geometry: Geometry, granularity: str) -> np.ndarray:
    if granularity == "head":
        return scores
    g = geometry
    return scores.reshape(g.num_layers, g.num_kv_heads, g.group_size).mean(axis=-1)


def select_units(
    geometry: Geometry,
    select: str,
    k: float,
    *,
    granularity: str = "head",
    scores: np.ndarray | None = None,
    heads: list[Head] | None = None,
    seed: int = 0,
    draw: int = 0,
    who: str = "intervention",
) -> list[Head]:
    """Choose units; returns ``Head(layer, unit)`` values (unit = head or KV-group index).

    Args:
        geometry: Decoder geometry.
        select: ``top``/``bottom`` (need ``scores``), ``random`` or ``heads`` (explicit).
        k: Count or fraction of units (ignored for ``heads``).
        granularity: ``head`` or ``kv_group``.
        scores: ``[L, H]`` ranking matrix for top/bottom.
        heads: Explicit query heads for ``heads`` (mapped to their groups for kv_group).
        seed: Random seed.
        draw: Random draw index.
        who: Intervention name for messages.

    Returns:
        Selected units in selection order (best first for top, lowest first for bottom,
        layer-major for random and explicit).
    """
    import numpy as np

    from harness.metrics import ram

    units = _unit_geometry(geometry, granularity)
    if select == "heads":
        if granularity == "head":
            return list(heads or [])
        return sorted({Head(h.layer, h.head // geometry.group_size) for h in heads or []})
    try:
        n = units.count(k)
    except ValueError as err:
        raise InterventionError(f"{who}: {err} ({granularity} units)") from None
    if select in ("top", "bottom"):
        if scores is None:
            raise InterventionError(f"{who}: select={select!r} needs a ranking")
        matrix = _unit_scores(np.asarray(scores, dtype=np.float64), geometry, granularity)
        pick = ram.top_heads if select == "top" else ram.bottom_heads
        if units.attention_layers is None:
            return pick(matrix, n) if n else []
        layers = set(units.head_layers)  # layers without heads are never chosen
        return [h for h in pick(matrix, matrix.size) if h.layer in layers][:n]
    if select == "random":
        rng = np.random.default_rng([int(seed), int(draw)])
        every = units.all_heads()  # layer-major: the same draws as L·H indices when all count
        idx = sorted(int(i) for i in rng.choice(len(every), size=n, replace=False))
        return [every[i] for i in idx]
    raise InterventionError(f"{who}: unknown select={select!r}")


def expand_units(units: list[Head], geometry: Geometry, granularity: str) -> list[Head]:
    """Query heads covered by ``units`` (identity for heads; all group members for KV groups)."""
    if granularity == "head":
        return sorted(units)
    size = geometry.group_size
    return sorted(Head(u.layer, u.head * size + j) for u in units for j in range(size))
