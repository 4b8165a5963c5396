"""Stage 5 (render, site-wide): every page about the whole mirror, from summaries.

Rules:
- Built only from `Summary` values, never from documents, so memory grows with
  the number of records, not with their size.
- Lists that could grow without bound are split: listings into pages, the
  sitemap at 50,000 URLs, the search index into shards by term prefix and
  record chunks.
- Everything is sorted before it is written: the same records give the same
  bytes whatever order they arrived in.
"""

from __future__ import annotations

import hashlib
import operator
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, partial
from itertools import compress
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from jinja2 import Environment
from markupsafe import Markup

from ..site import layout
from ..trust.canonical import pretty_json
from ..trust.causes import by_cause, pinned_names
from ..trust.errors import Rejection
from ..trust.keys import Keyring
from ..trust.model import shown_timestamp
from .config import SiteConfig, build_time
from .favicon import favicon_ico
from .headers import headers_file
from .markdown_pages import markdown_pages
from .page_model import CHECKLIST, CHECKLIST_TEXT, NumberRow, Summary
from .render import DERIVED_BY, PROVENANCE_LABELS, REASONS, OutputFile, page
from .search_index import Pending, search_files, search_key, shown_authors
from .templating import GUIDE, SiteInfo, folder_redirect, page_context, render_template

_T = TypeVar("_T")
_Row = TypeVar("_Row", Summary, NumberRow, Summary | NumberRow)

SITEMAP_LIMIT = 50_000
FEED_ENTRIES = 50
_UPDATED = operator.attrgetter("updated_at")
_UPDATED_NUMBER = operator.attrgetter("updated_at", "pith_number")


@dataclass(frozen=True, slots=True)
class ListingPage:
    """What one page of a listing (index.html) shows: of the home page's records, a
    year's, a category's, or those that share a short form."""

    heading: str
    records: Sequence[Summary]
    """This page's records, not the whole listing's."""
    page_number: int
    page_count: int
    total: int
    """How many records the whole listing has."""
    prev: str | None
    next: str | None
    """The newer and older pages' paths; None at either end."""
    page_links: list[tuple[int | None, str | None]]
    browse_side: Markup
    """The links to every year and category: rendered once, the same on every page."""
    home: bool
    """Whether this is the home page's listing: its first page has the search box."""


@dataclass(frozen=True, slots=True)
class PageRender:
    """A page as a template and its context, which pickle: a worker process, with
    the same environment as the main process, can make it (see `Lazy.job`)."""

    template: str
    context: ListingPage

    def html(self, env: Environment) -> str:
        return render_template(env, self.template, page_context(self.context))


@dataclass(frozen=True, slots=True)
class Lazy:
    """A site-wide file not rendered yet: `key` fingerprints everything its bytes
    depend on, so an incremental build renders it only when the key changed."""

    path: str
    key: str
    make: Callable[[], bytes]
    job: PageRender | None = None
    """How a worker can make the same bytes as `make` (a listing page), or None."""


def eager(path: str, data: bytes) -> Lazy:
    return Lazy(path, bytes_key(hashlib.sha256(data).hexdigest()), lambda: data)


def bytes_key(sha256_hex: str) -> str:
    """The key of a file made ahead, whose bytes are all its inputs (see `eager`)."""
    return sha256_hex[:24]


def recorded_hash(sha256_hex: str) -> str:
    """What `Previous` keeps of a file's bytes: 128 bits of their SHA-256."""
    return sha256_hex[:32]


class _Once:
    """Render a page's HTML at most once for its paths, and let it go once each
    has taken it: a full build makes thousands of listing pages."""

    __slots__ = ("data", "make_html", "takers")

    def __init__(self, make_html: Callable[[], str], takers: int = 2) -> None:
        self.make_html = make_html
        self.data: bytes | None = None
        self.takers = takers

    def __call__(self) -> bytes:
        data = self.data if self.data is not None else self.make_html().encode("utf-8")
        self.takers -= 1
        self.data = data if self.takers > 0 else None
        return data


def lazy_page(
    env: Environment, path: str, key: str, make_html: Callable[[], str], job: PageRender | None = None
) -> list[Lazy]:
    """Like `render.page`: the page at `x.html`, and at `x/index.html` its folder
    twin that sends readers there (see layout)."""
    page_file, folder_file = layout.page_paths(path)
    return [
        Lazy(page_file, key, _Once(make_html, takers=1), job),
        eager(folder_file, folder_redirect(path, SiteInfo.of_environment(env).base)),
    ]


def twin_pages(path: str, key: str, make_html: Callable[[], str]) -> list[Lazy]:
    """The same small page at `x.html` and `x/index.html`, rendered once: a short
    form's redirect, which sends readers straight to its record from either."""
    make = _Once(make_html)
    return [Lazy(path, key, make) for path in layout.page_paths(path)]


def fingerprint(*parts: object) -> str:
    return hashlib.sha1("\x1f".join(map(str, parts)).encode("utf-8")).hexdigest()[:24]


Previous = Mapping[str, tuple[str, str]]
"""What the last build wrote: path -> (input fingerprint, hash of the bytes)."""

SearchMaker = Callable[[list[Summary], str], list[Lazy]]
"""Has the search index for these records (newest first) made elsewhere, with
this key, and returns what of it is left to make here."""


def group(key: str, make_all: Callable[[], Sequence[OutputFile | Pending]], previous: Previous) -> list[Lazy]:
    """Files that one pass over every record makes together (the search index,
    the sitemap, the report). Their paths are known only by making them, so
    when the last build recorded this very `key`, its paths are reused and
    nothing is made: one changed bundle must not cost a pass over 20,000 records."""
    known = sorted(path for path, (old, _) in previous.items() if old == key)
    if known:
        return [Lazy(path, key, partial(_never_made, path)) for path in known]
    return [Lazy(f.path, key, f.make if isinstance(f, Pending) else _Take(f.data)) for f in make_all()]


def _never_made(path: str) -> bytes:
    raise RuntimeError(f"{path}: its key is unchanged, so it must not be made again")


class _Take:
    """Bytes made ahead, handed over once and then let go."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data: bytes | None = data

    def __call__(self) -> bytes:
        data, self.data = self.data, None
        if data is None:
            raise RuntimeError("made bytes were taken twice")
        return data


def newest_first(summaries: Iterable[Summary]) -> list[Summary]:
    # (submitted_at is verified to end in "Z": without it, a time with no fraction
    # is a prefix of the same second with one, so it sorts first, as in time;
    # with it, "." sorts before "Z" and `05:00:00.5Z` came before `05:00:00Z`)
    return sorted(summaries, key=lambda s: (s.submitted_at[:-1], s.pith_number), reverse=True)


PAGE_WINDOW = 2
"""Pages named on either side of the current one in a listing's pager."""


def page_links(path: str, number: int, pages: int) -> list[tuple[int | None, str | None]]:
    """A listing's page numbers: (page, its path, None for the page itself), the first
    and last always, PAGE_WINDOW either side of `number`, and (None, None) for a gap.
    So a reader of 60 pages reaches any of them in a few clicks, not 59 "Older"."""
    if pages <= 1:
        return []
    shown = {1, pages, *range(max(1, number - PAGE_WINDOW), min(pages, number + PAGE_WINDOW) + 1)}
    shown |= {n + 1 for n in shown if n + 2 in shown}  # (a gap of one page: the page itself)
    links: list[tuple[int | None, str | None]] = []
    for n in sorted(shown):
        if links and links[-1][0] is not None and n - (links[-1][0] or 0) > 1:
            links.append((None, None))
        href = None if n == number else (path if n == 1 else f"{path}/page/{n}".lstrip("/"))
        links.append((n, href))
    return links


def listing_pages(
    env: Environment,
    path: str,
    heading: str,
    records: Sequence[Summary],
    per_page: int,
    side: Markup,
    home: bool,
) -> list[Lazy]:
    """A paged listing: `path/` then `path/page/2/` and so on; `side` is its `browse_side`."""
    pages = max(1, -(-len(records) // per_page))
    side_key = fingerprint(side)  # (a few kB, the same on every page: hashed once)
    files: list[Lazy] = []
    prefix = f"{path}/" if path else ""
    for number in range(1, pages + 1):
        chunk = records[(number - 1) * per_page : number * per_page]
        listing = ListingPage(
            heading=heading,
            records=chunk,
            page_number=number,
            page_count=pages,
            total=len(records),
            prev=None if number == 1 else (path if number == 2 else f"{prefix}page/{number - 1}"),
            next=None if number == pages else f"{prefix}page/{number + 1}",
            page_links=page_links(path, number, pages),
            browse_side=side,
            home=home,
        )
        key = fingerprint(heading, number, pages, len(records), home, side_key, *(s.digest for s in chunk))
        job = PageRender("index.html", listing)
        make = partial(job.html, env)
        if number == 1 and not path:
            files.append(Lazy("index.html", key, _Once(make, takers=1), job))
        else:
            files += lazy_page(env, path if number == 1 else f"{prefix}page/{number}", key, make, job)
    return files


LISTED_FIELDS = (
    "pith_number",
    "title",
    "authors",
    "submitted_at",
    "primary_cat",
    "cross_cats",
    "source_kind",
    "source_id",
    "source_version",
    "aliases",
    "paper_signed",
)
"""The summary fields that pages about the whole site show or order by (listings,
browse counts, search index, sitemap, report; the aliases because their arXiv and
DOI values are search terms; whether the authors shown are signed, which listings
and search results mark): the manifest and the feed aside, which are made again
every build, a change to any other field changes none of them."""


def same_listing(before: Summary, after: Summary) -> bool:
    """Whether every page listing records shows `after` exactly as it showed `before`."""
    return all(getattr(before, name) == getattr(after, name) for name in LISTED_FIELDS)


def render_site(
    summaries: Sequence[Summary],
    rejections: Sequence[Rejection],
    notes: Sequence[str],
    keyring: Keyring,
    env: Environment,
    config: SiteConfig,
    pages_dir: Path,
    previous: Previous | None = None,
    listings: bool = True,
    on_pages: Callable[[list[Lazy]], None] | None = None,
    on_search: SearchMaker | None = None,
    rows: Sequence[Summary | NumberRow] | None = None,
) -> list[Lazy]:
    """Every site-wide file, each with the fingerprint of what it depends on
    (`summaries` in Pith-number order, as the pipeline keeps them). `rows`, when
    given, stand for `summaries` in the files made every build (a build that keeps
    the listings need not read every record's summary: see NumberRow).

    With `listings` False, only the files made again every build: the caller
    knows the listings are what they were (see `same_listing`) and keeps them.
    `on_search`, when given, has the search index made elsewhere (see
    `SearchMaker`), as soon as the records are in order; `on_pages` is then
    given the listing pages (see `Lazy.job`), before the report is made."""
    md_pages = markdown_pages(pages_dir)
    env.globals["nav_pages"] = [(slug, title) for slug, title, _ in md_pages]
    files = []
    if listings:
        files = listing_files(
            summaries,
            rejections,
            notes,
            env,
            config,
            md_pages,
            previous or {},
            on_pages,
            on_search,
            pinned_names(keyring),
        )
    made = fixed_files(summaries if rows is None else rows, keyring, env, config)
    return files + [eager(f.path, f.data) for f in made]


def listing_files(
    summaries: Sequence[Summary],
    rejections: Sequence[Rejection],
    notes: Sequence[str],
    env: Environment,
    config: SiteConfig,
    md_pages: Sequence[tuple[str, str, str]],
    previous: Previous,
    on_pages: Callable[[list[Lazy]], None] | None = None,
    on_search: SearchMaker | None = None,
    pinned: str = "",
) -> list[Lazy]:
    """Home and browse listings, Markdown pages, the report, the search index and
    the sitemap: everything made from LISTED_FIELDS, rejections and notes (and, for
    the report's hint about a key, `pinned`: the pinned keys' names)."""
    ordered = newest_first(summaries)
    by_year: dict[str, list[Summary]] = defaultdict(list)
    by_cat: dict[str, list[Summary]] = defaultdict(list)
    cat_slugs: dict[str, str | None] = {}  # a few hundred categories among all records
    for summary in ordered:
        by_year[summary.year].append(summary)
        cat = summary.primary_cat
        slug = cat_slugs[cat] if cat in cat_slugs else cat_slugs.setdefault(cat, layout.category_slug(cat))
        if slug:
            by_cat[slug].append(summary)
    years = sorted(((y, len(r)) for y, r in by_year.items()), reverse=True)
    cats = sorted((c, len(r)) for c, r in by_cat.items())
    # (the same on every listing page: rendered once, not 1,200 times at 20,000 records)
    side = browse_side(env, years, cats)
    files = listing_pages(env, "", "Records", ordered, config.per_page, side, home=True)
    files += lazy_page(
        env,
        "browse",
        fingerprint(years, cats),
        lambda: render(env, "browse.html", years=years, categories=cats),
    )
    for year, records in by_year.items():
        files += listing_pages(
            env, f"browse/year/{year}", f"Submitted in {year}", records, config.per_page, side, home=False
        )
    for cat, records in by_cat.items():
        heading = f"Primary category {cat}"
        files += listing_pages(
            env, f"browse/category/{cat}", heading, records, config.per_page, side, home=False
        )
    # (the search index first: made elsewhere, it is the longest to make)
    search = search_key(ordered, config)
    if on_search is not None and not any(old == search for old, _ in previous.values()):
        files += on_search(ordered, search)
    else:
        files += group(search, partial(search_files, ordered, config), previous)
    if on_pages is not None:
        on_pages([lazy for lazy in files if lazy.job is not None])
    for slug, title, html in md_pages:
        files += lazy_page(
            env,
            slug,
            fingerprint(title, html),
            partial(render, env, "page.html", title=title, content=html),
        )
    slugs = [slug for slug, _, _ in md_pages]
    refused = sorted(rejections)
    files += group(
        fingerprint("report", build_time(), pinned, *(s.pith_number for s in summaries), *refused, *notes),
        partial(report_files, ordered, refused, notes, env, pinned),
        previous,
    )
    files += group(
        fingerprint("sitemap", config.base_url, *slugs, *(s.pith_number for s in ordered)),
        partial(sitemap_files, ordered, env, config, slugs),
        previous,
    )
    return files


Counts = Sequence[tuple[str, int]]
"""(year or category, how many records) in the order the listings show them."""


def browse_side(env: Environment, years: Counts, cats: Counts) -> Markup:
    """The listing pages' links to every year and category (`browse_side.html`)."""
    return Markup(render(env, "browse_side.html", years=years, categories=cats))


def fixed_files(
    summaries: Sequence[Summary | NumberRow], keyring: Keyring, env: Environment, config: SiteConfig
) -> list[OutputFile]:
    """Files made again every build: small, or (the feed) cheap to make from all records."""
    fixed = [
        OutputFile("404.html", render(env, "404.html").encode("utf-8")),
        *page(layout.RESOLVE, render(env, "resolve.html"), config.base_path),
        *page(GUIDE, guide_html(env), config.base_path),
        OutputFile("feed.xml", atom_feed(summaries, env, config)),
        *asset_files(config.templates / "static"),
    ]
    entries = [k.entry for k in keyring.keys]
    fixed.append(
        OutputFile("pith-signing-key.json", pretty_json(entries[0] if len(entries) == 1 else entries))
    )
    robots = "User-agent: *\nAllow: /\n"
    if config.absolute_base:  # a Sitemap line must be an absolute URL
        robots += f"Sitemap: {config.absolute_base}sitemap.xml\n"
    fixed.append(OutputFile("robots.txt", robots.encode()))
    fixed.append(OutputFile("favicon.ico", favicon_ico()))
    fixed.append(OutputFile(".nojekyll", b""))
    fixed.append(OutputFile("_headers", headers_file(config.base_path)))
    if config.cname:
        fixed.append(OutputFile("CNAME", f"{config.cname.strip()}\n".encode()))
    return fixed


def guide_html(env: Environment) -> str:
    """The guide page: what every record page links to instead of saying it again."""
    checklist = [(action, short, long, CHECKLIST_TEXT[name]) for name, short, long, action in CHECKLIST]
    order = list(PROVENANCE_LABELS)  # (the reasons under each label together, in the labels' order)
    reasons = sorted(REASONS, key=lambda r: order.index(r[1]))
    return render(env, "guide.html", reasons=reasons, labels=PROVENANCE_LABELS, checklist=checklist)


def same_value(value: _T) -> _T:
    return value


def render(env: Environment, name: str, **context: Any) -> str:
    return render_template(env, name, context)


REPORT_FILES_SHOWN = 200
"""Refused files report.html names for each cause (the heaviest part of the page: at
20,000 refusals the whole list would take seconds to open); report.json names all."""


def report_files(
    ordered: Sequence[Summary],
    refused: Sequence[Rejection],
    notes: Sequence[str],
    env: Environment,
    pinned: str = "",
) -> list[OutputFile | Pending]:
    """report.json (every problem, and since the causes, refusals grouped by cause) and
    report.html (the causes, each with its count, sentence, hint and first files).

    Each is made when it is written, not when the site-wide files are listed: at
    100,000 records the two are some 30 MB, which the site-wide stage would otherwise
    hold beside everything else it makes (its peak memory)."""

    @cache
    def contents() -> tuple[dict[str, Any], Any]:
        """The report and its causes, made once for both files (one `generated_at`)."""
        causes = by_cause(refused, pinned)
        report = {
            "derived_by": DERIVED_BY,
            "generated_at": build_time(),
            "summary": {
                "published": len(ordered),
                "refused_files": len({r.file for r in refused}),
                "problems": len(refused),
            },
            "published": sorted(s.pith_number for s in ordered),
            "rejections": [{"file": r.file, **r.as_json()} for r in refused],
            "causes": [c.as_json() for c in causes],
            "notes": list(notes),
        }
        return report, causes

    def report_json() -> bytes:
        return pretty_json(contents()[0])

    def report_html() -> bytes:
        report, causes = contents()
        html = render(
            env, "report.html", report=report, rejections=refused, causes=causes, shown=REPORT_FILES_SHOWN
        )
        return html.encode("utf-8")

    page_file, folder_file = layout.page_paths("report")
    return [
        Pending("report.json", report_json),
        Pending(page_file, report_html),
        OutputFile(folder_file, folder_redirect("report", SiteInfo.of_environment(env).base)),
    ]


def sitemap_files(
    ordered: Sequence[Summary], env: Environment, config: SiteConfig, slugs: Sequence[str]
) -> list[Pending]:
    """`sitemap.xml`, or an index of `sitemaps/sitemap-N.xml` past SITEMAP_LIMIT URLs;
    each file's URLs are made when it is written, not all at once."""
    base = config.absolute_base or config.base_path
    fixed = [base, base + "browse", base + "report", *(base + s for s in slugs)]
    total = len(fixed) + len(ordered)

    def urlset(start: int) -> bytes:
        stop = min(start + SITEMAP_LIMIT, total)
        urls = fixed[start:stop] + [
            base + layout.record_page(s.body)
            for s in ordered[max(0, start - len(fixed)) : max(0, stop - len(fixed))]
        ]
        return render(env, "sitemap.xml", urls=urls, sitemaps=[]).encode()

    starts = range(0, total, SITEMAP_LIMIT)
    if len(starts) == 1:
        return [Pending("sitemap.xml", partial(urlset, 0))]
    files = [Pending(f"sitemaps/sitemap-{i + 1}.xml", partial(urlset, at)) for i, at in enumerate(starts)]
    sitemaps = [f"{base}sitemaps/sitemap-{i + 1}.xml" for i in range(len(starts))]
    data = render(env, "sitemap.xml", urls=[], sitemaps=sitemaps).encode()
    files.append(Pending("sitemap.xml", partial(same_value, data)))
    return files


def newest(summaries: Sequence[_Row], count: int) -> list[_Row]:
    """The first `count` of `summaries` sorted by update time, then number, both
    descending; without a Python step per record, since every rebuild makes the
    feed: the newest distinct times first, then only the records at those times
    are sorted (often most of them: a batch of events shares a time)."""
    # (the count-th newest distinct time is at or before the count-th newest record's)
    times = sorted(set(map(_UPDATED, summaries)), reverse=True)[:count]
    if not times:
        return []
    recent = list(compress(summaries, map(times[-1].__le__, map(_UPDATED, summaries))))
    recent.sort(key=_UPDATED_NUMBER, reverse=True)
    return recent[:count]


def atom_feed(summaries: Sequence[Summary | NumberRow], env: Environment, config: SiteConfig) -> bytes:
    """The newest FEED_ENTRIES records by update time."""
    base = config.absolute_base or config.base_path
    latest = newest(summaries, FEED_ENTRIES)
    # (an Atom id is an absolute IRI: an entry's is its number, "pith:2026:BODY"; the
    # feed's is the site's address, else a URN with the title percent-encoded, since
    # an IRI holds no space)
    entries = [
        FeedEntry(
            id=s.pith_number,
            title=s.title or s.pith_number,
            link=base + layout.record_page(s.body),
            updated=_atom_time(s.updated_at),
            summary=shown_authors(s.authors, s.paper_signed),
        )
        for s in latest
    ]
    return render(
        env,
        "feed.xml",
        feed_id=config.absolute_base or "urn:pith-mirror:" + quote(config.site_title, safe=""),
        base=base,
        updated=_atom_time(latest[0].updated_at if latest else ""),
        entries=entries,
    ).encode()


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One record as `feed.xml` shows it."""

    id: str
    title: str
    link: str
    updated: str
    summary: str


def _atom_time(value: str) -> str:
    """A summary's `updated_at` (see `model.utc_timestamp`) as Atom's date, or the
    epoch for a record none of whose signed times is one."""
    return shown_timestamp(value) if value else "1970-01-01T00:00:00Z"


def asset_files(static: Path) -> list[OutputFile]:
    if not static.is_dir():
        return []
    return [
        OutputFile(f"assets/{p.relative_to(static).as_posix()}", p.read_bytes())
        for p in sorted(static.rglob("*"))
        if p.is_file()
        and not p.name.startswith(".")
        and layout.safe_relative(p.relative_to(static).as_posix())
    ]
