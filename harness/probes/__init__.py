"""Probes: read-only measurements of a model's heads and residual stream.

- :mod:`harness.probes.rank` — ``headscope rank``: Retrieval Attention Mass (paper A) per head
  and task, the ranking file read by ``ablate`` / ``hybrid``, cross-task Spearman ρ,
  universal heads and their layer distribution.
- :mod:`harness.probes.diagnose` — ``headscope diagnose``: eRank / ΔS / ΔD / RID / TME / MixIG
  (paper B) per layer and module, both formula variants, with the Noise-Δ / Noise-QKV
  baselines, the ε_RoPE floor and the key-region degree ratio by answer correctness.
- :mod:`harness.probes.record` — shared plumbing: token spans → masks, one recorded prefill.

Importing this package imports nothing heavy (torch loads inside the functions).
"""

__all__: list[str] = []
