"""``headscope heads``: export a cell's heads from a toy run, import, compare; a head-set
file given as ``ranking=`` ablates the same heads as the list it came from."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.cli.main import main


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("heads") / "run"
    cell = "ablate:heads=L0H1+L1H2+L3H7,select=heads"
    code = main(
        [
            "run",
            "--tasks",
            "pope_mini",
            "--limit",
            "2",
            "--interventions",
            cell,
            "--output",
            str(out),
            "--verbosity",
            "WARNING",
        ]
    )
    assert code == 0
    return out, cell


def test_export_cell_import_compare(toy_run, tmp_path, capsys):
    run, cell = toy_run
    exported = tmp_path / "cell.json"
    assert (
        main(["heads", "export", str(run / "results.json"), "--cell", cell, "-o", str(exported)])
        == 0
    )
    doc = json.loads(exported.read_text())
    assert doc["format"] == "headscope.heads" and doc["geometry"]["num_layers"] == 4
    assert [row["selected"] for row in doc["layers"]] == [[1], [2], [], [7]]
    assert doc["source"] == {
        "kind": "intervention",
        "file": str(run / "results.json"),
        "cell": cell,
    }

    sparsemm = tmp_path / "qwen.json"
    rng = np.random.default_rng(0)
    sparsemm.write_text(
        json.dumps({f"{la}-{h}": [float(rng.random())] for la in range(4) for h in range(8)})
    )
    imported = tmp_path / "sparsemm.json"
    assert (
        main(
            ["heads", "import", str(sparsemm), "--k", "3", "--name", "visual", "-o", str(imported)]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["heads", "compare", str(exported), str(imported), "--json"]) == 0
    pair = json.loads(capsys.readouterr().out)["pairs"][0]
    chosen = {
        (la, h)
        for la, row in enumerate(json.loads(imported.read_text())["layers"])
        for h in row["selected"]
    }
    shared = len(chosen & {(0, 1), (1, 2), (3, 7)})
    assert pair["a"] == cell and pair["b"] == "visual" and pair["k"] == 3
    assert pair["shared"] == shared and pair["overlap"] == shared / 3
    assert pair["spearman"] is None  # the cell's set has no scores


def test_usage_errors(toy_run, tmp_path, capsys):
    run, cell = toy_run
    capsys.readouterr()
    assert main(["heads", "export", str(run / "results.json"), "-o", str(tmp_path / "x.json")]) == 2
    assert "--cell" in capsys.readouterr().err
    assert (
        main(
            [
                "heads",
                "export",
                str(run / "results.json"),
                "--cell",
                "ablate:k=1",
                "-o",
                str(tmp_path / "x.json"),
            ]
        )
        == 2
    )
    assert cell in capsys.readouterr().err  # names the cells it has
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": true}')
    assert (
        main(["heads", "export", str(run / "results.json"), "--cell", cell, "-o", str(notes)]) == 2
    )
    assert "not a head-set file" in capsys.readouterr().err
    assert notes.read_text() == '{"mine": true}'
    assert main(["heads", "compare", str(notes)]) == 2


def test_head_set_file_as_ranking_ablates_the_same_heads(toy_run, tmp_path):
    run, cell = toy_run
    exported = tmp_path / "cell.json"
    assert (
        main(["heads", "export", str(run / "results.json"), "--cell", cell, "-o", str(exported)])
        == 0
    )
    out = tmp_path / "again"
    spec = f"ablate:select=top,k=3,ranking={exported}"
    assert (
        main(
            [
                "run",
                "--tasks",
                "pope_mini",
                "--limit",
                "2",
                "--interventions",
                spec,
                "--output",
                str(out),
                "--verbosity",
                "WARNING",
            ]
        )
        == 0
    )
    entry = json.loads((out / "results.json").read_text())["entries"][0]
    assert entry["intervention_resolved"]["heads"] == ["L0H1", "L1H2", "L3H7"]
    before = [
        json.loads(line)["output"] for line in sorted((run / "samples").glob("*.jsonl"))[0].open()
    ]
    after = [
        json.loads(line)["output"] for line in sorted((out / "samples").glob("*.jsonl"))[0].open()
    ]
    assert before == after
