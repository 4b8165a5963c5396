"""A sanity check of the four scripts in a real Chromium (marked `browser`).

A throw-away site is served from a temporary folder on 127.0.0.1 (a secure
context, so Web Crypto is there) with a strict Content-Security-Policy. The
record pages use the real seed documents; the home page uses the small search
index of test_search_js.py. Requests to any other host are refused and
recorded. The end-to-end tests of the built site live elsewhere; this only
shows that the scripts work in a browser as they do under Node.
"""

from __future__ import annotations

import hashlib
import html
import json
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import pytest
from browserkit import CHROMIUM, require_browser
from netkit import http_server

from .conftest import BUNDLE_FILE, PINNED_KEYS_FILE, RECORD_FILE, STATIC
from .test_search_js import build_index
from .test_verify_js import derived_record

pytestmark = pytest.mark.browser
expect = None  # playwright.sync_api.expect, set by the browser fixture (Playwright is optional)
BROWSER_TIMEOUT = 30_000
LAUNCH_TIMEOUT = 120_000
"""Milliseconds: bounds, not waits (see the browser fixture)."""

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CSP = "; ".join(
    ["default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'", "base-uri 'none'"]
)

RECORD = json.loads(RECORD_FILE.read_bytes())
BUNDLE = json.loads(BUNDLE_FILE.read_bytes())
GO43 = RECORD["pith_number"].split(":")[2]
Z5NA = BUNDLE["pith_number"].split(":")[2]


KEY = json.loads(PINNED_KEYS_FILE.read_bytes())[0]


def facts(doc: dict, title: str | None) -> str:
    """The values a built record page marks for the check (data-fact), from `doc`."""
    canonical = doc["canonical_record"]
    source, metadata = canonical["source"], canonical["metadata"]
    values = {
        "number": doc["pith_number"],
        "short-number": "pith:" + doc["pith_number"].split(":")[-1][:8],
        "source": f"{source['kind']}:{source['id']} v{source['version']}",
        "submitted": metadata["submitted_at"][:10],
        "categories": " · ".join([metadata["primary_cat"], *metadata["cross_cats_sorted"]]),
        "canonical-hash": doc["canonical_sha256"],
        "key-id": KEY["key_id"],
        "key-fingerprint": KEY["fingerprint_sha256_hex"],
    }
    if metadata.get("license"):
        values["license"] = metadata["license"]
    if title is not None:
        values["title"] = title
    return "".join(f'<span data-fact="{k}">{html.escape(v)}</span>' for k, v in values.items())


def record_page(
    number: str,
    record_json: str,
    bundle_json: str = "",
    state_json: str = "",
    signed: bool = True,
    shown: str = "",
) -> str:
    attrs = {
        "data-pith-number": number,
        "data-record-json": record_json,
        "data-bundle-json": bundle_json,
        "data-state-json": state_json,
        "data-keys": "/pith-signing-key.json",
        "data-record-signed": "true" if signed else "false",
    }
    section_attrs = " ".join(f'{k}="{html.escape(v)}"' for k, v in attrs.items())
    return f"""<!doctype html>
<html lang="en" data-base="/"><head><meta charset="utf-8"><title>{html.escape(number)}</title>
<script src="/static/canonical.js" defer></script><script src="/static/verify.js" defer></script></head>
<body><main>{shown}<section id="browser-verify" {section_attrs}>
<button type="button" id="verify-button">Verify in your browser</button>
<p id="verify-summary" role="status" aria-live="polite"></p>
<ol id="verify-steps"></ol></section></main></body></html>
"""


HOME = """<!doctype html>
<html lang="en" data-base="/"><head><meta charset="utf-8"><title>Home</title>
<script src="/static/search.js" defer></script></head>
<body><main><form id="search" role="search"><label for="search-input">Search</label>
<input id="search-input" name="q" type="search" autocomplete="off"></form>
<ol id="search-results"></ol></main></body></html>
"""

RESOLVE = """<!doctype html>
<html lang="en" data-base="/"><head><meta charset="utf-8"><title>Resolve</title>
<script src="/static/canonical.js" defer></script>
<script src="/static/resolve.js" defer></script></head>
<body><main><p id="resolve-status" role="status"></p></main></body></html>
"""


def write(root: Path, path: str, data: str | bytes) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def build_site(root: Path) -> None:
    for js in STATIC.glob("*.js"):
        write(root, f"/static/{js.name}", js.read_bytes())
    write(root, "/pith-signing-key.json", PINNED_KEYS_FILE.read_bytes())
    # a signed record document
    write(root, f"/pith/{GO43}.json", RECORD_FILE.read_bytes())
    go43_facts = facts(RECORD, RECORD["paper"]["title"])
    write(
        root,
        f"/pith/{GO43}/index.html",
        record_page(RECORD["pith_number"], f"/pith/{GO43}.json", shown=go43_facts),
    )
    # a number known only from its bundle: the record JSON is derived by the mirror
    write(root, f"/pith/{Z5NA}.json", json.dumps(derived_record(BUNDLE), indent=1))
    write(root, f"/pith/{Z5NA}/bundle.json", BUNDLE_FILE.read_bytes())
    write(root, f"/pith/{Z5NA}/state.json", json.dumps(BUNDLE["state"], indent=2))
    write(
        root,
        f"/pith/{Z5NA}/index.html",
        record_page(
            BUNDLE["pith_number"],
            f"/pith/{Z5NA}.json",
            f"/pith/{Z5NA}/bundle.json",
            f"/pith/{Z5NA}/state.json",
            signed=False,
            shown=facts(BUNDLE, derived_record(BUNDLE)["paper"]["title"]),
        ),
    )
    # a record whose title was altered after signing
    tampered = json.loads(RECORD_FILE.read_bytes())
    tampered["paper"]["title"] = "Varuna: <b>Altered</b> title"
    write(root, "/tampered/record.json", json.dumps(tampered))
    write(
        root,
        "/tampered/index.html",
        record_page(RECORD["pith_number"], "/tampered/record.json", shown=go43_facts),
    )
    # home page with a search index
    write(root, "/index.html", HOME)
    for url, data in build_index("/").items():
        write(root, url, json.dumps(data, ensure_ascii=False))
    # the resolver page, and look-up shards as docs/published-files.md describes them,
    # made here by the rule alone (two hex digits: not the width a small build picks)
    write(root, "/api/pith-number/resolve/index.html", RESOLVE)
    write(root, "/api/pith-number/resolve/index.json", json.dumps({"shard_hex_digits": SHARD_WIDTH}))
    shards: dict[tuple[str, str], dict[str, object]] = {}
    for (kind, key), body in LOOKUPS.items():
        entry = {"pith_number": f"pith:x:{body}", "record": f"/pith/{body}/", "json": f"/pith/{body}.json"}
        shards.setdefault((kind, shard_of(key)), {})[key] = entry
    for (kind, shard), entries in shards.items():
        data = {"alias_kind": kind, "shard": shard, "entries": entries}
        write(root, f"/api/pith-number/resolve/{kind}/{shard}.json", json.dumps(data, ensure_ascii=False))


SHARD_WIDTH = 2
LOOKUPS = {  # (kind, key: the value as looked up, a DOI lower-cased) -> the record it names
    ("arxiv", "2111.04007"): GO43,
    ("doi", "10.48550/arxiv.2111.04007"): GO43,
    ("pith_short_8", GO43[:8]): GO43,
    ("arxiv", "2010.10458"): Z5NA,
    ("arxiv", "hep-th/9901001"): GO43,  # an old-style id with a slash, pointed at a real page
    ("doi", "10.1234/été-ü/𝔁~%"): Z5NA,  # non-ASCII (one beyond the BMP), "/", "~" and "%"
}


def shard_of(key: str) -> str:
    """The documented rule, here in Python: SHA-256 of the key's UTF-8 bytes, first digits."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:SHARD_WIDTH]


def a_miss_in_a_shard_that_exists() -> str:
    """An arXiv id no record has whose shard is one a record's id is in: found there, not found."""
    taken = {shard_of(key) for kind, key in LOOKUPS if kind == "arxiv"}
    return next(v for v in (f"9999.{i:05d}" for i in range(100_000)) if shard_of(v) in taken)


class Handler(SimpleHTTPRequestHandler):
    def end_headers(self) -> None:
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    build_site(root)
    with http_server(partial(Handler, directory=str(root))) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    require_browser()
    from playwright import sync_api

    global expect
    expect = sync_api.expect
    # Deadlines far above the normal case: Chromium starts and pages settle slowly on a busy machine.
    expect.set_options(timeout=BROWSER_TIMEOUT)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, timeout=LAUNCH_TIMEOUT)
        yield b
        b.close()


@pytest.fixture
def page(browser, site):
    context = browser.new_context()
    pg = context.new_page()
    pg.set_default_timeout(BROWSER_TIMEOUT)
    pg.foreign = []  # requests to any host but the site
    pg.problems = []  # console errors (CSP violations included) and uncaught exceptions

    def route(r):
        if r.request.url.startswith(site):
            r.continue_()
        else:
            pg.foreign.append(r.request.url)
            r.abort()

    pg.route("**/*", route)
    pg.on("console", lambda m: pg.problems.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.problems.append(str(e)))
    yield pg
    assert pg.foreign == []
    context.close()


def verify(pg, url: str) -> tuple[str, list[tuple[str, str, str]], str]:
    pg.goto(url)
    pg.click("#verify-button")
    # Selectors, not wait_for_function: the page's CSP forbids the eval that needs.
    pg.wait_for_selector(
        ", ".join(f'#browser-verify[data-result="{r}"]' for r in ("verified", "failed", "unsupported")),
        state="attached",
        timeout=BROWSER_TIMEOUT,
    )
    result = pg.get_attribute("#browser-verify", "data-result")
    steps = pg.eval_on_selector_all(
        "#verify-steps li", "els => els.map(e => [e.dataset.step, e.dataset.ok, e.textContent])"
    )
    return result, [tuple(s) for s in steps], pg.text_content("#verify-summary")


def test_signed_record_verifies(page, site):
    result, steps, summary = verify(page, f"{site}/pith/{GO43}/")
    assert result == "verified", steps
    assert summary.startswith(
        "Verified: these files are signed by key pith-v1-2026-05,"
        " fingerprint 8d4b5ee74e4693bcd1df2446408b0d54,"
        " and this page shows what they say."
    )
    assert [s[0] for s in steps] == [
        "load",
        "keys",
        "canonical-hash",
        "pith-number",
        "receipt-signature",
        "title",
        "aliases",
        "page",
    ]
    assert all(ok == "true" for _, ok, _ in steps)
    receipt = dict((s[0], s[2]) for s in steps)["receipt-signature"]
    assert (
        "verifies with the pinned key pith-v1-2026-05 (fingerprint 8d4b5ee74e4693bcd1df2446408b0d54)"
        in receipt
    )
    assert page.problems == []


def test_bundle_and_derived_record_verify(page, site):
    result, steps, _ = verify(page, f"{site}/pith/{Z5NA}/")
    assert result == "verified", steps
    ids = [s[0] for s in steps]
    assert ids[-7:] == ["event-0", "event-1", "paper", "bundle-keys", "bundle-signature", "state", "page"]
    assert all(ok == "true" for _, ok, _ in steps)
    paper = dict((s[0], s[2]) for s in steps)["paper"]
    assert "Paper details: the paper details are those signed in event sha256:" in paper
    assert page.problems == []


def test_altered_title_fails_and_is_shown_as_text(page, site):
    result, steps, summary = verify(page, f"{site}/tampered/")
    assert result == "failed"
    assert [s[0] for s in steps if s[1] == "false"] == ["title"]
    assert summary.startswith("Not verified: Title:")
    assert page.locator("#verify-steps b").count() == 0  # document text never becomes markup


def test_without_ed25519_the_page_says_so(page, site):
    page.add_init_script(
        """(() => {
          const real = crypto.subtle.importKey.bind(crypto.subtle);
          crypto.subtle.importKey = (format, data, algorithm, ...rest) =>
            (algorithm && (algorithm === 'Ed25519' || algorithm.name === 'Ed25519'))
              ? Promise.reject(new DOMException('Unrecognized name.', 'NotSupportedError'))
              : real(format, data, algorithm, ...rest);
        })();"""
    )
    result, steps, summary = verify(page, f"{site}/pith/{Z5NA}/")
    assert result == "unsupported"
    assert summary.startswith("Partly verified")
    unsupported = [s[0] for s in steps if s[1] == "unsupported"]
    assert unsupported == ["receipt-signature", "event-0", "event-1", "bundle-signature"]
    assert (
        "this browser cannot check Ed25519 signatures; hashes were checked"
        in dict((s[0], s[2]) for s in steps)["event-0"]
    )


def test_search_as_you_type(page, site):
    page.goto(f"{site}/")
    page.fill("#search-input", "varuna")
    expect(page.locator("#search-results li")).to_have_count(1)
    link = page.locator("#search-results li a")
    assert link.get_attribute("href") == f"/pith/{GO43}"
    assert link.text_content() == RECORD["paper"]["title"]
    assert page.text_content("#search-status") == "1 record matches"
    assert page.get_attribute("#search-status", "aria-live") == "polite"
    page.fill("#search-input", "deep learning")
    expect(page.locator("#search-status")).to_have_text("123 records match; showing the first 50")
    assert page.locator("#search-results li").count() == 50
    assert page.text_content("#search-status") == "123 records match; showing the first 50"
    page.fill("#search-input", "zzzz-nothing")
    expect(page.locator("#search-status")).to_have_text("No records match")
    assert page.locator("#search-results li").count() == 0
    page.goto(f"{site}/?q=hep-lat/0407033")
    expect(page.locator("#search-results li")).to_have_count(1)
    # A shard no term starts with ("zz") is simply absent: the 404 is expected.
    assert [p for p in page.problems if "status of 404" not in p] == []


@pytest.mark.parametrize(
    ("query", "lands_on"),
    [
        ("?arxiv=2111.04007", f"/pith/{GO43}/"),
        ("?arxiv=2111.04007&json=true", f"/pith/{GO43}.json"),
        ("?doi=10.48550/ARXIV.2111.04007&json=1", f"/pith/{GO43}.json"),
        (f"?pith_short_8={GO43[:8].lower()}", f"/pith/{GO43}/"),
        ("?arxiv=2010.10458", f"/pith/{Z5NA}/"),
        ("?arxiv=hep-th/9901001", f"/pith/{GO43}/"),
        # the shard JavaScript computes is the one Python wrote (the DOI is lower-cased first)
        ("?doi=10.1234/%C3%89T%C3%89-%C3%9C/%F0%9D%94%81~%25&json=true", f"/pith/{Z5NA}.json"),
        ("?doi=https://doi.org/10.1234/%C3%A9t%C3%A9-%C3%BC/%F0%9D%94%81~%25", f"/pith/{Z5NA}/"),
    ],
)
def test_resolver_redirects(page, site, query, lands_on):
    # Without the trailing slash, as the resolver's own links are written: the
    # static server redirects to the folder and keeps the query string.
    page.goto(f"{site}/api/pith-number/resolve{query}")
    page.wait_for_url(f"{site}{lands_on}", timeout=BROWSER_TIMEOUT)


def test_resolver_miss_and_bad_query(page, site):
    page.goto(f"{site}/api/pith-number/resolve/?arxiv=9999.99999")
    expect(page.locator("#resolve-status")).to_contain_text("No record on this mirror has arxiv 9999.99999.")
    assert page.get_attribute("#resolve-status a", "href") == "/"
    miss = a_miss_in_a_shard_that_exists()
    page.goto(f"{site}/api/pith-number/resolve/?arxiv={miss}")
    expect(page.locator("#resolve-status")).to_contain_text(f"No record on this mirror has arxiv {miss}.")
    page.goto(f"{site}/api/pith-number/resolve/?arxiv=__proto__&json=true")
    expect(page.locator("#resolve-status")).to_contain_text("No record on this mirror has arxiv __proto__.")
    page.goto(f"{site}/api/pith-number/resolve/?nonsense=1")
    expect(page.locator("#resolve-status")).to_contain_text("This address does not say what to look up")
    page.goto(f"{site}/api/pith-number/resolve/?arxiv=%3Cb%3Ex%3C/b%3E")
    expect(page.locator("#resolve-status")).to_contain_text("No record on this mirror has arxiv <b>x</b>.")
    assert page.locator("#resolve-status b").count() == 0
