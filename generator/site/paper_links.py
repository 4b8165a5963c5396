"""Links from a record to its paper: the arXiv abstract and PDF, doi.org, the license.

Rules:
- Every link is made from the signed canonical record only (its source and
  license, as `CanonicalFacts`): nothing unsigned becomes an address a reader
  follows.
- A value becomes a link only when it has the one safe shape expected of it
  (an arXiv id, a whole version number, an http(s) address without spaces,
  quotes or control characters); otherwise the page shows it as text and
  makes no link, so no signed value can smuggle a `javascript:` address or
  break out of an attribute.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple
from urllib.parse import quote, urlsplit

from ..trust.model import CanonicalFacts

_NEW_ARXIV_ID = re.compile(r"[0-9]{4}\.[0-9]{4,5}")
_OLD_ARXIV_ID = re.compile(r"[a-z]+(?:-[a-z]+)*(?:\.[A-Z]{2})?/[0-9]{7}")
_URL_TEXT = re.compile(r"[!#-;=?-\[\]_a-z~]+", re.ASCII)
"""The printable ASCII a URL holds, without space, '"', '<', '>', '\\', '^', '`', '{', '|', '}'."""


class PaperLinks(NamedTuple):
    """Where a reader finds the paper itself; None where no safe link can be made."""

    abstract: str | None
    pdf: str | None
    doi: str | None
    """The DOI arXiv registers for the paper (10.48550/arXiv.<id>), as text."""
    doi_url: str | None
    license_url: str | None


def arxiv_id(facts: CanonicalFacts) -> tuple[str, int] | None:
    """The signed source's arXiv id and version, when it is an arXiv paper whose id has
    one of arXiv's two shapes (2111.04007, hep-th/9901001) and a version in range."""
    value, version = facts.source_id, facts.source_version
    if facts.source_kind != "arxiv" or not 0 < version < 10_000:
        return None
    if not (_NEW_ARXIV_ID.fullmatch(value) or _OLD_ARXIV_ID.fullmatch(value)):
        return None
    return value, version


def safe_url(value: Any) -> str | None:
    """`value` when it is an absolute http(s) address a page may link to, else None."""
    if not isinstance(value, str) or len(value) > 2000 or not _URL_TEXT.fullmatch(value):
        return None
    try:
        parts = urlsplit(value)
    except ValueError:
        return None
    return value if parts.scheme in ("http", "https") and parts.netloc else None


def paper_links(facts: CanonicalFacts) -> PaperLinks:
    """The links of a signed canonical record (see the module's rules)."""
    license_url = safe_url(facts.license)
    found = arxiv_id(facts)
    if found is None:
        return PaperLinks(None, None, None, None, license_url)
    value, version = found
    path = quote(f"{value}v{version}", safe="/.")
    doi = f"10.48550/arXiv.{value}"
    return PaperLinks(
        abstract=f"https://arxiv.org/abs/{path}",
        pdf=f"https://arxiv.org/pdf/{path}",
        doi=doi,
        doi_url="https://doi.org/" + quote(doi, safe="/."),
        license_url=license_url,
    )
