"""The decode table: KV memory and time per output token, dense vs streamed KV.

Rows come from ``headscope bench decode`` files (``headscope.bench_decode``, also the main
job's ``bench_decode.json``): per context length and kept fraction of KV groups, the KV bytes
of a dense and of the streamed cache and their ratio, the peak memory of each, the time per
output token (TPOT) of each with the measured speedup next to the memory-bound speedup (a
decode step reads the weights and the cache once), the time to first token where measured,
and the largest logit difference of the streamed decode from its dense-cache reference.
"""

from __future__ import annotations

from collections.abc import Sequence

from leaderboards.bench import BenchFile
from leaderboards.formatting import Column, Table
from leaderboards.labels import model_cells
from leaderboards.settings import check_unique
from leaderboards.speedup import _describe, _flat_rows, _head, _row_key, _same_row, _sort

__all__ = ["decode_table"]

_MIB = 1 << 20


def _mib(value: object) -> float | None:
    return None if value is None else float(value) / _MIB


def decode_table(files: Sequence[BenchFile]) -> Table:
    """KV memory, peak memory, TPOT and TTFT of dense vs streamed decoding, per length × keep."""
    from leaderboards.settings import settings_row

    items = check_unique(_flat_rows(files), _row_key(("length", "keep")), _same_row, _describe)
    names, differing, columns, common_note = _head(files, items)
    rows = []
    for f, i in sorted(items, key=lambda it: _sort(it, ("keep", "length"))):
        r = f.rows[i]
        rows.append({
            **model_cells(f.models[i], names),
            **settings_row(f.configs[i], differing),
            "length": r["length"], "keep": r["keep"],
            "kv_kept_fraction": r.get("kv_kept_fraction"),
            "sink_recent": f"{r.get('sink')}+{r.get('recent')}",
            "kv_dense": _mib(r["kv_dense_bytes"]), "kv_stream": _mib(r["kv_stream_bytes"]),
            "kv_ratio": r["kv_dense_bytes"] / r["kv_stream_bytes"],
            "peak_dense": _mib(r.get("peak_dense_bytes")),
            "peak_stream": _mib(r.get("peak_stream_bytes")),
            "tpot_dense_ms": r["tpot_dense_ms"], "tpot_stream_ms": r["tpot_stream_ms"],
            "tpot_speedup": r["tpot_dense_ms"] / r["tpot_stream_ms"],
            "bound_speedup": r.get("bound_speedup"),
            "bound_speedup_real": r.get("bound_speedup_real"),
            "ttft_dense_ms": r.get("ttft_dense_ms"), "ttft_stream_ms": r.get("ttft_stream_ms"),
            "max_logit_diff": r.get("max_logit_diff"),
        })  # fmt: skip
    columns += [
        Column("length", kind="int"),
        Column("keep", "keep (KV groups)", "float"),
        Column("kv_kept_fraction", "kept", "float"),
        Column("sink_recent", "sink+recent", "text"),
        Column("kv_dense", "dense KV MiB", "float"),
        Column("kv_stream", "streamed KV MiB", "float"),
        Column("kv_ratio", "KV ratio", "float"),
        Column("peak_dense", "dense peak MiB", "float"),
        Column("peak_stream", "streamed peak MiB", "float"),
        Column("tpot_dense_ms", "dense TPOT ms", "float"),
        Column("tpot_stream_ms", "streamed TPOT ms", "float"),
        Column("tpot_speedup", "TPOT speedup", "float"),
        Column("bound_speedup", "bound", "float"),
        Column("bound_speedup_real", "bound (real widths)", "float"),
        Column("ttft_dense_ms", "dense TTFT ms", "float"),
        Column("ttft_stream_ms", "streamed TTFT ms", "float"),
        Column("max_logit_diff", "max logit diff", "float"),
    ]
    notes = [
        "KV ratio = dense ÷ streamed KV bytes; bound = (weights + dense KV) ÷ (weights + "
        "streamed KV): a memory-bound decode step reads both once. Bound (real widths): the "
        "same at the geometry's real widths in bf16. Peak: above the level before the run "
        "(CPU: resident set). TTFT — where not measured (--ttft-max). Max logit diff: the "
        "streamed decode against its dense-cache reference (docs/decode.md)."
    ]
    return Table("decode", "Decoding with streamed KV", tuple(columns), tuple(rows),
                 tuple(notes + common_note))  # fmt: skip
