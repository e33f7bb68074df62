"""The task interface every benchmark module implements.

A task is a class registered with ``@task("name")``. Its constructor takes the
task's variant arguments as keyword-only parameters (``TaskSpec.args``); unknown
arguments are rejected by :func:`build_task` with a clear message. A task turns
its samples into :class:`~harness.api.payloads.Request` objects, scores generations,
aggregates per-sample scores into metrics, and (for grounded tasks) exposes the
ground-truth evidence used by RAM.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from harness.api.errors import UsageError
from harness.api.payloads import Box, Evidence, Generation, Request

__all__ = [
    "MetricDef",
    "UNIT_INTERVAL",
    "MetricValue",
    "ScoringContext",
    "Task",
    "TaskLoadError",
    "SampleError",
    "BadDoc",
    "BadDataError",
    "build_task",
    "mean_stderr",
]


class TaskLoadError(UsageError, RuntimeError):
    """The task's documents could not be loaded (names the task and the cause; a usage error).

    Still a ``RuntimeError`` too, as it was before :class:`UsageError` existed.
    """


class SampleError(UsageError):
    """One malformed row or unreadable media file; the message names the row / file."""


class BadDataError(UsageError):
    """Malformed data that stops a run, and what to do about it (a usage error: exit code 2)."""

    FIX = "fix or remove it, or pass --skip-bad-docs to count and skip such samples"


@dataclass(frozen=True, slots=True)
class BadDoc:
    """A row that failed its checks at load time, kept in place of its sample(s).

    Loaders produce these only when :attr:`Task.collect_bad_rows` is set (the run's
    ``--skip-bad-docs``); otherwise the :class:`SampleError` is raised at load time.

    Attributes:
        doc_id: The row's doc id, or a row label when no id could be read.
        reason: What is wrong with it (names the row and field).
    """

    doc_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class MetricDef:
    """A metric's definition; ``higher_is_better`` is declared here and only here.

    Attributes:
        name: Metric name as reported (e.g. "accuracy", "anls").
        higher_is_better: Direction for leaderboards.
        description: One line for docs and tables.
        bounds: ``(low, high)``, the values the metric can take (inclusive; ``None`` for an
            open side), e.g. :data:`UNIT_INTERVAL` for a share, rate, recall or mean IoU;
            ``None`` when not declared. Recorded in the results; a value outside is refused
            where results are read (:mod:`harness.schema.results`).
    """

    name: str
    higher_is_better: bool = True
    description: str = ""
    bounds: tuple[float | None, float | None] | None = None


#: The bounds of a share, rate, recall, F1 or mean IoU.
UNIT_INTERVAL = (0.0, 1.0)


@dataclass(frozen=True, slots=True)
class MetricValue:
    """An aggregated metric.

    Attributes:
        name: Matches a :class:`MetricDef` of the task.
        value: The aggregate.
        stderr: Standard error (or None when not defined).
        n: Number of samples that entered the aggregate.
    """

    name: str
    value: float
    stderr: float | None
    n: int


@dataclass(frozen=True, slots=True)
class ScoringContext:
    """What scoring may ask of the model adapter.

    Attributes:
        parse_box: Turns model output text into a pixel box on an image of the
            given (width, height), following the model family's coordinate
            convention; None when no box can be parsed.
        seed: Seed for deterministic fallbacks (e.g. MMMU's random choice).
        family: Registry name of the model family (the results' ``model.family``), for
            scorers whose official rule is the family's own evaluator (RefCOCOg); None
            when unknown.
        parse_video_box: ``(text, (width, height), num_frames)``: as ``parse_box`` for a box
            on a frame of a video of ``num_frames`` frames, which the model saw through its
            video processor (Qwen2.5-VL resizes frames by the video rule, not the image one).
            Tasks that ask for boxes on video frames (VidSTG) call this one. When not given,
            ``parse_box`` (the frame count ignored).
    """

    parse_box: Callable[[str, tuple[int, int]], Box | None]
    seed: int = 0
    family: str | None = None
    parse_video_box: Callable[[str, tuple[int, int], int], Box | None] | None = None

    def __post_init__(self) -> None:
        if self.parse_video_box is None:
            parse = self.parse_box
            object.__setattr__(self, "parse_video_box", lambda text, size, _n: parse(text, size))


def mean_stderr(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and standard error of the mean (sample std / sqrt(n)); stderr None for n < 2."""
    n = len(values)
    if n == 0:
        return float("nan"), None
    mean = sum(values) / n
    if n < 2:
        return mean, None
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


class Task:
    """Base class of all benchmark tasks.

    Subclasses set ``metrics`` and ``default_split``, implement :meth:`load`,
    :meth:`request` and :meth:`score`, and override :meth:`aggregate` when a
    metric is not a plain mean of a per-sample score of the same name.
    """

    metrics: ClassVar[tuple[MetricDef, ...]] = ()
    default_split: ClassVar[str] = "test"
    grounded: ClassVar[bool] = False
    registry_name: ClassVar[str] = ""
    #: Set by the evaluator / rank under ``--skip-bad-docs``: loaders then return a
    #: :class:`BadDoc` for a malformed row instead of raising its :class:`SampleError`.
    collect_bad_rows: bool = False

    def bad_row(self, out: list[Any], doc_id: str, error: SampleError) -> None:
        """Handle a malformed row in :meth:`load`: raise ``error``, or append a BadDoc."""
        if not self.collect_bad_rows:
            raise error
        out.append(BadDoc(str(doc_id), str(error)))

    # -- data ---------------------------------------------------------------------
    def load(self, split: str | None = None, limit: int | None = None) -> Sequence[Any]:
        """Return the samples (frozen dataclasses with a ``doc_id: str`` field)."""
        raise NotImplementedError

    def request(self, sample: Any) -> Request:
        """Build the model request (media + instruction) for one sample."""
        raise NotImplementedError

    def evidence(self, sample: Any, request: Request) -> Evidence | None:
        """Ground-truth evidence for RAM (grounded tasks only)."""
        return None

    # -- scoring ----------------------------------------------------------------------
    def prepare_scoring(self, samples: Sequence[Any], generations: Sequence[Generation]) -> None:
        """Called with a whole batch before its :meth:`score` calls (default: nothing).

        A task whose scoring calls a model (MMLongBench-Doc's ``hf:PATH`` extractor) batches
        that work here; :meth:`score` must still give the same value without it.
        """

    def score(self, sample: Any, generation: Generation, ctx: ScoringContext) -> dict[str, Any]:
        """Per-sample scores (floats, or other JSON values used by :meth:`aggregate`)."""
        raise NotImplementedError

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> list[MetricValue]:
        """Aggregate per-sample score dicts into metrics (default: mean ± stderr)."""
        out = []
        for metric in self.metrics:
            vals = [float(r[metric.name]) for r in rows if r.get(metric.name) is not None]
            mean, err = mean_stderr(vals)
            out.append(MetricValue(metric.name, mean, err, len(vals)))
        return out

    def reply_warnings(self, metrics: Sequence[MetricValue]) -> list[str]:
        """Warnings about the replies as scored, recorded in the results and printed.

        Default: when the task reports how many replies its parser read (a ``parse_rate``
        metric, or POPE's ``unparsed_rate``) and it read none, the numbers measure the reply
        format against the scoring mode, not the model (e.g. the toy's ``refcocog_mini``
        under ``scoring=lmms_eval``, which reads only "[x1, y1, x2, y2]" in [0, 1]).
        """
        rates = {m.name: m for m in metrics if m.value is not None and m.n > 0}
        if "parse_rate" in rates:
            read = rates["parse_rate"].value
        elif "unparsed_rate" in rates:
            read = 1.0 - rates["unparsed_rate"].value
        else:
            return []
        if read > 0:
            return []
        mode = self.settings().get("scoring", "unrecorded")
        return [
            f"no reply could be read under scoring {mode!r} (parse rate 0 over "
            f"{max(m.n for m in rates.values())} replies): these numbers measure the reply "
            "format, not the model; check the prompt's answer format or choose another --scoring"
        ]

    def sample_log(self, sample: Any) -> dict[str, Any]:
        """Extra JSON-able fields for the per-sample log (targets, frame indices...)."""
        target = getattr(sample, "answer", None)
        return {"target": target} if target is not None else {}

    # -- description ------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """Settings that change numbers (variant, frames, dpi ...), recorded in results."""
        return dict(getattr(self, "_args", {}))

    @classmethod
    def metric(cls, name: str) -> MetricDef:
        """Look up one of the task's metric definitions."""
        for m in cls.metrics:
            if m.name == name:
                return m
        raise KeyError(f"task {cls.registry_name!r} has no metric {name!r}")


def grounded_tasks(names: Sequence[str] | None = None) -> list[str]:
    """The grounded tasks (those giving evidence for RAM) among ``names``, in their order.

    Args:
        names: Registered task names; None = every registered task.
    """
    from harness.api.registry import TASKS

    return [n for n in (TASKS.names() if names is None else names) if TASKS.get(n).grounded]


def build_task(name: str, args: dict[str, Any] | None = None) -> Task:
    """Instantiate a registered task with validated variant arguments.

    Raises:
        harness.api.registry.UnknownNameError: unknown task name (with suggestions).
        UsageError: an argument the task does not take, of the wrong type, or that its
            constructor refuses (a ``ValueError`` or ``TypeError`` from it).
    """
    from harness.api.registry import TASKS

    cls = TASKS.get(name)
    if args is not None and not isinstance(args, dict):
        raise UsageError(f"task {name!r}: args must be a mapping, got {args!r:.60}")
    args = dict(args or {})
    params = inspect.signature(cls.__init__).parameters
    accepted = {p for p in params if p != "self"}
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(args) - accepted)
        if unknown:
            raise UsageError(
                f"task {name!r} does not take argument(s) {unknown}; "
                f"it takes {sorted(accepted) or 'none'}"
            )
    _check_arg_types(name, cls, args)
    try:
        obj = cls(**args)
    except TypeError as exc:
        raise UsageError(f"task {name!r}: bad arguments {args}: {exc}") from exc
    except ValueError as exc:  # the constructor's own checks of its arguments
        hint = getattr(exc, "hint", None)
        text = f"task {name!r}: {exc}" if name not in str(exc) else str(exc)
        raise UsageError(text, hint=hint) from exc
    obj._args = args  # type: ignore[attr-defined]
    return obj


def _check_arg_types(name: str, cls: type, args: dict[str, Any]) -> None:
    """Each argument against the type its ``__init__`` declares (UsageError naming it)."""
    from harness.api.checks import TypeMismatch, check_value, hints_of

    hints = hints_of(cls.__init__)
    for key, value in args.items():
        if key in hints:
            try:
                check_value(value, hints[key], f"task {name!r}: argument {key}")
            except TypeMismatch as exc:
                raise UsageError(str(exc)) from None
