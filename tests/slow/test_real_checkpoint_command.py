"""docs/main_job.md's real-checkpoint commands, run as written but with ``--model toy``.

The page reads every benchmark from a local ``data/`` layout; this test writes fixture copies
of the eight benchmarks (tests/fixtures, real schemas) at exactly those paths in a temporary
working directory, checks the page's ``--task-args`` name them, and runs the command through
the CLI: the full protocol on the real task loaders. Slow: eight tasks × the whole grid.
"""

import json
import re
import shlex
from pathlib import Path

import pytest

from harness.api.specs import ModelSpec
from harness.cli import main as cli

pytestmark = pytest.mark.slow

PAGE = Path(__file__).resolve().parents[2] / "docs" / "main_job.md"


def page_commands() -> tuple[list[str], list[str]]:
    """(the command's argv, the variant's replacement flags) from the page's block."""
    text = PAGE.read_text(encoding="utf-8")
    block = text.split("<!-- real-checkpoint:start -->")[1].split("<!-- real-checkpoint:end -->")[0]
    body = re.search(r"```bash\n(.*?)```", block, flags=re.S).group(1)
    command, _, variants = body.partition("\n\n")
    argv = shlex.split(command.replace("\\\n", " "))
    variant = shlex.split(variants.splitlines()[-1].lstrip("# "))
    return argv, variant


def on_the_toy(argv: list[str]) -> list[str]:
    """``argv`` with ``--model X --model-args JSON`` replaced by ``--model toy``."""
    out, skip = [], 0
    for arg in argv:
        if skip:
            skip -= 1
        elif arg == "--model":
            out += ["--model", "toy"]
            skip = 1
        elif arg == "--model-args":
            skip = 1
        else:
            out.append(arg)
    return out


def make_data(root: Path) -> dict[str, dict]:
    from tests.fixtures.make_image_doc_fixtures import (
        make_mmdocir,
        make_mmlongbench,
        make_mmmu,
        make_pope,
        make_refcocog,
    )
    from tests.fixtures.make_video_fixtures import make_mlvu, make_videomme, make_vidstg

    return {
        "refcocog": make_refcocog(root),
        "pope": make_pope(root),
        "mmmu": make_mmmu(root),
        "mmdocir": make_mmdocir(root),
        "mmlongbench_doc": make_mmlongbench(root),
        "vidstg": make_vidstg(root),
        "mlvu": make_mlvu(root / "mlvu"),
        "videomme": make_videomme(root / "videomme"),
    }


def test_real_checkpoint_commands_run_on_the_toy(tmp_path, monkeypatch):
    argv, variant = page_commands()
    assert argv[:2] == ["headscope", "run"]
    for flags in (argv, variant):  # both checkpoints' model args are well-formed specs
        i = flags.index("--model-args")
        ModelSpec.from_dict({"name": flags[flags.index("--model") + 1],
                             **json.loads(flags[i + 1])})  # fmt: skip
    monkeypatch.chdir(tmp_path)
    made = make_data(Path("data"))
    task_args = json.loads(argv[argv.index("--task-args") + 1])
    assert task_args == made  # the page's layout is the fixtures' layout
    toy = on_the_toy(argv[2:])
    assert "--model-args" not in toy and toy[:2] == ["--model", "toy"]
    assert cli.main(["run", *toy]) == 0
    out = Path(argv[argv.index("--output") + 1])
    for rel in ("rank/ranking.json", "accuracy/results.json", "bench_hybrid.json",
                "diagnose/diagnostics_paper.json", "leaderboards/leaderboard.md",
                "summary.json"):  # fmt: skip
        assert (out / rel).is_file(), rel
    results = json.loads((out / "accuracy" / "results.json").read_text())
    tasks = argv[argv.index("--tasks") + 1].split(",")
    assert {e["task"] for e in results["entries"]} == set(tasks)
    assert all(e["n_samples"] > 0 for e in results["entries"] if e["intervention"] == "none")
    ranking = json.loads((out / "rank" / "ranking.json").read_text())
    ranked = set(json.dumps(ranking).split('"')) & set(tasks)
    assert {"refcocog", "vidstg", "mmlongbench_doc", "mmdocir"} <= ranked
