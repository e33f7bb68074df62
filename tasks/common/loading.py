"""Shared helpers for task modules: loading, row checks, answer parsing, ANLS, numbers.

Stable API (video tasks import it too):

- :func:`candidate_ids` — an HF dataset id plus its pre/post July-2026 counterpart.
- :func:`load_rows` — rows from the hub (trying those ids) or from local ``data_files`` /
  ``data_dir`` (parquet, JSON, JSONL), always through ``datasets.load_dataset``.
- :class:`RowSource` — task mixin keeping ``dataset_id`` / ``data_files`` / ``data_dir`` /
  ``revision`` and loading a split from them; :func:`image_rows` — the lazy ``image`` column.
- :func:`row_id`, :func:`require`, :func:`parse_list` — per-row checks that raise
  :class:`~harness.api.task.SampleError` naming the row.
- :func:`lazy_media`, :class:`RowImage`, :func:`to_pil`, :func:`open_image`,
  :func:`image_size`, :func:`resolve_path` — images read on demand; unreadable media →
  ``SampleError`` naming the file.
- :func:`normalize_text`, :func:`yes_no`, :func:`parse_choice`, :func:`anls`,
  :func:`parse_number`, :func:`numbers_close` — answer parsing and matching.

``datasets`` and PIL are imported inside functions so importing a task module stays light.
"""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from harness.api.task import SampleError, TaskLoadError
from tasks.common.answers import (
    Choice,
    anls,
    as_number,
    levenshtein,
    normalize_text,
    numbers_close,
    parse_choice,
    parse_number,
    parse_numbers,
    yes_no,
)
from tasks.common.media import (
    RowImage,
    image_size,
    lazy_media,
    open_image,
    resolve_path,
    to_pil,
)

__all__ = [
    "DataFiles",
    "candidate_ids",
    "load_rows",
    "RowSource",
    "image_rows",
    "row_id",
    "require",
    "parse_list",
    "RowImage",
    "lazy_media",
    "to_pil",
    "open_image",
    "image_size",
    "resolve_path",
    "normalize_text",
    "yes_no",
    "Choice",
    "parse_choice",
    "levenshtein",
    "anls",
    "parse_number",
    "parse_numbers",
    "as_number",
    "numbers_close",
]

DataFiles = str | Sequence[str] | Mapping[str, str | Sequence[str]]
_LOCAL_EXT = {".parquet": "parquet", ".json": "json", ".jsonl": "json"}
# July 2026: image/text sets moved lmms-lab/* → lmms-lab-encoder/*, video sets → lmms-eval/*.
_RENAMED_PREFIX = {"image": "lmms-lab-encoder/", "video": "lmms-eval/"}


# -- loading ------------------------------------------------------------------------------
def candidate_ids(dataset_id: str, media: Literal["image", "video"] = "image") -> tuple[str, ...]:
    """The id itself, then its renamed (or pre-rename) counterpart, without duplicates.

    ``lmms-lab/POPE`` → ``("lmms-lab/POPE", "lmms-lab-encoder/POPE")`` and
    ``lmms-lab-encoder/POPE`` → ``("lmms-lab-encoder/POPE", "lmms-lab/POPE")``; ids of
    other owners are returned alone.
    """
    owner, _, name = dataset_id.partition("/")
    new = _RENAMED_PREFIX[media]
    if owner == "lmms-lab" and name:
        return (dataset_id, new + name)
    if f"{owner}/" in _RENAMED_PREFIX.values() and name:
        return (dataset_id, "lmms-lab/" + name)
    return (dataset_id,)


def _builder_for(files: Sequence[str], where: str) -> str:
    kinds = set()
    for f in files:
        ext = Path(f).suffix.lower()
        if ext not in _LOCAL_EXT:
            raise TaskLoadError(f"{where}: {f!r} is not .parquet, .json or .jsonl")
        kinds.add(_LOCAL_EXT[ext])
    if len(kinds) != 1:
        raise TaskLoadError(f"{where}: mixed file formats {sorted(kinds)}; use one format")
    return kinds.pop()


def _files_in_dir(data_dir: str, split: str, where: str) -> list[str]:
    root = Path(data_dir)
    if not root.is_dir():
        raise TaskLoadError(f"{where}: data_dir {data_dir!r} is not a directory")
    files = sorted(str(p) for p in root.rglob("*") if p.suffix.lower() in _LOCAL_EXT)
    if not files:
        raise TaskLoadError(f"{where}: no .parquet/.json/.jsonl files under {data_dir!r}")
    # Prefer files whose name carries the split as a token ("val-00000.parquet").
    tokens = [
        set(re.split(r"[^a-z0-9]+", Path(f).relative_to(root).as_posix().lower())) for f in files
    ]
    chosen = [f for f, t in zip(files, tokens) if split.lower() in t]
    return chosen or files


def load_rows(
    task: str,
    split: str,
    *,
    dataset_id: str | None = None,
    media: Literal["image", "video"] = "image",
    config: str | None = None,
    revision: str | None = None,
    data_files: DataFiles | None = None,
    data_dir: str | None = None,
    hub_files: DataFiles | None = None,
) -> Any:
    """Load one split as a ``datasets.Dataset`` (iterate it for dict rows).

    Precedence: ``data_files`` (a path, list of paths, or ``{split: paths}``), then
    ``data_dir`` (files whose name contains the split token, else all files), then the hub
    (``dataset_id`` and its renamed counterpart, in that order; ``hub_files`` selects files
    inside the hub repository, for repos that are plain file collections like MMDocIR).

    Raises:
        TaskLoadError: naming the task, what was tried and how to point at local files.
    """
    import datasets

    where = f"task {task!r}"
    if data_files is not None or data_dir is not None:
        if data_files is not None:
            if isinstance(data_files, Mapping):
                if split not in data_files:
                    raise TaskLoadError(
                        f"{where}: split {split!r} not in data_files keys {sorted(data_files)}"
                    )
                files = data_files[split]
            else:
                files = data_files
            files = [files] if isinstance(files, str) else list(files)
        else:
            files = _files_in_dir(str(data_dir), split, where)
        missing = [f for f in files if not Path(f).is_file()]
        if missing:
            raise TaskLoadError(f"{where}: data file(s) not found: {missing}")
        builder = _builder_for(files, where)
        try:
            return datasets.load_dataset(builder, data_files={split: files}, split=split)
        except Exception as exc:  # noqa: BLE001 - surfaced with the file names
            raise TaskLoadError(f"{where}: cannot read {files}: {exc}") from exc
    if dataset_id is None:
        raise TaskLoadError(f"{where}: no dataset_id, data_files or data_dir given")
    from harness.models.loading import hub_reachable

    offline = not hub_reachable()  # then only the local cache, with no network retries
    errors = []
    for candidate in candidate_ids(dataset_id, media):
        try:
            with _offline() if offline else contextlib.nullcontext():
                if hub_files is not None:
                    return datasets.load_dataset(
                        candidate, data_files={split: hub_files}, split=split, revision=revision
                    )
                return datasets.load_dataset(candidate, config, split=split, revision=revision)
        except Exception as exc:  # noqa: BLE001 - try the next id, report all at the end
            errors.append(f"{candidate}: {type(exc).__name__}: {exc}")
    if offline:
        raise TaskLoadError(
            f"{where}: split {split!r} of {' / '.join(e.split(': ')[0] for e in errors)} is "
            "not in the local datasets cache and the hub cannot be reached (no network or "
            "HF_HUB_OFFLINE set). Pass data_files=... or data_dir=... (--task-args) to read "
            "local parquet/JSON files."
        )
    raise TaskLoadError(
        f"{where}: could not load split {split!r} from the hub ("
        + "; ".join(errors)
        + "). Pass data_files=... or data_dir=... to read local parquet/JSON files."
    )


@contextlib.contextmanager
def _offline() -> Iterator[None]:
    """Offline mode (the local cache only) for datasets and huggingface_hub, for the duration."""
    import datasets.config
    import huggingface_hub.constants as hub

    saved = datasets.config.HF_HUB_OFFLINE, hub.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = hub.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, hub.HF_HUB_OFFLINE = saved


class RowSource:
    """Mixin of tasks whose rows come from a hub dataset or local files (see :func:`load_rows`).

    Attributes:
        source_media: Which July-2026 rename of the hub id to try ("image" or "video").
    """

    source_media: ClassVar[Literal["image", "video"]] = "image"

    def _init_source(
        self,
        dataset_id: str,
        data_files: DataFiles | None,
        data_dir: str | None,
        revision: str | None,
    ) -> None:
        self.dataset_id = dataset_id
        self.data_files = data_files
        self.data_dir = data_dir
        self.revision = revision

    def source_rows(self, task: str, split: str, config: str | None = None) -> Any:
        """One split (a ``datasets.Dataset``) from the task's source arguments."""
        return load_rows(
            task,
            split,
            dataset_id=self.dataset_id,
            media=self.source_media,
            config=config,
            revision=self.revision,
            data_files=self.data_files,
            data_dir=self.data_dir,
        )


def image_rows(task: str, rows: Any, column: str = "image") -> tuple[Any, Any]:
    """:func:`lazy_media` of ``rows`` over one image column, which must be there.

    Raises:
        TaskLoadError: naming the task and the columns the data has.
    """
    if column not in rows.column_names:
        raise TaskLoadError(f"{task}: the data has no {column!r} column ({rows.column_names})")
    return lazy_media(rows, [column])


# -- row checks -----------------------------------------------------------------------------
def row_id(task: str, index: int, row: Mapping[str, Any] | None = None, key: str = "") -> str:
    """A label for error messages: ``"pope row 12 (question_id=345)"``."""
    label = f"{task} row {index}"
    if row is not None and key and key in row:
        label += f" ({key}={row[key]!r})"
    return label


def require(row: Mapping[str, Any], fields: Sequence[str], where: str) -> None:
    """Raise :class:`SampleError` naming ``where`` if any field is missing or None."""
    missing = [f for f in fields if row.get(f) is None]
    if missing:
        raise SampleError(f"{where}: missing field(s) {missing}")


def parse_list(value: Any, where: str, field: str) -> list[Any]:
    """A list from a real list or its string repr (``"['a', 'b']"``, ``"[1, 3]"``).

    Raises:
        SampleError: naming the row and field when the value is not a list.
    """
    if isinstance(value, list | tuple):
        return list(value)
    if hasattr(value, "tolist") and not isinstance(value, str):  # numpy / arrow arrays
        return list(value.tolist())
    if isinstance(value, str):
        try:
            parsed = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            parsed = None
        if isinstance(parsed, list | tuple):
            return list(parsed)
    raise SampleError(f"{where}: field {field!r} is not a list or a list literal: {value!r:.80}")
