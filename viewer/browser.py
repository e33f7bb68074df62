"""Headless Chromium for the viewer's browser tests, screenshot and timing scripts.

Drives the system's browser (Debian ``chromium`` + ``chromium-driver``; nothing is
downloaded) with selenium. :func:`missing` says why no browser can run here, or None.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["FLAGS", "missing", "chromium", "console_errors", "wait_ready"]

#: Flags that work in containers and keep the browser off the network.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
BROWSERS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
DRIVERS = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")


def _first(paths: tuple[str, ...], name: str) -> str | None:
    for p in paths:
        if Path(p).is_file():
            return p
    return shutil.which(name)


def missing() -> str | None:
    """Why no browser test can run here (no selenium, browser or driver), or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if _first(BROWSERS, "chromium") is None:
        return "no chromium browser (apt-get install chromium chromium-driver)"
    if _first(DRIVERS, "chromedriver") is None:
        return "no chromedriver (apt-get install chromium-driver)"
    return None


def chromium(width: int = 1400, height: int = 1000) -> Any:
    """A headless Chromium webdriver logging the browser console, on a fresh profile.

    The profile folder is removed by the driver's ``quit()``.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    reason = missing()
    if reason:
        raise RuntimeError(reason)
    opts = webdriver.ChromeOptions()
    opts.binary_location = _first(BROWSERS, "chromium")
    for flag in FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--window-size={width},{height}")
    profile = tempfile.mkdtemp(prefix="hs-view-chromium-")
    opts.add_argument(f"--user-data-dir={profile}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(_first(DRIVERS, "chromedriver")), options=opts)
    close = driver.quit

    def quit_and_clean() -> None:
        try:
            close()
        finally:
            shutil.rmtree(profile, ignore_errors=True)

    driver.quit = quit_and_clean  # the fresh profile goes with the browser
    return driver


def console_errors(driver: Any) -> list[str]:
    """Browser-console messages of level SEVERE since the last call."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def wait_ready(driver: Any, timeout: float = 20.0) -> None:
    """Wait until the page marks ``body[data-ready]`` (its data loaded and drawn)."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.body.getAttribute('data-ready') === '1'")
    )
