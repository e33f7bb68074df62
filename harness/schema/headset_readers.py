"""Readers of the head sets other projects publish, and of headscope's own rankings and runs.

Each reader returns a :class:`harness.schema.headsets.HeadSet`. The foreign formats, read as
those projects' own code reads them:

- **SparseMM** visual-head scores (CR400AF-A/SparseMM@f52655b, ``visual_head/*_visual_head.py``
  writes ``json.dump(head_counter)`` with keys ``"{layer}-{head}"`` and, per key, one score per
  sample; ``sparsemm/sparsemm_utils.py`` ``init_mask`` / the KV-budget code score a head by
  ``np.mean`` of its list and rank heads by that, highest first). Query heads; no selection
  unless ``k`` is given (the top ``k`` by score).
- **DuoAttention** attention patterns (mit-han-lab/duo-attention@03dca84,
  ``duo_attn/utils.py`` ``load_attn_pattern``): ``full_attention_heads.tsv``, one row per
  layer and one tab-separated gate value per KV head, read with ``np.loadtxt`` (floats,
  tab-delimited) and clipped to ``[0, 1]``; ``config.json`` beside it gives ``sink_size`` and
  ``recent_size`` (recorded). Units are KV groups. ``sparsity=s`` selects the retrieval
  heads as ``sparsify_attention_heads`` does: gate ≥ ``np.quantile(gates, s)`` (s ≥ 1: none;
  s ≤ 0: all). The release adds uniform noise in ``[0, 1e-6)`` first to break ties; this
  reader adds none, so heads tied at the threshold are all kept (documented difference).
- **A plain list**: ``L12H3`` tokens separated by spaces, commas or new lines (``#`` starts a
  comment), or a JSON list of ``"L12H3"`` strings or ``[layer, head]`` pairs, or
  ``{"heads": [...]}``. No scores; the grid is taken from ``num_layers`` / ``num_heads`` when
  given, else from the largest indices (checked against the model when used).
"""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path
from typing import Any

from harness.api.heads import Head
from harness.schema.headsets import HEADS_FORMAT, HeadSet, HeadSetError, head_set_from_dict

__all__ = [
    "FORMATS",
    "read_sparsemm",
    "read_duo_attention",
    "read_head_list",
    "head_set_from_ranking",
    "head_set_from_results",
    "read_head_set",
    "detect_format",
    "duo_selected",
    "folder_files",
]

#: Formats ``read_head_set`` takes by name (``auto`` recognises them).
FORMATS = ("auto", "headscope", "ranking", "results", "sparsemm", "duo_attention", "list")
_SPARSEMM_KEY = re.compile(r"^(\d+)-(\d+)$")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise HeadSetError(f"cannot read {str(path)!r} as JSON: {err}") from None


def _sparsemm_data(data: Any, where: str, k: int | None, name: str | None) -> HeadSet:
    import numpy as np

    if not isinstance(data, dict) or not data:
        raise HeadSetError(f"{where}: a SparseMM head-score file is a non-empty JSON object")
    means: dict[tuple[int, int], float] = {}
    for key, values in data.items():
        match = _SPARSEMM_KEY.match(str(key))
        if not match:
            raise HeadSetError(f"{where}: key {key!r} is not 'LAYER-HEAD' (SparseMM's form)")
        values = values if isinstance(values, list) else [values]
        if not values or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values
        ):
            raise HeadSetError(f"{where}: {key!r} needs one or more numbers")
        means[(int(match.group(1)), int(match.group(2)))] = float(np.mean(values))
    n_layers = 1 + max(la for la, _ in means)
    n_heads = 1 + max(h for _, h in means)
    missing = [
        f"{la}-{h}" for la in range(n_layers) for h in range(n_heads) if (la, h) not in means
    ]
    if missing:
        raise HeadSetError(
            f"{where}: heads missing from the grid {n_layers}×{n_heads}: {missing[:5]}"
        )
    scores = np.array([[means[(la, h)] for h in range(n_heads)] for la in range(n_layers)])
    head_set = HeadSet(
        name=name or "sparsemm",
        num_layers=n_layers,
        num_units=n_heads,
        scores=scores,
        source={"kind": "sparsemm", "score": "mean over samples"},
    )
    return head_set.top(k) if k is not None else head_set


def read_sparsemm(
    path: str | os.PathLike, *, k: int | None = None, name: str | None = None
) -> HeadSet:
    """A SparseMM head-score file (see the module doc); ``k``: select the top ``k`` heads."""
    path = Path(path)
    head_set = _sparsemm_data(_read_json(path), f"{str(path)!r}", k, name or path.stem)
    return _with_source(head_set, file=str(path), k=k)


def _with_source(head_set: HeadSet, **extra: Any) -> HeadSet:
    from dataclasses import replace

    source = {**head_set.source, **{key: v for key, v in extra.items() if v is not None}}
    return replace(head_set, source=source)


def duo_selected(gates: Any, sparsity: float) -> list[Head]:
    """DuoAttention's retrieval heads at ``sparsity`` (without the release's tie noise)."""
    import numpy as np

    arr = np.asarray(gates, dtype=np.float64)
    if sparsity >= 1:
        return []
    threshold = -1.0 if sparsity <= 0 else float(np.quantile(arr, sparsity))
    return [Head(int(la), int(u)) for la, u in zip(*np.nonzero(arr >= threshold), strict=True)]


def read_duo_attention(
    path: str | os.PathLike,
    *,
    sparsity: float | None = None,
    num_heads: int | None = None,
    name: str | None = None,
) -> HeadSet:
    """A DuoAttention pattern: its folder or its ``full_attention_heads.tsv`` (module doc).

    Args:
        path: The pattern folder or the TSV file.
        sparsity: Select the retrieval heads at this sparsity (DuoAttention's rule).
        num_heads: Query heads per layer of the model, where known (recorded).
        name: Label; default the folder's name.
    """
    import numpy as np

    path = Path(path)
    tsv = path / "full_attention_heads.tsv" if path.is_dir() else path
    try:
        gates = np.loadtxt(tsv, dtype=float, delimiter="\t", ndmin=2)
    except (OSError, ValueError) as err:
        raise HeadSetError(f"cannot read DuoAttention pattern {str(tsv)!r}: {err}") from None
    if gates.size == 0 or not np.isfinite(gates).all():
        raise HeadSetError(f"{str(tsv)!r}: a DuoAttention pattern needs finite gate values")
    gates = np.clip(gates, 0, 1)
    source: dict[str, Any] = {"kind": "duo_attention", "file": str(tsv)}
    config = tsv.parent / "config.json"
    if config.is_file():
        settings = _read_json(config)
        if isinstance(settings, dict):
            for key in ("sink_size", "recent_size"):
                if key in settings:
                    source[key] = settings[key]
    if sparsity is not None:
        if not 0 <= sparsity <= 1:
            raise HeadSetError(f"sparsity must lie in [0, 1], got {sparsity}")
        source["sparsity"] = sparsity
    if num_heads is not None and num_heads % gates.shape[1]:
        raise HeadSetError(f"{num_heads} query heads do not split into {gates.shape[1]} KV heads")
    return HeadSet(
        name=name or (tsv.parent.name if tsv.name == "full_attention_heads.tsv" else tsv.stem),
        num_layers=gates.shape[0],
        num_units=gates.shape[1],
        granularity="kv_group",
        scores=gates,
        selected=tuple(duo_selected(gates, sparsity)) if sparsity is not None else (),
        source=source,
        num_heads=num_heads,
    )


def _list_items(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8") if path.is_file() else None
    if text is None:
        raise HeadSetError(f"no head list at {str(path)!r}")
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        data = _read_json(path)
        items = data.get("heads") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise HeadSetError(
                f"{str(path)!r}: expected a JSON list of heads or {{'heads': [...]}}"
            )
        return items
    lines = [line.split("#", 1)[0] for line in text.splitlines()]
    return " ".join(lines).replace(",", " ").split()


def read_head_list(
    path: str | os.PathLike,
    *,
    num_layers: int | None = None,
    num_heads: int | None = None,
    name: str | None = None,
) -> HeadSet:
    """A plain list of heads (module doc); the grid defaults to the largest indices."""
    path = Path(path)
    heads = []
    for item in _list_items(path):
        if isinstance(item, list) and len(item) == 2 and all(isinstance(x, int) for x in item):
            heads.append(Head(*item))
        elif isinstance(item, str):
            heads.append(Head.parse(item))
        else:
            raise HeadSetError(f"{str(path)!r}: {item!r} is neither 'L12H3' nor [layer, head]")
    if not heads:
        raise HeadSetError(f"{str(path)!r} lists no heads")
    return HeadSet(
        name=name or path.stem,
        num_layers=num_layers or 1 + max(h.layer for h in heads),
        num_units=num_heads or 1 + max(h.head for h in heads),
        selected=tuple(heads),
        source={"kind": "list", "file": str(path)},
    )


def head_set_from_ranking(
    path: str | os.PathLike, task: str | None = None, *, k: int | None = None
) -> HeadSet:
    """One task's mean RAM (None: the combined ranking) of a ranking file as a head set."""
    from harness.schema.ranking import load_ranking

    ranking = load_ranking(path)
    try:
        matrix = ranking.matrix(task)
    except KeyError as err:
        raise HeadSetError(str(err.args[0])) from None
    label = task or "combined"
    head_set = HeadSet(
        name=f"ram {label}",
        num_layers=ranking.num_layers,
        num_units=ranking.num_heads,
        scores=matrix,
        source={"kind": "ranking", "file": os.fspath(path), "task": label, "metric": "ram"},
    )
    return _with_source(head_set.top(k), k=k) if k is not None else head_set


def head_set_from_results(path: str | os.PathLike, cell: str) -> HeadSet:
    """The heads an intervention cell of a run applied (its ``intervention_resolved``).

    Args:
        path: A ``results.json``.
        cell: The cell's intervention label, as in the results (``ablate:k=8,select=top``).
    """
    from harness.schema.results import load_results

    results = load_results(path)
    entries = [e for e in results.entries if e.intervention == cell]
    labels = sorted({e.intervention for e in results.entries})
    if not entries:
        raise HeadSetError(f"{os.fspath(path)!r} has no cell {cell!r}; its cells: {labels}")
    resolved = entries[0].intervention_resolved
    heads = resolved.get("heads") or resolved.get("full_heads")
    if not isinstance(heads, list) or not heads:
        raise HeadSetError(f"cell {cell!r} records no head list (its intervention selects none)")
    geometry = results.model.get("geometry") or {}
    layers, per_layer = geometry.get("num_layers"), geometry.get("num_heads")
    if not layers or not per_layer:
        raise HeadSetError(f"{os.fspath(path)!r} does not record the model's geometry")
    return HeadSet(
        name=cell,
        num_layers=int(layers),
        num_units=int(per_layer),
        selected=tuple(Head.parse(h) for h in heads),
        source={"kind": "intervention", "file": os.fspath(path), "cell": cell},
    )


def folder_files(path: Path) -> list[Path]:
    """The files a head set given as the folder ``path`` is read from ([] if none is there).

    A DuoAttention pattern folder: its ``full_attention_heads.tsv`` (and ``config.json``); a
    run or rank folder: its ``ranking.json`` (else ``rank/ranking.json``). The same choice as
    :func:`detect_format` and :func:`read_head_set` make, so that a run can name a cell by
    the content it reads (:func:`harness.run.cells.file_hashes`).
    """
    tsv = path / "full_attention_heads.tsv"
    if tsv.is_file():
        return [f for f in (tsv, path / "config.json") if f.is_file()]
    return [f for f in (path / "ranking.json", path / "rank/ranking.json") if f.is_file()][:1]


def detect_format(path: Path) -> str:
    """The format of the head set at ``path`` (one of :data:`FORMATS` but ``auto``)."""
    if path.is_dir():
        if (path / "full_attention_heads.tsv").is_file():
            return "duo_attention"
        for name, kind in (("ranking.json", "ranking"), ("rank/ranking.json", "ranking")):
            if (path / name).is_file():
                return kind
        raise HeadSetError(f"{str(path)!r} holds no head set (no pattern TSV or ranking.json)")
    if path.suffix == ".tsv":
        return "duo_attention"
    if path.suffix != ".json":
        return "list"
    data = _read_json(path)
    if isinstance(data, dict):
        if data.get("format") == HEADS_FORMAT:
            return "headscope"
        if data.get("format") == "headscope.ranking":
            return "ranking"
        if data.get("schema") == "headscope.results":
            return "results"
        if data and all(_SPARSEMM_KEY.match(str(key)) for key in data):
            return "sparsemm"
        if "heads" in data:
            return "list"
    if isinstance(data, list):
        return "list"
    raise HeadSetError(
        f"{str(path)!r} is no head-set format headscope reads ({', '.join(FORMATS[1:])})"
    )


def read_head_set(
    path: str | os.PathLike,
    fmt: str = "auto",
    *,
    task: str | None = None,
    cell: str | None = None,
    k: int | None = None,
    sparsity: float | None = None,
    num_heads: int | None = None,
) -> HeadSet:
    """Read a head set in any format of :data:`FORMATS` (``auto``: recognise it).

    Args:
        path: The file (or a DuoAttention pattern folder, a run or rank folder).
        fmt: One of :data:`FORMATS`.
        task: For a ranking: its task (None: combined).
        cell: For a results file: the intervention cell whose heads to take.
        k: Select the top ``k`` units by score (rankings, SparseMM, headscope files).
        sparsity: DuoAttention's selection rule.
        num_heads: Query heads per layer of the model (DuoAttention's KV-group files).
    """
    path = Path(path)
    if fmt not in FORMATS:
        close = difflib.get_close_matches(str(fmt), FORMATS, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else f" (one of {', '.join(FORMATS)})"
        raise HeadSetError(f"unknown head-set format {fmt!r}{hint}")
    if not path.exists():
        raise HeadSetError(f"no such file or folder: {str(path)!r}")
    kind = detect_format(path) if fmt == "auto" else fmt
    if kind != "duo_attention" and sparsity is not None:
        raise HeadSetError("sparsity= applies to DuoAttention patterns only; use k= here")
    if kind == "ranking":
        where = (
            path / "ranking.json"
            if (path / "ranking.json").is_file()
            else path / "rank/ranking.json"
        )
        return head_set_from_ranking(where if path.is_dir() else path, task, k=k)
    if task is not None:
        raise HeadSetError(f"task={task!r} applies to ranking files only ({str(path)!r} is {kind})")
    if kind == "results":
        if cell is None:
            raise HeadSetError("a results file holds many cells: name one (--cell LABEL)")
        return head_set_from_results(path, cell)
    if kind == "duo_attention":
        return read_duo_attention(path, sparsity=sparsity, num_heads=num_heads)
    if kind == "sparsemm":
        return read_sparsemm(path, k=k)
    if kind == "list":
        return read_head_list(path)
    head_set = head_set_from_dict(_read_json(path), f"head set {str(path)!r}")
    return _with_source(head_set.top(k), k=k) if k is not None else head_set
