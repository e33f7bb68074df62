"""Hostile settings are refused (or bounded) before anything is written (issue 29)."""

from __future__ import annotations

import pytest

from harness.api.specs import RunSpec, SpecError, TaskSpec
from harness.cli import main as cli
from harness.run import main_job, protocol


@pytest.mark.parametrize(
    "gen",
    [
        {"temperature": float("nan")},
        {"temperature": float("inf")},
        {"top_p": float("nan")},
    ],
)
def test_main_job_refuses_bad_gen_kwargs_at_once(gen):
    """Before: NaN / inf passed ProtocolConfig, and the job wrote stage 1 before RunSpec refused
    them."""
    with pytest.raises(SpecError, match="main job: gen_kwargs"):
        main_job.ProtocolConfig(gen_kwargs=gen)


def test_main_job_refuses_a_seed_its_generators_cannot_take():
    """Before: accepted; stage 3 (the bench, torch.Generator().manual_seed(seed + length))
    failed with a traceback after stages 1 and 2 had run."""
    with pytest.raises(SpecError, match=r"seed must be in \[0, 2\*\*63\)"):
        main_job.ProtocolConfig(seed=2**64)
    assert main_job.ProtocolConfig(seed=2**63 - 1).seed == 2**63 - 1


def test_grid_refuses_a_sampling_seed_beyond_64_bits():
    with pytest.raises(SpecError, match=r"must be in \[0, 2\*\*64\)"):
        RunSpec(tasks=(TaskSpec("pope_mini"),), gen_kwargs={"do_sample": True}, seed=2**64)
    RunSpec(tasks=(TaskSpec("pope_mini"),), gen_kwargs={"do_sample": True}, seed=2**64 - 1)


@pytest.mark.parametrize("text", ["temperature=NaN", "temperature=Infinity"])
def test_cli_main_job_with_nonfinite_gen_kwargs_writes_nothing(tmp_path, capsys, text):
    out = tmp_path / "out"
    assert cli.main(["run", "--gen_kwargs", text, "--output", str(out)]) == 2
    assert "expected a finite number" in capsys.readouterr().err
    assert not out.exists()


def test_a_huge_limit_is_capped_by_the_mini_tasks_data():
    """Before: --limit 1e12 asked the toy to generate 10**12 samples per task (a hang)."""
    from harness.api.task import build_task
    from harness.toy.scenes import HELD_OUT_SIZE

    spec = protocol.task_spec("pope_mini", 10**12)
    assert spec.args["n"] == HELD_OUT_SIZE
    assert protocol.task_spec("pope_mini", 64).args["n"] == 64
    with pytest.raises(ValueError, match=r"n must be in \[1, 10000\]"):
        build_task("pope_mini", {"n": 10**12})
