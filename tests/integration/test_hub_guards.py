"""Hub tasks without network: the device is checked first, and the data fails at once."""

from __future__ import annotations

import pytest

from harness.cli import main as cli


@pytest.fixture
def no_hub(monkeypatch):
    """The hub unreachable; every datasets.load_dataset call recorded (and failing)."""
    import datasets
    import datasets.config
    import huggingface_hub.constants as hub

    import harness.models.loading as loading

    calls = []

    def load_dataset(*args, **kwargs):
        calls.append((args[0], datasets.config.HF_HUB_OFFLINE, hub.HF_HUB_OFFLINE))
        raise FileNotFoundError("not in the cache")

    monkeypatch.setattr(loading, "hub_reachable", lambda: False)
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


def test_config_with_a_hub_task_checks_the_device_before_the_data(tmp_path, no_hub, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("checks the no-CUDA refusal")
    run_file = tmp_path / "run.yaml"
    run_file.write_text("model: {name: toy, device: cuda}\ntasks: [pope]\ninterventions: [none]\n")
    assert cli.main(["run", "--config", str(run_file), "--output", str(tmp_path / "o")]) == 2
    assert "device 'cuda' asked for, but CUDA is not available" in capsys.readouterr().err
    assert no_hub == []  # refused before any dataset was touched
    assert not (tmp_path / "o").exists()


def test_an_unreachable_hub_reads_only_the_cache_and_says_how_to_go_local(tmp_path, no_hub, capsys):
    run_file = tmp_path / "run.yaml"
    run_file.write_text("model: toy\ntasks: [pope]\ninterventions: [none]\n")
    assert cli.main(["run", "--config", str(run_file), "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "is not in the local datasets cache and the hub cannot be reached" in err
    assert "data_dir" in err
    assert no_hub and all(call[1:] == (True, True) for call in no_hub), no_hub
