"""What a record's two pages (record.html, paper.html) show, as typed values.

Rules:
- `render.record_context` makes one `RecordPage` a record; both pages render
  from it, and it becomes a template's context only where they render
  (`templating.page_context`, one level deep).
- Nothing here reads a document: these are the shapes, not the choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from markupsafe import Markup

from . import claims_and_citations as ledger
from . import layout
from .page_model import ChecklistRow, EventRow, Fork, SnapshotView
from .paper_links import PaperLinks


class RecordPaths(NamedTuple):
    """The files of one Pith number, relative to the site (or, from `under`, as links)."""

    record_page: str
    record_json: str
    bundle_json: str | None
    well_known: str | None
    state_json: str
    graph_json: str
    events_json: str
    paper_page: str

    @classmethod
    def of(cls, body: str, has_bundle: bool) -> RecordPaths:
        return cls(
            record_page=layout.record_page(body),
            record_json=layout.record_json(body),
            bundle_json=layout.bundle_json(body) if has_bundle else None,
            well_known=layout.well_known_bundle(body) if has_bundle else None,
            state_json=layout.state_json(body),
            graph_json=layout.graph_json(body),
            events_json=layout.events_json(body),
            paper_page=layout.paper_page(body),
        )

    def under(self, base: str) -> RecordPaths:
        """The same paths as links under the site's base path (what `url()` gives)."""
        return RecordPaths(
            record_page=href(base, self.record_page),
            record_json=href(base, self.record_json),
            bundle_json=None if self.bundle_json is None else href(base, self.bundle_json),
            well_known=None if self.well_known is None else href(base, self.well_known),
            state_json=href(base, self.state_json),
            graph_json=href(base, self.graph_json),
            events_json=href(base, self.events_json),
            paper_page=href(base, self.paper_page),
        )


def href(base: str, path: str) -> str:
    """The link to a site path: what the templates' `url(path)` gives."""
    return base + path.lstrip("/")


class PaperText(NamedTuple):
    """The paper's title, authors and abstract as pages show them (see `paper_block`)."""

    title: str
    authors_text: str
    abstract_excerpt: str
    headline: str


class ReceiptView(NamedTuple):
    """The receipt's fields a record page shows; "—" for an optional one that is missing."""

    key_id: str
    signature_b64: str
    fingerprint: str
    first_computed_at: str
    signed_at: str
    builder_version: str


class RecordProvenance(NamedTuple):
    """Where each part of a record page comes from, as ready `<p class="prov">` lines:
    one a section, in plain words, each part linked to its reason on the guide page
    (`provenance_line`)."""

    header: Markup
    """The record page's head: title, authors, source line and status badges."""
    paper_header: Markup
    """The paper page's head: title, authors and source line."""
    record: Markup
    paper: Markup
    review: Markup
    """The paper page's abstract and machine review."""
    aliases: Markup
    snapshot: Markup
    receipt: Markup
    events: Markup


class LedgerSection(NamedTuple):
    """A ledger (claims, inbound citations) and its provenance line."""

    ledger: ledger.Ledger
    prov: Markup


@dataclass(frozen=True, slots=True)
class RecordPage:
    """Everything record.html and paper.html show of one record, computed in Python
    rather than in the templates: they render once a record, and Jinja's look-ups
    and calls cost more than Python's."""

    body: str
    number: str
    short_number: str
    """`pith:` and the body's first 8 characters."""
    paper: PaperText
    prov: RecordProvenance
    source_label: str
    """"kind:id vN", from the summary."""
    submitted_at: str
    categories: str
    """The primary category, then the cross-lists, joined by " · "."""
    license: str
    """As signed; "" when the signed value is empty (the page then shows none)."""
    schema_version: str
    canonical_pretty: Markup
    """The signed canonical record, pretty-printed, as escaped text."""
    canonical_sha256: str
    receipt: ReceiptView
    aliases: list[tuple[str, str, str | None]]
    """(kind, value, link to its look-up or None), in the record's order."""
    events: list[EventRow]
    forks: list[Fork]
    checklist: list[ChecklistRow]
    status: list[tuple[str, bool]]
    """The status badges: (label, whether it is done)."""
    snapshot: SnapshotView | None
    links: PaperLinks
    claims: LedgerSection | None
    citations: LedgerSection | None
    badge_html: Markup
    """The snippet an author pastes, shown as text to copy."""
    integrity_href: str | None
    record_signed: bool
    """Whether a record document is published (its receipt is then the record's own)."""
    has_bundle: bool
    paths: RecordPaths
    """The number's files, relative to the site."""
    page_url: str | None
    """The record page's absolute address, when the site has one."""
    hrefs: RecordPaths
    """The same files as links under the site's base path."""
    record_on_primary: str
    """The record's page on the primary resolver."""
    guide: str
    jsonld: dict[str, Any]
    """The page's schema.org ScholarlyArticle, written out as JSON."""
