"""The response headers a static host sends with each file: the site's `_headers`.

`_headers` (Netlify, Cloudflare Pages):
- Both hosts match a rule against the *request path* and apply every matching
  rule; a header set by two matching rules is sent with both values joined by
  a comma. So each file must match at most one rule per header name, and
  there is no catch-all `Cache-Control` rule: pages are reached as `/x`,
  `/x/`, `/x.html` and `/x/index.html`, and only a catch-all could name the
  extension-less forms. Pages therefore keep the host's own default, which on
  both hosts is `public, max-age=0, must-revalidate` with an ETag.
- Nothing in this layout is content-addressed by its URL but the manifest's
  shards (`mirror/<prefix>.<hash>.json`, named by their bytes): a bundle grows
  when the resolver adds events, a record document can be re-issued (its
  unsigned parts change), alias look-ups move to newer versions, and the assets
  are not hashed. So only the shards are `immutable`; a wrong `immutable` would
  pin stale bytes in browsers for a year with no way to recall them.
- Three tiers instead (see `REVALIDATE`, `SHORT`, `MEDIUM`):
  * the integrity set (`mirror.json`, its signature, `SHA256SUMS`,
    `pith-mirrors.json`, `pith-signing-key.json`) is revalidated on every
    use, because a client checks these files against each other;
  * site-wide files (search shards, report, alias look-up shards, feed, sitemap,
    assets) may be 5 minutes old;
  * per-record JSON (record, bundle, state, graph, events, integrity) may be
    an hour old: a stale copy is an older, still validly signed version,
    never a wrong one.
- Every JSON file is sent as `application/json; charset=utf-8` with
  `Access-Control-Allow-Origin: *` (mirrors are read by other clients).
- An object store has no `_headers`: each object keeps the Content-Type and
  Cache-Control it was uploaded with. `object_headers` reads them off the same
  rules (matched against the file's own path), so a bucket and a host agree.
"""

from __future__ import annotations

import functools
import mimetypes
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from .layout import MANIFEST_PATH, MANIFEST_SHARDS, SIGNATURE_PATH, SUMS_PATH

JSON_TYPE = "application/json; charset=utf-8"
ATOM_TYPE = "application/atom+xml; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"
REVALIDATE = "public, max-age=0, must-revalidate"
SHORT = "public, max-age=300, must-revalidate"
MEDIUM = "public, max-age=3600"
IMMUTABLE = "public, max-age=31536000, immutable"
ANY_ORIGIN = "*"

Headers = tuple[tuple[str, str], ...]


def _served(content_type: str, cache: str) -> Headers:
    """A machine-readable file: its type, readable from any origin, and how long it may be cached."""
    return (
        ("Content-Type", content_type),
        ("Access-Control-Allow-Origin", ANY_ORIGIN),
        ("Cache-Control", cache),
    )


INTEGRITY_SET = (MANIFEST_PATH, SIGNATURE_PATH, SUMS_PATH, "pith-mirrors.json", "pith-signing-key.json")
"""The files a client checks against one another: always revalidated."""
PER_RECORD_JSON = (
    "pith/*.json",
    ".well-known/pith/*/bundle.json",
    "api/pith-number/:body/graph.json",
    "api/pith-number/:body/events.json",
)
"""Patterns of every record's own JSON: record, bundle, state and integrity files
under /pith/ (the splat crosses "/"), the well-known bundle copy, graph and events.
A stale copy is an older, still validly signed version: cached for an hour."""

# (pattern below the base path, headers). Patterns never overlap for a header
# name (tests/publish checks this on a real build with both hosts' matchers).
_RULES: tuple[tuple[str, Headers], ...] = (
    ("*", (("X-Content-Type-Options", "nosniff"),)),
    # the integrity set: always revalidated
    *((path, _served(TEXT_TYPE if path == SUMS_PATH else JSON_TYPE, REVALIDATE)) for path in INTEGRITY_SET),
    (f"{MANIFEST_SHARDS}/:shard", _served(JSON_TYPE, IMMUTABLE)),  # (named by their bytes)
    *((pattern, _served(JSON_TYPE, MEDIUM)) for pattern in PER_RECORD_JSON),
    # site-wide files: a few minutes (the resolve page itself is HTML: only *.json here)
    ("api/pith-number/resolve/*.json", _served(JSON_TYPE, SHORT)),
    ("search/*.json", _served(JSON_TYPE, SHORT)),
    ("report.json", _served(JSON_TYPE, SHORT)),
    ("feed.xml", _served(ATOM_TYPE, SHORT)),
    ("sitemap.xml", (("Cache-Control", SHORT),)),
    ("assets/*", (("Cache-Control", SHORT),)),
)

_HEADERS_INTRO = """\
# Response headers for Netlify and Cloudflare Pages, written by pith-mirror.
# Each file matches at most one rule per header: both hosts join the values of
# a header set by two matching rules with a comma.
# Pages (/x, /x/, /x.html, /x/index.html) keep the host default Cache-Control
# (public, max-age=0, must-revalidate). Only the manifest's shards, whose names
# carry their hash, are immutable: bundles grow, records can be re-issued.
"""


def headers_file(base_path: str) -> bytes:
    """The `_headers` file for a site served under `base_path` ("/" or "/mirror/")."""
    base = "/" + base_path.strip("/") + "/" if base_path.strip("/") else "/"
    lines = [_HEADERS_INTRO]
    for pattern, headers in _RULES:
        lines.append(f"{base}{pattern}\n")
        lines.extend(f"  {name}: {value}\n" for name, value in headers)
        lines.append("\n")
    return "".join(lines).rstrip("\n").encode("utf-8") + b"\n"


# ---------------------------------------------------------------- headers of one file


@functools.cache
def _pattern(rule: str) -> re.Pattern[str]:
    """A rule's path as both hosts match it, here against a file's own path: `*` is
    any characters, "/" included; `:name` is one path segment; the rest is literal."""
    parts = re.split(r"(\*|:[A-Za-z]\w*)", rule)
    body = "".join(".*" if p == "*" else "[^/]+" if p.startswith(":") else re.escape(p) for p in parts)
    return re.compile(f"{body}\\Z")


def matches(rule: str, path: str) -> bool:
    """Whether the file at `path` (below the site's root, no leading "/") matches a rule's pattern."""
    return _pattern(rule).match(path) is not None


def file_headers(path: str) -> dict[str, str]:
    """Every header `_headers` gives the file at `path` (below the site's root), by name."""
    found: dict[str, str] = {}
    for rule, headers in _RULES:
        if matches(rule, path):
            found.update(headers)
    return found


HOST_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".json": JSON_TYPE,
    ".xml": "application/xml",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".webmanifest": "application/manifest+json",
}
HOST_NAMED_TYPES = {"CNAME": TEXT_TYPE}
"""The type a static host sends by a file's suffix (or, for these, its name) when no
rule names one: pages, assets, the sitemap (see `host_type`, which the preview
server and an object store's upload both use)."""


def host_type(path: str) -> str:
    """The type a static host sends for a file no rule names one for: by its name
    (`HOST_NAMED_TYPES`), its suffix (`HOST_TYPES`), then the platform's table."""
    file = PurePosixPath(path)
    return (
        HOST_NAMED_TYPES.get(file.name)
        or HOST_TYPES.get(file.suffix.lower())
        or mimetypes.guess_type(file.name)[0]
        or "application/octet-stream"
    )


@dataclass(frozen=True)
class ObjectHeaders:
    """What an object store must be told on upload, as it has no `_headers` file:
    it sends back only what is stored with each object."""

    content_type: str
    cache_control: str


def object_headers(path: str) -> ObjectHeaders:
    """Content-Type and Cache-Control for the file at `path` stored as an object.

    The `_headers` rules first, so a bucket sends what Netlify and Cloudflare
    send. A file no rule gives a type gets its suffix's type (a store would
    otherwise answer `binary/octet-stream`, and a browser download the page);
    one no rule gives a cache policy gets the hosts' own default for pages,
    revalidated on every use. (Access-Control-Allow-Origin and
    X-Content-Type-Options are not per object: they are set on the bucket or the
    CDN, see docs/publishing.md.)"""
    headers = file_headers(path)
    return ObjectHeaders(
        content_type=headers.get("Content-Type") or host_type(path),
        cache_control=headers.get("Cache-Control", REVALIDATE),
    )
