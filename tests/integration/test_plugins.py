"""Plugins without forking: the example of docs/plugins.md, installed with pip and included.

The plugin files are taken from docs/plugins.md itself, so the documented example is the
tested one. Each run is a fresh `python -m harness` process (the plugin's names must not leak
into this test process's registries).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "plugins.md"


def doc_files() -> dict[str, str]:
    """``{file name: content}`` of the ``<!-- file: NAME -->`` blocks of docs/plugins.md."""
    text = DOC.read_text(encoding="utf-8")
    pattern = r"<!-- file: (\S+) -->\n```\w*\n(.*?)```"
    return {name: body for name, body in re.findall(pattern, text, flags=re.S)}


def headscope(*args: str, pythonpath: list[Path] = (), cwd: Path | None = None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*map(str, pythonpath), str(ROOT)]))
    env["OMP_NUM_THREADS"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The documented package, pip-installed (with its entry points) into a temp site dir."""
    src = tmp_path_factory.mktemp("plugin_src")
    for name, body in doc_files().items():
        (src / name).write_text(body, encoding="utf-8")
    site = tmp_path_factory.mktemp("site")
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
           "--no-build-isolation", "--target", str(site), str(src)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert list(site.glob("headscope_shout-*.dist-info/entry_points.txt"))
    return site


def test_the_documented_example_has_both_files():
    assert set(doc_files()) == {"pyproject.toml", "headscope_shout.py"}


def test_installed_plugin_registers_through_entry_points(installed):
    for kind, name in (("tasks", "shout"), ("models", "echo"), ("interventions", "tag")):
        proc = headscope("list", kind, pythonpath=[installed])
        assert proc.returncode == 0, proc.stderr
        assert re.search(rf"^{name}\s", proc.stdout, flags=re.M), proc.stdout
    assert "shout" not in headscope("list", "tasks").stdout  # not installed: not there


def test_installed_plugin_runs_a_grid(installed, tmp_path):
    out = tmp_path / "run"
    proc = headscope("run", "--model", "echo", "--tasks", "shout", "--interventions", "none",
                     "--interventions", "tag:label=hello", "--output", str(out),
                     pythonpath=[installed])  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "results.json").read_text())
    cells = {e["intervention"]: e for e in data["entries"]}
    assert set(cells) == {"none", "tag:label=hello"}
    assert cells["none"]["metrics"][0] == {"name": "exact", "value": 1.0, "stderr": 0.0, "n": 6}
    assert cells["tag:label=hello"]["intervention_resolved"] == {"name": "tag", "label": "hello"}


def test_include_path_imports_the_same_module(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "headscope_shout.py").write_text(doc_files()["headscope_shout.py"])
    (folder / "_helper.py").write_text("raise RuntimeError('private files are not imported')\n")
    out = tmp_path / "run"
    argv = ["run", "--include_path", str(folder), "--model", "echo", "--tasks", "shout",
            "--interventions", "none", "--limit", "3", "--output", str(out)]  # fmt: skip
    proc = headscope(*argv)
    assert proc.returncode == 0, proc.stderr
    entry = json.loads((out / "results.json").read_text())["entries"][0]
    assert entry["task"] == "shout" and entry["n_samples"] == 3


def test_a_broken_plugin_file_is_named(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "broken.py").write_text("import not_a_module_anywhere\n")
    proc = headscope("list", "tasks", "--include_path", str(folder))
    assert proc.returncode == 2
    assert "broken.py" in proc.stderr and "not_a_module_anywhere" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_plugin_name_clashing_with_a_builtin_is_refused(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "clash.py").write_text(
        "from harness.api.registry import task\nfrom harness.api.task import Task\n\n"
        "@task('pope')\nclass MyPope(Task):\n    pass\n"
    )
    proc = headscope("list", "tasks", "--include_path", str(folder))
    assert proc.returncode == 2
    assert "duplicate task name 'pope'" in proc.stderr and "clash.py" in proc.stderr


@pytest.mark.parametrize(
    ("entry", "argv"),
    [
        ("tasks.py", ["list", "tasks"]),
        ("yaml.py", ["run", "--config", "{run}", "--output", "{out}"]),
        ("tasks/__init__.py", ["list", "tasks"]),
    ],
)
def test_a_plugin_cannot_shadow_a_module_headscope_imports(tmp_path, entry, argv):
    """Before: DIR went first on sys.path, so DIR/tasks.py replaced the built-in tasks and
    DIR/yaml.py replaced PyYAML (a traceback when the run file was read)."""
    folder = tmp_path / "plugins"
    (folder / entry).parent.mkdir(parents=True, exist_ok=True)
    (folder / entry).write_text("SHADOW = True\n")
    (folder / "headscope_shout.py").write_text(doc_files()["headscope_shout.py"])
    run = tmp_path / "run.yaml"
    run.write_text("tasks: [pope_mini]\ninterventions: [none]\n")
    args = [a.format(run=run, out=tmp_path / "out") for a in argv]
    proc = headscope(*args, "--include_path", str(folder))
    name = entry.split("/")[0]
    assert proc.returncode == 2, proc.stderr
    assert f"{name!r} is named like the module {name.removesuffix('.py')!r}" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ("import sys\nsys.exit(3)\n", "called sys.exit(3) while imported"),
        ("raise KeyboardInterrupt\n", "raised KeyboardInterrupt while imported"),
    ],
)
def test_a_plugin_that_stops_the_program_at_import_is_named(tmp_path, body, what):
    """Before: sys.exit(3) ended headscope with code 3 and no word; KeyboardInterrupt printed
    "interrupted; rerun the same command to resume" as if the user had pressed Ctrl-C."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "stopper.py").write_text(body)
    proc = headscope("list", "tasks", "--include_path", str(folder))
    assert proc.returncode == 2, proc.stderr
    assert "stopper.py" in proc.stderr and what in proc.stderr


def test_a_plugin_task_run_is_rescored_ranked_and_tabled_with_include_path(tmp_path):
    """Before: rescore forced scoring=MODE on a plugin task with one fixed rule and refused it
    ("does not take argument(s) ['scoring']"); the plugin task is scored by its rule."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "headscope_shout.py").write_text(doc_files()["headscope_shout.py"])
    out = tmp_path / "run"
    plug = ["--include_path", str(folder)]
    grid = ["run", *plug, "--model", "echo", "--tasks", "shout", "--interventions", "none"]
    assert headscope(*grid, "--limit", "3", "--output", str(out)).returncode == 0
    proc = headscope("rescore", str(out), "--scoring", "official", *plug)
    assert proc.returncode == 0, proc.stderr
    first = json.loads((out / "results.json").read_text())["entries"][0]
    again = json.loads((out / "results.scoring-official.json").read_text())["entries"][0]
    assert again["metrics"] == first["metrics"] and again["n_samples"] == 3
    unknown = headscope("rescore", str(out), "--scoring", "official")
    assert unknown.returncode == 2 and "unknown task 'shout'" in unknown.stderr
    board = headscope("leaderboard", str(out), "--output", str(tmp_path / "board"), *plug)
    assert board.returncode == 2 and "--scoring official" in board.stderr  # two files: say which
    board = headscope(
        "leaderboard", str(out), "--scoring", "official", "--output", str(tmp_path / "board"), *plug
    )
    assert board.returncode == 0, board.stderr
    rank_out = str(tmp_path / "rank")
    rank = headscope("rank", *plug, "--model", "echo", "--tasks", "shout", "--output", rank_out)
    assert rank.returncode == 2 and "unknown" not in rank.stderr  # the plugin's names resolve
    assert "'echo'" in rank.stderr or "'shout'" in rank.stderr


def test_a_head_intervention_on_a_model_without_heads_is_one_line(tmp_path):
    """The example's echo model has no transformers model: ablate/sap say so, nothing written."""
    (tmp_path / "headscope_shout.py").write_text(doc_files()["headscope_shout.py"])
    for spec in ("ablate:select=random,k=1,mode=zero", "sap"):
        out = tmp_path / spec.split(":")[0]
        argv = ["--model", "echo", "--tasks", "shout", "--interventions", spec]
        proc = headscope("run", "--include_path", str(tmp_path), *argv, "--output", str(out))
        assert proc.returncode == 2, proc.stderr
        (line,) = proc.stderr.strip().splitlines()
        assert "model family 'echo' has no transformers model" in line
        assert "AttributeError" not in line and not out.exists()
