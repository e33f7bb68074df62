"""Every family end to end on its tiny instance, through the command line (slow).

For each registered family with a tiny recipe (``unit_names(tiny=True)``): ``rank`` with gold
evidence and maps, ``run`` with every intervention (none, top / bottom / random ablation, SAP
with a noise prior — the pixel priors only where the unit lists them —, both noise baselines,
hybrid attention from the ranking), ``diagnose`` and ``view``, each at the released processor
geometry (``--model-args tiny=true``): the commands docs/adding_a_family.md tells a user to
try before downloading weights.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from harness.cli import main as cli  # noqa: E402
from harness.models.unit import unit_names, unit_of  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("family", unit_names(tiny=True))
def test_rank_run_diagnose_maps_view(family, tmp_path):
    model = ["--model", family, "--model-args", "tiny=true"]
    rank, run, diag, view = (tmp_path / n for n in ("rank", "run", "diag", "view"))
    argv = [
        "rank",
        *model,
        "--tasks",
        "refcocog_mini",
        "--limit",
        "1",
        "--maps",
        "1",
        "--no-progress",
    ]
    assert cli.main([*argv, "--output", str(rank)]) == 0
    ranking = json.loads((rank / "ranking.json").read_text())
    assert ranking["model"]["pretrained"] == f"tiny-random:{family}"
    assert ranking["tasks"]["refcocog_mini"]["n_samples"] == 1
    maps = json.loads((rank / "maps.json").read_text())
    assert list(maps["tasks"]) == ["refcocog_mini"]

    ranked = f"ranking={rank / 'ranking.json'}"
    prior = (unit_of(family).sap_priors or ("uniform",))[0]
    cells = [
        "none",
        f"ablate:k=0.25,{ranked}",
        f"ablate:k=0.25,select=bottom,{ranked}",
        "ablate:k=0.25,select=random",
        f"sap:prior={prior}",
        "noise_delta",
        "noise_qkv",
        f"hybrid:keep=0.5,{ranked},window=32",
    ]
    argv = ["run", *model, "--tasks", "pope_mini,refcocog_mini", "--limit", "1"]
    for cell in cells:
        argv += ["--interventions", cell]
    assert cli.main([*argv, "--output", str(run)]) == 0
    entries = json.loads((run / "results.json").read_text())["entries"]
    done = {(e["task"], e["intervention"]) for e in entries if e["n_samples"] == 1}
    assert len(done) == 2 * len(cells), sorted(done)

    argv = [
        "diagnose",
        *model,
        "--tasks",
        "refcocog_mini",
        "--limit",
        "1",
        "--no-figures",
        "--no-progress",
    ]
    assert cli.main([*argv, "--output", str(diag)]) == 0
    paper = json.loads((diag / "diagnostics_paper.json").read_text())
    assert paper["model"]["family"] == family and paper["n_samples"] == 1

    assert cli.main(["view", str(run), str(rank), "--output", str(view)]) == 0
    assert (view / "index.html").is_file() and (view / "sample.html").is_file()
