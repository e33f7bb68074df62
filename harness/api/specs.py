"""Typed, frozen run specifications.

Specs come from CLI flags or a YAML/JSON run file. Unknown keys are errors, and
nested values travel as real JSON/YAML structures, never as "k=v,k=v" strings.
The one exception is the short intervention form ``name:key=value,...`` for the
command line, whose values are parsed as JSON scalars (lists need the JSON form).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

from harness.api.errors import UsageError
from harness.api.kv import key_values, raw_value, split_top_level, text_args

__all__ = [
    "check_task_args",
    "SpecError",
    "ModelSpec",
    "TaskSpec",
    "InterventionSpec",
    "RunSpec",
    "parse_intervention",
    "parse_task",
]

DEFAULT_MODEL = "toy"


class SpecError(UsageError):
    """A malformed spec (usage error: exit code 2 on the command line)."""


def _from_dict(cls: type, data: Any, where: str) -> Any:
    if isinstance(data, cls):
        return data
    if not isinstance(data, dict):
        raise SpecError(f"{where}: expected a mapping, got {_shown(data)}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names, key=str)
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(names)}")
    _check_types(cls, data, where)
    try:
        return cls(**data)
    except SpecError as exc:
        raise SpecError(f"{where}: {exc}") from None
    except TypeError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _shown(value: Any) -> str:
    return f"{value!r:.60} ({type(value).__name__})"


def _check_types(cls: type, data: dict[str, Any], where: str) -> None:
    """Every given value against the field's declared type (one message naming the field)."""
    from harness.api.checks import TypeMismatch, check_value, hints_of

    hints = hints_of(cls)
    for key, value in data.items():
        if key in hints:
            try:
                check_value(value, hints[key], f"{where}: {key}")
            except TypeMismatch as exc:
                raise SpecError(str(exc)) from None


def _validate(obj: Any, finite: bool = False) -> None:
    """Type-check a constructed spec (and refuse NaN / inf: not JSON, so no resume)."""
    from harness.api.checks import TypeMismatch, check_fields, check_finite

    try:
        check_fields(obj, type(obj).__name__)
        if finite:
            check_finite(obj.to_dict(), "run spec")
    except TypeMismatch as exc:
        raise SpecError(str(exc)) from None


@dataclass(frozen=True)
class ModelSpec:
    """Which model to load and how.

    Attributes:
        name: Registered model family (``toy``, ``qwen2_5_vl``, ``llava``, ...).
        pretrained: HF hub id or local directory; None uses the family's default.
        revision: Hub revision (commit, tag or branch).
        dtype: "float32", "bfloat16", "float16" or "auto".
        device: "cpu", "cuda", "cuda:1", ... (ignored when ``device_map`` is set).
        device_map: Passed to ``from_pretrained`` (e.g. "auto" for models that
            do not fit on one device).
        attn_implementation: Attention used by the text decoder. Interventions
            always run through headscope's dispatch, which reproduces "sdpa"
            exactly when no intervention is active.
        args: Family-specific options (image resolution, max pixels, frames...).
    """

    name: str = DEFAULT_MODEL
    pretrained: str | None = None
    revision: str | None = None
    dtype: str = "float32"
    device: str = "cpu"
    device_map: str | None = None
    attn_implementation: str = "sdpa"
    args: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _validate(self)
        if not self.name.strip():
            raise SpecError("model name is empty")
        if self.dtype not in {"float32", "bfloat16", "float16", "auto"}:
            raise SpecError(f"model dtype {self.dtype!r} not one of float32/bfloat16/float16/auto")
        if self.attn_implementation not in {"sdpa", "eager"}:
            raise SpecError(
                f"attn_implementation {self.attn_implementation!r} must be 'sdpa' or 'eager' "
                "(the headscope dispatch wraps it)"
            )

    @classmethod
    def from_dict(cls, data: Any, where: str = "model") -> ModelSpec:
        """Build from a mapping; unknown keys are errors."""
        return _from_dict(cls, data, where)


@dataclass(frozen=True)
class TaskSpec:
    """One task of the grid.

    Attributes:
        name: Registered task name.
        split: Dataset split; None means the task's default.
        limit: Evaluate only the first ``limit`` documents (an integer ≥ 1), or the first
            ``ceil(limit · n)`` of the ``n`` documents for a fraction ``0 < limit < 1``
            (lmms-eval's rule).
        args: Variant arguments of the task (e.g. ``{"subset": "adversarial"}``).
    """

    name: str
    split: str | None = None
    limit: int | float | None = None
    args: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _validate(self)
        if not self.name.strip():
            raise SpecError("task name is empty")
        limit = self.limit  # type-checked above: int, float or None
        if limit is not None and limit >= 1 and float(limit).is_integer():
            object.__setattr__(self, "limit", int(limit))
        elif limit is not None and not 0 < limit < 1:
            raise SpecError(f"task {self.name!r}: limit must be a count ≥ 1 or a fraction "
                            f"0 < x < 1, got {limit!r}")  # fmt: skip

    @property
    def load_limit(self) -> int | None:
        """The count to pass to ``Task.load`` (None for a fraction: every document is needed)."""
        return self.limit if isinstance(self.limit, int) else None

    def take(self, docs: Any) -> list[Any]:
        """``docs`` cut to the limit: the first ``limit``, or ``ceil(limit · len(docs))``."""
        docs, n = list(docs), self.limit
        return docs[: math.ceil(len(docs) * n) if isinstance(n, float) else n]

    @classmethod
    def from_dict(cls, data: Any, where: str = "task") -> TaskSpec:
        """Build from a mapping or a bare name."""
        if isinstance(data, str):
            return parse_task(data)
        return _from_dict(cls, data, where)


@dataclass(frozen=True)
class InterventionSpec:
    """An intervention by registered name plus its typed arguments.

    Attributes:
        name: Registered intervention ("none", "ablate", "sap", "hybrid", ...).
        args: Keyword arguments of the intervention's config class.
    """

    name: str = "none"
    args: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _validate(self)
        if not self.name.strip():
            raise SpecError("intervention name is empty")

    @property
    def label(self) -> str:
        """A filesystem-safe, stable label (used in sample file names and tables)."""
        if not self.args:
            return self.name
        parts = [f"{k}={_label_value(v)}" for k, v in sorted(self.args.items())]
        return f"{self.name}:" + ",".join(parts)

    @classmethod
    def from_dict(cls, data: Any, where: str = "intervention") -> InterventionSpec:
        """Build from a mapping or the short string form."""
        if isinstance(data, str):
            return parse_intervention(data)
        return _from_dict(cls, data, where)


def _label_value(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).strip('"')


@dataclass(frozen=True)
class RunSpec:
    """A model × tasks × interventions grid.

    Attributes:
        model: The model to evaluate.
        tasks: Tasks to run.
        interventions: Interventions (each run on every task); "none" is the baseline.
        seed: Global seed (sampling fallbacks, random head draws).
        batch_size: Requests per generate call.
        output: Output directory.
        skip_bad_docs: Count and skip samples whose media cannot be read.
        gen_kwargs: Generation settings for every request (:mod:`harness.api.generation`); empty
            means each task's own budget and greedy decoding.
        predict_only: Log the model's outputs but compute no scores or metrics.
    """

    model: ModelSpec = field(default_factory=ModelSpec)
    tasks: tuple[TaskSpec, ...] = ()
    interventions: tuple[InterventionSpec, ...] = (InterventionSpec(),)
    seed: int = 0
    batch_size: int = 1
    output: str = "headscope_out"
    skip_bad_docs: bool = False
    gen_kwargs: dict[str, Any] = field(default_factory=dict)
    predict_only: bool = False

    def __post_init__(self) -> None:
        _validate(self, finite=True)
        if not self.tasks:
            raise SpecError("run spec has no tasks")
        from harness.api.generation import check_gen_kwargs

        try:
            check_gen_kwargs(self.gen_kwargs, self.seed)
        except ValueError as exc:
            raise SpecError(str(exc)) from None
        cells = [(t.name, t.split, json.dumps(t.args, sort_keys=True)) for t in self.tasks]
        if len(set(cells)) != len(cells):
            raise SpecError(f"a task is listed twice with the same split and args: {cells}")
        if not self.interventions:
            raise SpecError("run spec has no interventions (use 'none' for the baseline)")
        if self.batch_size < 1:
            raise SpecError(f"batch_size must be ≥ 1, got {self.batch_size}")
        if self.seed < 0:
            raise SpecError(f"seed must be an integer ≥ 0, got {self.seed}")
        if not self.output.strip():
            raise SpecError("output directory is empty")
        labels = [i.label for i in self.interventions]
        if len(set(labels)) != len(labels):
            raise SpecError(f"duplicate interventions in the grid: {labels}")

    @classmethod
    def from_dict(cls, data: Any, where: str = "run file") -> RunSpec:
        """Build from a nested mapping (the run file's content).

        Besides the fields, the shorthands of the command line: ``model: toy`` (a family
        name), ``tasks: pope_mini,mmmu_mini`` (one string, split as ``--tasks`` is) and a
        top-level ``limit`` (given to every task that sets none, as ``--limit``).
        """
        if not isinstance(data, dict):
            raise SpecError(f"{where}: expected a mapping at the top level")
        data = dict(data)
        allowed = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - allowed - {"limit"}, key=str)
        if unknown:
            raise SpecError(
                f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed | {'limit'})}"
            )
        if isinstance(data.get("model"), str):
            data["model"] = {"name": data["model"]}
        if "model" in data:
            data["model"] = ModelSpec.from_dict(data["model"], f"{where}: model")
        if isinstance(data.get("tasks"), str):
            data["tasks"] = [t for t in split_top_level(data["tasks"]) if t.strip()]
        limit = data.pop("limit", None)
        if limit is not None and isinstance(data.get("tasks"), list | tuple):
            data["tasks"] = [_with_limit(t, limit) for t in data["tasks"]]
        if "tasks" in data:
            if not isinstance(data["tasks"], list | tuple):
                raise SpecError(f"{where}: 'tasks' must be a list")
            data["tasks"] = tuple(
                TaskSpec.from_dict(t, f"{where}: tasks[{i}]") for i, t in enumerate(data["tasks"])
            )
        if "interventions" in data:
            if not isinstance(data["interventions"], list | tuple):
                raise SpecError(f"{where}: 'interventions' must be a list")
            data["interventions"] = tuple(
                InterventionSpec.from_dict(x, f"{where}: interventions[{i}]")
                for i, x in enumerate(data["interventions"])
            )
        _check_types(cls, data, where)
        try:
            return cls(**data)
        except (SpecError, TypeError) as exc:
            raise SpecError(f"{where}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (round-trips through :meth:`from_dict`)."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    def identity(self) -> dict[str, Any]:
        """The parts of the spec that define the results.

        Excluded: the output directory, the batch size, and ``skip_bad_docs`` (samples
        already scored do not depend on it, so a run stopped by a bad file resumes with
        ``--skip-bad-docs``; skipped samples are retried by a run without it).
        """
        data = self.to_dict()
        for key in ("output", "batch_size", "skip_bad_docs"):
            data.pop(key)
        for key in ("gen_kwargs", "predict_only"):  # unset: as in files written before them
            if not data[key]:
                data.pop(key)
        return data


def _with_limit(task: Any, limit: Any) -> Any:
    """A run file's task entry with the top-level ``limit`` unless it sets its own."""
    if isinstance(task, str):
        task = dataclasses.asdict(parse_task(task))
    if isinstance(task, dict) and task.get("limit") is None:
        return {**task, "limit": limit}
    return task


def parse_intervention(text: str) -> InterventionSpec:
    """Parse ``name``, ``name:key=value,...`` or a JSON object ``{"name":..., "args":...}``.

    The ``key=value`` values are read by :mod:`harness.api.kv`, as ``--model_args`` are.
    """
    text = text.strip()
    if text.startswith("{"):
        from harness.api.strict_yaml import RunFileError, load_json

        try:
            return InterventionSpec.from_dict(load_json(text))
        except (json.JSONDecodeError, RunFileError) as exc:
            raise SpecError(f"intervention JSON is malformed: {exc}") from None
    name, _, rest = text.partition(":")
    args: dict[str, Any] = {}
    text_keys = text_args(name.strip()) if rest else frozenset()  # typed as the fields ask
    for key, part, value in key_values(rest) if rest else ():
        if not key:
            raise SpecError(
                f"intervention {text!r}: expected key=value, got {part!r} "
                '(or use the JSON form, e.g. \'{"name": ..., "args": {...}}\')'
            )
        if key in args:
            raise SpecError(f"intervention {text!r} sets {key!r} twice")
        args[key] = raw_value(part) if key in text_keys else value
    if not name:
        raise SpecError(f"intervention {text!r} has no name")
    return InterventionSpec(name=name.strip(), args=args)


def parse_task(text: str) -> TaskSpec:
    """Parse a bare task name or a JSON object for one task."""
    text = text.strip()
    if text.startswith("{"):
        from harness.api.strict_yaml import RunFileError, load_json

        try:
            return TaskSpec.from_dict(load_json(text))
        except (json.JSONDecodeError, RunFileError) as exc:
            raise SpecError(f"task JSON is malformed: {exc}") from None
    if not text:
        raise SpecError("empty task name")
    return TaskSpec(name=text)


def check_task_args(task_args: Any, names: list[str]) -> dict[str, dict[str, Any]]:
    """Validate ``--task-args``: a JSON object mapping task names (of this run) to objects."""
    if not isinstance(task_args, dict) or not all(isinstance(v, dict) for v in task_args.values()):
        raise SpecError('--task-args must be a JSON object like {"task": {"arg": value}}')
    unknown = sorted(set(task_args) - set(names))
    if unknown:
        raise SpecError(f"--task-args names task(s) {unknown} that are not in --tasks {names}")
    return task_args
