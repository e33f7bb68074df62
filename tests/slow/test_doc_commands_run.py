"""The documented commands that the bundled toy can run, run end to end, in the docs' order.

``tests/integration/test_doc_commands.py`` checks every command up to where its work starts;
this runs the work, one temporary working directory per document, so a command reading an
earlier one's output (``leaderboard runs/*``, ``ranking=headscope_out/rank/ranking.json``)
finds it. Toy substitutions: sizes shrink (``--limit`` ≤ 4 and the main job's grid and bench
to its test sizes, bench lengths to 1024/2048 tokens, windows to 64, mask samples to 2), CUDA
becomes the CPU. Left out, each with its reason (checked to be one of these): a real
checkpoint (no weights offline), a plugin folder placeholder, a served viewer, full-size
``bench ttft`` and ``bench decode`` at a real model's widths (GPU only), inputs that only a
real model's run makes, and other projects' head files (``heads import``). Slow.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pytest

from harness.cli import main as cli
from tests.integration.test_doc_commands import DOCS, _commands, _cpu

pytestmark = pytest.mark.slow

SIZES = {
    "--limit": "4",
    "--samples": "2",
    "--min-length": "128",
    "--max-length": "256",
    "--window": "64",
    "--frames": "4",
    "--maps": "2",
}


#: ``bench decode`` flags added where a documented command leaves them at their defaults.
DECODE_SIZES = ("--lengths=1024", "--keep=0.5", "--new-tokens=2", "--repeats=1", "--ttft-max=1024")


def _small(argv: list[str]) -> list[str]:
    out = list(argv)
    if out[0] in ("run", "rank", "diagnose", "means") and "--limit" not in out:
        out += ["--limit", "4"]
    if out[:2] == ["bench", "decode"]:  # its CPU defaults take minutes: one short context
        out += [f for f in DECODE_SIZES if f.split("=")[0] not in out]
    for i, token in enumerate(out[:-1]):
        if token in SIZES:
            out[i + 1] = SIZES[token]
        elif token == "--lengths":
            out[i + 1] = "1024" if "," not in out[i + 1] else "1024,2048"
        elif token == "--dtype":
            out[i + 1] = "float32"
    return out


def _skip_reason(argv: list[str], cwd: Path) -> str | None:
    text = " ".join(argv)
    model = argv[argv.index("--model") + 1] if "--model" in argv else "toy"
    if argv[0] == "bench" and argv[1] == "ttft":
        return None if "--shrink" in argv else "full-size bench ttft"
    if argv[0] == "bench" and argv[1] == "decode" and "--hidden" in argv:
        return "full-size bench decode"  # a real model's widths: GPU only
    if argv[0] in ("run", "rank", "diagnose", "means") and model != "toy":
        return "real checkpoint"
    if "--include_path" in argv or "--include-path" in argv:
        return "plugin placeholder"
    if "--serve" in argv:
        return "served viewer"
    values = {argv[i + 1] for i, a in enumerate(argv[:-1]) if a.startswith("--")}
    inputs = [
        a
        for a in argv[1:]
        if a not in values and not a.startswith("-") and ("/" in a or a == "headscope_out")
    ]
    if argv[0] == "heads":  # its inputs: the positional sources before the first flag
        end = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
        sources = argv[2:end]
        if not all(glob.glob(str(cwd / a)) for a in sources):
            return "another project's file" if argv[1] == "import" else "a real model's run"
        return None
    if argv[0] in ("rescore", "leaderboard", "view") and not all(
        glob.glob(str(cwd / a)) for a in inputs
    ):
        return "a real model's run"
    if re.search(r'"data/', text) and not (cwd / "data").exists():
        return "a real model's run"
    return None


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_documented_commands_run_on_the_toy(doc, tmp_path, monkeypatch):
    from harness.run import main_job
    from tests.integration.test_run_protocol import SmallConfig

    monkeypatch.setattr(main_job, "ProtocolConfig", SmallConfig)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    ran, skipped = [], []
    for argv in _commands(doc):
        reason = _skip_reason(argv, tmp_path)
        if reason is not None:
            skipped.append((reason, argv))
            continue
        argv = _small(_cpu(argv))
        argv = [m for a in argv for m in (sorted(glob.glob(a)) if "*" in a else [a])]
        code = cli.main(argv)
        assert code == 0, f"{doc.name}: headscope {' '.join(argv)} exited {code}"
        ran.append(argv)
    allowed = {
        "real checkpoint",
        "plugin placeholder",
        "served viewer",
        "full-size bench ttft",
        "full-size bench decode",
        "a real model's run",
        "another project's file",
    }
    assert {r for r, _ in skipped} <= allowed
    least = {"README.md": 5, "reference.md": 10}  # the README's tour; the commands' reference
    assert len(ran) >= least.get(doc.name, 0), ran
