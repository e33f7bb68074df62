"""``headscope bench ram``: memory and time of the RAM probe against eager ``output_attentions``.

A random-weight decoder (transformers' Qwen2 / Qwen3 text model) with a real model's layer
geometry (presets of :mod:`harness.bench.hybrid`) and ``--layers`` layers runs a prefill of
``length`` random tokens. Both methods compute, per head, the mean over the last
``--query-tokens`` rows of the attention mass on ``--evidence-tokens`` columns (a block at
``length // 4``):

- ``probe``: the headscope dispatch with a :class:`~harness.attention.plan.RecordSpec` (logits
  for the query rows only, ``(1, H, n_q, S)`` per layer) on top of HF's sdpa;
- ``eager``: ``attn_implementation="eager"`` with ``output_attentions=True`` (``S × S`` per head
  and layer), then the same reduction on the returned probabilities.

Every measurement runs in a fresh subprocess that first builds the model and the inputs and
runs a 64-token warm-up. Memory: on CPU the process's peak-RSS mark is reset after that setup
(``/proc/self/clear_refs``) and read after the run (``VmHWM``; without ``clear_refs`` the
lifetime ``ru_maxrss`` is used); on CUDA ``torch.cuda.max_memory_allocated`` after
``reset_peak_memory_stats``. A baseline process does the same setup without running anything,
and ``*_peak_mb`` is the method's peak minus the baseline's. Time: the fastest of ``--repeats``
forwards. Eager is not started (``null`` entries) when its estimated attention memory,
``(layers + 1) · H · S² · 4`` bytes (every layer's probabilities are kept, plus one layer's
scores while its softmax runs), exceeds ``--max-eager-gb``, and is ``null`` when its process
fails (e.g. killed out of memory). ``ram_max_abs_diff`` in ``details`` checks that both methods
measured the same RAM.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness.api.errors import UsageError
from harness.bench.kit import (
    bench_parser,
    length_list,
    positive_int,
    refuse_missing_device,
    refuse_unwritable_file,
)
from harness.bench.ram_probe_worker import MARK
from harness.schema.bench import bench_document

__all__ = ["estimate_eager_gb", "run_bench", "main"]


def estimate_eager_gb(length: int, heads: int, layers: int) -> float:
    """Estimated attention-probability memory of eager ``output_attentions`` in GiB."""
    return (layers + 1) * heads * length * length * 4 / 2**30


def _spawn(cfg: dict[str, Any], timeout: float) -> dict[str, Any]:
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "harness.bench.ram_probe_worker", json.dumps(cfg)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    if proc.returncode < 0:
        return {"error": f"killed by signal {-proc.returncode} (out of memory?)"}
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit code {proc.returncode}: {tail}"}


def run_bench(
    *,
    preset: str = "default",
    layers: int = 2,
    lengths: tuple[int, ...] = (8192,),
    query_tokens: int = 32,
    evidence_tokens: int = 256,
    max_eager_gb: float = 16.0,
    repeats: int = 1,
    dtype: str = "float32",
    device: str = "cpu",
    threads: int | None = None,
    seed: int = 0,
    timeout: float = 1800.0,
) -> dict[str, Any]:
    """Measure every length; returns a ``headscope.bench_ram`` document (harness.schema.bench).

    ``rows`` hold exactly the leaderboard keys (``length``, ``probe_peak_mb``,
    ``eager_peak_mb``, ``mem_ratio`` = eager/probe, ``probe_ms``, ``eager_ms``, ``time_ratio``
    = eager/probe); ``details`` hold per length the baseline peak, eager status and estimate,
    and ``ram_max_abs_diff`` between the two methods.
    """
    from harness.bench.decoders import PRESETS

    geo = PRESETS[preset]["geometry"]
    base = {"preset": preset, "layers": layers, "query_tokens": query_tokens, "seed": seed,
            "evidence_tokens": evidence_tokens, "repeats": repeats, "dtype": dtype,
            "device": device, "threads": threads}  # fmt: skip
    rows, details = [], []
    for n in lengths:
        if (
            n < 64
            or n // 4 + evidence_tokens > n - query_tokens
            or min(query_tokens, evidence_tokens) < 1
        ):
            raise UsageError(
                f"length {n}: need ≥ 64 tokens and the evidence block [{n // 4}, "
                f"{n // 4 + evidence_tokens}) before the {query_tokens} query rows"
            )
        cfg = {**base, "length": n}
        res = {m: _spawn({**cfg, "method": m}, timeout) for m in ("none", "probe")}
        estimate = estimate_eager_gb(n, geo.num_heads, layers)
        if estimate > max_eager_gb:
            status = f"skipped: estimated {estimate:.1f} GiB > --max-eager-gb {max_eager_gb}"
            res["eager"] = {"error": status}
        else:
            res["eager"] = _spawn({**cfg, "method": "eager"}, timeout)
            status = res["eager"].get("error", "ok")
        if "error" in res["none"] or "error" in res["probe"]:
            err = res["none"].get("error") or res["probe"].get("error")
            details.append({"length": n, "error": f"probe/baseline failed: {err}"})
            continue
        ok = "error" not in res["eager"]
        floor = res["none"]["peak_mb"]
        row = {"length": n, "probe_peak_mb": round(res["probe"]["peak_mb"] - floor, 1),
               "eager_peak_mb": round(res["eager"]["peak_mb"] - floor, 1) if ok else None,
               "probe_ms": round(res["probe"]["ms"], 1),
               "eager_ms": round(res["eager"]["ms"], 1) if ok else None}  # fmt: skip
        row["mem_ratio"] = _ratio(row["eager_peak_mb"], row["probe_peak_mb"])
        row["time_ratio"] = _ratio(row["eager_ms"], row["probe_ms"])
        rows.append(row)
        diff = None
        if ok:
            diff = max(abs(a - b) for ra, rb in zip(res["probe"]["ram"], res["eager"]["ram"])
                       for a, b in zip(ra, rb))  # fmt: skip
        details.append({"length": n, "baseline_peak_mb": round(res["none"]["peak_mb"], 1),
                        "eager_status": status, "eager_estimate_gb": round(estimate, 2),
                        "ram_max_abs_diff": diff})  # fmt: skip
    geometry = {"hidden": geo.hidden_size, "heads": geo.num_heads, "kv_heads": geo.num_kv_heads,
                "head_dim": geo.head_dim, "ffn": geo.intermediate_size}  # fmt: skip
    settings = {**base, "arch": PRESETS[preset]["arch"], "geometry": geometry,
                "max_eager_gb": max_eager_gb, "memory": "peak of the method's process minus "
                "the baseline process's (same model and inputs, no forward)"}  # fmt: skip
    model = {"family": "random", "pretrained": f"random-{preset}-{layers}L"}
    return bench_document("ram", rows, model=model, settings=settings, details=details)


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den <= 0:
        return None
    return round(num / den, 2)


def main(argv: list[str] | None = None, description: str | None = None) -> int:
    """CLI entry: ``headscope bench ram [options]``; prints a table or ``--json``.

    ``description``: the ``--help`` text (default: this module's docstring).
    """
    from harness.bench.decoders import PRESETS

    p = bench_parser("ram", description or __doc__)
    p.add_argument("--geometry", "--preset", dest="preset", choices=sorted(PRESETS),
                   default="default", help="decoder geometry preset (of bench hybrid)")  # fmt: skip
    p.add_argument(
        "--layers", type=positive_int, default=2, help="decoder layers built (default 2)"
    )
    p.add_argument(
        "--lengths", type=length_list, default="8192", help="comma-separated sequence lengths"
    )
    p.add_argument("--query-tokens", type=int, default=32,
                   help="query rows (the last tokens) whose mass is measured")  # fmt: skip
    p.add_argument("--evidence-tokens", type=int, default=256,
                   help="evidence columns (a block at length // 4)")  # fmt: skip
    p.add_argument("--max-eager-gb", type=float, default=16.0,
                   help="skip eager above this estimated attention memory (GiB)")  # fmt: skip
    p.add_argument(
        "--repeats", type=positive_int, default=1, help="timed forwards; the fastest counts"
    )
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                   help="weights and activations dtype")  # fmt: skip
    p.add_argument("--device", default="cpu", help="cpu or cuda[:i]")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--seed", type=int, default=0, help="weights and inputs seed")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per measurement")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--output",
        "--output_path",
        "--output-path",
        dest="output",
        default=None,
        help="also write the JSON object to this file",
    )
    args = p.parse_args(argv)
    refuse_missing_device(p, args.device)
    if args.output:  # before the measurements, not after
        refuse_unwritable_file(p, args.output)
    doc = run_bench(
        preset=args.preset, layers=args.layers,
        lengths=args.lengths,
        query_tokens=args.query_tokens, evidence_tokens=args.evidence_tokens,
        max_eager_gb=args.max_eager_gb, repeats=args.repeats, dtype=args.dtype,
        device=args.device, threads=args.threads, seed=args.seed, timeout=args.timeout,
    )  # fmt: skip
    text = json.dumps(doc, allow_nan=False)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    if args.json:
        print(text)
        return 0 if doc["rows"] else 1
    cols = ("length", "probe_peak_mb", "eager_peak_mb", "mem_ratio", "probe_ms", "eager_ms",
            "time_ratio")  # fmt: skip
    print("  ".join(f"{c:>13}" for c in cols))
    for row in doc["rows"]:
        print("  ".join(f"{row[c]!s:>13}" for c in cols))
    for d in doc["details"]:
        print(json.dumps(d))
    return 0 if doc["rows"] else 1


if __name__ == "__main__":
    sys.exit(main())
