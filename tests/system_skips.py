"""pytest plugin: the tests that need a system program say so in one line, and fail in CI.

The viewer's browser tests need Chromium and chromedriver, the LaTeX compile test pdflatex
(README, "Two commands on a fresh machine"). Without them they skip; this plugin adds one line
per missing program to the pytest summary (how many tests skipped and why), and where the
environment variable ``CI`` is set (``.ci/run`` sets it) turns each such skip into a failure,
so CI cannot pass without running them.
"""

from __future__ import annotations

import os

import pytest

#: Skip-reason prefix → what skipped and what it needs.
SYSTEM_SKIPS = {
    "no browser:": "browser tests (Chromium, chromedriver and selenium)",
    "pdflatex not installed": "LaTeX compile test (pdflatex with booktabs and rotating)",
}


def in_ci() -> bool:
    """Whether ``CI`` is set to something other than empty, ``0`` or ``false``."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def system_skip(report: pytest.TestReport) -> tuple[str, str] | None:
    """(what skipped, the skip reason) when ``report`` is a skip for a missing program."""
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return None
    reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    for prefix, what in SYSTEM_SKIPS.items():
        if reason.startswith(prefix):
            return what, reason
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI, a skip for a missing system program is reported as a failure."""
    outcome = yield
    report = outcome.get_result()
    found = system_skip(report)
    if found is not None and in_ci():
        what, reason = found
        report.outcome = "failed"
        report.longrepr = (
            f"CI is set and the {what} skipped ({reason}): .ci/run must install what they "
            "need (README, 'Two commands on a fresh machine')"
        )


def pytest_terminal_summary(terminalreporter):
    """One line per missing program: how many tests skipped and why."""
    counts: dict[tuple[str, str], int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        found = system_skip(report)
        if found is not None:
            counts[found] = counts.get(found, 0) + 1
    for (what, reason), n in sorted(counts.items()):
        terminalreporter.write_line(f"SKIPPED {n} {what}: {reason}", yellow=True)
