"""The embedded ``toy`` model's world: deterministic scenes of coloured shapes and mini tasks.

``harness.toy.scenes`` generates the samples (torch-free); the trained model and its processor
ship in ``harness/assets/toy`` (see ``TRAINING.md`` there).
"""

from pathlib import Path

from harness.toy.scenes import KINDS, SPLITS, MiniSample, generate_sample, generate_samples

__all__ = ["KINDS", "SPLITS", "MiniSample", "generate_sample", "generate_samples", "ASSET_DIR"]

ASSET_DIR = Path(__file__).resolve().parent.parent / "assets" / "toy"
