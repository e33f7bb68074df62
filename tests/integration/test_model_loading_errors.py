"""Bad model input is refused with one clear message, before weights are read."""

import pytest

from harness.api.model import load_adapter
from harness.api.specs import ModelSpec, SpecError
from harness.cli import main as cli


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_hub_id_not_on_disk_without_network_names_it_and_asks_for_a_directory(offline):
    spec = ModelSpec(name="qwen2_5_vl", pretrained="SomeOrg/Not-A-Cached-Model-7B")
    with pytest.raises(SpecError) as err:
        load_adapter(spec)
    text = str(err.value)
    assert "'SomeOrg/Not-A-Cached-Model-7B'" in text and "local directory" in text
    assert "qwen2_5_vl" in text


def test_unreachable_hub_is_detected_quickly(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: refused at once
    from harness.models import loading

    with pytest.raises(loading.CheckpointError, match="cannot be reached"):
        loading.resolve_checkpoint(ModelSpec(name="llava", pretrained="Org/Missing"), None)


def test_missing_local_directory_is_named(tmp_path):
    with pytest.raises(SpecError, match="does not exist"):
        load_adapter(ModelSpec(name="llava", pretrained=str(tmp_path / "nope")))


def test_cli_missing_checkpoint_exits_2_without_traceback(offline, tmp_path, capsys):
    argv = ["run", "--model", "qwen2_5_vl", "--model_args", "pretrained=Org/Missing-VL,"
            "dtype=bfloat16", "--tasks", "refcocog", "--output", str(tmp_path / "o")]  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "'Org/Missing-VL'" in err and "Traceback" not in err and "OSError" not in err
    assert not (tmp_path / "o").exists()  # nothing written


def test_family_options_the_processor_does_not_understand_are_refused():
    with pytest.raises(SpecError, match=r"\['foo'\].*not understood"):
        load_adapter(ModelSpec(name="toy", args={"foo": 1}))
    with pytest.raises(SpecError, match=r"Did you mean \['crop_size'\]"):
        load_adapter(ModelSpec(name="toy", args={"crop_sise": {"height": 8, "width": 8}}))


def test_family_options_the_processor_understands_are_accepted():
    size = {"height": 64, "width": 64}
    adapter = load_adapter(ModelSpec(name="toy", args={"crop_size": size}))
    assert adapter.processor.image_processor.crop_size.height == 64


def test_cli_flat_model_args_key_is_a_family_option_and_refused(tmp_path, capsys):
    argv = ["run", "--model", "toy", "--model-args", "foo=1", "--tasks", "refcocog_mini",
            "--output", str(tmp_path / "o")]  # fmt: skip
    assert cli.main(argv) == 2
    assert "['foo']" in capsys.readouterr().err


@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_cuda_without_cuda_is_a_clear_error(monkeypatch, device):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SpecError, match="CUDA is not available"):
        load_adapter(ModelSpec(name="toy", device=device))


def test_cuda_index_beyond_the_devices_is_a_clear_error(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    from harness.models import loading

    with pytest.raises(SpecError, match="1 CUDA device"):
        loading.check_device("cuda:3")


def test_lmms_plugin_refuses_a_missing_family():
    pytest.importorskip("lmms_eval")
    from harness.lmms.model import HeadscopeLMM

    with pytest.raises(SpecError, match="'family' is required"):
        HeadscopeLMM(pretrained="x")


def _damaged_toy(tmp_path, weights: str):
    """A copy of the bundled toy checkpoint whose weights file is cut in half."""
    import shutil

    from harness.models.toy import TOY_DIR

    folder = tmp_path / "ckpt"
    shutil.copytree(TOY_DIR, folder)
    if weights == "pytorch_model.bin":  # the older torch format, from the same tensors
        import torch
        from safetensors.torch import load_file

        torch.save(load_file(folder / "model.safetensors"), folder / weights)
        (folder / "model.safetensors").unlink()
    data = (folder / weights).read_bytes()
    (folder / weights).write_bytes(data[: len(data) // 2])
    return folder


@pytest.mark.parametrize("weights", ["model.safetensors", "pytorch_model.bin"])
def test_cli_truncated_weights_exit_2_naming_the_checkpoint(weights, tmp_path, capsys):
    folder = _damaged_toy(tmp_path, weights)
    argv = ["run", "--model-args", f"pretrained={folder}", "--tasks", "pope_mini", "--limit", "1",
            "--interventions", "none", "--output", str(tmp_path / "o")]  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"the weights in '{folder}' cannot be read" in err
    assert "truncated or damaged: download the checkpoint again" in err
    assert not (tmp_path / "o").exists()


def test_a_bug_while_loading_weights_keeps_its_traceback(monkeypatch, tmp_path):
    import transformers

    def broken(*args, **kwargs):
        raise RuntimeError("a bug inside from_pretrained")

    cls = transformers.LlavaForConditionalGeneration
    monkeypatch.setattr(cls, "from_pretrained", broken)
    with pytest.raises(RuntimeError, match="a bug inside"):
        load_adapter(ModelSpec(name="toy"))


@pytest.mark.parametrize(
    ("device", "match"),
    [
        ("banana", "'banana' is not a device name"),
        ("cuda:x", "'cuda:x' is not a device name"),
        ("CPU", "'CPU' is not a device name"),
        ("meta", "meta is not available here"),
        ("mps", "mps is not available here"),
    ],
)
def test_a_device_torch_cannot_parse_or_this_machine_lacks_is_a_clear_error(device, match):
    import torch

    if device == "mps" and torch.backends.mps.is_available():
        pytest.skip("this machine has MPS")
    with pytest.raises(SpecError, match=match):
        load_adapter(ModelSpec(name="toy", device=device))


def test_cpu_with_an_index_is_accepted():
    from harness.models import loading

    assert loading.missing_device("cpu") is None and loading.missing_device("cpu:0") is None
