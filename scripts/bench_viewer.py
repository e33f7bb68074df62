"""How large a run ``headscope view`` handles: site build time and page times in Chromium.

Writes a synthetic main job (harness.testing.job_dirs: TASKS tasks × SAMPLES samples × 16
cells — baseline, top/bottom-k at two k, random-k as 5 draws at two k, hybrid — half the tasks
ranked, with attention maps), times collect + build (one process, no figures unless
--figures), then opens the site from file:// in headless Chromium and reports, per page, the
time from navigation start to the page's ready mark (data loaded and drawn; HS.readyMs), and
the time of a filter preset, a text search and a head click.

    python scripts/bench_viewer.py --tasks 8 --samples 500 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TASK_NAMES = ("refcocog", "vidstg", "mmlongbench", "mmdocir", "pope", "mmmu", "mlvu", "videomme")


def _size_mb(folder: Path, pattern: str = "**/*") -> float:
    return sum(p.stat().st_size for p in folder.glob(pattern) if p.is_file()) / 1e6


def _ready(driver, url: str, timeout: float = 60.0) -> float:
    from viewer.browser import wait_ready

    driver.get("about:blank")
    driver.get(url)
    wait_ready(driver, timeout)
    return float(driver.execute_script("return HS.readyMs"))


def _until_ready(driver, script: str) -> float:
    """Run ``script`` (which redraws asynchronously); ms until the page is ready again."""
    driver.set_script_timeout(60)
    return float(
        driver.execute_async_script(
            "var done = arguments[arguments.length - 1], t = performance.now();"
            + script
            + "; (function poll() { if (HS.readyMs > t) done(HS.readyMs - t);"
            " else setTimeout(poll, 2); })();"
        )
    )


def _timed(driver, script: str) -> float:
    return float(
        driver.execute_script(
            "var t = performance.now();" + script + "; return performance.now() - t;"
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--figures", action="store_true", help="also draw the figures")
    parser.add_argument("--work", default=None, help="folder for the job and site (default tmp)")
    parser.add_argument("--json", default=None, help="write the numbers here too")
    args = parser.parse_args()

    from harness.testing.job_dirs import fixture_cells, write_fixture_job
    from viewer.browser import chromium, console_errors, missing
    from viewer.collect import collect
    from viewer.site import build_site

    work = Path(args.work or tempfile.mkdtemp(prefix="bench-viewer-"))
    tasks = tuple(f"{TASK_NAMES[i % 8]}_{i // 8}" for i in range(args.tasks))
    cells = fixture_cells(ks=(0.1, 0.2), draws=5)
    t0 = time.perf_counter()
    job = write_fixture_job(
        work / "job",
        tasks=tasks,
        grounded=tasks[: max(1, args.tasks // 2)],
        n_samples=args.samples,
        cells=cells,
        num_layers=28,
        num_heads=28,
    )
    out: dict = {
        "tasks": args.tasks,
        "samples_per_task": args.samples,
        "cells_per_task": len(cells),
        "write_job_s": round(time.perf_counter() - t0, 2),
    }
    t0 = time.perf_counter()
    data = collect([job], n_boot=1000)
    out["collect_s"] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    site = build_site(data, work / "site", figures=args.figures).parent
    out["build_s"] = round(time.perf_counter() - t0, 2)
    out["columns_per_task"] = len(data.tasks[0].table["columns"])  # random draws merged
    out["site_mb"] = round(_size_mb(site), 2)
    out["table_js_mb_per_task"] = round(_size_mb(site, "data/samples/*/table.js") / args.tasks, 3)
    out["chunk_js_mb_per_task"] = round(_size_mb(site, "data/samples/*/chunk-*.js") / args.tasks, 3)
    reason = missing()
    if reason:
        out["browser"] = f"not measured: {reason}"
    else:
        driver = chromium()
        try:
            task = tasks[0]
            base = site.as_uri()
            out["overview_ready_ms"] = _ready(driver, f"{base}/index.html")
            loads = [_ready(driver, f"{base}/samples.html#task={t}") for t in tasks]
            out["samples_ready_ms_median"] = sorted(loads)[len(loads) // 2]
            out["samples_ready_ms_max"] = max(loads)
            _ready(driver, f"{base}/samples.html#task={task}")
            out["preset_filter_ms"] = _timed(
                driver, "document.querySelector('#presets .preset').click()"
            )
            out["rows_shown_after_preset"] = driver.execute_script(
                "return document.querySelectorAll('#sample-list tbody tr').length"
            )
            driver.find_element("id", "clear-filters").click()
            out["search_ms"] = _timed(
                driver,
                "var s = document.getElementById('search'); s.value = '-00042';"
                "s.dispatchEvent(new Event('input'))",
            )
            out["rows_shown_after_search"] = driver.execute_script(
                "return document.querySelectorAll('#sample-list tbody tr').length"
            )
            (shown,) = [t.table for t in data.tasks if t.task == task]
            last = shown["samples"][-1]["id"]
            page = f"{base}/sample.html#task={task}&id="
            out["sample_page_ready_ms"] = _ready(driver, page + last)
            first = shown["samples"][0]["id"]
            out["sample_page_with_maps_ready_ms"] = _ready(driver, page + first)
            out["heads_ready_ms"] = _ready(driver, f"{base}/heads.html#task={task}")
            out["head_click_ms"] = _until_ready(
                driver, "document.querySelector('.grid .cell.saved:not(.chosen)').click()"
            )
            out["console_errors"] = console_errors(driver)
        finally:
            driver.quit()
    print(json.dumps(out, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
