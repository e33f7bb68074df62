"""Wall time of a 4-cell toy grid under CPU-thread settings, with and without a competing load.

Settings (each a fresh ``headscope run`` process):

- ``torch-default``: torch's threads (one per core) and OpenMP's own wait policy (torch is
  imported before headscope's command line, so its ``OMP_WAIT_POLICY=PASSIVE`` default does
  not apply): headscope before ``--threads`` and the passive default;
- ``threads-1``: ``--threads 1``;
- ``cores-passive``: torch's threads with ``OMP_WAIT_POLICY=PASSIVE`` (headscope's default).

Loads: ``idle`` (nothing added; other users of the machine still run) and ``busy`` (a second
process multiplying matrices on torch's default threads, started before and stopped after
the block). Runs are interleaved: each round runs every setting under each load, the order
rotating per round, so slow phases of a shared machine hit every setting alike. Prints one
JSON object: every run's wall time, the medians, and the ratios to ``threads-1`` under the
same load; checks that every run wrote the same metrics.

    python scripts/bench_threads.py --rounds 2 --limit 32 > threads.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRID = [
    "--tasks",
    "pope_mini,mmmu_mini",
    "--interventions",
    "none",
    "--interventions",
    "ablate:select=random,k=0.1,mode=zero",
    "--verbosity",
    "WARNING",
]
ENTRY = "import sys, torch; from harness.cli.main import main; sys.exit(main(sys.argv[1:]))"
BUSY = "import torch\na = torch.randn(768, 768)\nwhile True:\n    a = torch.tanh(a @ a)\n"
SETTINGS = {
    "torch-default": ({}, [], True),
    "threads-1": ({}, ["--threads", "1"], False),
    "cores-passive": ({"OMP_WAIT_POLICY": "PASSIVE"}, [], False),
}


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    env.update(extra)
    return env


def _run(setting: str, out: Path, limit: int) -> float:
    extra, flags, torch_first = SETTINGS[setting]
    cmd = [sys.executable, "-c", ENTRY] if torch_first else [sys.executable, "-m", "harness"]
    cmd += ["run", *GRID, "--limit", str(limit), "--output", str(out), *flags]
    start = time.perf_counter()
    subprocess.run(cmd, env=_env(extra), check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _metrics(out: Path) -> list:
    data = json.loads((out / "results.json").read_text())
    return [(e["task"], e["intervention"], e["metrics"]) for e in data["entries"]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--limit", type=int, default=32)
    args = ap.parse_args()
    names = list(SETTINGS)
    runs: list[dict] = []
    first_metrics = None
    same = True
    tmp = Path(tempfile.mkdtemp(prefix="bench_threads_"))
    try:
        for r in range(args.rounds):
            for load in ("idle", "busy"):
                busy = None
                if load == "busy":
                    busy = subprocess.Popen([sys.executable, "-c", BUSY], env=_env({}))
                    time.sleep(2)
                try:
                    order = names[r % len(names) :] + names[: r % len(names)]
                    for setting in order:
                        out = tmp / f"{r}-{load}-{setting}"
                        wall = _run(setting, out, args.limit)
                        metrics = _metrics(out)
                        first_metrics = first_metrics or metrics
                        same = same and metrics == first_metrics
                        runs.append(
                            {"round": r, "load": load, "setting": setting, "wall_s": round(wall, 2)}
                        )
                        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
                        shutil.rmtree(out)
                finally:
                    if busy is not None:
                        busy.kill()
                        busy.wait()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    medians = {
        load: {
            s: statistics.median(
                x["wall_s"] for x in runs if x["load"] == load and x["setting"] == s
            )
            for s in names
        }
        for load in ("idle", "busy")
    }
    ratios = {
        load: {s: round(m[s] / m["threads-1"], 2) for s in names} for load, m in medians.items()
    }
    doc = {
        "grid": GRID + ["--limit", str(args.limit)],
        "cpus": os.cpu_count(),
        "loadavg_end": os.getloadavg(),
        "runs": runs,
        "median_s": medians,
        "ratio_to_threads_1": ratios,
        "identical_metrics": same,
    }
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
