"""``headscope view --serve``: an up-to-date site is served as it is, a changed input rebuilds."""

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("jinja2")

from harness.testing.job_dirs import write_fixture_job  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
VIEW = [sys.executable, "-m", "harness", "view"]


def _serve(job, n_boot=5):
    """Start ``view JOB --serve --port 0``; returns (process, base URL, process)."""
    proc = subprocess.Popen(
        [*VIEW, str(job), "--serve", "--port", "0", "--no-figures", "--n-boot", str(n_boot)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()  # "serving DIR at http://127.0.0.1:PORT/ (Ctrl-C stops)"
    assert line.startswith("serving "), (line, proc.stderr.read() if proc.poll() else "")
    return proc, line.split(" at ")[1].split(" ")[0], proc


def _stop(proc):
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as err:
        return err.code


def test_serve_does_not_rebuild_an_up_to_date_site(tmp_path):
    job = write_fixture_job(tmp_path / "job", n_samples=3, tasks=("pope_mini",), grounded=())
    built = subprocess.run(
        [*VIEW, str(job), "--no-figures", "--n-boot", "5"], cwd=ROOT, capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr
    table = job / "view" / "data" / "samples" / "pope_mini" / "table.js"
    before = table.stat().st_mtime_ns
    proc, base, _ = _serve(job)
    try:
        assert _get(base + "samples.html") == 200 and _get(base + "data/") == 404
    finally:
        err = _stop(proc)
    assert "up to date with its inputs, not rebuilt" in err and "wrote " not in err
    assert table.stat().st_mtime_ns == before
    # a changed input (a reply edited in a sample log) rebuilds before serving
    log = next((job / "accuracy" / "samples").glob("pope_mini__00.jsonl"))
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    rows[0]["output"] = "a changed reply"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc, base, _ = _serve(job)
    err = _stop(proc)
    assert "wrote " in err and "not rebuilt" not in err
    assert "a changed reply" in table.read_text()
    # unchanged since that rebuild: served as it is; other options: rebuilt
    proc, base, _ = _serve(job)
    assert "not rebuilt" in _stop(proc)
    proc, base, _ = _serve(job, n_boot=7)
    assert "wrote " in _stop(proc)
