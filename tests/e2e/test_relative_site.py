"""A site built with `relative = true` opens from disk: Chromium reads
file://…/site/index.html, follows links to a record page, a listing's next page
and back, each with its stylesheet."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import CONTENT, ROOT

pytestmark = pytest.mark.browser

STYLED = "() => getComputedStyle(document.querySelector('.skip')).position === 'absolute'"
"""Whether site.css applies: it moves the skip link off screen; unstyled, it is static."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("relative")
    shutil.copytree(CONTENT, root / "content")
    (root / "pith-mirror.toml").write_text("per_page = 1\n", "utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "generator", "build", "--relative", "--jobs", "1"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "to view it: open site/index.html, or pith-mirror serve --relative --jobs 1" in done.stdout
    return root / "site"


def test_the_site_opens_from_disk_and_its_links_lead_to_styled_pages(page: Any, built: Path) -> None:
    page.goto((built / "index.html").as_uri())
    assert page.evaluate(STYLED), "the home page opened from disk has no styles"
    first = page.locator("a.record-link").first
    title = first.inner_text()
    first.click()
    page.wait_for_url("file://**/pith/*.html")
    assert page.evaluate(STYLED), page.url
    assert title in page.locator("h1").inner_text()
    page.locator("a.brand").click()
    page.wait_for_url((built / "index.html").as_uri())
    page.locator("a[rel=next]").click()
    page.wait_for_url((built / "page" / "2.html").as_uri())
    assert page.evaluate(STYLED)
    page.locator("nav.pager a", has_text="1").click()
    page.wait_for_url((built / "index.html").as_uri())
    page.locator("header a", has_text="Browse").click()
    page.wait_for_url((built / "browse.html").as_uri())
    assert page.evaluate(STYLED)


def test_no_page_links_by_absolute_path(built: Path) -> None:
    import re

    for page in built.rglob("*.html"):
        text = page.read_text("utf-8")
        assert not re.search(r'\s(href|src)="/(?!/)', text), page
