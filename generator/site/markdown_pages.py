"""content/pages/*.md: which files become pages, their titles and their HTML.

Apart from the site-wide stage because the titles are wanted early: they are in
every page's navigation, so they are part of the build's cache key, which is
computed before the build's own code is even imported (see `change_check.py`).
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator
from html import escape as html_escape
from pathlib import Path
from typing import NamedTuple

from ..trust.files import read_regular
from ..trust.load import is_ignored_name, is_utf8, shown_name

RESERVED_SLUGS = frozenset(
    {
        "pith",
        "paper",
        "api",
        "browse",
        "search",
        "assets",
        "page",
        "report",
        "404",
        "index",
        "sitemap",
        "guide",
    }
)
"""Names the site's own pages use (`guide` is templating.GUIDE, not imported: this
module is read before the build's own code, see above)."""
_SLUG = re.compile(r"[a-z0-9][a-z0-9-]*")

PAGE_LIMIT = 1024 * 1024
"""The most bytes a Markdown page may hold. content/ is nobody's word: an
unbounded file would be read whole and rendered."""

TITLE_LIMIT = 200
"""The most characters a page's title (its first "# " line) may have: every
page of the site shows it in its navigation, record pages too, so a long one
would be copied into every file of a large site."""


class PageFile(NamedTuple):
    """One content/pages/*.md entry, as every reader of the folder sees it."""

    path: Path
    slug: str
    why: str
    """Why it is not a page ("" when it is one)."""
    text: str
    """Its text, read once ("" when it is not a page)."""


def page_files(pages_dir: Path) -> Iterator[PageFile]:
    """Every content/pages/*.md entry but editor files (as content/ skips them), each
    page read: the navigation, the pages, the notes and the build's check for a change
    all see one folder the same way."""
    if not pages_dir.is_dir() or pages_dir.is_symlink():
        return
    seen: set[str] = set()
    for path in sorted(pages_dir.glob("*.md")):
        if is_ignored_name(path.name):
            continue
        slug, text = path.stem.lower(), ""
        if not is_utf8(path.name):
            why = "the file name is not valid UTF-8"
        elif path.is_symlink():
            why = "it is a symbolic link, and links are not followed"
        elif not path.is_file():  # (a folder or a named pipe: never opened)
            why = "it is not a regular file"
        elif not _SLUG.fullmatch(slug):
            why = "a page name holds only letters, digits and hyphens, and starts with a letter or digit"
        elif slug in RESERVED_SLUGS:
            why = f"{slug!r} is a name the site's own pages use"
        elif slug in seen:
            why = f"another file in the folder already makes the page {slug!r}"
        else:
            text, why = _read_page(path)
            if not why:
                seen.add(slug)
        yield PageFile(path, slug, why, text)


def _read_page(path: Path) -> tuple[str, str]:
    """A page's text, or "" and why it is not a page."""
    try:
        # (a regular file, read without blocking: one swapped for a named pipe since is refused)
        text = read_regular(path, PAGE_LIMIT).decode("utf-8", errors="replace")
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            return "", f"it is larger than {PAGE_LIMIT:,} bytes, the most a page may hold"
        return "", f"it cannot be read ({exc.strerror or exc})"
    heading = _heading(text)
    if heading is not None and len(heading) > TITLE_LIMIT:
        return "", (
            f"its title (its first '# ' line) is longer than {TITLE_LIMIT} characters,"
            " and every page of the site shows it"
        )
    return text, ""


def _heading(text: str) -> str | None:
    """The page's first "# " heading, or None."""
    return next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), None)


def _page_sources(pages_dir: Path) -> Iterator[tuple[str, str, str | None]]:
    """content/pages/*.md that become pages, as (slug, text, its "# " heading or None)."""
    for page in page_files(pages_dir):
        if not page.why:
            yield page.slug, page.text, _heading(page.text)


def skipped_pages(pages_dir: Path) -> list[str]:
    """A note for each content/pages/*.md that does not become a page, and why:
    dropping one without a word leaves its author looking for it."""
    return [
        f"{shown_name(str(p.path))}: not published as a page: {p.why}" for p in page_files(pages_dir) if p.why
    ]


def _title(slug: str, heading: str | None) -> str:
    return heading if heading is not None else slug.replace("-", " ").capitalize()


def page_titles(pages_dir: Path) -> list[tuple[str, str]]:
    """(slug, title) of every Markdown page: the navigation every page shows."""
    return [(slug, _title(slug, heading)) for slug, _, heading in _page_sources(pages_dir)]


def markdown_pages(pages_dir: Path) -> list[tuple[str, str, str]]:
    """content/pages/*.md as (slug, title, html); raw HTML in Markdown is shown as text."""
    sources = list(_page_sources(pages_dir))
    if not sources:
        return []
    # (imported here, where it is needed: at the top it cost every command about 50 ms)
    from markdown_it import MarkdownIt

    md = MarkdownIt("js-default")
    result = []
    for slug, text, heading in sources:
        body = md.render(text)
        title = _title(slug, heading)
        if heading is None:  # every page has one h1: the file name stands in for a title
            body = f"<h1>{html_escape(title)}</h1>\n{body}"
        result.append((slug, title, body))
    return result
