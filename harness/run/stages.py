"""Main-job helpers: stage timings that survive a resume; the tasks' real prompt lengths.

The lengths scale the hybrid window of the accuracy grid and the bench of a real model.

Stage timings (``OUT/timings.json``): a stage's time is written when the stage completes and
kept by every later run that finds the stage done, so a resumed or repeated main job reports the
time the work actually took, not the few milliseconds of skipping it. A stage that fails midway
records the time spent so far (``<stage>_partial``), and the run that completes it adds that.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "StageTimings",
    "measure_lengths",
    "scaled_window",
    "task_lengths",
    "window_record",
    "bench_stage",
    "maps_stage",
    "FEW_SAMPLES",
    "small_sample_warnings",
]


class StageTimings:
    """Persistent stage timings of one output directory.

    Args:
        path: The JSON file (``OUT/timings.json``).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.data: dict[str, float] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.data = {}

    def _save(self) -> None:
        from harness.schema.results import write_json_atomic

        write_json_atomic(self.path, self.data)

    @contextmanager
    def stage(self, key: str, done_before: bool) -> Iterator[None]:
        """Time the ``with`` block as stage ``key`` unless the stage was done before.

        Args:
            key: Timing name, e.g. ``"rank_s"``.
            done_before: The stage's output was complete before this run: a recorded time is
                kept (the block still runs; it only reads what is there).
        """
        if done_before and key in self.data:
            yield
            return
        start = time.perf_counter()
        partial = f"{key}_partial"
        try:
            yield
        except BaseException:
            self.data[partial] = self.data.get(partial, 0.0) + time.perf_counter() - start
            try:
                self._save()
            except OSError:  # e.g. the same full disk: the stage's own error is the one to tell
                pass
            raise
        self.data[key] = self.data.pop(partial, 0.0) + time.perf_counter() - start
        self._save()

    def record(self, key: str, seconds: float, done_before: bool) -> None:
        """Record a stage timed by the caller (kept if ``done_before`` and already recorded)."""
        if not (done_before and key in self.data):
            self.data[key] = seconds
            self._save()

    def rounded(self) -> dict[str, float]:
        """Completed stages' times in seconds, rounded to 0.1 s."""
        return {k: round(v, 1) for k, v in self.data.items() if not k.endswith("_partial")}


def measure_lengths(adapter: Any, task_specs: list[Any], n: int = 8) -> dict[str, dict[str, Any]]:
    """Prompt lengths (tokens, as the model sees them) of the first ``n`` documents per task.

    Args:
        adapter: A loaded adapter with ``prepare``.
        task_specs: TaskSpecs of the accuracy grid.
        n: Documents measured per task.

    Returns:
        ``{task: {"median", "min", "max", "n"}}``.
    """
    from dataclasses import replace

    from harness.api.task import build_task

    out: dict[str, dict[str, Any]] = {}
    for tspec in task_specs:
        task = build_task(tspec.name, tspec.args)
        probe = replace(tspec, limit=min(n, tspec.limit) if isinstance(tspec.limit, int) else n)
        lengths = []
        for doc in probe.take(task.load(split=probe.split, limit=probe.load_limit)):
            inputs = adapter.prepare([task.request(doc)])
            lengths.append(int(inputs["attention_mask"][0].sum()))
        if lengths:
            out[tspec.name] = {"median": statistics.median(lengths), "min": min(lengths),
                               "max": max(lengths), "n": len(lengths)}  # fmt: skip
    return out


def scaled_window(lengths: dict[str, dict[str, Any]], fraction: float) -> int:
    """The hybrid window: ``ceil(fraction · L)``, L the median of the tasks' median lengths."""
    if not lengths:
        raise ValueError("no sequence lengths measured: cannot scale the hybrid window")
    typical = statistics.median(v["median"] for v in lengths.values())
    return max(1, math.ceil(fraction * typical))


def task_lengths(adapter: Any, specs: tuple[Any, ...], cfg: Any, out: Path) -> dict:
    """The tasks' prompt lengths (``sequence_lengths.json``), when a setting scales with them.

    Each task's entry records its spec (``spec``); a file measured for other tasks or task
    arguments (a resumed job given other ones) is measured again, never reused.
    """
    import dataclasses

    if cfg.hybrid_window is not None and cfg.bench_lengths is not None:
        return {}
    path = out / "sequence_lengths.json"
    wanted = {t.name: json.loads(json.dumps(dataclasses.asdict(t))) for t in specs}
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        if {k: v.get("spec") for k, v in found.items()} == wanted:
            return found
    except (OSError, ValueError, AttributeError):
        pass
    from harness.schema.results import write_json_atomic

    print("   measuring the tasks' prompt lengths (they scale the hybrid window / bench)")
    lengths = measure_lengths(adapter, list(specs))
    for name, stats in lengths.items():
        stats["spec"] = wanted[name]
    write_json_atomic(path, lengths)
    return lengths


def window_record(
    cfg: Any, window: int, lengths: dict, geometry: Any = None, model: Any = None
) -> dict[str, Any]:
    """How the grid's hybrid window was chosen (rule, fraction, the lengths it scales with).

    With measured lengths and the model's ``geometry``, ``per_task`` also gives, for each task
    at its median prompt length and each keep fraction, the fraction of heads actually kept and
    the FLOP-model speedup bounds of metrics.md (whole layer, attention only): what the window
    and the keep fraction amount to at that task's real length; ``windowed`` is False for a
    task whose median prompt fits in the window (its hybrid rows are then mostly dense
    attention, the window being shared by every task of the grid). With the HF ``model``,
    its own sliding layers (``model_windows``, Gemma3's local layers) and layers without
    heads enter the bounds layer by layer (:func:`harness.bench.hybrid.flop_speedup_bound`).
    """
    record: dict[str, Any] = {"window": window, "keep": list(cfg.hybrid_keep)}
    if cfg.hybrid_window is not None:
        record["rule"] = "fixed"
        return record
    record.update(rule="fraction of the median of the tasks' median prompt lengths",
                  fraction=cfg.hybrid_window_fraction, lengths=lengths)  # fmt: skip
    if geometry is not None:
        from harness.bench.hybrid import flop_speedup_bound
        from harness.bench.kit import kept_heads

        own = _sliding_windows(model)
        if own:
            record["model_windows"] = {str(layer): w for layer, w in own.items()}

        per_task: dict[str, Any] = {}
        for task, stats in lengths.items():
            n = max(1, int(stats["median"]))
            rows = {}
            for keep in cfg.hybrid_keep:
                f = kept_heads(keep, geometry.num_heads) / geometry.num_heads
                rows[str(keep)] = {
                    "kept_fraction": round(f, 4),
                    "bound": round(
                        flop_speedup_bound(geometry, n, window, f, model_windows=own), 3
                    ),
                    "attention_bound": round(
                        flop_speedup_bound(geometry, n, window, f, linear=False, model_windows=own),
                        3,
                    ),
                }
            per_task[task] = {"median_length": n, "windowed": n > window, "keep": rows}
        record["per_task"] = per_task
    return record


def _sliding_windows(model: Any) -> dict[int, int]:
    """The model's own sliding windows per layer ({} without an HF model)."""
    from harness.api.anatomy import sliding_windows

    try:
        return sliding_windows(model)
    except AttributeError:  # no model, or one without an HF text config
        return {}


def unwindowed_tasks(record: dict[str, Any]) -> list[str]:
    """Tasks of a :func:`window_record` whose median prompt fits in the grid's window."""
    return [t for t, row in record.get("per_task", {}).items() if not row["windowed"]]


def bench_stage(cfg: Any, path: Path, adapter: Any, lengths: dict, window: int) -> None:
    """Dense vs hybrid prefill rows (``bench_hybrid.json``).

    With ``bench_geometry=None``: the model's own decoder geometry on its device and dtype;
    with ``bench_lengths=None``: at the tasks' median prompt lengths.
    """
    from harness.bench.hybrid import run_bench
    from harness.schema.bench import bench_document
    from harness.schema.results import write_json_atomic

    where: dict[str, Any] = {}
    if cfg.bench_geometry is None:
        param = next(adapter.model.parameters())
        dtype = str(param.dtype).removeprefix("torch.")
        geometry: Any = adapter.geometry
        where = {"device": str(param.device), "dtype": dtype}
    else:
        geometry = cfg.bench_geometry
    bench_lengths = cfg.bench_lengths or tuple(
        sorted({max(16, int(v["median"])) for v in lengths.values()})
    )
    rows = []
    for keep in cfg.hybrid_keep:
        rows += run_bench(geometry=geometry, lengths=bench_lengths, keep=keep,
                          window=cfg.bench_window or window, scope="attention", repeats=3,
                          seed=cfg.seed, **where)  # fmt: skip
    write_json_atomic(path, bench_document("hybrid", rows))


def decode_bench_stage(cfg: Any, path: Path, adapter: Any) -> None:
    """Dense vs streamed decoding rows (``bench_decode.json``): KV bytes, peak memory, TPOT.

    The toy's bench geometry (or, with ``bench_geometry=None``, the model's own layer, head
    and KV-group counts at tiny widths, on its device and dtype), at ``decode_lengths``,
    keeping each ``hybrid_keep`` fraction of the KV groups, with the streamed cells' sink +
    recent.
    """
    from harness.bench.decode import decode_document, run_bench
    from harness.schema.results import write_json_atomic

    where: dict[str, Any] = {}
    geometry: Any = cfg.bench_geometry
    if geometry is None:
        param = next(adapter.model.parameters())
        geometry = adapter.geometry
        where = {"device": str(param.device), "dtype": str(param.dtype).removeprefix("torch.")}
    sink, recent = cfg.hybrid_stream or (64, 256)
    rows = run_bench(geometry=geometry, lengths=cfg.decode_lengths, keeps=cfg.hybrid_keep,
                     sink=sink, recent=recent, new_tokens=4, repeats=2,
                     ttft_max=min(cfg.decode_lengths), seed=cfg.seed, **where)  # fmt: skip
    write_json_atomic(path, decode_document(rows))


def maps_stage(adapter: Any, rank_specs: list[Any], rank_dir: Path, cfg: Any) -> None:
    """Stage 1's attention maps (``rank_dir/maps.json``), kept on resume when still current."""
    from harness.probes.maps import MapsConfig, maps_unsupported, supports_maps, write_maps
    from harness.schema.ranking import load_ranking

    if not cfg.maps:
        return
    if not supports_maps(adapter):
        print(f"   no attention maps: {maps_unsupported(adapter)}")
        return
    mcfg = MapsConfig(cfg.maps, cfg.maps_heads, cfg.maps_heads, cfg.maps_random, seed=cfg.seed)
    ranking = load_ranking(rank_dir / "ranking.json")
    path, counts = write_maps(adapter, rank_specs, ranking, rank_dir, mcfg)
    state = "reusing" if not counts["computed"] else "wrote"
    print(f"   {state} {path}: attention maps of {counts['samples']} samples")


#: Fewer documents per task than this: the main job warns that its intervals mean little.
FEW_SAMPLES = 30


def small_sample_warnings(n_eval: float, n_rank: float) -> list[str]:
    """What the main job says when ``n_eval`` / ``n_rank`` are counts below FEW_SAMPLES."""
    given = {"n_rank": n_rank, "n_eval": n_eval}
    what = {
        "n_rank": "the ranking's bootstrap CIs (Spearman ρ, sparsity profiles)",
        "n_eval": "the accuracy stderrs and random-k spreads",
    }
    small = {k: int(given[k]) for k in what if 1 <= given[k] < FEW_SAMPLES}
    if not small:
        return []
    values = set(small.values())
    counts = (
        str(*values) if len(values) == 1 else " / ".join(f"{n} ({k})" for k, n in small.items())
    )
    return [
        f"{counts} documents per task: {' and '.join(what[k] for k in small)} come from so "
        f"few samples that they mean little; use at least {FEW_SAMPLES} per task (--limit)"
    ]
