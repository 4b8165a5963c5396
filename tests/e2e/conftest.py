"""End-to-end browser tests: the real CLI serves a real build; Chromium reads it.

Chromium is Debian's (`/usr/bin/chromium`), driven by Playwright for Python;
no browser of Playwright's own is ever downloaded. Without Chromium these
tests are skipped, unless PITH_MIRROR_REQUIRE_BROWSER=1 (set by .ci/run),
where a missing browser is a failure.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browserkit import CHROMIUM, require_browser
from runkit import Running

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content"
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class Served:
    """A `pith-mirror serve` subprocess and the address it printed (within a minute)."""

    def __init__(self, content: Path, site: Path, *extra: str) -> None:
        self.site = site
        args = ["serve", "--port", "0", "--no-watch", "--jobs", "1", *extra, str(content), str(site)]
        self.running = Running(args, content.parent)
        try:
            found = self.running.wait_for_line(r"(http://127\.0\.0\.1:\d+/\S*)", timeout=60)
        except AssertionError:
            self.stop()
            raise
        self.url = found.group(1)

    def stop(self) -> None:
        if self.running.process.poll() is None:
            try:
                self.running.interrupt()
            except subprocess.TimeoutExpired:
                self.running.process.kill()
                self.running.process.wait()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, timeout=120_000
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


@pytest.fixture(scope="session")
def real_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The two real resolver documents, built and served by the real CLI."""
    require_browser()
    root = tmp_path_factory.mktemp("e2e")
    shutil.copytree(CONTENT, root / "content")
    served = Served(root / "content", root / "site")
    yield served
    served.stop()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
