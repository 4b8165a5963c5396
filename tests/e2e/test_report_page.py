"""The report page in a real Chromium: at 20,000 refused files it opens well under a
second, grouped by cause, with a few hundred files named and report.json for all."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from generator.site import sitewide
from generator.site.config import load_config
from generator.site.search_index import Pending
from generator.site.templating import make_environment
from generator.trust.errors import Code, Rejection
from generator.trust.keys import default_keyring

from .conftest import ROOT

pytestmark = pytest.mark.browser

REFUSED = 20_000


def refusals() -> list[Rejection]:
    """What 20,000 bundles signed by a key that is not pinned give: two problems each
    (a real one gives about thirteen; two keep the test quick, and the page the same)."""
    found = []
    for i in range(REFUSED):
        name = f"content/b-{i:05d}.bundle.json"
        said = "embedded key 'k' is not a pinned key"
        found.append(Rejection(name, "/public_keys/0/public_key_b64", Code.KEY_NOT_PINNED, said))
        found.append(Rejection(name, "/bundle_signature/key_id", Code.KEY_UNKNOWN, "key 'k' is not pinned"))
    return sorted(found)


def test_the_report_of_20000_refused_files_opens_well_under_a_second(page: Any, tmp_path: Path) -> None:
    site = tmp_path / "site"
    config = load_config(None, {"site": site, "content": tmp_path / "content"})
    env = make_environment(config, default_keyring())
    for made in sitewide.report_files([], refusals(), [], env, "pinned: k, fingerprint 00"):
        target = site / made.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(made.make() if isinstance(made, Pending) else made.data)
    shutil.copytree(ROOT / "templates" / "static", site / "static")
    url = (site / "report.html").as_uri()
    page.goto(url)  # (the first opening warms the browser up)
    timings = []
    for _ in range(3):
        page.goto(url, wait_until="load")
        timings.append(page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd"))
    assert min(timings) < 500, timings  # about 60 to 130 ms on two shared cores
    assert page.locator("section.cause").count() == 1
    heading = page.locator("section.cause h3").inner_text()
    assert heading == f"key.not_pinned: {REFUSED:,} files"
    assert page.locator("section.cause details summary").inner_text().endswith("report.json lists all)")
    assert page.locator("ul.refused li").count() == sitewide.REPORT_FILES_SHOWN
    assert page.locator("section.cause details").get_attribute("open") is None
