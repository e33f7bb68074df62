"""The main job's protocol: its settings and the task specs and cells they make.

:class:`ProtocolConfig` holds the knobs (defaults: the embedded toy protocol);
:func:`real_model_defaults` the settings that change for a real checkpoint; :func:`task_spec`
and :func:`grid_interventions` turn them into the accuracy grid's tasks and cells.
:mod:`harness.run.main_job` runs the stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ProtocolConfig",
    "grid_interventions",
    "mini_tasks",
    "real_model_defaults",
    "task_spec",
]


def mini_tasks() -> tuple[str, ...]:
    """The registered toy mini tasks, in the order of the toy's kinds (its builders).

    Derived, not listed: a mini task is a registered task whose class names a toy ``kind``.
    """
    from harness.api.registry import TASKS
    from harness.toy.scenes import KINDS

    by_kind = {getattr(TASKS.get(n), "kind", None): n for n in TASKS.names()}
    return tuple(by_kind[kind] for kind in KINDS if kind in by_kind)


@dataclass(frozen=True)
class ProtocolConfig:
    """Knobs of the main job (defaults: the embedded toy protocol).

    Attributes:
        tasks: Accuracy tasks; grounded ones (with evidence) are also ranked.
        rank_tasks: Tasks to rank on; None = the grounded ones among ``tasks``.
        n_eval: Documents per task in the accuracy grid (mini tasks' ``n``; else ``limit``),
            or a fraction 0 < x < 1 of each task's documents.
        n_rank: Documents per task for the ranking (a count or a fraction).
        ablation_k: Head counts / fractions for top/bottom/random ablation.
        random_draws: Seeded random-k draws per k (averaged in the summary).
        hybrid_keep: Fractions of heads kept full in hybrid attention.
        hybrid_window: Window of the other heads (tokens); None: ``hybrid_window_fraction``
            of the median of the tasks' median prompt lengths (measured, recorded).
        hybrid_window_fraction: See ``hybrid_window``.
        hybrid_stream: ``(sink, recent)`` of a streamed-decode hybrid cell beside each static
            hybrid cell (``decode=stream``: the KV groups without a kept head keep sink +
            recent tokens in decode); None: no such cells. The toy's (4, 16) is shorter than
            every mini task's prompt (32–115 tokens), so streaming drops prompt tokens.
        decode_lengths: Context lengths of the decode bench (``bench_decode.json``).
        sap: SAP intervention arguments (one setting).
        bench_lengths: Context lengths for the prefill benchmark (attention only); None: the
            tasks' median prompt lengths.
        bench_window: Window of the benchmark's windowed heads; None: the grid's window.
        bench_geometry: Geometry preset of the benchmark (``headscope bench hybrid``); None:
            the loaded model's own decoder geometry, on the model's device and dtype.
        diagnose_tasks: Tasks for module diagnostics; n_diagnose documents each.
        task_args: Per-task variant arguments (data paths of the real benchmarks...).
        gen_kwargs: Generation settings of the accuracy grid (``RunSpec.gen_kwargs``).
        skip_bad_docs: Count and skip malformed rows / unreadable media (rank and grid).
        order: Evaluation order of the accuracy grid: ``sample`` (each batch processed once
            for all cells) or ``cell`` (the reference; same outputs).
        check_vision_reuse: Recompute every vision pass the accuracy grid would reuse and
            stop unless it is bit-identical (``run_grid(check_vision_reuse=True)``).
        maps: Attention maps of the first ``maps`` ranked samples per task (``rank/maps.json``;
            0: none) for the top/bottom ``maps_heads`` and ``maps_random`` seeded heads.
        figures: Draw the figures (rank heatmaps, diagnostics plots, leaderboard figures, and
            on resume those a stopped job did not draw); False: files and tables only.
    """

    tasks: tuple[str, ...] = field(default_factory=mini_tasks)
    rank_tasks: tuple[str, ...] | None = None
    n_eval: float = 64
    n_rank: float = 64
    ablation_k: tuple[float, ...] = (0.1, 0.2)
    random_draws: int = 5
    hybrid_keep: tuple[float, ...] = (0.1, 0.25)
    hybrid_window: int | None = 24
    hybrid_window_fraction: float = 0.25
    hybrid_stream: tuple[int, int] | None = (4, 16)
    decode_lengths: tuple[int, ...] = (1024, 4096)
    sap: dict[str, Any] = field(
        default_factory=lambda: {"prior": "complexity", "semantics": "distribution", "lam": 1.0}
    )
    bench_lengths: tuple[int, ...] | None = (2048, 4096)
    bench_window: int | None = 512
    bench_geometry: str | None = "default"
    diagnose_tasks: tuple[str, ...] = ("refcocog_mini",)
    n_diagnose: int = 8
    task_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    seed: int = 0
    batch_size: int = 16
    gen_kwargs: dict[str, Any] = field(default_factory=dict)
    skip_bad_docs: bool = False
    order: str = "sample"
    check_vision_reuse: bool = False
    maps: int = 4
    maps_heads: int = 4
    maps_random: int = 2
    figures: bool = True

    def __post_init__(self) -> None:
        from harness.api.generation import check_gen_kwargs
        from harness.api.specs import SpecError

        for name in ("n_eval", "n_rank"):  # a count, or a fraction of each task's documents
            n = getattr(self, name)
            if not (n >= 1 and float(n).is_integer() or 0 < n < 1):
                raise SpecError(f"main job: {name} must be a count ≥ 1 or a fraction 0 < x < 1")
        for name in ("maps", "maps_heads", "maps_random"):
            if getattr(self, name) < 0:
                raise SpecError(f"main job: {name} must be ≥ 0, got {getattr(self, name)}")
        if self.maps > 0 and self.maps_heads == self.maps_random == 0:
            from harness.probes.maps import NO_MAP_HEADS, NO_MAP_HEADS_HINT

            raise SpecError(f"main job: {NO_MAP_HEADS}", hint=NO_MAP_HEADS_HINT)
        for name in ("n_diagnose", "batch_size", "random_draws"):
            if getattr(self, name) < 1:
                raise SpecError(f"main job: {name} must be ≥ 1, got {getattr(self, name)}")
        if not 0 <= self.seed < 2**63:  # seed + length seeds torch's generators (the bench)
            raise SpecError(f"main job: seed must be in [0, 2**63), got {self.seed}")
        try:
            check_gen_kwargs(self.gen_kwargs, self.seed)
        except ValueError as exc:
            raise SpecError(f"main job: {exc}") from None


def real_model_defaults() -> dict[str, Any]:
    """ProtocolConfig settings for a real checkpoint (anything but the bundled toy).

    The toy's fixed 24-token window and the CPU bench geometry are tuned to its ~30–115-token
    prompts; a real model gets a window scaled to its tasks' prompt lengths and a bench of its
    own geometry on its own device and dtype, at those lengths.
    """
    return {
        "hybrid_window": None,
        "hybrid_stream": (64, 256),
        "decode_lengths": (8192, 32768),
        "bench_geometry": None,
        "bench_lengths": None,
        "bench_window": None,
    }


def task_spec(name: str, n: float, cfg: ProtocolConfig | None = None) -> Any:
    """The TaskSpec of ``n`` documents of task ``name``.

    A mini task generates ``n`` samples, at most its held-out split's size (as a real task's
    size caps its limit).
    """
    from harness.api.specs import TaskSpec
    from harness.toy.scenes import HELD_OUT_SIZE

    extra = dict((cfg.task_args if cfg else {}).get(name, {}))
    if name.endswith("_mini") and n >= 1:
        return TaskSpec(name, args={"n": min(int(n), HELD_OUT_SIZE), **extra})
    return TaskSpec(name, limit=n, args=extra)


def grid_interventions(cfg: ProtocolConfig, ranking: Path, window: int) -> list[Any]:
    """The accuracy grid's cells: baseline, top/bottom/random-k ablations, SAP, hybrids.

    Hybrid cells use ``window``; ranked cells read ``ranking`` (which need not exist yet).
    """
    from harness.api.intervention import build_intervention
    from harness.api.specs import InterventionSpec

    specs = [InterventionSpec("none")]
    for k in cfg.ablation_k:
        for select in ("top", "bottom"):
            args = {"select": select, "k": k, "mode": "zero", "ranking": str(ranking)}
            specs.append(InterventionSpec("ablate", args))
        # One spec per random draw, enumerated by the intervention itself.
        draws = cfg.random_draws
        args = {"select": "random", "k": k, "mode": "zero", "seed": cfg.seed, "draws": draws}
        random_k = InterventionSpec("ablate", args)
        for variant in build_intervention(random_k).draw_variants():
            specs.append(InterventionSpec("ablate", {**random_k.args, "draw": variant.draw}))
    specs.append(InterventionSpec("sap", {**cfg.sap, "seed": cfg.seed}))
    for keep in cfg.hybrid_keep:
        args = {"keep": keep, "window": window, "ranking": str(ranking)}
        specs.append(InterventionSpec("hybrid", args))
        if cfg.hybrid_stream is not None:  # the same prefill, streamed KV in decode
            sink, recent = cfg.hybrid_stream
            stream = {**args, "decode": "stream", "sink": sink, "recent": recent}
            specs.append(InterventionSpec("hybrid", stream))
        # Input-adaptive routing at the same keep fraction: no ranking (issue 22), and with
        # the ranking's per-layer counts as the layers' budgets.
        adaptive = {"select": "adaptive", "keep": keep, "window": window}
        specs.append(InterventionSpec("hybrid", adaptive))
        ranked = {**adaptive, "layer_budget": "ranking", "ranking": str(ranking)}
        specs.append(InterventionSpec("hybrid", ranked))
    return specs
