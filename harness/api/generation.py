"""Generation settings of a run (``RunSpec.gen_kwargs``, ``--gen_kwargs``).

The keys lmms-eval users pass in ``--gen_kwargs`` that change what a model generates; the
evaluator hands them to the adapter (``ModelAdapter.gen_kwargs``), which passes
``temperature``, ``do_sample``, ``top_p`` and ``num_beams`` to ``generate`` and lets
``max_new_tokens`` replace every request's own budget. They are recorded in ``results.json``
(the spec and ``settings.gen_kwargs``). Empty: each task's budget, greedy decoding.
"""

from __future__ import annotations

import math
from typing import Any

from harness.api.errors import UsageError

__all__ = ["GEN_KWARGS", "SEED_LIMIT", "check_gen_kwargs"]

GEN_KWARGS: dict[str, tuple[type, ...]] = {
    "max_new_tokens": (int,),
    "temperature": (int, float),
    "do_sample": (bool,),
    "top_p": (int, float),
    "num_beams": (int,),
}
"""Generation settings a run may set (``--gen_kwargs``), with their types."""


SEED_LIMIT = 2**64
"""Sampled generation seeds torch's generator, which takes a seed below 2**64."""


def check_gen_kwargs(gen: Any, seed: int | None = None) -> dict[str, Any]:
    """Validate generation settings: known keys, right types, finite numbers, sane ranges.

    Args:
        gen: The settings.
        seed: The run's seed; with ``do_sample`` it must be below :data:`SEED_LIMIT`.

    Raises:
        UsageError: naming the key at fault (``RunSpec`` turns it into a SpecError).
    """
    if not isinstance(gen, dict):
        raise UsageError('gen_kwargs must be a mapping like {"max_new_tokens": 32}')
    unknown = sorted(set(gen) - set(GEN_KWARGS))
    if unknown:
        raise UsageError(f"gen_kwargs: unknown key(s) {unknown}; allowed: {sorted(GEN_KWARGS)}")
    for key, value in gen.items():
        types = GEN_KWARGS[key]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            raise UsageError(f"gen_kwargs {key}={value!r}: expected {types[0].__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"gen_kwargs {key}={value!r}: expected a finite number")
    for key in ("max_new_tokens", "num_beams"):
        if key in gen and gen[key] < 1:
            raise UsageError(f"gen_kwargs {key} must be ≥ 1, got {gen[key]}")
    if gen.get("temperature", 0) < 0 or not 0 < gen.get("top_p", 1) <= 1:
        raise UsageError("gen_kwargs: temperature must be ≥ 0 and top_p in (0, 1]")
    if gen.get("do_sample") and seed is not None and not 0 <= seed < SEED_LIMIT:
        raise UsageError(
            f"gen_kwargs do_sample=true seeds torch's generator with the run's seed, which "
            f"must be in [0, 2**64); got {seed}"
        )
    return gen
