"""``headscope view`` on the toy main job, in headless Chromium (slow: runs the main job)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from viewer.browser import chromium, console_errors, missing, wait_ready

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(missing() is not None, reason=f"no browser: {missing()}"),
]
ROOT = Path(__file__).resolve().parents[2]


def _headscope(*args):
    done = subprocess.run(
        [sys.executable, "-m", "harness", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_toy_main_job_view(tmp_path):
    out = tmp_path / "job"
    _headscope("run", "--output", out, "--limit", 2)
    _headscope("view", out)
    site = out / "view"
    results = json.loads((out / "accuracy" / "results.json").read_text())
    ranking = json.loads((out / "rank" / "ranking.json").read_text())
    layers, heads = ranking["geometry"]["num_layers"], ranking["geometry"]["num_heads"]
    driver = chromium()
    try:

        def open_page(page):
            driver.get("about:blank")
            driver.get(site.as_uri() + "/" + page)
            wait_ready(driver)

        open_page("index.html")
        assert driver.find_elements("css selector", "#table-accuracy_summary tbody tr")
        assert driver.find_elements("css selector", ".figures img")
        maps = json.loads((out / "rank" / "maps.json").read_text())["tasks"]
        assert set(maps) == set(ranking["tasks"])
        for task in ranking["tasks"]:
            open_page(f"heads.html#task={task}")
            assert len(driver.find_elements("css selector", ".grid .cell")) == layers * heads
            # the default head is the task's first saved one: its overlays on every saved sample
            cards = driver.find_elements("css selector", ".card.attention")
            assert len(cards) == len(maps[task]["samples"]) > 0
            painted = driver.execute_script(
                "return Array.from(document.querySelectorAll('.card.attention canvas'))"
                ".filter(function (c) { return Number(c.dataset.tokens) > 0; }).length"
            )
            assert painted >= len(cards)
            open_page(f"sample.html#task={task}&id={maps[task]['samples'][0]['doc_id']}")
            shown = driver.find_elements("css selector", "#head-overlays .card.attention")
            assert len(shown) == len(maps[task]["heads"])
        tasks = sorted({e["task"] for e in results["entries"]})
        for task in tasks:
            open_page(f"samples.html#task={task}")
            rows = driver.find_elements("css selector", "#sample-list tbody tr")
            assert len(rows) == 2
        rows[0].find_element("css selector", "a").click()
        wait_ready(driver)
        replies = driver.find_elements("css selector", "#replies tbody tr")
        legend = driver.execute_script("return HS.store[HS.task(arguments[0]).table]", tasks[-1])
        assert len(replies) == len(legend["columns"]) > 1
        assert console_errors(driver) == []
    finally:
        driver.quit()
