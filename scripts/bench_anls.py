"""Before/after of ANLS: the hand-written Levenshtein (copied from main f1d26d9, the "before")
against tasks.common.answers.anls (rapidfuzz, the "after"): identical scores, and the speed ratio.

The speed ratio is measured interleaved: before and after each time the same pairs in a fresh
process, alternating over ``--repeats`` rounds (harness/bench/interleave.py); per-round ratio
before / after, median and spread.

Run: PYTHONPATH=. python scripts/bench_anls.py [--pairs N] [--repeats 3]
"""

from __future__ import annotations

import argparse
import random
import string
import time


def levenshtein_before(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def anls_before(prediction, targets, threshold=0.5):
    golds = [targets] if isinstance(targets, str) else list(targets)
    pred = " ".join(str(prediction).lower().split())
    best = 0.0
    for gold in golds:
        g = " ".join(str(gold).lower().split())
        longest = max(len(g), len(pred))
        dist = levenshtein_before(pred, g) / longest if longest else 0.0
        best = max(best, 0.0 if dist > threshold else 1.0 - dist)
    return best


def _pairs(n: int, seed: int = 0) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + " .,-éßΔ中文🙂"
    out = []
    for _ in range(n):
        gold = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        pred = list(gold)
        for _ in range(rng.randint(0, 12)):  # a few edits, so scores cover 0..1
            op = rng.random()
            pos = rng.randint(0, len(pred))
            if op < 0.4 and pred:
                pred[min(pos, len(pred) - 1)] = rng.choice(alphabet)
            elif op < 0.7:
                pred.insert(pos, rng.choice(alphabet))
            elif pred:
                del pred[min(pos, len(pred) - 1)]
        golds = [gold, "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))]
        out.append(("".join(pred), golds))
    return out


def _timed(side: str, n: int) -> dict:
    """One side's wall time over the ``n`` pairs (a fresh process each)."""
    from tasks.common.answers import anls

    fn = anls_before if side == "before" else anls
    pairs = _pairs(n)
    t0 = time.perf_counter()
    total = sum(fn(p, g) for p, g in pairs)
    return {"side": side, "wall_s": round(time.perf_counter() - t0, 4), "sum": total}


def main() -> None:
    import json
    import sys

    from tasks.common.answers import anls, levenshtein

    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", choices=("before", "after"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_timed(args.worker, args.pairs)))
        return
    pairs = _pairs(args.pairs)
    hard = [
        ("", ""),
        ("", "a"),
        ("A  B", "a b"),
        ("kitten", "sitting"),
        ("ab", "ba"),
        ("🙂🙂", "🙂"),
        ("Straße", "strasse"),
        ("x" * 300, "y" * 300),
    ]
    mism = sum(levenshtein(a, b) != levenshtein_before(a, b) for a, b in hard)
    mism += sum(levenshtein(p, g[0]) != levenshtein_before(p, g[0]) for p, g in pairs)
    smism = sum(anls(p, g) != anls_before(p, g) for p, g in pairs)
    smism += sum(anls(a, b) != anls_before(a, b) for a, b in hard)
    print(
        f"pairs={len(pairs)} (+{len(hard)} hard cases) distance mismatches={mism} "
        f"anls mismatches (exact float equality)={smism}"
    )
    from harness.bench.interleave import paired_ratio, python_worker, run_interleaved, summary_line

    cmd = {
        s: python_worker(__file__, "--worker", s, "--pairs", str(args.pairs))
        for s in ("before", "after")
    }
    runs = run_interleaved(cmd, repeats=args.repeats, echo=False)
    print(
        summary_line(
            "anls speed", paired_ratio(runs, "before", "after", "wall_s"), "before", "after"
        )
    )
    if {r["sum"] for r in runs["before"] + runs["after"]} != {runs["before"][0]["sum"]}:
        sys.exit("the sums of the scores differ between runs")


if __name__ == "__main__":
    main()
