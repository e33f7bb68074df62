"""Every ``headscope`` command in README.md and docs/*.md is accepted as written.

Each shell block's ``headscope ...`` lines are read as the shell would (line continuations,
quotes, comments, ``VAR=value`` prefixes, ``&&``) and given to the real command line with
the work itself stubbed: argparse parses every command (bench flags by the bench's own
parser); ``run`` goes on through everything it checks before a model loads (the run spec,
``--scoring``, task arguments, the main job's "a grounded task" rule) and stops where the
model would load; ``rank`` and ``diagnose`` likewise. Substitutions: ``"device": "cuda"``
and ``--device cuda`` become cpu (the checks of a machine without a GPU are not the docs'),
and output paths go to a temporary directory. A command that names a plugin
(``--include_path``) is only parsed: its folder is a placeholder.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from harness.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```(?:bash|sh|shell|console)\n(.*?)```", re.S)


def _commands(path: Path) -> list[list[str]]:
    out = []
    for block in BLOCK.findall(path.read_text(encoding="utf-8")):
        block = block.replace("\\\n", " ")
        lines, pending = [], ""
        for line in block.splitlines():  # a quoted JSON object may span lines
            pending = f"{pending}\n{line}" if pending else line
            try:
                shlex.split(pending, comments=True)
            except ValueError:
                continue
            lines.append(pending)
            pending = ""
        for line in lines:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split, lexer.commenters = True, "#"
            tokens: list[str] = []
            for token in [*lexer, ";"]:  # commands end at ; && || |
                if token and set(token) <= set(";&|"):
                    _keep(tokens, out)
                    tokens = []
                else:
                    tokens.append(token)
    return out


def _keep(tokens: list[str], out: list[list[str]]) -> None:
    while tokens and re.match(r"^[A-Z_][A-Z0-9_]*=", tokens[0]):
        tokens = tokens[1:]  # VAR=value prefixes
    if tokens[:1] == ["headscope"]:
        out.append(tokens[1:])
    elif tokens[:3] == ["python", "-m", "harness"]:
        out.append(tokens[3:])


COMMANDS = [(p.name, argv) for p in DOCS for argv in _commands(p)]


def test_the_docs_hold_commands():
    names = {name for name, _ in COMMANDS}
    assert {"README.md", "scoring.md", "plugins.md"} <= names
    assert len(COMMANDS) >= 20


class _Reached(BaseException):
    """Raised where the stubbed work would start: everything before it accepted the command."""


def _cpu(argv: list[str]) -> list[str]:
    out = []
    for token in argv:
        token = re.sub(r'"device":\s*"cuda(:\d+)?"', '"device": "cpu"', token)
        token = re.sub(r"device=cuda(:\d+)?", "device=cpu", token)
        out.append("cpu" if re.fullmatch(r"cuda(:\d+)?", token) else token)
    return out


def _outputs(argv: list[str], tmp: Path) -> list[str]:
    out = list(argv)
    for i, token in enumerate(out[:-1]):
        if token in ("--output", "--output_path", "--output-path"):
            out[i + 1] = str(tmp / f"out{i}")
    return out


@pytest.fixture
def stubbed(monkeypatch):
    import harness.cli._probe_args as probe_args
    import harness.run.evaluator as evaluator
    import harness.run.main_job as main_job

    def reached(*_a, **_k):
        raise _Reached

    monkeypatch.setattr(main_job, "_stages", reached)
    monkeypatch.setattr(evaluator, "run_grid", reached)
    monkeypatch.setattr(probe_args, "load_model", reached)
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        ns = original(self, args, namespace)
        if self.prog.startswith("headscope bench "):
            raise _Reached  # a bench's own parser accepted its flags
        return ns

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)


@pytest.mark.parametrize(
    ("doc", "argv"), COMMANDS, ids=[f"{d}:{' '.join(a)[:60]}" for d, a in COMMANDS]
)
def test_every_documented_command_is_accepted(doc, argv, stubbed, tmp_path, capsys):
    argv = _outputs(_cpu(argv), tmp_path)
    parser = cli.build_parser()
    args = parser.parse_args(argv)  # exits 2 (SystemExit) on an unknown flag or a bad value
    deep = args.command in ("run", "rank", "diagnose", "bench") and not getattr(
        args, "include_path", None
    )
    if not deep:
        return
    try:
        code = cli.main(argv)
    except _Reached:
        return
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    pytest.fail(f"{doc}: `headscope {' '.join(argv)}` ended with {code} before its work: {err}")


def test_the_docs_show_no_temporary_paths():
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"/tmp/|/private/var/folders/|pytest-of-", text), path.name


#: Commands whose output a leaderboard or the viewer reads (typed headscope files).
RESULT_WRITERS = ("run", "rank", "diagnose", "rescore")


def _written(argv: list[str]) -> str | None:
    """The path a documented command writes: its --output or its default, or None."""
    for flag in ("--output", "--output_path", "--output-path"):
        if flag in argv[:-1]:
            return argv[argv.index(flag) + 1].rstrip("/")
    return "headscope_out" if argv[0] == "run" else None  # run's default


def _inputs(argv: list[str]) -> list[str]:
    """The run directories or files a leaderboard / view / rescore command reads."""
    if argv[0] not in ("leaderboard", "view", "rescore"):
        return []
    out, skip = [], False
    for token in argv[1:]:
        if skip:
            skip = False
        elif token.startswith("-"):
            skip = "=" not in token and token not in ("--serve", "--no-figures", "--all-metrics")
        else:
            out.append(token.rstrip("/"))
    return out


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_no_documented_command_overwrites_another(path):
    """Two different commands of one page never write one place (the second would replace
    the first, or be refused as a different spec), and a leaderboard or the viewer never reads
    what is not a run (a means file, a leaderboard's own folder)."""
    import fnmatch

    writers: dict[str, list[str]] = {}
    for argv in _commands(path):
        for pattern in _inputs(argv):
            for written, by in writers.items():
                inside = fnmatch.fnmatch(written, pattern) or written.startswith(pattern + "/")
                assert not inside or by[0] in RESULT_WRITERS, (
                    f"{path.name}: `headscope {' '.join(argv)}` reads {written!r}, which "
                    f"`headscope {' '.join(by)}` wrote: not a run"
                )
        target = _written(argv)
        if target is None:
            continue
        earlier = writers.setdefault(target, argv)
        assert earlier == argv, (
            f"{path.name}: `headscope {' '.join(argv)}` and `headscope {' '.join(earlier)}` "
            f"both write {target!r}"
        )


def test_documented_include_paths_are_folders():
    """``--include_path`` takes a folder (a file is refused): the docs never pass a file."""
    for doc, argv in COMMANDS:
        for i, token in enumerate(argv[:-1]):
            if token in ("--include_path", "--include-path"):
                assert not argv[i + 1].endswith(".py"), f"{doc}: {' '.join(argv)}"
