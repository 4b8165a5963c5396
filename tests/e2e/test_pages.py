"""What a reader sees in a real Chromium, on a site the real CLI built and serves."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import factories
import pytest

from .conftest import CONTENT, Served

pytestmark = pytest.mark.browser

RECORD = "GO43K6A5MHLNBUADUVZ3AKFBNI"  # record document only
BUNDLE = "Z5NAPRQPUU4SIDOBV5N2FREXWZ"  # bundle


def verify(page: Any, url: str) -> tuple[str, list[tuple[str, str, str]]]:
    """Click "Verify in your browser"; return the verdict and each step (id, ok, text)."""
    page.goto(url)
    page.click("#verify-button")
    section = page.locator("#browser-verify")
    page.wait_for_function(
        "() => ['verified', 'failed', 'unsupported'].includes("
        "document.getElementById('browser-verify').dataset.result)"
    )
    steps = page.eval_on_selector_all(
        "#verify-steps li", "els => els.map(e => [e.dataset.step, e.dataset.ok, e.textContent])"
    )
    return section.get_attribute("data-result"), [tuple(s) for s in steps]


@pytest.mark.parametrize("body", [RECORD, BUNDLE])
def test_verify_button_says_verified_for_the_real_records(page: Any, real_site: Served, body: str) -> None:
    result, steps = verify(page, f"{real_site.url}pith/{body}")
    assert result == "verified", steps
    ids = {s[0] for s in steps}
    assert {"canonical-hash", "pith-number", "receipt-signature"} <= ids
    if body == BUNDLE:
        assert {"event-0", "event-1", "bundle-signature", "state"} <= ids
    assert all(ok == "true" for _, ok, _ in steps)


def test_a_byte_changed_after_the_build_is_not_verified(page: Any, tmp_path: Path) -> None:
    shutil.copytree(CONTENT, tmp_path / "content")
    served = Served(tmp_path / "content", tmp_path / "site")
    try:
        bundle = tmp_path / "site" / "pith" / BUNDLE / "bundle.json"
        data = bundle.read_bytes()
        # one byte of the graph snapshot's title, after the build
        bundle.write_bytes(data.replace(b"Towards Scalable", b"Towards Scalabel", 1))
        result, steps = verify(page, f"{served.url}pith/{BUNDLE}")
    finally:
        served.stop()
    assert result == "failed"
    failing = [s for s in steps if s[1] == "false"]
    assert failing, steps
    summary = page.text_content("#verify-summary") or ""
    assert "Not verified" in summary
    # the summary names the first failing step
    assert failing[0][2].split(":")[0].strip() in summary or failing[0][0] in summary


def _nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_documents_at_the_edges_verify_in_the_browser_as_in_the_build(page: Any, tmp_path: Path) -> None:
    """What the build publishes, the browser must verify too: a bundle before its first
    graph snapshot (the record JSON the mirror derives has no title to check), and a
    record document nested as deep as the loader allows (the state.json the mirror
    derives from it nests one level deeper)."""
    early = factories.bundle(
        record=factories.canonical_record(title="Before Any Snapshot"),
        events=[
            factories.record_created_event(
                factories.TEST_SIGNER, factories.canonical_record(title="Before Any Snapshot")
            )
        ],
    )
    deep = factories.record_document(title="Nested To The Limit")
    deep["aliases"][0]["note"] = _nested(61)  # aliases, an alias, then 62 levels: 64 in all
    content = tmp_path / "content"
    factories.write(content / "early.bundle.json", early)
    factories.write(content / "deep.json", deep)
    keys = factories.write(tmp_path / "keys.json", [factories.TEST_SIGNER.key_entry()])
    served = Served(content, tmp_path / "site", "--keys", str(keys))
    try:
        for doc in (early, deep):
            body = doc["pith_number"].split(":")[2]
            assert (tmp_path / "site" / "pith" / f"{body}.json").exists()  # published by the build
            result, steps = verify(page, f"{served.url}pith/{body}")
            assert result == "verified", steps
    finally:
        served.stop()


_LEFT_TO_RIGHT = """word => {
    const walker = document.createTreeWalker(document.querySelector(".source-line"), NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const at = node.data.indexOf(word);
        if (at < 0) continue;
        const xs = [...word].map((_, i) => {
            const range = document.createRange();
            range.setStart(node, at + i);
            range.setEnd(node, at + i + 1);
            return range.getBoundingClientRect().left;
        });
        return xs.every((x, i) => i === 0 || x > xs[i - 1]);
    }
    return null;
}"""


def test_a_signed_override_does_not_reverse_the_page_s_own_words(page: Any, tmp_path: Path) -> None:
    """A signed source id may end in RIGHT-TO-LEFT OVERRIDE (U+202E): the page's
    own words after it ("submitted", the date) must still read left to right."""
    record = factories.canonical_record(source_id="2101.00009\u202e", title="An Override")
    content = tmp_path / "content"
    factories.write(content / "override.json", factories.record_document(record=record, title="An Override"))
    keys = factories.write(tmp_path / "keys.json", [factories.TEST_SIGNER.key_entry()])
    served = Served(content, tmp_path / "site", "--keys", str(keys))
    try:
        page.goto(f"{served.url}pith/{factories.pith_body(record)}")
        assert page.evaluate(_LEFT_TO_RIGHT, "submitted") is True
    finally:
        served.stop()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Varuna", RECORD),  # a title word
        ("Sivathanu", RECORD),  # an author
        ("2010.10458", BUNDLE),  # an arXiv id
        ("pith:Z5NAPRQP", BUNDLE),  # a short Pith number
        ("GO43K6A5", RECORD),  # a bare short form
        ("arXiv:2010.10458", BUNDLE),  # an identifier as it is cited
        ("https://doi.org/10.48550/arXiv.2111.04007", RECORD),  # a DOI as a link
        ("Varuna 2111.04007", RECORD),  # a word and an identifier
    ],
)
def test_search_finds_records(page: Any, real_site: Served, query: str, expected: str) -> None:
    page.goto(real_site.url)
    page.fill("#search-input", query)
    link = page.locator(f"#search-results a[href$='/pith/{expected}']")
    link.first.wait_for()
    assert page.locator("#search-results li").count() == 1


@pytest.mark.parametrize(
    ("query", "expected_path"),
    [
        ("arxiv=2111.04007", f"/pith/{RECORD}"),
        ("doi=10.48550/arxiv.2010.10458", f"/pith/{BUNDLE}"),
        ("pith_short_8=Z5NAPRQP", f"/pith/{BUNDLE}"),
        ("arxiv=2111.04007&json=true", f"/pith/{RECORD}.json"),
        # every form the search accepts: cited, versioned, as a link
        ("arxiv=arXiv:2111.04007", f"/pith/{RECORD}"),
        ("arxiv=2010.10458v1", f"/pith/{BUNDLE}"),
        ("arxiv=https://arxiv.org/abs/2111.04007v2", f"/pith/{RECORD}"),
        ("doi=https://doi.org/10.48550/arXiv.2111.04007", f"/pith/{RECORD}"),
        ("pith_short_8=pith:GO43K6A5", f"/pith/{RECORD}"),
    ],
)
def test_resolve_page_lands_on_the_record(
    page: Any, real_site: Served, query: str, expected_path: str
) -> None:
    page.goto(f"{real_site.url}api/pith-number/resolve?{query}")
    page.wait_for_url(f"**{expected_path}")
    assert page.url.split("?")[0].endswith(expected_path)


def test_a_resolve_miss_links_the_same_query_on_the_primary(page: Any, real_site: Served) -> None:
    page.goto(f"{real_site.url}api/pith-number/resolve?arxiv=arXiv:2999.99999&json=true")
    link = page.locator("#resolve-primary")
    link.wait_for()
    assert link.get_attribute("href") == (
        "https://pith.science/api/pith-number/resolve?arxiv=arXiv:2999.99999&json=true"
    )
    assert "No record on this mirror has arxiv 2999.99999" in page.text_content("#resolve-status")


def test_search_results_replace_the_listing_and_stay_in_the_address(page: Any, real_site: Served) -> None:
    """A category is searchable; while a query is searched its results stand in for the
    list of every record, and the address keeps the query, so a reload finds it again."""
    page.goto(real_site.url)
    listing = page.locator("section:has(#list-h)")
    assert listing.is_visible()
    page.fill("#search-input", "cs.DC")
    page.locator("#search-status").filter(has_text="2 records match").wait_for()
    assert page.locator("#search-results li").count() == 2
    assert listing.is_hidden()
    page.wait_for_url("**/?q=cs.DC")
    page.reload()
    page.locator("#search-status").filter(has_text="2 records match").wait_for()
    assert page.input_value("#search-input") == "cs.DC" and listing.is_hidden()
    page.fill("#search-input", "")
    listing.wait_for(state="visible")
    assert page.locator("#search-results li").count() == 0
    page.wait_for_url(lambda url: "?" not in url)


@pytest.mark.parametrize("body", [RECORD, BUNDLE])
def test_record_page_has_no_horizontal_scroll_on_a_phone(browser: Any, real_site: Served, body: str) -> None:
    context = browser.new_context(
        viewport={"width": 360, "height": 740}, device_scale_factor=2, is_mobile=True
    )
    page = context.new_page()
    try:
        page.goto(f"{real_site.url}pith/{body}")
        widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    finally:
        context.close()
    assert widths[0] <= widths[1], widths


def test_screenshots_are_kept(browser: Any, real_site: Served, artifacts: Path) -> None:
    for width, name in ((1280, "desktop"), (390, "phone")):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        try:
            page.goto(f"{real_site.url}pith/{BUNDLE}")
            page.click("#verify-button")
            page.wait_for_function("() => document.getElementById('browser-verify').dataset.result")
            page.screenshot(path=str(artifacts / f"record-{name}.png"), full_page=True)
            page.goto(real_site.url)
            page.screenshot(path=str(artifacts / f"home-{name}.png"), full_page=True)
        finally:
            context.close()
    for name in ("record-desktop", "record-phone", "home-desktop", "home-phone"):
        assert (artifacts / f"{name}.png").stat().st_size > 10_000


def test_pages_load_nothing_from_other_hosts(page: Any, real_site: Served) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    for path in ("", f"pith/{BUNDLE}", f"paper/{RECORD[:8]}", "report", "browse"):
        page.goto(f"{real_site.url}{path}")
    outside = [u for u in requests if not u.startswith(real_site.url)]
    assert not outside, outside
