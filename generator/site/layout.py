"""Where every published file goes: the resolver's URL layout, made safe.

Rules:
- Every path is built here from validated parts only: a 26-character base32
  body, a safe arXiv id, an encoded alias value. Nothing else becomes a path.
- A page is the file `x.html`, which answers `/x` on hosts that serve
  `x.html` for `/x` (GitHub Pages, Cloudflare Pages, Netlify, `serve`). Its
  folder twin `x/index.html` is a small page that sends the reader on to
  `x.html` by its file name (`folder_redirect`): `/x/` answers everywhere, and
  a host that turns `/x` into `/x/` (a bucket's website, a plain folder
  server) lands on the page too, without a loop. A copy of the page there
  doubled the bytes of every page a host uploads as a tar.
- Links are absolute paths under the configured base path.
- Alias values become look-up paths by one rule (`encode_alias_value`):
  split on "/", keep [A-Za-z0-9._-], write any other UTF-8 byte as "~XX";
  a segment "." or ".." has its dots written "~2E"; a segment before the last
  that ends in ".json" has that dot written "~2E" (a folder must never take a
  look-up file's name); empty segments are refused.
"""

from __future__ import annotations

import re

from ..trust.model import BODY_RE

_SAFE_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")
"""A segment made of _SAFE_BYTES only (one that encodes as itself)."""
_SAFE_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
MAX_SEGMENT = 200
"""The longest path segment a document's value may become, in bytes: file systems
name at most 255, and a file is written through a temporary name a few bytes
longer. A longer one failed the build, and every build after it."""
MAX_ALIAS_PATH = 1000
"""The longest encoded alias value, in bytes (a path is at most 4,096 in all)."""
_ARXIV_ID = re.compile(r"[0-9]{4}\.[0-9]{4,5}|[a-z][a-z-]*(\.[A-Z]{2})?/[0-9]{7}")

MANIFEST_PATH = ".well-known/pith/mirror.json"
MANIFEST_TYPE = "pith_mirror_record_manifest"
"""The mirror manifest: every number the site publishes, with its hashes."""
SUMS_PATH = "SHA256SUMS"
SIGNATURE_PATH = ".well-known/pith/mirror.sig.json"
"""The whole site's checksums, and the mirror's own signature over them and the manifest."""

RESOLVE_KINDS = ("arxiv", "arxiv_version", "doi", "pith_short_8", "pith_short_12", "pith_short_16")


def check_body(body: str) -> str:
    if not BODY_RE.fullmatch(body):
        raise ValueError(f"not a Pith number body: {body!r}")
    return body


def page_paths(path: str) -> tuple[str, str]:
    """`a/b` -> (`a/b.html`, `a/b/index.html`): the page and its folder twin."""
    return f"{path}.html", f"{path}/index.html"


_FOLDER_REDIRECT = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{path}</title>
<meta name="robots" content="noindex">
<meta http-equiv="refresh" content="0; url={file}">
<link rel="canonical" href="{url}">
</head>
<body>
<p>This page is at <a href="{file}">{url}</a>.</p>
</body>
</html>
"""


def folder_redirect(path: str, base: str) -> bytes:
    """The folder twin `path/index.html` of the page `path.html` (see the rules
    above). `path` comes from this module's functions: no character in it needs
    escaping in HTML, which the assertion keeps true."""
    assert _SAFE_PAGE_PATH.fullmatch(path) and "&" not in base and '"' not in base, path
    return _FOLDER_REDIRECT.format(path=path, file=f"{base}{path}.html", url=f"{base}{path}").encode("utf-8")


_SAFE_PAGE_PATH = re.compile(r"[A-Za-z0-9._~/-]+")


def record_page(body: str) -> str:
    return f"pith/{check_body(body)}"


def record_json(body: str) -> str:
    return f"pith/{check_body(body)}.json"


def bundle_json(body: str) -> str:
    return f"pith/{check_body(body)}/bundle.json"


def state_json(body: str) -> str:
    return f"pith/{check_body(body)}/state.json"


def well_known_bundle(body: str) -> str:
    return f".well-known/pith/{check_body(body)}/bundle.json"


def graph_json(body: str) -> str:
    return f"api/pith-number/{check_body(body)}/graph.json"


def events_json(body: str) -> str:
    return f"api/pith-number/{check_body(body)}/events.json"


def paper_page(body: str) -> str:
    return f"paper/{check_body(body)[:8]}"


def short_pages(body: str) -> tuple[str, ...]:
    check_body(body)
    return tuple(f"pith/{body[:n]}" for n in (8, 12, 16))


def safe_relative(path: str) -> bool:
    """True for a relative path made only of safe segments."""
    segments = path.split("/")
    return all(_SAFE_SEGMENT.fullmatch(s) and s not in (".", "..") for s in segments)


def integrity_path(endpoint: object, source: object) -> str | None:
    """`pith/<arXiv id>/integrity.json`, only for the record's own arXiv id.

    The endpoint may come from an unsigned part of a record document, so it is
    used only when it names exactly the record's own (signed) source id, and
    that id has the shape of an arXiv id: it can then never name another
    number's folder (Pith bodies have no "." or "/") nor another paper's.
    """
    if not isinstance(endpoint, str) or not isinstance(source, dict) or source.get("kind") != "arxiv":
        return None
    arxiv_id = source.get("id")
    if not isinstance(arxiv_id, str) or not _ARXIV_ID.fullmatch(arxiv_id):
        return None
    expected = f"/pith/{arxiv_id}/integrity.json"
    return expected.lstrip("/") if endpoint == expected else None


def encode_alias_value(value: str) -> str | None:
    """The documented alias encoding; None for values that cannot be a path."""
    segments = value.split("/")
    if not value or any(s == "" for s in segments):
        return None
    encoded = []
    for segment in segments:
        if segment in (".", ".."):
            encoded.append(segment.replace(".", "~2E"))
        elif _SAFE_SEGMENT.fullmatch(segment):  # (most are: arXiv ids, DOIs, Pith prefixes)
            encoded.append(segment)
        else:
            spelled = (chr(b) if b in _SAFE_BYTES else f"~{b:02X}" for b in segment.encode("utf-8"))
            encoded.append("".join(spelled))
    for index in range(len(encoded) - 1):
        if encoded[index].endswith(".json"):
            encoded[index] = encoded[index][:-5] + "~2Ejson"
    joined = "/".join(encoded)
    if len(joined) > MAX_ALIAS_PATH or any(len(segment) > MAX_SEGMENT for segment in encoded):
        return None  # (too long to name a file: the value gets no look-up file)
    return joined


def resolve_json(kind: str, value: str) -> str | None:
    """`api/pith-number/resolve/<kind>/<encoded value>.json`, or None if unusable."""
    if kind not in RESOLVE_KINDS:
        return None
    encoded = encode_alias_value(value.lower() if kind == "doi" else value)
    return None if encoded is None else lookup_file(kind, encoded)


RESOLVE = "api/pith-number/resolve"


def lookup_file(kind: str, encoded: str) -> str:
    """The look-up file for an alias value already encoded for paths."""
    return f"{RESOLVE}/{kind}/{encoded}.json"


def lookup_parts(path: str) -> tuple[str, str] | None:
    """(kind, encoded value) of a `lookup_file` path; None for any other path."""
    kind, _, rest = path.removeprefix(f"{RESOLVE}/").partition("/")
    if not path.startswith(f"{RESOLVE}/") or not rest.endswith(".json"):
        return None
    return kind, rest[: -len(".json")]


def category_slug(category: str) -> str | None:
    """arXiv categories (cs.DC, hep-th, math-ph) as a single path segment."""
    usable = (
        _SAFE_SEGMENT.fullmatch(category) and category not in (".", "..") and len(category) <= MAX_SEGMENT
    )
    return category if usable else None


def number_paths(body: str, has_bundle: bool) -> tuple[str, ...]:
    """Every file one Pith number owns; render writes exactly these.

    Called for every published number on every build, so it builds the
    strings directly (the same paths as the functions above, checked by tests).
    """
    check_body(body)
    paths = [
        f"api/pith-number/{body}/events.json",
        f"api/pith-number/{body}/graph.json",
        f"paper/{body[:8]}.html",
        f"paper/{body[:8]}/index.html",
        f"pith/{body}.html",
        f"pith/{body}.json",
        f"pith/{body}/index.html",
        f"pith/{body}/state.json",
    ]
    if has_bundle:
        paths += [f".well-known/pith/{body}/bundle.json", f"pith/{body}/bundle.json"]
    return tuple(sorted(paths))
