"""Progress output: bars on a terminal, one line per loop elsewhere, --verbosity obeyed."""

import contextlib
import dataclasses
import io
import logging
import re

import pytest

from harness.api.intervention import Intervention
from harness.api.progress import LOGGER, Progress, track
from harness.api.registry import intervention
from harness.api.specs import InterventionSpec, RunSpec, TaskSpec
from harness.run.evaluator import run_grid
from harness.testing.mock import ScriptedAdapter
from tests.toy_task import correct_on_even

LINE = re.compile(
    r"\[headscope\] (?P<desc>.+): (?P<n>\d+)/(?P<total>\d+) samples \((?P<new>\d+) new\) "
    r"in (?P<elapsed>\d+\.\d) s, (?:(?P<rate>\d+\.\d) samples/s|nothing new)"
)


@intervention("test_progress_noop")
@dataclasses.dataclass(frozen=True)
class _Noop(Intervention):
    """Changes nothing (a second grid column for the mock adapter)."""

    @contextlib.contextmanager
    def attach(self, adapter):
        yield {}


class Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def level():
    logger = logging.getLogger(LOGGER)
    old = logger.level
    yield logger.setLevel
    logger.setLevel(old)


def test_non_tty_writes_one_line_with_count_rate_and_elapsed():
    out = io.StringIO()
    with Progress(10, "pope_mini × none", initial=4, stream=out) as p:
        for _ in range(6):
            p.update()
    text = out.getvalue()
    assert "\r" not in text and text.count("\n") == 1
    m = LINE.fullmatch(text.strip())
    assert m and m["desc"] == "pope_mini × none"
    assert (m["n"], m["total"], m["new"]) == ("10", "10", "6")
    assert m["rate"] is not None and float(m["rate"]) > 0


def test_resumed_loop_with_nothing_left_says_so():
    out = io.StringIO()
    Progress(5, "t × none", initial=5, stream=out).close()
    m = LINE.fullmatch(out.getvalue().strip())
    assert m and m["new"] == "0" and m["rate"] is None


def test_terminal_keeps_the_live_bar():
    out = Tty()
    with Progress(3, "bar", stream=out) as p:
        for _ in range(3):
            p.update()
    assert "\r" in out.getvalue() and "[headscope]" not in out.getvalue()


@pytest.mark.parametrize("name", ["WARNING", "ERROR", "CRITICAL"])
def test_quiet_levels_show_nothing(level, name):
    level(name)
    for stream in (io.StringIO(), Tty()):
        with Progress(3, "x", stream=stream) as p:
            p.update(3)
        assert stream.getvalue() == ""


@pytest.mark.parametrize("name", ["DEBUG", "INFO"])
def test_verbose_levels_show_the_line(level, name):
    level(name)
    out = io.StringIO()
    Progress(1, "x", stream=out).close()
    assert LINE.fullmatch(out.getvalue().strip())


def test_track_yields_everything_and_can_be_disabled(capsys):
    assert list(track(range(4), "probe")) == [0, 1, 2, 3]
    assert LINE.fullmatch(capsys.readouterr().err.strip())
    assert list(track(range(4), "probe", enabled=False)) == [0, 1, 2, 3]
    assert capsys.readouterr().err == ""


def test_evaluator_prints_one_line_per_cell_when_not_a_tty(tmp_path, capsys, level):
    spec = RunSpec(
        tasks=(TaskSpec("test_echo", args={"n": 6}),),
        interventions=(InterventionSpec("none"), InterventionSpec("test_progress_noop")),
        output=str(tmp_path / "run"),
        batch_size=2,
    )
    run_grid(spec, ScriptedAdapter(correct_on_even))
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert "\r" not in err and len(lines) == 2  # one per (task, intervention) cell
    found = [LINE.fullmatch(ln) for ln in lines]
    assert [m["desc"] for m in found] == ["test_echo × none", "test_echo × test_progress_noop"]
    assert all((m["n"], m["total"], m["new"]) == ("6", "6", "6") for m in found)
    level("WARNING")
    run_grid(spec, ScriptedAdapter(correct_on_even))  # resumed: nothing new, nothing printed
    assert capsys.readouterr().err == ""


@pytest.fixture
def mock_model(monkeypatch):
    import harness.api.model as base
    from harness.api.registry import MODEL_FAMILIES

    monkeypatch.setattr(base, "load_adapter", lambda spec: ScriptedAdapter(correct_on_even))
    with MODEL_FAMILIES.temporary("toy", ScriptedAdapter, replace=True):
        yield


@pytest.mark.parametrize("verbosity, lines", [(None, 1), ("info", 1), ("WARNING", 0), ("error", 0)])
def test_verbosity_flag_of_run(tmp_path, mock_model, capsys, level, verbosity, lines, monkeypatch):
    from harness.cli import main as cli

    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")  # the CLI sets it; restored after

    level(logging.NOTSET)  # restored by the fixture after the CLI set it
    argv = ["run", "--tasks", "test_echo", "--limit", "3", "--interventions", "none"]
    argv += ["--output", str(tmp_path / "o")] + (["--verbosity", verbosity] if verbosity else [])
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    assert [ln for ln in err.splitlines() if LINE.fullmatch(ln)] == [
        ln for ln in err.splitlines() if ln.startswith("[headscope]")
    ]
    assert (
        sum(ln.startswith("[headscope] test_echo × none: 3/3") for ln in err.splitlines()) == lines
    )


def test_hugging_face_bars_off_when_not_drawing_bars(monkeypatch, level):
    from transformers.utils import logging as hf_logging

    from harness.api.progress import quiet_library_bars

    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")  # restored after the test
    monkeypatch.setattr("sys.stderr", Tty())
    level("INFO")
    hf_logging.enable_progress_bar()  # a known start (earlier CLI runs may have turned it off)
    assert quiet_library_bars() is False  # a terminal: HF's bars stay
    assert hf_logging.is_progress_bar_enabled()
    monkeypatch.setattr("sys.stderr", io.StringIO())
    try:
        assert quiet_library_bars() is True
        assert not hf_logging.is_progress_bar_enabled()
        import os

        assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    finally:
        hf_logging.enable_progress_bar()
