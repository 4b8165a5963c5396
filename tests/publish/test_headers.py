"""`_headers` on a real built site: every file gets the headers it is meant to, and no more.

Two matchers, as the hosts match a rule's path against the request path:
- Netlify: a port of @netlify/headers-parser's `getForRegExp` (case-insensitive,
  optional trailing slash, a standalone `*` segment also matches nothing,
  `*` inside a segment is `(.*)` -- it crosses "/" -- with the rest of that
  segment left unescaped, `:name` is one segment).
- Cloudflare Pages: `*` is a greedy splat (crosses "/"), `:name` one segment,
  everything else literal.
Both hosts apply every matching rule, and join a header that two rules set
with a comma: so the test requires each header at most once for every URL.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from generator.commands.serve import content_type
from generator.site.headers import ATOM_TYPE, JSON_TYPE, TEXT_TYPE, headers_file

Rule = tuple[re.Pattern[str], list[tuple[str, str]]]


def netlify_regexp(path: str) -> re.Pattern[str]:
    def part(p: str) -> str:
        if p.startswith(":"):
            return "([^/]+)"
        if p == "*":
            return "?(.*)"
        if "*" in p:
            return p.replace("*", "(.*)")
        return re.escape(p)

    body = "/".join(part(p) for p in (s.rstrip() for s in path.split("/")) if p)
    return re.compile(f"^/{body}/?$", re.IGNORECASE)


def cloudflare_regexp(path: str) -> re.Pattern[str]:
    pattern = ""
    for token in re.split(r"(\*|:[A-Za-z]\w*)", path):
        if token == "*":
            pattern += ".*"
        elif token.startswith(":") and len(token) > 1:
            pattern += "[^/]+"
        else:
            pattern += re.escape(token)
    return re.compile(f"^{pattern}$")


def parse_headers(text: str, compile_path: Callable[[str], re.Pattern[str]]) -> list[Rule]:
    rules: list[Rule] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            assert line.startswith("/"), f"a rule path must start with '/': {line!r}"
            assert line.count("*") <= 1, f"one splat per rule (Cloudflare): {line!r}"
            rules.append((compile_path(line.strip()), []))
            continue
        name, sep, value = line.strip().partition(":")
        assert sep and rules, f"a header line outside a rule: {line!r}"
        rules[-1][1].append((name.strip(), value.strip()))
    return rules


def headers_for(rules: list[Rule], url: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for pattern, headers in rules:
        if pattern.match(url):
            for name, value in headers:
                found.setdefault(name.lower(), []).append(value)
    return found


def request_urls(site: Path, base: str = "/") -> dict[str, str]:
    """Every URL a reader may request -> the file that answers it."""
    urls: dict[str, str] = {}
    for path in sorted(p for p in site.rglob("*") if p.is_file()):
        rel = path.relative_to(site).as_posix()
        if rel == "_headers":
            continue
        urls[base + rel] = rel
        if rel.endswith("/index.html"):
            urls[base + rel[: -len("index.html")]] = rel
        elif rel == "index.html":
            urls[base] = rel
        elif rel.endswith(".html"):
            urls[base + rel[: -len(".html")]] = rel
    return urls


MATCHERS = {"netlify": netlify_regexp, "cloudflare": cloudflare_regexp}


@pytest.fixture(params=sorted(MATCHERS))
def rules_on_site(
    request: pytest.FixtureRequest, site_copy: Callable[[str], Path]
) -> tuple[list[Rule], Path]:
    site = site_copy("site")
    (site / "_headers").write_bytes(headers_file("/"))
    (site / "SHA256SUMS").write_text("")  # as `pith-mirror checksums` adds it
    text = (site / "_headers").read_text("ascii")
    return parse_headers(text, MATCHERS[request.param]), site


def test_every_json_file_is_json_readable_from_anywhere(rules_on_site: tuple[list[Rule], Path]) -> None:
    rules, site = rules_on_site
    json_urls = {u: f for u, f in request_urls(site).items() if f.endswith(".json")}
    assert any(f.endswith("/bundle.json") for f in json_urls.values())
    assert any(f.startswith(".well-known/pith/") for f in json_urls.values())
    assert any(f.startswith("api/pith-number/resolve/") for f in json_urls.values())
    assert any(f.startswith("search/") for f in json_urls.values())
    for url in json_urls:
        got = headers_for(rules, url)
        assert got.get("content-type") == [JSON_TYPE], url
        assert got.get("access-control-allow-origin") == ["*"], url
        assert len(got.get("cache-control", [])) == 1, url


def test_feed_is_atom(rules_on_site: tuple[list[Rule], Path]) -> None:
    rules, _site = rules_on_site
    assert headers_for(rules, "/feed.xml")["content-type"] == [ATOM_TYPE]
    assert ATOM_TYPE.startswith("application/atom+xml")


def test_the_preview_sends_the_types_the_headers_file_gives(rules_on_site: tuple[list[Rule], Path]) -> None:
    """`serve` shows the site as a host would: SHA256SUMS as text, not a download."""
    rules, site = rules_on_site
    typed = 0
    for url, file in request_urls(site).items():
        declared = headers_for(rules, url).get("content-type")
        if declared:
            typed += 1
            assert [content_type(site / file)] == declared, url
    assert typed > 20 and headers_for(rules, "/SHA256SUMS")["content-type"] == [TEXT_TYPE]


def test_no_header_is_set_twice_for_any_url(rules_on_site: tuple[list[Rule], Path]) -> None:
    rules, site = rules_on_site
    for url in request_urls(site):
        for name, values in headers_for(rules, url).items():
            assert len(values) == 1, f"{url}: {name} set by {len(values)} rules: {values}"


def test_pages_get_no_type_and_are_never_immutable(rules_on_site: tuple[list[Rule], Path]) -> None:
    rules, site = rules_on_site
    pages = {u: f for u, f in request_urls(site).items() if f.endswith(".html")}
    assert "/" in pages and f"/pith/{'GO43K6A5MHLNBUADUVZ3AKFBNI'}" in pages
    assert "/api/pith-number/resolve/" in pages and "/api/pith-number/resolve" in pages
    for url in pages:
        got = headers_for(rules, url)
        assert "content-type" not in got, url
        assert "cache-control" not in got, f"{url}: pages keep the host default"
        assert not any("immutable" in v for values in got.values() for v in values), url


def test_only_the_manifest_s_shards_are_immutable_as_only_their_urls_name_their_content() -> None:
    rules = headers_file("/").split(b"\n/", 1)[1]
    immutable = [block for block in rules.split(b"\n\n") if b"immutable" in block]
    assert [block.split(b"\n", 1)[0].lstrip(b"/") for block in immutable] == [
        b".well-known/pith/mirror/:shard"
    ]


def test_integrity_set_is_always_revalidated(rules_on_site: tuple[list[Rule], Path]) -> None:
    rules, _site = rules_on_site
    for url in (
        "/.well-known/pith/mirror.json",
        "/.well-known/pith/mirror.sig.json",
        "/SHA256SUMS",
        "/pith-mirrors.json",
    ):
        assert headers_for(rules, url)["cache-control"] == ["public, max-age=0, must-revalidate"], url
    assert headers_for(rules, "/SHA256SUMS")["content-type"] == ["text/plain; charset=utf-8"]


def test_per_record_json_is_cached_longer_than_site_wide(rules_on_site: tuple[list[Rule], Path]) -> None:
    rules, site = rules_on_site
    body = "Z5NAPRQPUU4SIDOBV5N2FREXWZ"
    for url in (
        f"/pith/{body}/bundle.json",
        f"/.well-known/pith/{body}/bundle.json",
        f"/pith/{body}.json",
        f"/pith/{body}/state.json",
        f"/api/pith-number/{body}/events.json",
    ):
        assert headers_for(rules, url)["cache-control"] == ["public, max-age=3600"], url
    shards = [
        u
        for u, f in request_urls(site).items()
        if f.startswith("api/pith-number/resolve/") and f.endswith(".json")
    ]
    assert len(shards) >= 7  # (the index, and a shard for each kind)
    for url in ("/search/meta.json", "/report.json", *shards):
        assert headers_for(rules, url)["cache-control"] == ["public, max-age=300, must-revalidate"], url


def test_headers_under_a_sub_path() -> None:
    text = headers_file("/mirror/").decode("ascii")
    paths = [
        line for line in text.splitlines() if line and not line[0].isspace() and not line.startswith("#")
    ]
    assert paths and all(p.startswith("/mirror/") for p in paths)
    rules = parse_headers(text, netlify_regexp)
    assert headers_for(rules, "/mirror/pith/X/bundle.json")["content-type"] == [JSON_TYPE]
    assert "content-type" not in headers_for(rules, "/pith/X/bundle.json")
    assert headers_file("mirror") == headers_file("/mirror/")


def test_headers_file_is_deterministic_ascii() -> None:
    first = headers_file("/")
    assert first == headers_file("/")
    first.decode("ascii")
    assert first.endswith(b"\n") and not first.endswith(b"\n\n")
    assert b"\n//" not in first
