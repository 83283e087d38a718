"""A real headless browser for page tests: Debian's chromium driven by selenium through chromedriver.

Nothing downloads a browser: the binaries are the system's (``make setup`` installs ``chromium chromium-driver``).
Tests using the ``browser`` fixture (or ``chromium``, for a browser with other preferences) skip, saying why, only
where those binaries or selenium are missing.

    def test_page(browser, tmp_path):
        browser.get(path.as_uri())
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

import pytest

__all__ = ["browser", "chromium", "CHROMIUM", "CHROMEDRIVER", "chrome_options", "missing_browser"]

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Chromium refuses to start as root without --no-sandbox; the rest keep a headless run offline and quiet.
_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,1000")


def missing_browser() -> str:
    """Why the browser cannot run here ("" when it can)."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            return f"{path} is not installed (Debian: apt-get install chromium chromium-driver; `make setup` does it)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return ""


def chrome_options(profile: str):
    """ChromeOptions for the system chromium with a fresh profile folder."""
    from selenium.webdriver import ChromeOptions

    options = ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in _FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    return options


@contextlib.contextmanager
def chromium(prefs: dict | None = None):
    """A headless chromium with a fresh profile (``prefs``: chromium's preferences, such as JavaScript off), quit and
    its profile removed on leaving; the calling test skips, saying why, where the browser cannot run here."""
    reason = missing_browser()
    if reason:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    options = chrome_options(profile)
    if prefs:
        options.add_experimental_option("prefs", prefs)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    """One headless chromium per test module (about a second to start), with a fresh profile."""
    with chromium() as driver:
        yield driver
