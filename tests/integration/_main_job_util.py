"""The reduced main-job grid the main-job tests run (one k, one draw, one keep, a tiny bench)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.run import main_job


@dataclass(frozen=True)
class SmallConfig(main_job.ProtocolConfig):
    """The main job's protocol, shrunk so one run takes seconds on the toy."""

    ablation_k: tuple = (0.125,)
    random_draws: int = 1
    hybrid_keep: tuple = (0.25,)
    bench_lengths: tuple = (64,)
    bench_window: int = 16
    bench_geometry: str = "tiny"
    decode_lengths: tuple = (128,)
    n_diagnose: int = 1
    batch_size: int = 4
