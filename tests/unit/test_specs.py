import json

import pytest

from harness.api.heads import Geometry, Head
from harness.api.run_file import load_run_file
from harness.api.specs import (
    InterventionSpec,
    ModelSpec,
    RunSpec,
    SpecError,
    TaskSpec,
    parse_intervention,
)


def test_short_intervention_form_parses_json_scalars():
    spec = parse_intervention("ablate:select=top,k=0.05,mode=zero,draws=5")
    assert spec == InterventionSpec(
        "ablate", {"select": "top", "k": 0.05, "mode": "zero", "draws": 5}
    )
    assert spec.label == "ablate:draws=5,k=0.05,mode=zero,select=top"


def test_json_intervention_form_carries_nested_values():
    spec = parse_intervention('{"name": "sap", "args": {"layers": [1, 2, 3], "lam": 1.0}}')
    assert spec.args["layers"] == [1, 2, 3]


def test_malformed_short_form_points_to_json():
    with pytest.raises(SpecError, match="use the JSON form"):
        parse_intervention("ablate:select")


def test_unknown_keys_are_errors(tmp_path):
    with pytest.raises(SpecError, match=r"unknown key\(s\) \['modle'\]"):
        RunSpec.from_dict({"modle": {}, "tasks": ["pope"]})
    with pytest.raises(SpecError, match="unknown key"):
        ModelSpec.from_dict({"name": "toy", "dtyp": "float32"})


def test_run_file_roundtrip_yaml_and_json(tmp_path):
    data = {
        "model": {"name": "toy", "dtype": "float32"},
        "tasks": ["pope_mini", {"name": "mmmu_mini", "limit": 5, "args": {"n": 20}}],
        "interventions": ["none", {"name": "ablate", "args": {"k": 4, "select": "top"}}],
        "seed": 3,
    }
    (tmp_path / "run.json").write_text(json.dumps(data))
    (tmp_path / "run.yaml").write_text(
        "model: {name: toy, dtype: float32}\n"
        "tasks: [pope_mini, {name: mmmu_mini, limit: 5, args: {n: 20}}]\n"
        "interventions: [none, {name: ablate, args: {k: 4, select: top}}]\n"
        "seed: 3\n"
    )
    a, b = load_run_file(tmp_path / "run.json"), load_run_file(tmp_path / "run.yaml")
    assert a == b
    assert a.tasks[1] == TaskSpec("mmmu_mini", limit=5, args={"n": 20})
    assert RunSpec.from_dict(a.to_dict()) == a


def test_malformed_run_file_is_a_clear_error(tmp_path):
    (tmp_path / "bad.yaml").write_text("tasks: [pope\n")
    with pytest.raises(SpecError, match="bad.yaml.*malformed"):
        load_run_file(tmp_path / "bad.yaml")
    with pytest.raises(SpecError, match="does not exist"):
        load_run_file(tmp_path / "missing.yaml")


def test_invalid_values():
    with pytest.raises(SpecError, match="dtype"):
        ModelSpec(dtype="float8")
    with pytest.raises(SpecError, match="limit"):
        TaskSpec("pope", limit=0)
    with pytest.raises(SpecError, match="no tasks"):
        RunSpec()
    with pytest.raises(SpecError, match="duplicate interventions"):
        RunSpec(tasks=(TaskSpec("a"),), interventions=(InterventionSpec(), InterventionSpec()))


def test_head_has_one_printed_form():
    assert str(Head(12, 3)) == "L12H3"
    assert Head.parse("L12H3") == Head(12, 3)
    with pytest.raises(ValueError):
        Head.parse("12.3")


def test_geometry_counts():
    g = Geometry(num_layers=4, num_heads=8, num_kv_heads=2, head_dim=16, hidden_size=128)
    assert g.num_total_heads == 32 and g.group_size == 4
    assert g.count(0.1) == 4  # ceil(3.2)
    assert g.count(5) == 5
    with pytest.raises(ValueError):
        g.count(33)
    with pytest.raises(ValueError):
        g.check(Head(4, 0))


def _laughs(levels: int = 9) -> str:
    """A small YAML file whose aliases expand to 9**levels strings (billion laughs)."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines)


def test_yaml_aliases_are_refused_before_they_expand(tmp_path):
    """Before: the aliases were expanded when the spec was checked (minutes, gigabytes)."""
    import subprocess
    import sys

    path = tmp_path / "laughs.yaml"
    body = _laughs() + "\ntasks: [pope_mini]\ninterventions: [{name: ablate, args: {x: *a8}}]\n"
    path.write_text(body)
    assert len(body.encode()) < 1000
    code = f"from harness.api.run_file import load_run_file; load_run_file({str(path)!r})"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a sub-kilobyte YAML file with aliases did not finish in 30 s")
    assert "line 2: YAML aliases (*a0) are not allowed in a run file" in proc.stderr


def test_a_self_referencing_alias_is_one_line(tmp_path):
    path = tmp_path / "self.yaml"
    path.write_text("tasks: &x [pope_mini, *x]\n")
    with pytest.raises(SpecError, match=r"line 1: YAML aliases \(\*x\) are not allowed"):
        load_run_file(path)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("dup.yaml", "tasks: [pope_mini]\nseed: 1\nseed: 2\n", "line 3: key 'seed' is given twice"),
        (
            "nested.yaml",
            "tasks: [{name: pope_mini, limit: 1, limit: 2}]\n",
            "key 'limit' is given twice",
        ),
        ("dup.json", '{"tasks": ["pope_mini"], "seed": 1, "seed": 2}', "key 'seed' is given twice"),
    ],
)
def test_a_key_given_twice_is_refused(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SpecError, match=message):
        load_run_file(path)


def test_run_file_takes_the_command_line_shorthands(tmp_path):
    (tmp_path / "short.yaml").write_text(
        "model: toy\ntasks: pope_mini\nlimit: 3\ninterventions: [none]\n"
    )
    spec = load_run_file(tmp_path / "short.yaml")
    assert spec.model.name == "toy"
    assert spec.tasks == (TaskSpec("pope_mini", limit=3),)
    (tmp_path / "two.yaml").write_text(
        'tasks: \'pope_mini, {"name": "mmmu_mini", "limit": 5}\'\nlimit: 0.5\n'
    )
    two = load_run_file(tmp_path / "two.yaml")
    assert two.tasks == (TaskSpec("pope_mini", limit=0.5), TaskSpec("mmmu_mini", limit=5))
    (tmp_path / "bad.yaml").write_text("tasks: [pope_mini]\nlimit: 0\n")
    with pytest.raises(SpecError, match="limit"):
        load_run_file(tmp_path / "bad.yaml")


@pytest.mark.parametrize(
    "argv",
    [
        ["--task-args", '{"pope_mini": {"n": 2}, "pope_mini": {"n": 3}}'],
        ["--model-args", '{"dtype": "float32", "dtype": "bfloat16"}'],
        ["--interventions", '{"name": "ablate", "name": "sap"}'],
        ["--tasks", '{"name": "pope_mini", "limit": 1, "limit": 2}'],
    ],
)
def test_a_key_given_twice_in_a_json_flag_is_refused(tmp_path, capsys, argv):
    """Before: the JSON parser kept the last value silently."""
    from harness.cli.main import main

    out = tmp_path / "out"
    base = ["run", "--tasks", "pope_mini", "--interventions", "none", "--output", str(out)]
    assert main([*base, *argv]) == 2
    assert "is given twice in one mapping" in capsys.readouterr().err
    assert not out.exists()
