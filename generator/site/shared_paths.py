"""Stage 5 (render, site-wide): the files a record may share with others.

A record's paper's integrity report (named by arXiv id) and its short forms
(`pith/<8, 12 or 16 characters>`) are paths that another record may claim
too: the versions of one paper share a report, and numbers may share a short
prefix. (Its alias look-ups are entries of site-wide shards: lookups.py.)

Rules:
- In a full build each worker writes its record's shareable files as if no other
  record claimed it; the site-wide stage then makes, once and right, every
  path that more than one record claims (`claimed_by_several`).
- Where records share a path, the choice is deterministic: the newest
  version of a paper wins its report, and a shared short prefix becomes a
  list of the records that have it.
"""

from __future__ import annotations

import operator
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from functools import partial
from itertools import compress, pairwise
from typing import TypeVar

from jinja2 import Environment

from ..site import layout
from ..trust.model import number_body
from .page_model import NumberRow, Summary
from .render import OutputFile
from .sitewide import (
    Lazy,
    ListingPage,
    PageRender,
    browse_side,
    eager,
    fingerprint,
    lazy_page,
    twin_pages,
)
from .templating import attribute, redirect_page, xml_escape

_Claimant = TypeVar("_Claimant", Summary, NumberRow)
_NUMBER = operator.attrgetter("pith_number")
_HEAD = operator.itemgetter(slice(10, 18))
"""A number's first 8 characters of its body ("pith:YYYY:" is 10)."""
_INTEGRITY = operator.attrgetter("integrity_path")


def shareable_paths(summary: Summary) -> list[str]:
    """Every site-wide path one record can claim, alone or shared with others:
    its integrity report, its short forms, and its paper page (replaced by a
    list when another record shares its 8-character prefix)."""
    body = summary.body
    paths = []
    if summary.integrity_path:
        paths.append(summary.integrity_path)
    for n in (8, 12, 16):
        paths += [f"pith/{body[:n]}.html", f"pith/{body[:n]}/index.html"]
    paths += [f"paper/{body[:8]}.html", f"paper/{body[:8]}/index.html"]
    return paths


_SEEN_BITS = 1 << 25


def claimed_by_several(summaries: Sequence[Summary]) -> set[str]:
    """The shareable paths (see `shareable_paths`) that more than one record claims.

    Found without listing every record's paths (1.5 million strings at 100,000
    records): neighbours in sorted order share short forms, and integrity
    paths are compared by hash first, then by value for the few hashes seen
    twice."""
    shared: set[str] = set()
    for a, b in pairwise(sorted(s.body for s in summaries)):
        for n in (8, 12, 16):
            if a[:n] != b[:n]:
                break
            shared.update(layout.page_paths(f"pith/{a[:n]}"))
            if n == 8:
                shared.update(layout.page_paths(layout.paper_page(a)))

    def named(summary: Summary) -> Iterator[str]:
        if summary.integrity_path:
            yield summary.integrity_path

    # A path seen twice has its hash's bit already set the second time; so do a
    # few others (about n²/2^26 at n paths), which the exact count below drops.
    # (A sorted list of every path's hash cost 40 bytes a path: 28 MB at 100,000 records.)
    seen = bytearray(_SEEN_BITS // 8)
    twice: set[int] = set()
    for summary in summaries:
        for path in set(named(summary)):
            h = hash(path)
            at, bit = (h & (_SEEN_BITS - 1)) >> 3, 1 << (h & 7)
            if seen[at] & bit:
                twice.add(h)
            else:
                seen[at] |= bit
    if twice:
        counts = Counter(path for s in summaries for path in set(named(s)) if hash(path) in twice)
        shared.update(path for path, count in counts.items() if count > 1)
    return shared


def shareable_files(
    ordered: Sequence[Summary], env: Environment, base: str, only: set[str] | None
) -> list[Lazy]:
    """Integrity reports and short forms: files that belong to records but that
    several records may claim. With `only`, just those paths (an incremental
    build passes the paths its changed records claim)."""
    if only is not None:
        ordered = claimants(ordered, only)
    files = integrity_files(ordered, only)
    extra, replacing = short_pages(ordered, env, base, only)
    return files + extra + replacing


def claimants(ordered: Sequence[_Claimant], only: set[str]) -> list[_Claimant]:
    """The records that may claim a path of `only`: one pass over every record."""
    # (a number is "pith:YYYY:" and its body: any prefix asked for starts
    # with one of these 8 characters; the functions below check exactly)
    heads = {prefix[:8] for prefix in asked_prefixes(only)}
    # (each test a `map` of C functions over every record, OR-ed: a watching
    # process does this after every change, and a Python step per record cost more)
    claims = map(heads.__contains__, map(_HEAD, map(_NUMBER, ordered)))
    claims = map(operator.or_, claims, map(only.__contains__, map(_INTEGRITY, ordered)))
    return list(compress(ordered, claims))


def asked_prefixes(only: set[str]) -> set[str]:
    """The number prefixes whose short-form or paper pages are among `only`."""
    prefixes = {p[5:-5] for p in only if p.startswith("pith/") and p.endswith(".html")}
    return prefixes | {p[6:-5] for p in only if p.startswith("paper/") and p.endswith(".html")}


def short_pages(
    ordered: Sequence[Summary], env: Environment, base: str, only: set[str] | None = None
) -> tuple[list[Lazy], list[Lazy]]:
    """Short-form redirects, and pages for prefixes that several numbers share.

    Returns (new files, files that replace a per-record page): a shared
    8-character prefix also makes `paper/<prefix>` ambiguous, so that page
    becomes a list of the candidates.
    """
    by_prefix: dict[str, list[Summary]] = defaultdict(list)
    for summary in ordered:
        body = summary.body
        for n in (8, 12, 16):
            path = f"pith/{body[:n]}"
            if only is None or f"{path}.html" in only or f"paper/{body[:8]}.html" in only:
                by_prefix[path].append(summary)
    files: list[Lazy] = []
    replacing: list[Lazy] = []
    for path, records in sorted(by_prefix.items()):
        if len(records) == 1:
            number = records[0].pith_number
            files += twin_pages(path, fingerprint(path, number), partial(redirect_html, number, base))
            continue
        heading = f"{len(records)} records share the short form {path.rsplit('/', 1)[1]}"
        listing = ListingPage(
            heading=heading,
            records=records,
            page_number=1,
            page_count=1,
            total=len(records),
            prev=None,
            next=None,
            page_links=[],
            browse_side=browse_side(env, [], []),
            home=False,
        )
        key = fingerprint(path, *(s.digest for s in records))
        make = partial(PageRender("index.html", listing).html, env)
        files += lazy_page(env, path, key, make)
        if len(path) == len("pith/") + 8:
            replacing += lazy_page(env, layout.paper_page(records[0].body), key, make)
    return files, replacing


def redirect_html(pith_number: str, base: str) -> str:
    """A short form's page when one record alone has it: a redirect to its record page.

    Kept under 512 bytes (467 at the domain root, so with a base path of up to 15
    characters): a tar, as a GitHub Pages deployment uploads the site, stores a file
    in 512-byte blocks after its header, and a record's short forms are six files."""
    url = base + layout.record_page(number_body(pith_number))
    title, href = xml_escape(pith_number), attribute(url)
    body = f'<main>\n<h1>{title}</h1>\n<p>Moved to <a href="{href}">its record page</a>.</p>\n</main>\n'
    return redirect_page(pith_number, url, url, body)


def own_shareable_files(summary: Summary, base: str) -> list[OutputFile]:
    """The files of `shareable_files([summary], ...)`, made at once (in
    another order): what a full build's worker writes for its record, as if no
    other record claimed them (the site-wide stage remakes those that others do).

    The three short forms redirect alike, so their six paths share one bytes
    object and the writer makes one file and links the other five to it. That
    file is the 16-character form's, written first: another record may share
    the 8- or 12-character form, and its worker replace that path at any
    moment (it unlinks, then creates; it never writes through a link), which
    leaves the file linked to here as it was. Only a record that shares the
    16-character form could replace that file, and it then shares the shorter
    forms too: the site-wide stage remakes all six paths."""
    files = []
    if summary.integrity_path and summary.integrity_data is not None:
        files.append(OutputFile(summary.integrity_path, zlib.decompress(summary.integrity_data)))
    redirect = redirect_html(summary.pith_number, base).encode("utf-8")
    body = summary.body
    for n in (16, 12, 8):
        files += [OutputFile(page, redirect) for page in layout.page_paths(f"pith/{body[:n]}")]
    return files


def integrity_files(ordered: Sequence[Summary], only: set[str] | None = None) -> list[Lazy]:
    """Integrity reports are named by arXiv id: the newest version of a paper wins."""
    chosen: dict[str, tuple[tuple[int, str], bytes]] = {}
    for s in ordered:
        if s.integrity_path and s.integrity_data is not None and (only is None or s.integrity_path in only):
            rank = (s.source_version, s.pith_number)
            if s.integrity_path not in chosen or rank > chosen[s.integrity_path][0]:
                chosen[s.integrity_path] = (rank, s.integrity_data)
    return [eager(path, zlib.decompress(compressed)) for path, (_, compressed) in chosen.items()]
