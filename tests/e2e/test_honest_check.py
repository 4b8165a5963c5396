"""The in-browser check says what it proved, and no more: which key signed the files
(not whose it is), and whether the page shows what the files say."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import factories
import pytest

from .conftest import CONTENT, ROOT, Served
from .test_pages import BUNDLE, RECORD, verify

pytestmark = pytest.mark.browser

RESOLVER_KEY = json.loads((ROOT / "generator" / "data" / "pinned-keys.json").read_bytes())[0]


def page_text(page: Any) -> str:
    return str(page.evaluate("() => document.body.innerText"))


@pytest.mark.parametrize("body", [RECORD, BUNDLE])
def test_a_real_record_names_the_resolver_s_key_and_its_whole_fingerprint(
    page: Any, real_site: Any, body: str
) -> None:
    result, steps = verify(page, f"{real_site.url}pith/{body}")
    assert result == "verified", steps
    assert ("page", "true") in [(s[0], s[1]) for s in steps]
    fingerprint = RESOLVER_KEY["fingerprint_sha256_hex"]
    summary = page.text_content("#verify-summary") or ""
    assert summary.startswith(
        f"Verified: these files are signed by key pith-v1-2026-05, fingerprint {fingerprint},"
        " and this page shows what they say."
    )
    assert page.get_attribute(".signing-key", "data-key-owner") == "resolver"
    assert "the key the Pith resolver publishes, which this mirror pins by default" in page_text(page)
    link = page.locator(".confirm-key a[target]")
    assert link.get_attribute("href") == RESOLVER_KEY["url"]
    assert link.get_attribute("target") == "_blank"
    assert "noopener" in (link.get_attribute("rel") or "")
    # how to compare the two is said once, on the guide page, which names the same key
    assert page.locator(".confirm-key a[href='/guide#browser']").count() == 1
    page.goto(f"{real_site.url}guide")
    assert page.locator("#browser ~ p a[target]").first.get_attribute("href") == RESOLVER_KEY["url"]
    assert "compare its fingerprint_sha256_hex with the fingerprint the check reports" in page_text(page)


def test_a_site_signed_by_another_key_never_calls_it_the_resolver_s(page: Any, tmp_path: Path) -> None:
    signer = factories.TEST_SIGNER
    doc = factories.record_document(signer, title="Signed By The Operator")
    factories.write(tmp_path / "content" / "operator.json", doc)
    keys = factories.write(tmp_path / "keys.json", [signer.key_entry()])
    served = Served(tmp_path / "content", tmp_path / "site", "--keys", str(keys))
    body = doc["pith_number"].split(":")[2]
    try:
        result, steps = verify(page, f"{served.url}pith/{body}")
        text = page_text(page)
        page.goto(served.url)
        home = page_text(page)
        page.goto(f"{served.url}guide")
        guide = page_text(page)
    finally:
        served.stop()
    assert result == "verified", steps
    fingerprint = signer.keyring().keys[0].fingerprint_hex
    assert fingerprint != RESOLVER_KEY["fingerprint_sha256_hex"]
    assert f"signed by key {signer.key_id}, fingerprint {fingerprint}" in text
    assert "a key this mirror's operator pinned in place of the one the Pith resolver publishes" in text
    for page_words in (text, home, guide):
        # the site may say where the resolver's key is; it never calls this one the resolver's
        assert "resolver's" not in page_words.replace("’", "'")
        assert "by the resolver" not in page_words
        assert "every check passed" not in page_words


def test_a_page_edited_after_the_build_fails_naming_the_field(page: Any, tmp_path: Path) -> None:
    shutil.copytree(CONTENT, tmp_path / "content")
    served = Served(tmp_path / "content", tmp_path / "site")
    real = json.loads((CONTENT / f"{RECORD}.record.json").read_bytes())["paper"]
    try:
        path = tmp_path / "site" / "pith" / f"{RECORD}.html"  # (what /pith/<P> answers with)
        html = path.read_text("utf-8")
        assert f">{real['title']}<" in html and f">{real['authors_text']}<" in html
        html = html.replace(f">{real['title']}<", ">Varuna: Forged After The Build<")
        html = html.replace(f">{real['authors_text']}<", f">{real['authors_text']}, Mallory Forger<")
        path.unlink()
        path.write_text(html, "utf-8")
        result, steps = verify(page, f"{served.url}pith/{RECORD}")
        labels = page.eval_on_selector_all(
            ".prov b.v, .prov b.s", "els => els.map(e => getComputedStyle(e).textDecorationLine)"
        )
    finally:
        served.stop()
    assert result == "failed", steps
    assert [s[0] for s in steps if s[1] == "false"] == ["page"]  # the files themselves still verify
    summary = page.text_content("#verify-summary") or ""
    assert summary.startswith("Not verified: This page: this page shows the title")
    assert "changed after it was built" in summary
    assert "(and 1 more problem)" in summary  # the added author
    # the mirror's own green labels beside the forged title are struck through
    assert labels and all(d == "line-through" for d in labels)
