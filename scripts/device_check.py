"""GPU check for a session lent a device: the CUDA test suite, then the GPU benchmarks.

Usage: ``python scripts/device_check.py OUT_DIR [--budget SECONDS] [--only STAGE,...]``
(``scripts/device_check.sh`` wraps it). Stages run one after the other, each in its own
process under its own time limit, and ``OUT_DIR/device_check.json`` is rewritten after every
stage, so a stage that crashes or runs out of time loses nothing that came before it. A stage
is skipped when less time is left than it needs. Nothing is installed: the machine's own torch
and transformers are used (recorded in ``env``).

Stages, in order of priority (bf16; geometry: Qwen3-VL-4B's decoder, 32 heads, 8 KV, d_h 128,
keep 0.05, W = 1024):
  tests                 pytest tests/gpu (per-test outcomes in tests.jsonl)
  attention_flex        bench hybrid --scope attention, 32K/64K/128K, flex
  layer_flex            bench hybrid --scope layer (2 layers), 64K/128K, flex
  masks                 bench masks: 20 samples of 8K-64K tokens, flex
  ttft_qwen3_vl_4b      bench ttft, 128 frames of 448 px (then the same for Qwen2.5-VL-7B and
                        LLaVA-OneVision-7B when time is left)
  decode                bench decode at Qwen3-VL-4B's real widths (36 layers, 32 heads, 8 KV,
                        d_h 128, hidden 2560, FFN 9728): 8K/32K/128K, keep 0.2/0.05 of the KV
                        groups, sink 64 + recent 256, TTFT up to 32K
  prefetch              scripts/bench_prefetch.py on the real Qwen2.5-VL-7B architecture
                        (random weights, bf16): 3 Video-MME questions on a one-minute
                        448x448 video, 32 frames, 16 cells, prefetch off / on alternated
                        twice in one process: wall off / on vs (media + GPU) / max
  attention_chunked     bench hybrid --scope attention, 32K/128K, chunked (the CPU kernel)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GEO = ["--geometry", "qwen3-vl-4b", "--dtype", "bfloat16", "--device", "cuda"]
HYBRID = ["--keep", "0.05", "--window", "1024"]
TTFT = ["--frames", "128", "--frame-size", "448", "--repeats", "2", "--device", "cuda", "--json"]
# name → (seconds needed to start, time limit, command)
STAGES: dict[str, tuple[int, int, list[str]]] = {
    "tests": (120, 180, ["-m", "pytest", "-q", "-p", "device_check_log", "tests/gpu"]),
    "attention_flex": (40, 80, ["-m", "harness", "bench", "hybrid", *GEO, *HYBRID,
                                "--scope", "attention", "--lengths", "32768,65536,131072",
                                "--kernel", "flex", "--json"]),
    "layer_flex": (40, 70, ["-m", "harness", "bench", "hybrid", *GEO, *HYBRID, "--layers", "2",
                            "--scope", "layer", "--lengths", "65536,131072", "--kernel", "flex",
                            "--json"]),
    "masks": (40, 60, ["-m", "harness", "bench", "masks", *GEO, *HYBRID, "--layers", "2",
                       "--samples", "20", "--min-length", "8192", "--max-length", "65536",
                       "--kernel", "flex", "--json"]),
    "ttft_qwen3_vl_4b": (50, 90, ["-m", "harness", "bench", "ttft", "--model", "qwen3_vl_4b",
                                  *TTFT]),
    "decode": (60, 120, ["-m", "harness", "bench", "decode", *GEO, "--head-dim", "128",
                         "--hidden", "2560", "--ffn", "9728", "--lengths", "8192,32768,131072",
                         "--keep", "0.2,0.05", "--ttft-max", "32768", "--json"]),
    "prefetch": (100, 200, ["scripts/bench_prefetch.py", "--parts", "video", "--model",
                            "qwen2_5_vl_7b", "--device", "cuda", "--in-process", "--docs", "3",
                            "--repeats", "2"]),
    "attention_chunked": (30, 50, ["-m", "harness", "bench", "hybrid", *GEO, *HYBRID,
                                   "--scope", "attention", "--lengths", "32768,131072",
                                   "--kernel", "chunked", "--json"]),
    "ttft_qwen2_5_vl_7b": (50, 90, ["-m", "harness", "bench", "ttft", "--model",
                                    "qwen2_5_vl_7b", *TTFT]),
    "ttft_llava_onevision_7b": (50, 90, ["-m", "harness", "bench", "ttft", "--model",
                                         "llava_onevision_7b", *TTFT]),
}  # fmt: skip


def _env() -> dict:
    info: dict = {"python": sys.version.split()[0], "platform": platform.platform()}
    code = (
        "import json, torch, transformers\n"
        "d = {'torch': torch.__version__, 'transformers': transformers.__version__,\n"
        "     'cuda': torch.cuda.is_available()}\n"
        "if d['cuda']:\n"
        "    p = torch.cuda.get_device_properties(0)\n"
        "    d.update(device=p.name, memory_gib=round(p.total_memory / 2**30, 1))\n"
        "try:\n"
        "    from torch.nn.attention.flex_attention import flex_attention  # noqa\n"
        "    d['flex_attention'] = True\n"
        "except ImportError:\n"
        "    d['flex_attention'] = False\n"
        "missing = []\n"
        "for m in ('numpy', 'scipy', 'PIL', 'yaml', 'jsonlines', 'tabulate', 'tqdm', 'pytest'):\n"
        "    try:\n"
        "        __import__(m)\n"
        "    except ImportError:\n"
        "        missing.append(m)\n"
        "d['missing_modules'] = missing\n"
        "print(json.dumps(d))\n"
    )
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120, check=True)  # fmt: skip
        info.update(json.loads(out.stdout.strip().splitlines()[-1]))
    except (subprocess.SubprocessError, ValueError, IndexError) as err:
        info["error"] = repr(err)
    return info


def _rows(stdout: str) -> list:
    rows = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            rows.extend(data["rows"] if isinstance(data, dict) and "rows" in data else [data])
    return rows


def _run(name: str, limit: int, cmd: list[str], out: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "scripts"),
                                         env.get("PYTHONPATH", "")])  # fmt: skip
    env["DEVICE_CHECK_TESTS_LOG"] = str(out / "tests.jsonl")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    begin = time.time()
    try:
        proc = subprocess.run([sys.executable, *cmd], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=limit)  # fmt: skip
        status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
        stdout, stderr = proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as err:
        status = f"timeout after {limit} s"
        stdout = (err.stdout or b"").decode("utf-8", "replace") if err.stdout else ""
        stderr = (err.stderr or b"").decode("utf-8", "replace") if err.stderr else ""
    result = {"status": status, "seconds": round(time.time() - begin, 1),
              "command": " ".join(["python", *cmd])}  # fmt: skip
    if name == "tests":
        result["summary"] = stdout.strip().splitlines()[-1:] if stdout.strip() else []
        result["failures"] = [ln for ln in stdout.splitlines() if ln.startswith("FAILED")][:40]
    else:
        result["rows"] = _rows(stdout)
    if status != "ok":
        result["log_tail"] = (stdout[-3000:] + "\n--- stderr ---\n" + stderr[-6000:]).strip()
    return result


def main(argv: list[str] | None = None) -> int:
    """Run the stages into ``OUT_DIR/device_check.json``; exit 0 when every stage ran ok."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", nargs="?", default=os.environ.get("OUT"))
    parser.add_argument("--budget", type=int, default=460, help="seconds for all stages")
    parser.add_argument("--only", default="", help="comma-separated stage names")
    args = parser.parse_args(argv)
    if not args.out:
        parser.error("give the output folder as an argument or in $OUT")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    chosen = [s for s in args.only.split(",") if s] or list(STAGES)
    unknown = [s for s in chosen if s not in STAGES]
    if unknown:
        parser.error(f"unknown stages {unknown} (known: {list(STAGES)})")
    deadline = time.time() + args.budget
    report: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "budget_s": args.budget, "env": _env(), "stages": {}}  # fmt: skip
    target = out / "device_check.json"

    def save() -> None:
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(report, indent=1), encoding="utf-8")
        tmp.replace(target)

    save()
    for name in chosen:
        need, limit, cmd = STAGES[name]
        left = deadline - time.time()
        if left < need:
            report["stages"][name] = {"status": f"skipped: {left:.0f} s left, needs {need}"}
        else:
            report["stages"][name] = _run(name, int(min(limit, left)), cmd, out)
        save()
        print(name, report["stages"][name]["status"], flush=True)
    report["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save()
    return 0 if all(s["status"] == "ok" for s in report["stages"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
