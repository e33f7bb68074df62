"""Screenshots of ``headscope view`` on a run directory (docs/viewer.md shows the toy main job's).

    headscope run --output OUT --limit 8 --maps 3
    python scripts/viewer_screenshot.py OUT --output docs/figures

builds OUT/view (no figures drawn: the screenshots do not show them), opens it from file:// in
headless Chromium and writes ``viewer_heads.png`` (the first grounded task's heatmap with its
top head's overlays), ``viewer_sample.png`` (the first saved sample of that task) and
``viewer_samples.png`` (the samples list of that task). Fails on any browser console error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a main-job (or run) directory")
    parser.add_argument("--output", default="docs/figures", help="folder of the PNGs")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args()

    from viewer.browser import chromium, console_errors, wait_ready
    from viewer.collect import collect
    from viewer.site import build_site

    data = collect([args.run])
    site = build_site(data, Path(args.run) / "view", figures=False).parent
    mapped = [
        (task, entry["maps"])
        for view in data.heads
        for task, entry in view["tasks"].items()
        if entry["maps"]
    ]
    if not mapped:
        raise SystemExit(f"{args.run}: no attention maps saved (run with --maps N)")
    task, maps = mapped[0]
    doc = maps["samples"][0]["doc_id"]
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    driver = chromium(args.width, args.height)
    try:
        pages = {
            "viewer_heads.png": f"heads.html#task={task}",
            "viewer_sample.png": f"sample.html#task={task}&id={doc}",
            "viewer_samples.png": f"samples.html#task={task}",
        }
        for name, page in pages.items():
            # the sample page (media, then the heads' overlays) and the list are long
            driver.set_window_size(args.width, args.height * (1 if "heads.html" in page else 2))
            driver.get("about:blank")
            driver.get(site.as_uri() + "/" + page)
            wait_ready(driver)
            driver.execute_async_script(
                "var done = arguments[arguments.length - 1];"
                "Promise.all(Array.from(document.images).map(function (i) {"
                " return i.complete ? 1 : new Promise(function (r) { i.onload = i.onerror = r; });"
                " })).then(function () { done(); });"
            )
            errors = console_errors(driver)
            if errors:
                raise SystemExit(f"{page}: browser console errors: {errors}")
            driver.save_screenshot(str(out / name))
            print(out / name)
    finally:
        driver.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
