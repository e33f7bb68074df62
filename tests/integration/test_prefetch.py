"""Prefetch: the next batch is read while the model runs, one batch ahead, errors unchanged."""

from __future__ import annotations

import threading
import time

import pytest

from harness.api.specs import InterventionSpec, RunSpec, TaskSpec
from harness.api.task import BadDataError
from harness.run.evaluator import run_grid, samples_filename
from harness.testing.mock import ScriptedAdapter
from tests.toy_task import EchoTask, correct_on_even


def _spec(out, n=6, batch_size=2, skip_bad_docs=False, **args):
    return RunSpec(
        tasks=(TaskSpec("test_echo", args={"n": n, **args}),),
        interventions=(InterventionSpec("none"),),
        output=str(out),
        batch_size=batch_size,
        skip_bad_docs=skip_bad_docs,
    )


class _Watch:
    """Records when each document's request starts and each generate call ends."""

    def __init__(self, monkeypatch, batch_size: int) -> None:
        self.lock = threading.Lock()
        self.started: dict[int, threading.Event] = {}
        self.generated = 0  # generate calls finished
        self.seen_done: dict[int, int] = {}  # batch -> generate calls done when it started
        self.batch_size = batch_size
        real = EchoTask.request

        def request(task, sample):
            batch = int(sample.doc_id[1:]) // self.batch_size
            with self.lock:
                self.seen_done.setdefault(batch, self.generated)
                self.started.setdefault(batch, threading.Event()).set()
            return real(task, sample)

        monkeypatch.setattr(EchoTask, "request", request)

    def event(self, batch: int) -> threading.Event:
        with self.lock:
            return self.started.setdefault(batch, threading.Event())


class _WaitingAdapter(ScriptedAdapter):
    """Each generate waits (up to ``wait`` s) for the next batch's reading to begin."""

    def __init__(self, watch: _Watch, batches: int, wait: float) -> None:
        super().__init__(correct_on_even)
        self.watch, self.batches, self.wait = watch, batches, wait
        self.overlapped: list[bool] = []
        self.batch = 0

    def generate(self, requests):
        nxt = self.batch + 1
        if nxt < self.batches:
            self.overlapped.append(self.watch.event(nxt).wait(self.wait))
        time.sleep(0.05)  # room for a prefetcher that would run further ahead
        out = super().generate(requests)
        with self.watch.lock:
            self.watch.generated += 1
        self.batch += 1
        return out


@pytest.mark.parametrize("prefetch", [True, False])
def test_next_batch_is_read_while_the_model_runs(tmp_path, monkeypatch, prefetch):
    watch = _Watch(monkeypatch, batch_size=2)
    adapter = _WaitingAdapter(watch, batches=4, wait=10.0 if prefetch else 0.2)
    run_grid(_spec(tmp_path / "r", n=8), adapter, prefetch=prefetch)
    # with prefetch every generate saw the next batch's reading start; without, none did
    assert adapter.overlapped == [prefetch] * 3
    log = tmp_path / "r" / "samples" / samples_filename("test_echo", "none", {"n": 8})
    assert len(log.read_text().splitlines()) == 8


def test_prefetch_stays_one_batch_ahead(tmp_path, monkeypatch):
    """Batch j is read only once batch j - 1 is taken: after j - 1 generate calls ended."""
    watch = _Watch(monkeypatch, batch_size=1)
    adapter = _WaitingAdapter(watch, batches=6, wait=10.0)
    run_grid(_spec(tmp_path / "r", n=6, batch_size=1), adapter)
    # batch 0 starts with nothing generated; preflight reads doc 0 before the grid starts
    assert all(done >= batch - 1 for batch, done in watch.seen_done.items())
    assert [watch.seen_done[b] for b in range(1, 6)] == [0, 1, 2, 3, 4]


def _log_rows(out):
    log = out / "samples" / samples_filename("test_echo", "none", {"n": 6, "broken": [3]})
    return [line for line in log.read_text().splitlines()] if log.exists() else []


def test_a_bad_document_stops_the_run_where_it_did_without_prefetch(tmp_path):
    """Doc 3 (second batch) is unreadable: batch one's rows are kept, the same error."""
    errors, rows = {}, {}
    for prefetch in (False, True):
        out = tmp_path / str(prefetch)
        with pytest.raises(BadDataError) as info:
            spec = _spec(out, broken=(3,))
            run_grid(spec, ScriptedAdapter(correct_on_even), prefetch=prefetch)
        errors[prefetch], rows[prefetch] = str(info.value), _log_rows(out)
    assert errors[True] == errors[False] and "'d003'" in errors[True]
    assert [r[:16] for r in rows[True]] == [r[:16] for r in rows[False]]
    assert len(rows[True]) == 2


def test_skipped_documents_are_logged_in_the_same_order(tmp_path):
    import json

    logs = {}
    for prefetch in (False, True):
        out = tmp_path / str(prefetch)
        spec = _spec(out, broken=(3,), skip_bad_docs=True)
        run_grid(spec, ScriptedAdapter(correct_on_even), prefetch=prefetch)
        rows = [json.loads(r) for r in _log_rows(out)]
        logs[prefetch] = [{k: v for k, v in r.items() if k != "timing"} for r in rows]
    assert logs[True] == logs[False]
    assert [r["doc_id"] for r in logs[True]] == ["d000", "d001", "d003", "d002", "d004", "d005"]
    assert "skipped" in logs[True][2]
