import json

import pytest

from harness.api.heads import Geometry, Head
from harness.api.specs import (
    InterventionSpec,
    ModelSpec,
    RunSpec,
    SpecError,
    TaskSpec,
    load_run_file,
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
