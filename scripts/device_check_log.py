"""pytest plugin for scripts/device_check.py: one JSON line per test outcome, as it happens.

Loaded with ``-p device_check_log`` (scripts/ on PYTHONPATH); writes to the file named by
``$DEVICE_CHECK_TESTS_LOG`` so a run cut short still leaves every finished test's outcome.
"""

import json
import os


def pytest_runtest_logreport(report):
    path = os.environ.get("DEVICE_CHECK_TESTS_LOG")
    if not path or (report.when != "call" and report.outcome == "passed"):
        return
    if report.when == "setup" and report.outcome == "skipped":
        outcome = "skipped"
    elif report.when == "call" or report.outcome == "failed":
        outcome = report.outcome
    else:
        return
    row = {"test": report.nodeid, "when": report.when, "outcome": outcome,
           "seconds": round(report.duration, 2)}  # fmt: skip
    if report.failed:
        row["error"] = str(report.longrepr)[-2000:]
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")
