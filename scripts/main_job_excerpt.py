"""Copy a main-job output's tables and one figure into docs/main_job.md (its excerpt markers).

Usage: python scripts/main_job_excerpt.py OUT_DIR --seconds S
The excerpt is therefore produced by `headscope run`, never typed by hand.
"""

import argparse
import json
import shutil
from pathlib import Path

START, END = "<!-- excerpt:start -->", "<!-- excerpt:end -->"
TABLES = ("accuracy_summary.md", "spearman.md", "speedup.md")
FIGURE = "ram__toy__refcocog_mini.png"
PAGE = Path("docs/main_job.md")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seconds", type=float, required=True, help="measured wall time of the run")
    args = ap.parse_args()
    boards = args.out / "leaderboards"
    summary = json.loads((args.out / "summary.json").read_text())
    figure_dst = PAGE.parent / "figures" / FIGURE
    figure_dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(boards / "figures" / FIGURE, figure_dst)
    parts = [
        START,
        f"Excerpt of `headscope run` on the bundled toy model (wall time {args.seconds:.0f} s on "
        f"2 CPU cores; stage timings {summary['timings_s']}). Regenerate with "
        "`headscope run --output OUT && python scripts/main_job_excerpt.py OUT --seconds S`.",
        "",
    ]
    for name in TABLES:
        text = (boards / name).read_text().strip().replace("## ", "#### ", 1)
        # the run's own directory (often a temporary one) shows as OUT, as in the command above
        text = text.replace(str(args.out.resolve()), "OUT").replace(str(args.out), "OUT")
        parts += [text, ""]
    parts += [f"![RAM heatmap, refcocog_mini](figures/{FIGURE})", END]
    page = PAGE.read_text()
    head, rest = page.split(START, 1)
    tail = rest.split(END, 1)[1]
    PAGE.write_text(head + "\n".join(parts) + tail)


if __name__ == "__main__":
    main()
