"""Reading comfort on a desktop screen: words in tables are not broken mid-token,
provenance is one line a section, the site has an icon."""

from __future__ import annotations

from typing import Any

import pytest

from .test_pages import BUNDLE, RECORD

pytestmark = pytest.mark.browser

_LINES = """text => {
    const found = [];
    for (const cell of document.querySelectorAll("main td, main th, main .aliases li")) {
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            const at = node.data.indexOf(text);
            if (at < 0) continue;
            const range = document.createRange();
            range.setStart(node, at);
            range.setEnd(node, at + text.length);
            const tops = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
            found.push(tops.size);
        }
    }
    return found;
}"""


@pytest.mark.parametrize(
    "word", ["record_created", "graph_snapshot", "2026-07-05T01:44:30Z", "arxiv_version", "pith_short_16"]
)
def test_table_words_are_not_broken_at_desktop_width(browser: Any, real_site: Any, word: str) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{real_site.url}pith/{BUNDLE}")
        lines = page.evaluate(_LINES, word)
    finally:
        context.close()
    assert lines and all(n == 1 for n in lines), (word, lines)


def test_each_section_says_where_its_contents_come_from_once(page: Any, real_site: Any) -> None:
    page.goto(f"{real_site.url}pith/{RECORD}")
    per_section = page.eval_on_selector_all(
        "main article > header, main article > section",
        "els => els.map(e => [(e.querySelector('h1, h2') || e).id || e.tagName,"
        " e.querySelectorAll(':scope > .prov').length])",
    )
    assert all(count <= 1 for _, count in per_section), per_section
    head = page.locator("main article > header > .prov")
    assert head.count() == 1
    text = head.inner_text()
    assert "title" in text and "authors" in text and "title_canon_sha256" not in text  # plain words
    # the technical reason is one click away, on the guide page, where the reader lands on it
    head.get_by_role("link", name="title", exact=True).click()
    page.wait_for_url("**/guide#title")
    reason = page.locator(":target + dd").inner_text()
    assert "title_canon_sha256" in reason


def test_the_site_has_an_icon(page: Any, real_site: Any) -> None:
    reply = page.request.get(f"{real_site.url}favicon.ico")
    assert reply.status == 200
    assert reply.headers["content-type"] == "image/x-icon"
    page.goto(real_site.url)
    assert page.get_attribute("link[rel=icon]", "href") == "/favicon.ico"
