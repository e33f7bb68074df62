"""``headscope heads``: head sets as files — export, import, compare.

::

    headscope heads export runs/main/rank/ranking.json --task refcocog_mini --k 8 -o core8.json
    headscope heads export runs/main/accuracy/results.json --cell 'ablate:k=8,select=top' -o a.json
    headscope heads import head_score/qwen.json --format sparsemm --k 8 -o sparsemm8.json
    headscope heads import attn_patterns/MODEL/PATTERN --sparsity 0.5 --num-heads 32 -o duo.json
    headscope heads compare core8.json sparsemm8.json duo.json --k 8

Every input may be a ``headscope.heads`` file, a ranking (``--task``, default combined), a
run's ``results.json`` (``--cell``), SparseMM head scores, a DuoAttention pattern (its folder
or TSV) or a plain list of heads (:mod:`harness.schema.headset_readers`). The written file's
format is documented in :mod:`harness.schema.headsets`; ``ranking=FILE`` of ``ablate`` and
``hybrid`` accepts it (and every format here). Light at import: argparse only.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from harness.api.helpformat import add_logging_arguments

__all__ = ["add_arguments", "run"]


def _source_arguments(parser: argparse.ArgumentParser, many: bool) -> None:
    from harness.schema.headset_readers import FORMATS

    parser.add_argument(
        "sources", nargs="+" if many else None, metavar="SOURCE", help="a head-set file or folder"
    )
    parser.add_argument("--format", default="auto", choices=FORMATS, help="input format")
    parser.add_argument("--task", default=None, help="a ranking's task (default: combined)")
    parser.add_argument("--cell", default=None, help="a results file's intervention cell")
    parser.add_argument(
        "--sparsity", type=float, default=None, help="DuoAttention: select at this sparsity"
    )
    parser.add_argument(
        "--num-heads",
        "--num_heads",
        dest="num_heads",
        type=int,
        default=None,
        help="query heads per layer (for DuoAttention's per-KV-head files)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``heads export | import | compare``."""
    sub = parser.add_subparsers(
        dest="heads_command", metavar="ACTION", required=True, help="export, import or compare"
    )
    for action, help_text in (
        ("export", "a ranking's or an intervention cell's heads as a head-set file"),
        ("import", "another project's head file (SparseMM, DuoAttention, a list) as a head set"),
    ):
        p = sub.add_parser(action, help=help_text)
        _source_arguments(p, many=False)
        p.add_argument("--k", type=int, default=None, help="select the top K heads by score")
        p.add_argument("--name", default=None, help="the set's label in tables")
        p.add_argument(
            "--output",
            "--output_path",
            "--output-path",
            "-o",
            dest="output",
            required=True,
            metavar="FILE",
            help="the .json to write",
        )
        add_logging_arguments(p)
    p = sub.add_parser("compare", help="Spearman ρ over scores, Jaccard and overlap at k")
    _source_arguments(p, many=True)
    p.add_argument("--k", type=int, default=None, help="compare each set's top K heads")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_logging_arguments(p)


def _read(args: argparse.Namespace, source: str, k: int | None) -> Any:
    from harness.schema.headset_readers import read_head_set

    return read_head_set(
        source,
        args.format,
        task=args.task,
        cell=args.cell,
        k=k,
        sparsity=args.sparsity,
        num_heads=args.num_heads,
    )


def _number(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.3f}"


def _compare(args: argparse.Namespace) -> int:
    from harness.api.errors import UsageError
    from harness.schema.headsets import compare_head_sets

    if len(args.sources) < 2:
        raise UsageError("heads compare needs two or more head sets")
    sets = [_read(args, source, None) for source in args.sources]
    rows = []
    for i, a in enumerate(sets):
        for b in sets[i + 1 :]:
            c = compare_head_sets(a, b, args.k)
            rows.append(
                {
                    "a": a.name,
                    "b": b.name,
                    "spearman": c.spearman,
                    "k": c.k,
                    "jaccard": None if math.isnan(c.jaccard) else c.jaccard,
                    "overlap": c.overlap,
                    "shared": c.shared,
                }
            )
    if args.json:
        print(json.dumps({"pairs": rows}, indent=2))
        return 0
    print("| a | b | Spearman ρ | k | Jaccard@k | overlap@k | shared |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['a']} | {r['b']} | {_number(r['spearman'])} | {r['k']} | "
            f"{_number(r['jaccard'])} | {_number(r['overlap'])} | {r['shared']} |"
        )
    return 0


def run(args: argparse.Namespace) -> int:
    """Export, import or compare head sets."""
    from dataclasses import replace
    from pathlib import Path

    from harness.api.errors import UsageError
    from harness.schema.headsets import save_head_set
    from harness.schema.writes import check_writable

    if args.heads_command == "compare":
        return _compare(args)
    head_set = _read(args, args.sources, args.k)
    if args.name:
        head_set = replace(head_set, name=args.name)
    out = Path(args.output)
    if out.exists() and (out.is_dir() or not _is_head_set(out)):
        raise UsageError(f"--output {str(out)!r} exists and is not a head-set file; pick another")
    check_writable(out.parent, f"--output {str(out)!r}: folder")  # a file in the way, /proc
    save_head_set(head_set, out)
    chosen = len(head_set.selected)
    scores = "scores" if head_set.scores is not None else "no scores"
    print(
        f"wrote {out}: {head_set.name!r}, {head_set.num_layers}×{head_set.num_units} "
        f"{'heads' if head_set.granularity == 'head' else 'KV heads'}, {scores}, "
        f"{chosen} selected"
    )
    return 0


def _is_head_set(path: Any) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    from harness.schema.headsets import HEADS_FORMAT

    return isinstance(data, dict) and data.get("format") == HEADS_FORMAT
