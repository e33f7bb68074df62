"""Worker process of ``headscope bench ram``: one measurement per process.

Launched by :mod:`harness.bench.ram_probe` as ``python -m harness.bench.ram_probe_worker``.

Run as ``python -m harness.bench.ram_probe_worker '<json config>'``; prints one line
``HEADSCOPE_BENCH_RAM {"ms", "ram", "peak_mb", "before_mb"}``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from harness.api.threads import apply_threads

__all__ = ["MARK", "measure"]

MARK = "HEADSCOPE_BENCH_RAM "


def _build(preset: str, layers: int, dtype: str, seed: int, impl: str) -> Any:
    import torch

    from harness.bench.decoders import PRESETS, build_random_decoder

    arch, geo = PRESETS[preset]["arch"], PRESETS[preset]["geometry"]
    return build_random_decoder(arch, geo, layers, getattr(torch, dtype), seed, attn=impl)


def _status_mb(field: str) -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _reset_peak(device: str) -> float:
    """Reset the peak mark; return the current usage in MB."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        return torch.cuda.memory_allocated() / 2**20
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # lifetime peak then; the baseline process subtracts the same setup
    return _status_mb("VmRSS") or 0.0


def _peak(device: str) -> float:
    import resource

    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() / 2**20
    hwm = _status_mb("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _method(model: Any, method: str, query: range, evidence: range) -> Any:
    """A function ids → ([L, H] RAM tensor, forward ms) for ``method``."""
    import torch

    layers = model.config.num_hidden_layers

    def probe(ids: Any) -> tuple[Any, float]:
        from harness.probes.record import masses_of, recording, span_masks

        qmask, kmasks = span_masks(ids.shape[1], query, {"ev": evidence})
        with recording(model, qmask, kmasks) as recs:
            start = time.perf_counter()
            model(input_ids=ids, use_cache=False)
            ms = _elapsed(start, ids.device)
        return torch.as_tensor(masses_of(recs, layers)["ev"]), ms

    def eager(ids: Any) -> tuple[Any, float]:
        start = time.perf_counter()
        out = model(input_ids=ids, use_cache=False, output_attentions=True)
        ms = _elapsed(start, ids.device)
        q, ev = list(query), list(evidence)
        ram = [a[0][:, q][:, :, ev].sum(-1).mean(-1).double().cpu() for a in out.attentions]
        return torch.stack(ram), ms

    return probe if method == "probe" else eager


def _elapsed(start: float, device: Any) -> float:
    import torch

    if getattr(device, "type", "cpu") == "cuda":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - start) * 1000.0


def measure(cfg: dict[str, Any]) -> dict[str, Any]:
    """One measurement (runs in its own process)."""
    import gc

    import torch

    apply_threads(cfg.get("threads") or None)  # above the cores: capped, with a note
    n, nq, ne, device = cfg["length"], cfg["query_tokens"], cfg["evidence_tokens"], cfg["device"]
    impl = "eager" if cfg["method"] == "eager" else "sdpa"
    model = _build(cfg["preset"], cfg["layers"], cfg["dtype"], cfg["seed"], impl)
    model = model.to(device).eval()
    if cfg["method"] == "probe":
        from harness.attention.dispatch import use_dispatch

        use_dispatch(model)
    gen = torch.Generator().manual_seed(cfg["seed"] + n)
    ids = torch.randint(0, 1024, (1, n), generator=gen).to(device)
    result: dict[str, Any] = {"ms": None, "ram": None}
    with torch.no_grad():
        if cfg["method"] != "none":
            _method(model, cfg["method"], range(56, 64), range(0, 8))(ids[:, :64])  # warm-up
        gc.collect()
        before = _reset_peak(device)
        if cfg["method"] != "none":
            fn = _method(model, cfg["method"], range(n - nq, n), range(n // 4, n // 4 + ne))
            times = []
            for _ in range(cfg["repeats"]):
                ram, ms = fn(ids)
                times.append(ms)
            result = {"ms": min(times), "ram": ram.tolist()}
        result.update(peak_mb=_peak(device), before_mb=before)
    return result


if __name__ == "__main__":
    print(MARK + json.dumps(measure(json.loads(sys.argv[1]))), flush=True)
