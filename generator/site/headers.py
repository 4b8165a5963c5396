"""The response headers a static host sends with each file: the site's `_headers`.

`_headers` (Netlify, Cloudflare Pages):
- Both hosts match a rule against the *request path* and apply every matching
  rule; a header set by two matching rules is sent with both values joined by
  a comma. So each file must match at most one rule per header name, and
  there is no catch-all `Cache-Control` rule: pages are reached as `/x`,
  `/x/`, `/x.html` and `/x/index.html`, and only a catch-all could name the
  extension-less forms. Pages therefore keep the host's own default, which on
  both hosts is `public, max-age=0, must-revalidate` with an ETag.
- Nothing in this layout is content-addressed by its URL: a bundle grows when
  the resolver adds events, a record document can be re-issued (its unsigned
  parts change), alias look-ups move to newer versions, and the assets are not
  hashed. So no rule says `immutable`; a wrong `immutable` would pin stale
  bytes in browsers for a year with no way to recall them.
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
"""

from __future__ import annotations

from .layout import MANIFEST_PATH, SIGNATURE_PATH, SUMS_PATH

JSON_TYPE = "application/json; charset=utf-8"
ATOM_TYPE = "application/atom+xml; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"
REVALIDATE = "public, max-age=0, must-revalidate"
SHORT = "public, max-age=300, must-revalidate"
MEDIUM = "public, max-age=3600"
ANY_ORIGIN = "*"

Headers = tuple[tuple[str, str], ...]


def _served(content_type: str, cache: str) -> Headers:
    """A machine-readable file: its type, readable from any origin, and how long it may be cached."""
    return (
        ("Content-Type", content_type),
        ("Access-Control-Allow-Origin", ANY_ORIGIN),
        ("Cache-Control", cache),
    )


# (pattern below the base path, headers). Patterns never overlap for a header
# name (tests/publish checks this on a real build with both hosts' matchers).
_RULES: tuple[tuple[str, Headers], ...] = (
    ("*", (("X-Content-Type-Options", "nosniff"),)),
    # the integrity set: always revalidated
    (MANIFEST_PATH, _served(JSON_TYPE, REVALIDATE)),
    (SIGNATURE_PATH, _served(JSON_TYPE, REVALIDATE)),
    (SUMS_PATH, _served(TEXT_TYPE, REVALIDATE)),
    ("pith-mirrors.json", _served(JSON_TYPE, REVALIDATE)),
    ("pith-signing-key.json", _served(JSON_TYPE, REVALIDATE)),
    # per-record JSON: record, bundle, state and integrity files under /pith/
    # (the splat crosses "/"), the well-known bundle copy, graph and events
    ("pith/*.json", _served(JSON_TYPE, MEDIUM)),
    (".well-known/pith/*/bundle.json", _served(JSON_TYPE, MEDIUM)),
    ("api/pith-number/:body/graph.json", _served(JSON_TYPE, MEDIUM)),
    ("api/pith-number/:body/events.json", _served(JSON_TYPE, MEDIUM)),
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
# (public, max-age=0, must-revalidate). No URL here names its content, so no
# file is marked immutable: bundles grow, records can be re-issued.
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
