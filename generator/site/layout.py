"""Where every published file goes: the resolver's URL layout, made safe.

Rules:
- Every path is built here from validated parts only: a 26-character base32
  body, a safe arXiv id, an encoded alias value. Nothing else becomes a path.
- A page is the file `x.html`, which answers `/x` on hosts that serve
  `x.html` for `/x` (GitHub Pages, Cloudflare Pages, Netlify, `serve`). Its
  folder twin `x/index.html` is a small page that sends the reader on to
  `x.html` by its file name (`templating.folder_redirect`): `/x/` answers everywhere, and
  a host that turns `/x` into `/x/` (a bucket's website, a plain folder
  server) lands on the page too, without a loop. A copy of the page there
  doubled the bytes of every page a host uploads as a tar.
- Links are absolute paths under the configured base path.
- Alias values never become paths: each kind's look-ups are index files,
  sharded by a hash of the value (`lookup_key`, `shard_hex`, `shard_width`,
  `shard_file`; the rule is in lookups.py and docs/published-files.md).
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import quote

from ..trust.model import BODY_CHARACTERS, BODY_RE

_SAFE_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")
MAX_SEGMENT = 200
"""The longest path segment a document's value may become, in bytes: file systems
name at most 255, and a file is written through a temporary name a few bytes
longer. A longer one failed the build, and every build after it."""
_ARXIV_ID = re.compile(r"[0-9]{4}\.[0-9]{4,5}|[a-z][a-z-]*(\.[A-Z]{2})?/[0-9]{7}")

MANIFEST_PATH = ".well-known/pith/mirror.json"
MANIFEST_TYPE = "pith_mirror_record_manifest"
"""The mirror manifest: every number the site publishes, with its hashes (from
version 2.0, an index of shards, each listing the numbers of one body prefix)."""
MANIFEST_SHARDS = ".well-known/pith/mirror"
SHARD_TYPE = "pith_mirror_record_manifest_shard"
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


def vouched_files(body: str) -> tuple[str, str, str, str]:
    """The files a number's manifest entry vouches for by hash: its record JSON, its
    bundle at both paths, its state (what `compare.check_files` checks)."""
    return record_json(body), bundle_json(body), well_known_bundle(body), state_json(body)


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


def source_integrity_path(endpoint: object, kind: str, source_id: str) -> str | None:
    """`pith/<arXiv id>/integrity.json`, only for the record's own arXiv id.

    The endpoint may come from an unsigned part of a record document, so it is
    used only when it names exactly the record's own (signed) source id, and
    that id has the shape of an arXiv id: it can then never name another
    number's folder (Pith bodies have no "." or "/") nor another paper's.
    """
    if not isinstance(endpoint, str) or kind != "arxiv" or not _ARXIV_ID.fullmatch(source_id):
        return None
    expected = f"/pith/{source_id}/integrity.json"
    return expected.lstrip("/") if endpoint == expected else None


RESOLVE = "api/pith-number/resolve"
RESOLVE_INDEX = f"{RESOLVE}/index.json"
"""States the width of the look-up shards (`shard_width`): what a script reads first."""


SITE_CUTS = tuple(
    sorted(
        [
            *(
                folder + first
                for folder in ("pith/", "paper/", "api/pith-number/", ".well-known/pith/")
                for first in BODY_CHARACTERS
            ),
            *(f"{RESOLVE}/{kind}/{digit}" for kind in RESOLVE_KINDS for digit in "0123456789abcdef"),
        ]
    )
)
"""Where a listing of a site in a store is cut into ranges listed at once (see
`Storage.list_cut`): the folders whose files are named by a number's body, by the
body's first character (base32), and the look-up shards, by their first hex digit (at
3,000,000 records some 390,000 of them)."""
SHARD_ENTRIES = 512
"""The most records per shard, on average, before the shards' width grows by a hex digit."""
SHARD_DIGITS = 6
"""The widest shard name, in hex digits (16^6 shards a kind: 8.6 billion records at 512)."""


def lookup_key(kind: str, value: str) -> str | None:
    """An alias value as a look-up finds it (DOIs lower-cased, as DOIs compare), or
    None when it has no look-up: a kind the resolver does not look up, or no value."""
    if kind not in RESOLVE_KINDS or not value:
        return None
    return value.lower() if kind == "doi" else value


def shard_hex(key: str) -> str:
    """SHA-256 of a look-up key's UTF-8 bytes, in lower-case hex: its shard is the
    first `shard_width` digits."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def manifest_shard(prefix: str, sha256: str) -> str:
    """`.well-known/pith/mirror/<prefix>.<first 16 hex digits of its SHA-256>.json`: the
    manifest's entries of the numbers whose body starts with `prefix` (see
    manifest.py). Named by its bytes, so a reader of the index never finds a shard
    it names replaced by another's bytes (the old one goes after the new index)."""
    return f"{MANIFEST_SHARDS}/{prefix}.{sha256[:16]}.json"


def is_manifest_shard(path: str) -> bool:
    """Whether `path` is one of the manifest's shards (`manifest_shard`)."""
    return path.startswith(MANIFEST_SHARDS + "/")


def shard_width(records: int) -> int:
    """Hex digits in a shard's name, for a site of this many records: the fewest (at
    least 1) that keep shards at `SHARD_ENTRIES` records or fewer on average
    (1 up to 8,192 records, 2 up to 131,072, 3 up to 2,097,152)."""
    width = 1
    while records > SHARD_ENTRIES * 16**width and width < SHARD_DIGITS:
        width += 1
    return width


def shard_file(kind: str, shard: str) -> str:
    """`api/pith-number/resolve/<kind>/<shard>.json`: the look-ups of one kind whose
    keys' hashes start with `shard`."""
    return f"{RESOLVE}/{kind}/{shard}.json"


_SHARD = re.compile(f"[0-9a-f]{{1,{SHARD_DIGITS}}}")


def shard_parts(path: str) -> tuple[str, str] | None:
    """(kind, shard) of a `shard_file` path; None for any other path."""
    kind, _, name = path.removeprefix(f"{RESOLVE}/").partition("/")
    shard = name.removesuffix(".json")
    if not path.startswith(f"{RESOLVE}/") or kind not in RESOLVE_KINDS or not name.endswith(".json"):
        return None
    return (kind, shard) if _SHARD.fullmatch(shard) else None


def resolve_query(kind: str, value: str) -> str:
    """The resolver's own look-up address for an alias, with `json=true`: on a mirror
    the resolve page answers it (it reads the shard) with the record's JSON."""
    # (what `urlencode({kind: value, "json": "true"}, safe="/:", quote_via=quote)` gives, a
    # record page holding six of these: urlencode's own checks were 2 % of a page's render)
    return f"{RESOLVE}?{quote(kind, safe='/:')}={quote(value, safe='/:')}&json=true"


def category_slug(category: str) -> str | None:
    """arXiv categories (cs.DC, hep-th, math-ph) as a single path segment; None (no
    listing page) for one that is no such segment, or that ends in ".html": its page's
    folder twin `<slug>/index.html` would be the file of the category without it (a
    signed "cs.DC.html" beside "cs.DC"), and no build could write both."""
    usable = (
        _SAFE_SEGMENT.fullmatch(category)
        and category not in (".", "..")
        and len(category) <= MAX_SEGMENT
        and not category.lower().endswith(".html")
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
