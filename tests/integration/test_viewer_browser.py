"""``headscope view`` in a real headless browser (the system's Chromium, driven by selenium).

The site of a synthetic main job (:mod:`harness.testing.job_dirs`: 60 samples per task, a
ranking and attention maps) is opened from ``file://`` (and once through ``--serve``'s
server); every page must load without console errors, and clicking a head, a filter and a
sample must show what the data holds.
"""

import threading

import pytest

pytest.importorskip("jinja2")

from harness.testing.job_dirs import write_fixture_job  # noqa: E402
from viewer.browser import chromium, console_errors, missing, wait_ready  # noqa: E402
from viewer.collect import collect  # noqa: E402
from viewer.site import build_site  # noqa: E402

pytestmark = pytest.mark.skipif(missing() is not None, reason=f"no browser: {missing()}")

N = 60
TASK = "refcocog_mini"


def _starve_bottom_head(rank_dir):
    """Give the bottom head ~1e-13 attention per visual token on TASK's first saved sample."""
    import dataclasses

    import numpy as np

    from harness.schema.maps import load_maps, save_maps

    maps = load_maps(rank_dir)
    entry = maps.tasks[TASK]
    k = next(i for i, h in enumerate(entry.heads) if h.why == "bottom")
    first = entry.samples[0]
    attn = first.attn.copy()
    attn[k] = np.float32(1e-13)
    ram = list(first.ram)
    ram[k] = float(attn[k][first.evidence].sum())
    samples = (dataclasses.replace(first, attn=attn, ram=tuple(ram)), *entry.samples[1:])
    tasks = {**maps.tasks, TASK: dataclasses.replace(entry, samples=samples)}
    save_maps(rank_dir, dataclasses.replace(maps, tasks=tasks))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("view")
    job = write_fixture_job(root / "job", n_samples=N)
    _starve_bottom_head(job / "rank")
    data = collect([job], n_boot=20)
    build_site(data, root / "site", figures=False)
    return root / "site", data


@pytest.fixture(scope="module")
def driver():
    d = chromium()
    yield d
    d.quit()


def _open(driver, site, page):
    name, _, fragment = page.partition("#")
    driver.get("about:blank")  # a new document even when only the #fragment differs
    driver.get((site[0] / name).as_uri() + (f"#{fragment}" if fragment else ""))
    wait_ready(driver)


def _js(driver, script, *args):
    return driver.execute_script(script, *args)


def _count(driver, selector):
    return _js(driver, "return document.querySelectorAll(arguments[0]).length", selector)


def _table(data):
    (ts,) = [t for t in data.tasks if t.task == TASK]
    return ts.table


def test_overview_sorts(driver, site):
    _open(driver, site, "index.html")
    assert _count(driver, "table.sortable") == len(site[1].tables)
    col = _js(
        driver,
        "var t = document.querySelector('#table-accuracy_summary table');"
        "var ths = t.tHead.rows[0].cells; for (var i = 0; i < ths.length; i++)"
        " if (ths[i].textContent.indexOf(arguments[0]) === 0) return i; return -1;",
        TASK,
    )
    assert col >= 0
    values = (
        "var col = arguments[0];"
        "return Array.from(document.querySelectorAll('#table-accuracy_summary tbody tr'))"
        ".map(function (r) { return parseFloat(r.cells[col].dataset.sort); });"
    )
    header = driver.find_elements("css selector", "#table-accuracy_summary th")[col]
    header.click()
    up = _js(driver, values, col)
    header.click()
    down = _js(driver, values, col)
    assert up == sorted(up) and down == sorted(up, reverse=True) and up != down
    assert console_errors(driver) == []


def _overlay_checks(driver):
    """Images loaded; attention canvases hold drawn pixels; evidence outlines drawn."""
    driver.set_script_timeout(10)
    driver.execute_async_script(
        "var done = arguments[arguments.length - 1];"
        "Promise.all(Array.from(document.images).map(function (i) {"
        " return i.complete ? 1 : new Promise(function (r) { i.onload = i.onerror = r; }); }))"
        ".then(function () { done(); });"
    )
    broken = _js(
        driver, "return Array.from(document.images).filter(i => !(i.naturalWidth > 0)).length"
    )
    assert broken == 0
    painted = _js(
        driver,
        "return Array.from(document.querySelectorAll('.card.attention canvas.attn'))"
        ".map(function (c) {"
        " var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, n = 0;"
        " for (var i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; });",
    )
    return painted


def test_heads_page_click_a_head(driver, site):
    data = site[1]
    _open(driver, site, f"heads.html#task={TASK}")
    layers, heads = data.heads[0]["num_layers"], data.heads[0]["num_heads"]
    assert _count(driver, ".grid .cell") == layers * heads
    maps = data.heads[0]["tasks"][TASK]["maps"]
    assert _count(driver, ".grid .cell.saved") == len({h["name"] for h in maps["heads"]})
    bottom = next(h for h in maps["heads"] if h["why"] == "bottom")
    driver.find_element("css selector", f".grid .cell[data-head='{bottom['name']}']").click()
    wait_ready(driver)
    assert bottom["name"] in driver.find_element("id", "head-title").text
    assert _count(driver, ".pair") == len(maps["samples"])
    assert _count(driver, ".card.attention") == len(maps["samples"])
    media = sum(len(s["media"]) for s in maps["samples"])
    assert _count(driver, ".card.attention canvas.attn") == media
    painted = _overlay_checks(driver)
    assert len(painted) == media and sum(1 for p in painted if p > 0) >= len(maps["samples"])
    drawn = _js(
        driver,
        "return Array.from(document.querySelectorAll('.card.evidence-only canvas.marks'))"
        ".reduce(function (n, c) { return n + Number(c.dataset.evidence); }, 0)",
    )
    assert drawn == sum(len(s["evidence"]["regions"]) for s in maps["samples"])
    driver.save_screenshot(str(site[0].parent / "heads.png"))
    # a head without a saved map says so and offers the saved ones
    saved = {h["name"] for h in maps["heads"]}
    other = next(
        f"L{la}H{h}" for la in range(layers) for h in range(heads) if f"L{la}H{h}" not in saved
    )
    driver.find_element("css selector", f".grid .cell[data-head='{other}']").click()
    wait_ready(driver)
    assert f"No map saved for {other}" in driver.find_element("id", "overlays").text
    assert _count(driver, "#overlays .chip") == len(maps["heads"])
    assert console_errors(driver) == []


def _painted(driver, card):
    return _js(
        driver,
        "return Array.from(arguments[0].querySelectorAll('canvas.attn')).map(function (c) {"
        " var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, n = 0;"
        " for (var i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; });",
        card,
    )


def test_a_head_without_visual_mass_is_drawn_empty(driver, site):
    # one colour scale for all heads of a sample: the starved bottom head paints nothing,
    # while the other heads of the same sample do (each head's own peak is not the scale)
    maps = site[1].heads[0]["tasks"][TASK]["maps"]
    first = maps["samples"][0]
    _open(driver, site, f"sample.html#task={TASK}&id={first['doc_id']}")
    _overlay_checks(driver)
    cards = driver.find_elements("css selector", "#head-overlays .card.attention")
    assert len(cards) == len(maps["heads"])
    by_head = {c.find_element("css selector", ".card-title").text.split(" ")[0]: c for c in cards}
    for k, head in enumerate(maps["heads"]):
        painted = _painted(driver, by_head[head["name"]])
        caption = by_head[head["name"]].find_element("css selector", ".caption").text
        if head["why"] == "bottom":
            assert painted == [0] * len(first["media"])
            share = _js(driver, "return HS.share(arguments[0])", first["mass"][k])
            assert f"visual mass {share} " in caption and "e-" in share  # e.g. 4.8e-11, not 0.000
        else:
            assert sum(painted) > 0
    scale = driver.find_element("css selector", "#head-overlays .legend-line .scale").text
    assert _js(driver, "return HS.share(arguments[0])", first["scale"]) in scale
    assert console_errors(driver) == []


def _shown(driver):
    return _js(
        driver,
        "return Array.from(document.querySelectorAll('#sample-list tbody tr'))"
        ".map(function (r) { return r.dataset.doc; });",
    )


def test_samples_filters_search_and_pages(driver, site):
    table = _table(site[1])
    _open(driver, site, f"samples.html#task={TASK}")
    assert len(_shown(driver)) == 50
    assert driver.find_element("id", "count").text == f"{N} of {N} samples"
    driver.find_element("id", "next").click()
    assert len(_shown(driver)) == N - 50
    cols = table["columns"]
    base = next(c["id"] for c in cols if c["baseline"])
    top = next(c["id"] for c in cols if "select=top" in c["label"])
    rand = next(c["id"] for c in cols if c["draws"])
    want = [
        s["id"]
        for s in table["samples"]
        if s["c"][base] == "1" and s["c"][top] == "0" and s["c"][rand] == "1"
    ]
    assert 0 < len(want) < N
    driver.find_element("css selector", "#presets .preset").click()
    assert _shown(driver) == want[:50]
    assert driver.find_element("id", "count").text == f"{len(want)} of {N} samples"
    # one column's own filter
    driver.find_element("id", "clear-filters").click()
    from selenium.webdriver.support.ui import Select

    Select(
        driver.find_element("css selector", f"#legend select[data-col='{top}']")
    ).select_by_value("0")
    wrong = [s["id"] for s in table["samples"] if s["c"][top] == "0"]
    assert _shown(driver) == wrong[:50]
    # text search
    driver.find_element("id", "clear-filters").click()
    driver.find_element("id", "search").send_keys(f"{TASK}-00007")
    assert _shown(driver) == [f"{TASK}-00007"]
    assert console_errors(driver) == []


def test_samples_list_shows_what_differs_replies_and_draws(driver, site):
    table = _table(site[1])
    _open(driver, site, f"samples.html#task={TASK}")
    cols = table["columns"]
    base = next(c["id"] for c in cols if c["baseline"])
    rand = next(c["id"] for c in cols if c["draws"])
    first = driver.find_element("css selector", "#sample-list tbody tr")
    cells = first.find_elements("css selector", "td")
    sample = table["samples"][0]
    assert cells[1].text == sample["prompt"] and cells[1].text.startswith("…")
    assert "Is there a " in driver.find_element("id", "shared-prompt").text
    marks = first.find_elements("css selector", "td.mark")
    assert marks[rand].text == sample["k"][rand] and "/" in marks[rand].text
    assert f"reply: {sample['r'][base]}" in marks[base].get_attribute("title")
    assert cells[-1].text == sample["r"][base]  # the reply column shows the baseline's
    from selenium.webdriver.support.ui import Select

    top = next(c["id"] for c in cols if "select=top" in c["label"])
    Select(driver.find_element("id", "reply-col")).select_by_value(str(top))
    first = driver.find_element("css selector", "#sample-list tbody tr")
    assert first.find_elements("css selector", "td")[-1].text == sample["r"][top]
    assert console_errors(driver) == []


def test_sample_page(driver, site):
    table = _table(site[1])
    _open(driver, site, f"samples.html#task={TASK}")
    first = table["samples"][0]["id"]
    driver.find_element("css selector", f"#sample-list tr[data-doc='{first}'] a").click()
    wait_ready(driver)
    assert first in driver.find_element("id", "sample-title").text
    assert _count(driver, "#replies tbody tr") == len(table["columns"])
    maps = site[1].heads[0]["tasks"][TASK]["maps"]
    (saved,) = [s for s in maps["samples"] if s["doc_id"] == first]
    # the fixture's documents are not the task's: no media, and the page says why
    assert "document not in the task's data" in driver.find_element("id", "media").text
    assert _count(driver, "#head-overlays .card.attention") == len(maps["heads"])
    painted = _overlay_checks(driver)
    assert len(painted) == len(maps["heads"]) * len(saved["media"]) and max(painted) > 0
    ev = _js(
        driver,
        "return Array.from(document.querySelectorAll('#head-overlays canvas.marks'))"
        ".reduce(function (n, c) { return n + Number(c.dataset.evidence); }, 0)",
    )
    assert ev == len(maps["heads"]) * len(saved["evidence"]["regions"])
    driver.save_screenshot(str(site[0].parent / "sample.png"))
    assert (site[0].parent / "sample.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a sample without saved maps says so
    _open(driver, site, f"sample.html#task={TASK}&id={table['samples'][-1]['id']}")
    assert "No attention maps were saved" in driver.find_element("id", "head-overlays").text
    assert console_errors(driver) == []


def test_every_sample_page_shows_its_media_gold_and_predicted(driver, tmp_path):
    from harness.testing.job_dirs import use_task_documents

    tasks = ("refcocog_mini", "pope_mini", "vidstg_mini", "mmdocir_mini")
    job = write_fixture_job(tmp_path / "job", n_samples=2, tasks=tasks, grounded=())
    use_task_documents(job, {"refcocog_mini": "[0.5, 0.25, 1.0, 0.75]"})
    out = tmp_path / "site"
    data = collect([job], n_boot=20)
    build_site(data, out, figures=False)
    for ts in data.tasks:
        for doc in ts.table["samples"]:
            _open(driver, (out, None), f"sample.html#task={ts.task}&id={doc['id']}")
            _overlay_checks(driver)  # every image loads
            assert _count(driver, "#media img") >= 1, (ts.task, doc["id"])
            gold = _js(
                driver,
                "return Array.from(document.querySelectorAll('#media canvas.marks'))"
                ".map(function (c) { return [+c.dataset.evidence, +c.dataset.predicted]; })",
            )
            want_gold = 0 if ts.task == "pope_mini" else 1
            assert sum(g for g, _ in gold) >= want_gold
            predicted = sum(p for _, p in gold)
            assert predicted == (1 if ts.task == "refcocog_mini" else 0)
    # clicking another reply draws its box; every reply is read as the same box here
    _open(driver, (out, None), "sample.html#task=refcocog_mini&id=" + doc_id(data, "refcocog_mini"))
    driver.find_elements("css selector", "#replies tr.reply-row")[-1].click()
    assert "reply of #" in driver.find_element("id", "media").text
    assert "→ box [32, 16, 64, 48] px" in driver.find_element("id", "replies").text
    assert console_errors(driver) == []


def doc_id(data, task):
    return next(t for t in data.tasks if t.task == task).table["samples"][0]["id"]


def test_served_over_http(driver, site):
    from viewer.serve import make_server

    server = make_server(site[0], 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        driver.get(f"http://127.0.0.1:{port}/samples.html#task={TASK}")
        wait_ready(driver)
        assert len(_shown(driver)) == 50
        assert console_errors(driver) == []
    finally:
        server.shutdown()
        server.server_close()


def test_grid_run_directory(driver, tmp_path):
    # a grid run directory: results and sample logs only, no ranking
    job = write_fixture_job(tmp_path / "job", n_samples=5, grounded=())
    out = tmp_path / "site"
    build_site(collect([job / "accuracy"], n_boot=20), out, figures=False)
    for page in ("index.html", f"samples.html#task={TASK}"):
        _open(driver, (out, None), page)
    assert len(_shown(driver)) == 5
    driver.get("about:blank")
    driver.get((out / "heads.html").as_uri())
    assert "No ranking among the inputs" in driver.find_element("tag name", "main").text
    assert console_errors(driver) == []


def test_long_media_lists_are_thinned(driver, site):
    # a 64-frame video shows 12 frames per card: every evidence frame, then evenly spaced ones
    _open(driver, site, f"heads.html#task={TASK}")
    shown = _js(
        driver,
        "var media = []; for (var i = 0; i < 64; i++) media.push({kind: 'frame', index: i});"
        "return HS.shownMedia({media: media, evidence: {regions: [{media: 30}, {media: 31}]}});",
    )
    assert len(shown) == 12 and shown == sorted(set(shown))
    assert {0, 30, 31, 63} <= set(shown)
    few = _js(driver, "return HS.shownMedia({media: [{}, {}], evidence: {regions: []}})")
    assert few == [0, 1]


def test_logged_text_is_shown_as_text(driver, tmp_path):
    # model replies and prompts are data, never markup: nothing in them runs or renders
    import json

    job = write_fixture_job(tmp_path / "job", n_samples=2, tasks=("pope_mini",), grounded=())
    log = job / "accuracy" / "samples" / "pope_mini__00.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    hostile = '<img src=x onerror="document.body.dataset.pwned=1"><b>bold</b>'
    rows[0]["output"] = rows[0]["prompt"] = hostile
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "site"
    build_site(collect([job], n_boot=20), out, figures=False)
    _open(driver, (out, None), "samples.html#task=pope_mini")
    _open(driver, (out, None), f"sample.html#task=pope_mini&id={rows[0]['doc_id']}")
    assert hostile in driver.find_element("id", "prompts").text
    assert hostile in driver.find_element("id", "replies").text
    assert _count(driver, "main img") == 0 and _count(driver, "main b") == 0
    assert driver.execute_script("return document.body.dataset.pwned") is None
    assert console_errors(driver) == []
