"""Headless Chromium from Debian's package, driven by Playwright (never ``playwright install``:
the machine may be offline). ``make test`` installs ``chromium`` when it is missing (Makefile
TOOLS)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CHROMIUM = "/usr/bin/chromium"


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless browser (Playwright's ``Browser``), closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()
