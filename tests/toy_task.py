"""An in-memory toy task for evaluator / resume / CLI tests (registered on import)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.api.payloads import Request
from harness.api.registry import task
from harness.api.task import MetricDef, SampleError, Task


@dataclass(frozen=True, slots=True)
class EchoSample:
    doc_id: str
    question: str
    answer: str
    broken: bool = False


def make_samples(n: int) -> list[EchoSample]:
    return [EchoSample(f"d{i:03d}", f"what is {i} plus one?", str(i + 1)) for i in range(n)]


@task("test_echo")
class EchoTask(Task):
    """Answers are numbers; accuracy is exact match."""

    metrics = (MetricDef("accuracy", True, "exact match"), MetricDef("length", False, "chars"))
    default_split = "test"

    def __init__(self, *, n: int = 10, broken: tuple[int, ...] = ()) -> None:
        self.n = n
        self.broken = set(broken)

    def load(self, split=None, limit=None):
        docs = make_samples(self.n)
        return [
            EchoSample(d.doc_id, d.question, d.answer, i in self.broken) for i, d in enumerate(docs)
        ]

    def request(self, sample):
        if sample.broken:
            raise SampleError(f"missing media file /nonexistent/{sample.doc_id}.jpg")
        return Request(text=sample.question)

    def score(self, sample, generation, ctx):
        if generation.text == "boom":
            raise RuntimeError("scorer exploded")
        return {
            "accuracy": float(generation.text.strip() == sample.answer),
            "length": float(len(generation.text)),
        }


def correct_on_even(request: Request) -> str:
    """Right answer for even numbers, wrong for odd ones."""
    i = int(request.text.split()[2])
    return str(i + 1) if i % 2 == 0 else "0"
