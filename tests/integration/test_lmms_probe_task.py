"""``python -m harness.lmms.probe_task DIR``: the include directory docs/lmms_eval.md runs."""

import json

import pytest
import yaml

from harness.lmms.probe_task import main


class _Loader(yaml.SafeLoader):
    """Reads lmms-eval's ``!function module.name`` tags as plain strings."""


_Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def test_probe_task_writes_an_include_directory(tmp_path, capsys):
    out = tmp_path / "lmms_include"
    assert main([str(out), "--n", "3"]) == 0
    assert "wrote 3 documents" in capsys.readouterr().out
    rows = json.loads((out / "probe.json").read_text())
    assert len(rows) == 3 and all((out / r["image"]).is_file() for r in rows)
    for name, kind in (
        ("headscope_probe", "generate_until"),
        ("headscope_probe_ll", "loglikelihood"),
    ):
        task = yaml.load((out / f"{name}.yaml").read_text(), Loader=_Loader)
        assert (task["task"], task["output_type"]) == (name, kind)
        assert task["dataset_kwargs"]["data_files"]["test"] == str(out / "probe.json")
        assert task["process_results"].startswith("probe_utils.")
    compile((out / "probe_utils.py").read_text(), "probe_utils.py", "exec")
    with pytest.raises(SystemExit):
        main([str(out)])  # exists
    with pytest.raises(SystemExit):
        main([str(tmp_path / "tasks")])  # would shadow headscope's tasks package
