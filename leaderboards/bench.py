"""Parse ``headscope bench hybrid`` / ``bench ram`` rows into settings and measurements.

Inputs are bench files read by :class:`harness.schema.bench.BenchDocument` (tagged
``headscope.bench_hybrid`` / ``headscope.bench_ram``); the columns shown:

- ``bench hybrid``: rows ``{"length", "keep", "window", "dense_ms", "hybrid_ms", "speedup",
  "bound", ...}``, top-level ``"model": ...`` and ``"settings": {...}`` optional; ``keep`` is
  the fraction (or count) of heads kept with full attention, ``window`` the sliding window,
  ``bound`` the FLOP-model speedup bound; ``speedup`` defaults to ``dense_ms / hybrid_ms``.
  Optional measurements shown when present: ``kept_fraction`` (heads actually kept),
  ``sdpa_ms``, ``dispatch_overhead`` (empty-plan dispatch vs plain sdpa) and
  ``speedup_cpu_time``.
- ``bench decode``: rows ``{"length", "keep", "kv_dense_bytes", "kv_stream_bytes",
  "kv_ratio", "tpot_dense_ms", "tpot_stream_ms", ...}`` (:mod:`harness.bench.decode`);
  ``tokens_equal`` is a measurement, not a setting.
- ``bench ram``: rows ``{"length", "probe_peak_mb", "eager_peak_mb", "mem_ratio",
  "probe_ms", "eager_ms", "time_ratio", ...}``; ``eager_*`` are ``null`` where eager
  attention could not run; missing ratios are computed when both sides exist.

Settings vs measurements: only *settings* keep rows apart (groups, figure files). They are
the top-level ``model`` / ``settings`` and, in a row, :data:`SETTING_KEYS` plus any other
key holding text or a boolean. Every other row key holding a number, list or object
(timings, overheads, raw timing lists, derived head counts, dims) is a measurement: it
never defines a group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.schema.bench import BenchDocument
from leaderboards.labels import model_display
from leaderboards.settings import MergeError, combine, flatten, model_label, model_settings

__all__ = [
    "BenchFile",
    "parse_bench",
    "is_setting",
    "SETTING_KEYS",
    "HYBRID_COLUMNS",
    "RAM_COLUMNS",
    "DECODE_COLUMNS",
]

HYBRID_COLUMNS = ("length", "keep", "window", "dense_ms", "hybrid_ms", "speedup", "bound")
RAM_COLUMNS = (
    "length",
    "probe_peak_mb",
    "eager_peak_mb",
    "mem_ratio",
    "probe_ms",
    "eager_ms",
    "time_ratio",
)
DECODE_COLUMNS = (
    "length",
    "keep",
    "kv_dense_bytes",
    "kv_stream_bytes",
    "tpot_dense_ms",
    "tpot_stream_ms",
    "kv_ratio",
    "kv_kept_fraction",
    "peak_dense_bytes",
    "peak_stream_bytes",
    "tpot_speedup",
    "bound_speedup",
    "bound_speedup_real",
    "ttft_dense_ms",
    "ttft_stream_ms",
    "max_logit_diff",
    "sink",
    "recent",
)
_MEASURED_FLAGS = ("tokens_equal",)
#: Row keys that are settings of a bench run even when numeric.
SETTING_KEYS = (
    "geometry",
    "preset",
    "arch",
    "layers",
    "dtype",
    "device",
    "threads",
    "scope",
    "sinks",
    "repeats",
    "warmup",
    "seed",
    "attn_implementation",
    "query_tokens",
    "evidence_tokens",
)


def is_setting(key: str, value: Any) -> bool:
    """True when row key ``key`` (holding ``value``) is a setting, not a measurement."""
    return key in SETTING_KEYS or isinstance(value, str | bool)


@dataclass(frozen=True)
class BenchFile:
    """Rows of ``bench hybrid`` / ``bench ram`` with each row's model and settings.

    Attributes:
        path: Where it was read from.
        kind: ``hybrid``, ``ram`` or ``decode``.
        rows: The rows as read (settings and measurements).
        models: Each row's model identity (None when the file names none).
        configs: Each row's flat settings (never measurements).
        displays: Each row's short model name (None when the file names no model).
    """

    path: Path
    kind: str
    rows: tuple[dict[str, Any], ...]
    models: tuple[str | None, ...]
    configs: tuple[dict[str, Any], ...]
    displays: tuple[str | None, ...] = ()

    def display(self, i: int) -> str | None:
        """Row ``i``'s short model name (None without a model)."""
        return self.displays[i] if i < len(self.displays) else self.models[i]

    def geometry(self, i: int) -> str | None:
        """Row ``i``'s geometry preset, if recorded."""
        value = self.configs[i].get("geometry", self.configs[i].get("preset"))
        return None if value is None else str(value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def parse_bench(bench: BenchDocument, path: str | Path) -> BenchFile:
    """Check the shown columns of a ``bench hybrid`` or ``bench ram`` file's rows.

    Args:
        bench: The file, read (:class:`harness.schema.bench.BenchDocument` of kind
            ``hybrid`` or ``ram``).
        path: Where it was read from.

    Raises:
        leaderboards.sources.MergeError: A row lacks a required field.
    """
    path, kind = Path(path), bench.kind
    known = {"hybrid": HYBRID_COLUMNS, "decode": DECODE_COLUMNS}.get(kind, RAM_COLUMNS)
    required = {"hybrid": (*HYBRID_COLUMNS[:5], "bound"), "decode": DECODE_COLUMNS[:6]}
    required = required.get(kind, known[:2])
    top = combine(model_settings(bench.model), flatten(bench.settings))
    rows, models, configs, displays = [], [], [], []
    for i, row in enumerate(bench.rows):
        missing = [k for k in required if row.get(k) is None]
        if missing:
            raise MergeError(f"{path}: bench {kind} row {i} lacks {missing}")
        bad = [k for k in known if row.get(k) is not None and not _number(row[k])]
        if bad:
            shown = {k: row[k] for k in bad}
            raise MergeError(f"{path}: bench {kind} row {i}: {shown} must be finite numbers")
        extra = {
            k: v
            for k, v in row.items()
            if k not in known and k not in _MEASURED_FLAGS and k != "model" and is_setting(k, v)
        }
        rows.append(dict(row))
        row_model = row.get("model", bench.model)
        models.append(None if row_model is None else model_label(row_model))
        displays.append(None if row_model is None else model_display(row_model))
        configs.append(combine(top, model_settings(row.get("model")), flatten(extra)))
    return BenchFile(path, kind, tuple(rows), tuple(models), tuple(configs), tuple(displays))
