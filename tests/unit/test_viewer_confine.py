"""The viewer reads only what a run may name: media inside the run, names kept apart, NaN shown.

Hostile or broken run directories (hand-edited ``maps.json``, links, devices, huge files,
task names that differ only in punctuation, non-finite scores) and ``--serve``'s server.
"""

import json
import os
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("jinja2")

from harness.api.errors import UsageError  # noqa: E402
from harness.schema.maps import MapsFormatError, load_maps  # noqa: E402
from harness.testing.job_dirs import write_fixture_job  # noqa: E402
from viewer.collect import collect  # noqa: E402
from viewer.confine import MAX_MEDIA_BYTES, Refused, inside  # noqa: E402
from viewer.site import build_site, slug  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TASK = "refcocog_mini"


def _job(tmp_path, **kw):
    return write_fixture_job(tmp_path / "job", n_samples=3, **kw)


def _point_media(job, path):
    """Make the first saved sample's first medium name ``path``; returns that sample's doc id."""
    mj = job / "rank" / "maps.json"
    doc = json.loads(mj.read_text())
    sample = doc["tasks"][TASK]["samples"][0]
    sample["media"][0]["path"] = str(path)
    mj.write_text(json.dumps(doc))
    return sample["doc_id"]


def _site_files(out):
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def _hostile_paths(job):
    """Media paths a maps.json may hold, each of which must not be copied into the site."""
    media = job / "rank" / "maps" / "media" / TASK
    (media / "link.png").symlink_to("/etc/passwd")
    (media / "zero.png").symlink_to("/dev/zero")
    os.mkfifo(media / "fifo.png")
    with (media / "huge.png").open("wb") as fh:  # sparse: no disk used
        fh.truncate(MAX_MEDIA_BYTES + 1)
    (media / "text.png").write_text("root:x:0:0:not an image\n")
    rel = f"maps/media/{TASK}"
    return {
        "/etc/passwd": "not a relative path",
        "../../../../../../../../etc/passwd": "not a relative path",
        f"{rel}/link.png": "outside",
        f"{rel}/zero.png": "outside",
        f"{rel}/fifo.png": "not a regular file",
        f"{rel}/huge.png": "bytes (at most",
        f"{rel}/text.png": "not a PNG",
        f"{rel}/missing.png": "cannot be read",
    }


def test_media_outside_the_run_or_not_a_bounded_png_is_left_out(tmp_path):
    job = _job(tmp_path)
    for path, why in _hostile_paths(job).items():
        doc_id = _point_media(job, path)
        data = collect([job], n_boot=20)
        out = tmp_path / "site"
        build_site(data, out, figures=False)  # returns: /dev/zero and the FIFO are not read
        assert [w for w in data.warnings if doc_id in w and why in w], (path, data.warnings)
        files = _site_files(out)
        assert not any(b"root:" in body for body in files.values()), path
        heads = next(b for name, b in files.items() if name == "data/heads.js")
        maps_js = json.loads(heads.split(b",", 1)[1][:-3])[0]["tasks"][TASK]["maps"]
        maps = files[maps_js].decode()
        shown = json.loads(maps.split(",", 1)[1][:-3])["samples"]
        first = next(s for s in shown if s["doc_id"] == doc_id)
        assert first["media"] == [] and why in first["media_note"]
        others = [s for s in shown if s["doc_id"] != doc_id]
        assert others and all(
            s["media"] and all(m["src"] in files for m in s["media"]) for s in others
        )


def test_the_command_prints_the_warning(tmp_path):
    job = _job(tmp_path, tasks=(TASK,))
    _point_media(job, "/etc/passwd")
    done = subprocess.run(
        [sys.executable, "-m", "harness", "view", str(job), "--no-figures", "--n-boot", "5"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "headscope: warning:" in done.stderr and "'/etc/passwd'" in done.stderr
    assert not any(b"root:" in b for b in _site_files(job / "view").values())


def test_inside_accepts_a_png_in_the_folder(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    assert inside(tmp_path, "a/x.png") == (tmp_path / "a" / "x.png").resolve()
    (tmp_path / "a" / "in.png").symlink_to("x.png")  # a link that stays inside is followed
    assert inside(tmp_path, "a/in.png") == (tmp_path / "a" / "x.png").resolve()
    for bad in ("", "a", "/a/x.png", "a/../a/x.png"):
        with pytest.raises(Refused):
            inside(tmp_path, bad)


def test_arrays_file_must_sit_beside_the_maps_file(tmp_path):
    job = _job(tmp_path, tasks=(TASK,))
    mj = job / "rank" / "maps.json"
    doc = json.loads(mj.read_text())
    for name in ("../accuracy/results.json", "/dev/zero", "/etc/passwd"):
        doc["arrays"]["file"] = name
        mj.write_text(json.dumps(doc))
        with pytest.raises(MapsFormatError, match="not a file name beside"):
            load_maps(mj)


def test_task_names_with_the_same_safe_form_get_distinct_files(tmp_path):
    assert slug("pope_mini") == "pope_mini"
    assert len({slug(n) for n in ("pope mini", "pope_mini", "pope/mini", "pope  mini")}) == 4
    assert slug("..") != ".." and "/" not in slug("../x") and slug(".") != "."
    job = write_fixture_job(
        tmp_path / "job", n_samples=2, tasks=("pope mini", "pope_mini"), grounded=()
    )
    out = tmp_path / "site"
    data = collect([job], n_boot=20)
    build_site(data, out, figures=False)
    index = json.loads((out / "data/index.js").read_text().split(",", 1)[1][:-3])
    tables = [t["table"] for t in index["tasks"]]
    assert len(set(tables)) == 2
    for task in index["tasks"]:
        table = json.loads((out / task["table"]).read_text().split(",", 1)[1][:-3])
        assert table["task"] == task["name"]
        assert {s["id"] for s in table["samples"]} == {f"{task['name']}-0000{i}" for i in (0, 1)}


def test_nan_and_infinite_scores_are_shown_as_such(tmp_path):
    job = write_fixture_job(tmp_path / "job", n_samples=3, tasks=("pope_mini",), grounded=())
    log = job / "accuracy" / "samples" / "pope_mini__00.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    rows[0]["scores"]["accuracy"] = float("nan")
    rows[1]["scores"]["accuracy"] = float("inf")
    rows[2]["extra"] = float("-inf")
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "site"
    build_site(collect([job], n_boot=20), out, figures=False)
    table = json.loads((out / "data/samples/pope_mini/table.js").read_text().split(",", 1)[1][:-3])
    (base,) = [c["id"] for c in table["columns"] if c["baseline"]]
    s = table["samples"]
    assert [s[0]["s"][base], s[1]["s"][base]] == ["NaN", "Infinity"]
    assert s[0]["c"][base] == s[1]["c"][base] == "-"
    chunk = (out / "data/samples/pope_mini/chunk-0.js").read_text()
    assert '"extra":"-Infinity"' in chunk and '"accuracy":"NaN"' in chunk


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, b""


def test_server_lists_no_folder_and_serves_nothing_outside(tmp_path):
    from viewer.serve import make_server

    site = tmp_path / "site"
    (site / "data").mkdir(parents=True)
    (site / "index.html").write_text("<p>hi</p>")
    (site / "data" / "x.js").write_text("x")
    (site / "passwd").symlink_to("/etc/passwd")
    server = make_server(site, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert _get(f"{base}/index.html") == (200, b"<p>hi</p>")
        assert _get(f"{base}/data/x.js") == (200, b"x")
        assert _get(f"{base}/data/")[0] == 404  # no listing
        assert _get(f"{base}/passwd")[0] == 404  # a link out of the site
    finally:
        server.shutdown()
        server.server_close()


def test_serve_on_a_busy_port_is_one_usage_line(tmp_path):
    from viewer.serve import make_server

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(UsageError, match=f"--port {port} is already in use"):
            make_server(tmp_path, port)
        job = write_fixture_job(tmp_path / "job", n_samples=2, tasks=("pope_mini",), grounded=())
        done = subprocess.run(
            [sys.executable, "-m", "harness", "view", str(job), "--serve", "--port", str(port)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"--port {port} is already in use" in lines[0], done.stderr
    assert not (job / "view").exists()  # refused before anything was built
