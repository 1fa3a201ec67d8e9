"""A headless Chromium driven by Selenium, for the web UI test and the README screenshot.

Uses Debian's ``chromium`` and ``chromium-driver`` (``scripts/install_system_deps.sh`` installs
them): the driver's path is given explicitly, so Selenium never looks for or downloads one, and
the browser runs with a fresh profile in a temporary folder, without sync, component updates or
background networking (nothing leaves the machine but the requests to the server under test).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from typing import Iterator

CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM = "/usr/bin/chromium"


def browser_available() -> str | None:
    """None when the browser and its driver are installed, else what is missing."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    return None if not missing else f"missing {', '.join(missing)} (run scripts/install_system_deps.sh)"


@contextmanager
def headless_chromium(width: int = 1280, height: int = 900) -> Iterator["object"]:
    """A Selenium WebDriver for a headless Chromium with a throw-away profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="causalkg-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--disable-extensions", "--disable-default-apps", "--mute-audio",
                 f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
