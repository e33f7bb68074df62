"""The versioned results schema — the only thing leaderboards read.

A run directory holds ``results.json`` (a :class:`RunResults`) and per-sample
logs ``samples/<cell>.jsonl`` (:mod:`harness.schema.samples`; named by :mod:`harness.run.cells`).
JSON files are written atomically (temp file + rename) so a crash never leaves
a half-written file behind.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from harness.api.errors import UsageError

__all__ = [
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "MetricRecord",
    "MetricDefRecord",
    "ResultEntry",
    "RunResults",
    "ResultsError",
    "write_json_atomic",
    "file_mode",
    "json_safe",
    "load_results",
    "name_path",
    "replace_atomically",
]

SCHEMA_NAME = "headscope.results"
SCHEMA_VERSION = 1


class ResultsError(UsageError):
    """A results file that does not follow the schema."""


def write_json_atomic(
    path: str | Path, data: Any, *, indent: int | None = 2, allow_nan: bool = True
) -> None:
    """Write ``data`` as JSON to ``path`` via a temp file in the same directory + rename.

    Args:
        path: Target file; its parent directories are created.
        data: JSON-serialisable data (arrays and paths are converted).
        indent: ``json.dump`` indentation (None = one compact line).
        allow_nan: True writes NaN / Infinity (not valid JSON) as null; False refuses them
            with a ValueError.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(fh: TextIO) -> None:
        # NaN / ±inf are not JSON: written as null, or refused (allow_nan=False).
        safe = json_safe(data) if allow_nan else data
        json.dump(safe, fh, indent=indent, allow_nan=False, default=_json_default)
        if indent is not None:
            fh.write("\n")

    replace_atomically(path, write)


def replace_atomically(path: Path, write: Callable[[Any], None], binary: bool = False) -> None:
    """Write ``path`` through ``write(handle)`` into a temp file beside it, then rename.

    Readers see the old file or the whole new one, never a part; the file gets the mode a plain
    ``open()`` would give it (``mkstemp`` alone makes 0600). The handle is a text file
    (UTF-8), or a binary one when ``binary``.
    """
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise name_path(exc, path) from None
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise name_path(exc, path) from None
        raise


def name_path(exc: OSError, path: str | Path) -> OSError:
    """``exc`` naming ``path`` (the file being written) where it names none or a temp file.

    A write that fails on a full disk raises without a file name, and one that fails on the
    temporary file names that; the caller (:func:`harness.schema.writes.writing_into`) reports
    the file the user knows.
    """
    if exc.filename is None or str(exc.filename).endswith(".tmp"):
        exc.filename = str(path)
        exc.filename2 = None
    return exc


def file_mode() -> int:
    """``0o666`` minus the process umask: the mode a plain ``open()`` gives a new file."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def json_safe(value: Any) -> Any:
    """A copy with every non-finite float (NaN, ±inf — not JSON) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, str):
        return json_safe(value.tolist())
    return value


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "__fspath__"):
        return os.fspath(obj)
    return str(obj)


@dataclass(frozen=True)
class MetricDefRecord:
    """A metric definition as stored in results (direction declared once).

    ``bounds`` is the task's declared ``[low, high]`` (:class:`harness.api.task.MetricDef`;
    ``None`` for an open side); results whose values lie outside are refused on reading.
    """

    name: str
    higher_is_better: bool
    description: str = ""
    bounds: list[float | None] | None = None


@dataclass(frozen=True)
class MetricRecord:
    """One aggregated metric of a (task, intervention) cell."""

    name: str
    value: float | None
    stderr: float | None
    n: int


@dataclass(frozen=True)
class ResultEntry:
    """Results of one task under one intervention.

    Attributes:
        task: Registered task name.
        task_args: Variant arguments as passed.
        split: Split evaluated.
        task_settings: Settings of the task that change numbers (frames, dpi, variant).
        intervention: The intervention label (``none``, ``ablate:k=0.1,...``).
        intervention_spec: Name + args as passed.
        intervention_resolved: What was actually applied (heads, draws, semantics...).
        metrics: Aggregated metrics.
        n_samples: Samples scored.
        n_skipped: Samples skipped for unreadable media (only with skip_bad_docs).
        failures: Per-sample failures ``{"doc_id", "error"}`` (not scored).
        samples_file: Per-sample log, relative to the run directory.
        timing: Timing summaries (ms): prefill / total per sample, medians.
        warnings: What the task says about the scored replies (e.g. none could be parsed
            under the scoring mode: :meth:`harness.api.task.Task.reply_warnings`).
    """

    task: str
    task_args: dict[str, Any]
    split: str | None
    task_settings: dict[str, Any]
    intervention: str
    intervention_spec: dict[str, Any]
    intervention_resolved: dict[str, Any]
    metrics: list[MetricRecord]
    n_samples: int
    n_skipped: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    samples_file: str = ""
    timing: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def metric(self, name: str) -> MetricRecord:
        """Look up a metric by name."""
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(f"{self.task}/{self.intervention} has no metric {name!r}")


@dataclass(frozen=True)
class RunResults:
    """The results of one run (one model × tasks × interventions grid).

    Attributes:
        spec_passed: The run spec as given by the user.
        spec_resolved: The spec after defaults (model path, splits...) were filled in.
        headscope_version: Package version.
        git: ``{"commit": str | None, "dirty": bool | None}`` of the headscope checkout.
        environment: Versions (python, torch, transformers), device, platform.
        model: Adapter settings (family, pretrained, dtype, attention, geometry...).
        settings: Run-wide settings that change numbers (seed, dtype, attn impl...).
        metric_defs: ``{task: [MetricDefRecord]}`` — direction declared once per metric.
        entries: One per (task, intervention).
        created: ISO timestamp.
        status: "complete" or "partial" (written while the grid runs).
    """

    spec_passed: dict[str, Any]
    spec_resolved: dict[str, Any]
    headscope_version: str
    git: dict[str, Any]
    environment: dict[str, Any]
    model: dict[str, Any]
    settings: dict[str, Any]
    metric_defs: dict[str, list[MetricDefRecord]]
    entries: list[ResultEntry]
    created: str = ""
    status: str = "complete"

    def to_dict(self) -> dict[str, Any]:
        """JSON form with the schema header."""
        body = asdict(self)
        return {"schema": SCHEMA_NAME, "schema_version": SCHEMA_VERSION, **body}

    def save(self, path: str | Path) -> None:
        """Write atomically."""
        write_json_atomic(path, self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "results") -> RunResults:
        """Validate and build from the JSON form."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA_NAME:
            raise ResultsError(f"{where}: not a headscope results file (schema != {SCHEMA_NAME})")
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ResultsError(
                f"{where}: schema_version {version!r} is not supported (expected {SCHEMA_VERSION})"
            )
        defs_raw, entries_raw = data.get("metric_defs"), data.get("entries")
        if not isinstance(defs_raw, dict) or not isinstance(entries_raw, list):
            raise ResultsError(f"{where}: malformed results: needs 'metric_defs' and 'entries'")
        defs = {
            t: [
                _record(MetricDefRecord, d, f"{where}: metric_defs[{t!r}]")
                for d in _list(ds, f"{where}: metric_defs")
            ]
            for t, ds in defs_raw.items()
        }
        entries = []
        for i, raw in enumerate(entries_raw):
            at = f"{where}: entries[{i}]"
            if not isinstance(raw, dict):
                raise ResultsError(f"{at}: expected a mapping, got {type(raw).__name__}")
            at += f" ({raw.get('task')}/{raw.get('intervention')})"
            raw = dict(raw)
            raw["metrics"] = [
                _record(MetricRecord, m, f"{at} metric {j}")
                for j, m in enumerate(_list(raw.get("metrics"), f"{at}: metrics"))
            ]
            entries.append(_record(ResultEntry, raw, at))
            _check_numbers(entries[-1], defs.get(entries[-1].task, []), at)
        fields = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        fields.update(metric_defs=defs, entries=entries)
        return _record(cls, fields, where)

    def higher_is_better(self, task: str, metric: str) -> bool:
        """Direction of ``metric`` of ``task``, from its single declaration."""
        for d in self.metric_defs.get(task, []):
            if d.name == metric:
                return d.higher_is_better
        raise KeyError(f"no metric definition for {task}/{metric}")


def _check_numbers(entry: ResultEntry, defs: list[MetricDefRecord], at: str) -> None:
    """Counts ≥ 0, stderrs ≥ 0, and every value inside its metric's declared bounds."""
    for name in ("n_samples", "n_skipped"):
        if getattr(entry, name) < 0:
            raise ResultsError(f"{at}: {name} is {getattr(entry, name)}, a count cannot be < 0")
    bounds = {d.name: d.bounds for d in defs if d.bounds is not None}
    for m in entry.metrics:
        if m.n < 0:
            raise ResultsError(f"{at}: metric {m.name!r} has n = {m.n}; a count cannot be < 0")
        if m.stderr is not None and m.stderr < 0:
            raise ResultsError(f"{at}: metric {m.name!r} has stderr {m.stderr} < 0")
        low, high = (list(bounds.get(m.name) or ()) + [None, None])[:2]
        if m.value is not None and (
            (low is not None and m.value < low) or (high is not None and m.value > high)
        ):
            shown = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
            raise ResultsError(
                f"{at}: metric {m.name!r} is {m.value}, outside its declared range {shown}"
            )


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ResultsError(f"{where}: expected a list, got {value!r:.60}")
    return value


def _record(cls: type, raw: Any, where: str) -> Any:
    """Build one schema record, every field type-checked (ResultsError naming the field)."""
    from harness.api.checks import TypeMismatch, check_fields

    if not isinstance(raw, dict):
        raise ResultsError(f"{where}: expected a mapping, got {raw!r:.60}")
    try:
        obj = cls(**raw)
        check_fields(obj, where)
    except TypeError as exc:
        raise ResultsError(f"{where}: malformed: {exc}") from None
    except TypeMismatch as exc:
        raise ResultsError(str(exc)) from None
    return obj


def load_results(path: str | Path) -> RunResults:
    """Load ``results.json`` (or a run directory containing it)."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise ResultsError(f"no results file at {str(path)!r}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: invalid JSON: {exc}") from None
    return RunResults.from_dict(data, where=str(path))
