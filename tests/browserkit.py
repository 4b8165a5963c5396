"""What every test that drives Chromium needs first: the browser, or a clear
skip, or (with PITH_MIRROR_REQUIRE_BROWSER=1, as `.ci/run` sets) a failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"


def require_browser() -> None:
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append(CHROMIUM)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package")
    if missing:
        message = "browser tests need " + " and ".join(missing)
        if os.environ.get("PITH_MIRROR_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
