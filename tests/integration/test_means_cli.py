"""``headscope means``: the mean reference of ablate:mode=mean, built from tasks' prompts."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from harness.api.model import load_adapter  # noqa: E402
from harness.api.specs import ModelSpec, TaskSpec  # noqa: E402
from harness.api.task import build_task  # noqa: E402
from harness.cli import main as cli  # noqa: E402
from harness.probes.means import compute_head_means  # noqa: E402
from interventions._means import load_head_means  # noqa: E402


@pytest.fixture(scope="module")
def toy():
    return load_adapter(ModelSpec())


def _requests(n):
    task = build_task("pope_mini", {})
    return [task.request(d) for d in TaskSpec("pope_mini", limit=n).take(task.load(limit=n))]


def test_means_file_holds_the_means_of_the_tasks_prompts_and_what_they_came_from(tmp_path, toy):
    out = tmp_path / "m" / "toy.pt"
    argv = ["means", "--tasks", "pope_mini", "--limit", "3", "--batch-size", "2"]
    assert cli.main([*argv, "--output", str(out)]) == 0
    saved = torch.load(out, weights_only=True)
    ref = saved["reference"]
    assert ref["n_docs"] == 3 and ref["batch_size"] == 2 and ref["model"]["family"] == "toy"
    assert [t["name"] for t in ref["tasks"]] == ["pope_mini"] and ref["tasks"][0]["limit"] == 3
    requests = _requests(3)
    batches = [toy.prepare(requests[:2]), toy.prepare(requests[2:])]
    assert ref["n_tokens"] == sum(int(b["attention_mask"].sum()) for b in batches)
    assert torch.equal(saved["mean"], compute_head_means(toy.model, batches))
    # padding does not count: one request per pass gives the same means
    single = compute_head_means(toy.model, [toy.prepare([r]) for r in requests])
    torch.testing.assert_close(saved["mean"], single, rtol=1e-4, atol=1e-5)
    g = toy.geometry
    assert tuple(load_head_means(str(out), g).shape) == (g.num_layers, g.num_heads, g.head_dim)


def test_npz_means_drive_a_mean_ablation_run(tmp_path, toy):
    means = tmp_path / "toy.npz"
    assert cli.main(["means", "--tasks", "pope_mini", "--limit", "2", "--output", str(means)]) == 0
    with np.load(means) as data:
        assert json.loads(str(data["reference"]))["n_docs"] == 2
    spec = f'ablate:select=heads,heads=["L0H0"],mode=mean,mean_reference={means}'
    argv = ["run", "--tasks", "pope_mini", "--limit", "2", "--interventions", spec]
    assert cli.main([*argv, "--output", str(tmp_path / "run")]) == 0
    entry = json.loads((tmp_path / "run" / "results.json").read_text())["entries"][0]
    resolved = entry["intervention_resolved"]  # attach loaded the file and ablated L0H0
    assert resolved["mode"] == "mean" and resolved["mean_reference"] == str(means)
    assert resolved["heads"] == ["L0H0"] and entry["n_samples"] == 2


@pytest.mark.parametrize(
    ("argv", "culprit"),
    [
        (["--tasks", "pope_mini", "--output", "m.txt"], "must end in .pt or .npz"),
        (["--tasks", "pope_mni", "--output", "m.pt"], "did you mean 'pope_mini'"),
        (["--tasks", "pope_mini", "--batch-size", "0", "--output", "m.pt"], "--batch-size"),
    ],
)
def test_means_usage_errors_are_one_line_and_write_nothing(argv, culprit, tmp_path, capsys):
    argv = [a if a not in ("m.txt", "m.pt") else str(tmp_path / a) for a in argv]
    assert cli.main(["means", *argv]) == 2
    err = capsys.readouterr().err
    assert (
        len(err.splitlines()) == 1 and culprit in err and err.startswith("headscope means: error")
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["checkpoint.pt", "archive.npz", "folder.pt", "link.pt"])
def test_an_existing_file_that_is_not_a_means_file_is_never_overwritten(kind, tmp_path, capsys):
    target = tmp_path / kind
    if kind == "checkpoint.pt":  # someone's weights: a torch archive without mean/reference
        torch.save({"state_dict": {"w": torch.ones(2)}}, target)
    elif kind == "archive.npz":
        np.savez(target, weights=np.ones(3))
    elif kind == "folder.pt":
        target.mkdir()
    else:
        torch.save({"mean": torch.zeros(1), "reference": {}}, tmp_path / "real.pt")
        target.symlink_to(tmp_path / "real.pt")
    before = {p.name: p.is_dir() or p.read_bytes() for p in tmp_path.iterdir()}
    argv = ["means", "--tasks", "pope_mini", "--limit", "1", "--output", str(target)]
    assert cli.main(argv) == 2  # was 0: the file replaced by the means
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "is not a means file headscope wrote" in err
    assert {p.name: p.is_dir() or p.read_bytes() for p in tmp_path.iterdir()} == before


def test_an_earlier_means_file_is_replaced_whole(tmp_path):
    out = tmp_path / "toy.npz"
    argv = ["means", "--tasks", "pope_mini", "--output", str(out)]
    assert cli.main([*argv, "--limit", "1"]) == 0
    assert cli.main([*argv, "--limit", "2"]) == 0  # its own earlier output: rewritten
    with np.load(out) as data:
        assert json.loads(str(data["reference"]))["n_docs"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy.npz"]  # no temp file left
