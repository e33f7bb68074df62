"""Shared loading of the toy mini tasks (samples from :mod:`harness.toy.scenes`).

A mini task subclasses the real task (same sample type, metrics and evidence) and only
replaces loading and the prompt: the request text is exactly ``MiniSample.question``, the
text the embedded toy model was trained on. Only the held-out splits can be evaluated.

A mini task that takes only ``n`` and ``seed`` mixes in :class:`SeededMini` (its constructor);
one with variant arguments mixes in :class:`MiniMixin` and calls ``_init_mini`` itself.
"""

from __future__ import annotations

from typing import Any, TypeVar

from harness.api.errors import UsageError
from harness.api.task import TaskLoadError

__all__ = ["MINI_SPLITS", "MiniMixin", "SeededMini", "video_choice_sample"]

MINI_SPLITS = ("validation", "test")
S = TypeVar("S")


class MiniMixin:
    """Loading and prompt plumbing for mini tasks (mix in before the real task class).

    Attributes:
        kind: Toy kind passed to ``generate_samples``.
        n: Samples generated per split.
        seed: Toy dataset seed.
    """

    kind: str = ""
    default_split = "test"

    def _init_mini(self, n: int, seed: int) -> None:
        from harness.toy.scenes import HELD_OUT_SIZE

        if not 1 <= n <= HELD_OUT_SIZE:
            raise UsageError(
                f"{self.kind}_mini: n must be in [1, {HELD_OUT_SIZE}] (the held-out split's "
                f"size), got {n}"
            )
        self.n, self.seed = n, seed
        self._questions: dict[str, str] = {}

    def mini_samples(self, split: str | None, limit: int | None) -> list[Any]:
        """Generate the held-out toy samples and remember each question verbatim."""
        from harness.toy.scenes import generate_samples

        split = split or self.default_split
        if split not in MINI_SPLITS:
            raise TaskLoadError(
                f"{self.kind}_mini: split {split!r} is not held out; use one of {MINI_SPLITS}"
            )
        count = self.n if limit is None else min(self.n, limit)
        samples = generate_samples(self.kind, split, count, seed=self.seed)
        self._questions = {s.doc_id: s.question for s in samples}
        return samples

    def prompt(self, sample: Any) -> str:
        """Exactly the toy question of the sample (the toy model's training text)."""
        return self._questions[sample.doc_id]

    def settings(self) -> dict[str, Any]:
        """Sample count and toy seed."""
        scoring = {"scoring": self.scoring} if hasattr(self, "scoring") else {}
        if scoring.get("scoring") == "official" and hasattr(self, "extractor"):
            scoring |= self.extractor.settings()
        return {"n": self.n, "seed": self.seed} | scoring | dict(getattr(self, "_args", {}))


class SeededMini(MiniMixin):
    """:class:`MiniMixin` plus the constructor of mini tasks taking ``n``, ``seed``, ``scoring``.

    The real task is built with its defaults and the scoring mode.
    """

    def __init__(self, *, n: int = 100, seed: int = 0, scoring: str | None = None) -> None:
        # None: the real task's default scoring mode.
        super().__init__(**({} if scoring is None else {"scoring": scoring}))
        self._init_mini(n, seed)


def video_choice_sample(cls: type[S], ms: Any, **fields: Any) -> S:
    """A toy ``MiniSample`` as a multiple-choice video sample ``cls`` (frames in memory).

    Args:
        cls: Sample dataclass of a :class:`~tasks.common.video.VideoChoiceTask`.
        ms: The toy sample.
        **fields: Further fields of ``cls`` (e.g. Video-MME's ``duration``).
    """
    return cls(
        doc_id=ms.doc_id,
        question=ms.question,
        options=tuple(ms.options),
        answer=ms.answer,
        task_type=ms.task_type,
        frames=tuple(ms.images),
        **fields,
    )
