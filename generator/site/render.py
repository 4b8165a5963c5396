"""Stage 5 (render): one publication -> every file of its Pith number, in memory.

Rules:
- JSON the resolver signed (record documents, bundles) is copied byte for
  byte, never re-serialized, and marked immutable.
- JSON the mirror derives (state of a record-only number, events, graph, a
  record document for a bundle-only number, integrity) is deterministic and
  carries `derived_by` so nobody mistakes it for the resolver's.
- Templates are Jinja2 with autoescape on: every string from a document is
  text, never markup. No disk I/O here besides reading templates.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment
from markupsafe import Markup, escape

from .. import __version__
from ..site import claims_and_citations as ledger
from ..site import layout
from ..trust.canonical import canonical_json, pretty_json
from ..trust.merge import merge, state_sha256
from ..trust.model import CanonicalFacts, Provenance
from .config import SiteConfig
from .page_model import (
    Publication,
    Summary,
    aliases,
    checklist,
    event_counts,
    events,
    forks,
    graph_snapshot,
    paper_block,
    signed_paper_fields,
    snapshot_view,
    status_line,
    summarize,
)
from .paper_links import paper_links
from .record_page import (
    LedgerSection,
    PaperText,
    ReceiptView,
    RecordPage,
    RecordPaths,
    RecordProvenance,
    href,
)
from .templating import SiteInfo, folder_redirect, page_context, render_template, text_markup

DERIVED_BY = {"tool": "pith-mirror", "version": __version__}


@dataclass(frozen=True, slots=True)
class OutputFile:
    """One file of the site: where (relative to SITE), its bytes, and whether
    its bytes are the resolver's signed bytes (never to change)."""

    path: str
    data: bytes
    immutable: bool = False


def page(path: str, html: str, base: str) -> list[OutputFile]:
    """A page at `path.html`, and its folder twin `path/index.html` that sends
    readers there (see layout)."""
    page_file, folder_file = layout.page_paths(path)
    return [
        OutputFile(page_file, html.encode("utf-8")),
        OutputFile(folder_file, folder_redirect(path, base, path == layout.RESOLVE)),
    ]


def render_publication(
    pub: Publication,
    state: dict[str, Any],
    record_raw: bytes | None,
    bundle_raw: bytes | None,
    env: Environment,
    config: SiteConfig,
) -> tuple[list[OutputFile], Summary]:
    """Every file of one Pith number, and its summary for site-wide pages; `state`
    is its `merged_state`."""
    body = pub.body
    files: list[OutputFile] = []
    primary = pub.primary
    paper, paper_prov = paper_block(pub)
    paths = RecordPaths.of(body, pub.bundle is not None)
    state_bytes = canonical_json(state)

    if record_raw is not None:
        files.append(OutputFile(paths.record_json, record_raw, immutable=True))
        record_bytes = record_raw
    else:
        record_bytes = pretty_json(_derived_record(pub))
        files.append(OutputFile(paths.record_json, record_bytes))
    if bundle_raw is not None:
        files.append(OutputFile(layout.bundle_json(body), bundle_raw, immutable=True))
        files.append(OutputFile(layout.well_known_bundle(body), bundle_raw, immutable=True))
    files.append(OutputFile(paths.state_json, state_bytes, immutable=pub.bundle is not None))

    snapshot, snapshot_origin = graph_snapshot(pub)
    files.append(
        OutputFile(
            paths.graph_json,
            pretty_json(
                {
                    "derived_by": DERIVED_BY,
                    "pith_number": pub.pith_number,
                    "provenance": _provenance_sentence(snapshot_origin),
                    "graph_snapshot": snapshot,
                }
            ),
        )
    )
    files.append(
        OutputFile(
            paths.events_json,
            pretty_json(
                {
                    "derived_by": DERIVED_BY,
                    "pith_number": pub.pith_number,
                    "provenance": "copied from the signed bundle; each event carries its own signature"
                    if pub.bundle is not None
                    else "no bundle is published for this number, so it has no events",
                    "event_count": len(primary.doc.events),
                    "events": [e.data for e in primary.doc.events],
                }
            ),
        )
    )
    integrity = snapshot.get("integrity") if isinstance(snapshot, dict) else None
    integrity_path = (
        layout.source_integrity_path(
            integrity.get("endpoint"), primary.facts.source_kind, primary.facts.source_id
        )
        if isinstance(integrity, dict)
        else None
    )
    integrity_file = None
    if integrity_path is not None:
        report = {
            "derived_by": DERIVED_BY,
            "pith_number": pub.pith_number,
            "provenance": _provenance_sentence(snapshot_origin),
            "integrity": integrity,
        }
        integrity_file = (integrity_path, pretty_json(report))

    summary = summarize(pub, paper, record_bytes, bundle_raw, str(state["state_sha256"]), integrity_file)
    site = SiteInfo.of_environment(env)
    record_page = record_context(
        pub, summary, snapshot, snapshot_origin, integrity_path, config, site, paths, (paper, paper_prov)
    )
    context = page_context(record_page)
    files += page(paths.record_page, render_template(env, "record.html", context), config.base_path)
    files += page(paths.paper_page, render_template(env, "paper.html", context), config.base_path)
    return files, summary


def _provenance_sentence(origin: str) -> str:
    """For derived JSON: say outright when something is not signed."""
    if not origin:
        return "no graph snapshot"
    return origin if origin.startswith("signed") else f"not signed: {origin}"


def merged_state(pub: Publication) -> dict[str, Any]:
    """The number's merged state: the one verification recomputed from a bundle's
    signed events, or for a record document alone (it has no events) the empty
    merge, marked as derived."""
    if pub.bundle is not None and pub.bundle.state is not None:
        return pub.bundle.state
    assert pub.record is not None
    doc = pub.record.doc
    state = merge(doc.pith_number, doc.canonical_record, aliases(pub), [])
    state["derived_by"] = DERIVED_BY
    state["state_sha256"] = state_sha256(state)
    return state


def _derived_record(pub: Publication) -> dict[str, Any]:
    """A record document for a bundle-only number, from the bundle's signed parts
    only: without a signed snapshot it has no `paper`, and with one, just the
    fields the snapshot holds."""
    assert pub.bundle is not None
    doc = pub.bundle.doc
    derived = {
        "derived_by": {
            **DERIVED_BY,
            "from": layout.bundle_json(pub.body),
            "note": "derived by this mirror from the signed bundle; canonical_record and receipt "
            "are signed by the resolver, the rest is copied from signed events",
        },
        "record_type": "pith_number_record",
        "pith_number": doc.pith_number,
        "short_pith_number": doc.data.get("short_pith_number"),
        "schema_version": pub.bundle.facts.schema_version,
        "canonical_sha256": pub.bundle.canonical_sha256,
        "source": doc.canonical_record.get("source"),  # (JSON copied as signed, whatever it holds)
        "canonical_record": doc.canonical_record,
        "receipt": doc.receipt,
        "aliases": doc.data.get("source_aliases", []),
    }
    paper = signed_paper_fields(pub)
    if paper is not None:
        derived["paper"] = paper
    return derived


REASONS: tuple[tuple[str, str, str], ...] = (
    ("title", "verified", "matches title_canon_sha256 in the signed canonical record"),
    ("record", "verified", "in the canonical record, whose hash the receipt signs"),
    ("merged", "verified", "derived from the signed events by this mirror's merge"),
    ("events", "verified", "each event's hash and Ed25519 signature were checked by this mirror"),
    (
        "aliases",
        "verified",
        "each alias determined by the signed canonical record, and checked against it where listed",
    ),
    ("in-bundle", "signed", "signed in the bundle"),
    ("aliases-signed", "signed", "covered by the bundle signature and checked against the record"),
    (
        "receipt",
        "signed",
        "the whole receipt is in the record_created event's payload, which the event's signature covers",
    ),
    ("claims", "signed", "the claims of the signed graph snapshot"),
    ("citations", "signed", "citation_signature events, each with its own signature, merged into the state"),
    ("no-citations", "signed", "the merged state holds no citation_signature event"),
    ("unsigned", "unsigned", "from the record document's unsigned part; shown, not verified"),
    (
        "receipt-times",
        "unsigned",
        "first computed, signed at and builder: in the receipt, but outside what its signature covers "
        "(the canonical hash); shown, not verified",
    ),
    ("snapshot-unsigned", "unsigned", "from the record document's unsigned part"),
    ("claims-unsigned", "unsigned", "the record document's unsigned part"),
    ("paper-claims", "unsigned", "paper_claims, in the record document's unsigned part"),
    ("citations-unsigned", "unsigned", "inbound_citations, in the record document's unsigned part"),
    ("no-paper", "unsigned", "no paper details in the documents"),
    (
        "event",
        "signed",
        "signed in event N: the newest graph snapshot event of the record's bundle that holds it,"
        " whose hash and signature this mirror checked; N is its row in the record page's"
        " table of signed events, which gives its id",
    ),
)
"""(anchor on the guide page, status, reason) for every reason a page gives in the
same words on every record (a `Provenance.text`), as the guide page lists them; the
last stands for every "signed in event <id>", which a page words as "event N"."""

_EVENT_PREFIX = "signed in event "
_SIGNED_IN_EVENT = REASONS[-1][0]
_ANCHORS = {text: anchor for anchor, _, text in REASONS[:-1]}

Reason = tuple[str, str, str]
"""(status, anchor on the guide page or "", what only this record adds or "")."""


def reason(p: Provenance, events: Mapping[str, int] | None = None) -> Reason:
    """Where a provenance line sends a reader for `p`'s reason: the guide page's anchor
    for words every record shares, with what is this record's own ("event 2", the
    event's row in the events table); any other words are shown as they are."""
    text = p.text
    anchor = _ANCHORS.get(text)
    if anchor is not None:
        return (p.status, anchor, "")
    if text.startswith(_EVENT_PREFIX):
        event_id = text[len(_EVENT_PREFIX) :]
        number = (events or {}).get(event_id)
        return (p.status, _SIGNED_IN_EVENT, f"event {number if number is not None else event_id}")
    known, sep, rest = text.partition("; ")
    if sep and known in _ANCHORS:  # (e.g. the aliases left out of a record document's list)
        return (p.status, _ANCHORS[known], rest)
    return (p.status, "", text)


PROVENANCE_LABELS: dict[str, tuple[str, str]] = {
    "verified": ("v", "Verified"),
    "signed": ("s", "Signed"),
    "unsigned": ("u", "Not signed"),
}
"""Each provenance status as a line shows it: its label and the label's class."""


def provenance_line(*items: tuple[str, Provenance], guide: str) -> Markup:
    """One section's provenance, once, in plain words: the parts it shows, named as a
    reader names them ("title", "authors"), grouped under Verified, Signed or Not
    signed; each part links to its technical reason ("matches title_canon_sha256
    ...") on the guide page at `guide`, which words it once for every record."""
    return _section_line(tuple((name, reason(p)) for name, p in items), guide)


@functools.lru_cache(maxsize=256)  # a few section shapes, repeated on every page
def _section_line(items: tuple[tuple[str, Reason], ...], guide: str) -> Markup:
    # parts under one label with one reason share its link: "authors, status badges"
    groups: dict[str, dict[tuple[str, str], list[str]]] = {}
    for name, (status, anchor, detail) in items:
        groups.setdefault(status, {}).setdefault((anchor, detail), []).append(name)
    parts = []
    for status, reasons in groups.items():
        shown = []
        for (anchor, detail), names in reasons.items():
            # (a str, not Markup: `Markup + str` would escape the str a second time)
            text = str(escape(", ".join(names)))
            if anchor:
                text = f'<a href="{escape(guide)}#{escape(anchor)}">{text}</a>'
            if detail:
                text += f" ({escape(detail)})"
            shown.append(text)
        mark, label = PROVENANCE_LABELS[status]
        parts.append(f'<b class="{mark}">{label}</b> {", ".join(shown)}')
    return Markup(f'<p class="prov">{" · ".join(parts)}</p>')


def _section(name: str, found: ledger.Ledger | None, guide: str) -> LedgerSection | None:
    if found is None:
        return None
    return LedgerSection(found, provenance_line((name, found.provenance), guide=guide))


def _badge_html(number: str, record_on_primary: str) -> str:
    """The HTML an author pastes to show a record's Pith number, linked to the primary
    resolver's page (where the record is verified). Text only: the resolver's own
    badge image is not documented, so no image address is invented."""
    return (
        f'<a href="{escape(record_on_primary)}" title="Pith number, verified on the Pith resolver">'
        f"{escape(number)}</a>"
    )


_SOURCE_LINE = "source, date, categories and license"
_EVENTS_CHECKED = Provenance(
    "verified", "each event's hash and Ed25519 signature were checked by this mirror"
)


def _record_provenance(
    provenance: dict[str, Provenance],
    paper: dict[str, str],
    paper_prov: Provenance,
    snapshot_prov: Provenance,
    guide: str,
    events: Mapping[str, int],
) -> RecordProvenance:
    """Each section's provenance line (see `provenance_line`)."""
    parts = tuple(
        reason(provenance[name], events) for name in ("title", "record", "status", "aliases", "receipt")
    )
    return _provenance_lines(
        parts,
        reason(paper_prov, events),
        reason(snapshot_prov, events),
        bool(paper.get("title")),
        bool(paper.get("authors_text")),
        guide,
    )


@functools.lru_cache(maxsize=256)  # (records share a few shapes: one set of lines each, not eleven calls)
def _provenance_lines(
    parts: tuple[Reason, ...],
    paper: Reason,
    snapshot: Reason,
    title: bool,
    authors: bool,
    guide: str,
) -> RecordProvenance:
    found = dict(zip(("title", "record", "status", "aliases", "receipt"), parts, strict=True))
    head = (
        *((("title", found["title"]),) if title else ()),
        *((("authors", paper),) if authors else ()),
        (_SOURCE_LINE, found["record"]),
    )

    def line(*items: tuple[str, Reason]) -> Markup:
        return _section_line(items, guide)

    return RecordProvenance(
        header=line(*head, ("status badges", found["status"])),
        paper_header=line(*head),
        record=line(("canonical record", found["record"])),
        paper=line(("abstract", paper)),
        review=line(("abstract", paper), ("machine review", snapshot)),
        aliases=line(("aliases", found["aliases"])),
        snapshot=line(("graph snapshot", snapshot)),
        events=line(("events", reason(_EVENTS_CHECKED))),
        receipt=line(
            ("signature and canonical hash", found["record"]),
            ("times and builder", found["receipt"]),
        ),
    )


def record_context(
    pub: Publication,
    summary: Summary,
    snapshot: dict[str, Any] | None,
    snapshot_origin: str,
    integrity_path: str | None,
    config: SiteConfig,
    site: SiteInfo | None = None,
    paths: RecordPaths | None = None,
    paper: tuple[dict[str, str], Provenance] | None = None,
) -> RecordPage:
    """What record.html and paper.html show. `paper` is the number's `paper_block`
    when the caller has it already."""
    site = site or SiteInfo.of(config)
    primary = pub.primary
    body = pub.body
    paper_fields, paper_prov = paper or paper_block(pub)
    canonical = primary.doc.canonical_record
    facts = primary.facts
    receipt = primary.doc.receipt
    provenance = primary.provenance
    base = site.base
    paths = paths or RecordPaths.of(body, pub.bundle is not None)
    page_url = f"{site.absolute_base}{paths.record_page}" if site.absolute_base else None
    counts = event_counts(pub)
    record_on_primary = f"{site.primary_url}/pith/{body}"
    guide = site.guide
    record_data = pub.record.doc.data if pub.record else None
    event_rows = events(pub)
    event_numbers = {row.id: row.number for row in event_rows}
    snapshot_signed = snapshot_origin.startswith("signed")
    snapshot_prov = Provenance(
        "signed" if snapshot_signed else "unsigned",
        # (the words graph.json keeps name the resolver; a page names no signer but its key)
        snapshot_origin.replace("signed by the resolver in", "signed in"),
    )
    return RecordPage(
        body=body,
        number=pub.pith_number,
        short_number=f"pith:{body[:8]}",
        paper=PaperText(**paper_fields),
        prov=_record_provenance(provenance, paper_fields, paper_prov, snapshot_prov, guide, event_numbers),
        source_label=f"{summary.source_kind}:{summary.source_id} v{summary.source_version}",
        submitted_at=summary.submitted_at,
        categories=" · ".join((summary.primary_cat, *summary.cross_cats)),
        license=facts.license,
        schema_version=facts.schema_version,
        canonical_pretty=text_markup(pretty_json(canonical).decode("utf-8").rstrip("\n")),
        canonical_sha256=primary.canonical_sha256,
        receipt=ReceiptView(
            key_id=str(receipt["key_id"]),
            signature_b64=str(receipt["signature_b64"]),
            fingerprint=str(receipt.get("public_key_fingerprint", "")),
            first_computed_at=str(receipt.get("first_computed_at", "—")),
            signed_at=str(receipt.get("signed_at", "—")),
            builder_version=str(receipt.get("builder_version", "—")),
        ),
        aliases=[
            (kind, value, href(base, layout.resolve_query(kind, value)) if has else None)
            for kind, value, has in summary.alias_rows
        ],
        events=event_rows,
        forks=forks(pub),
        checklist=checklist(counts, f"{record_on_primary}/action/"),
        # Beside a bundle the status line is labelled as derived from signed events: a
        # snapshot from a record document's unsigned part must not set its badges.
        status=status_line(counts, snapshot if snapshot_signed or pub.bundle is None else None),
        snapshot=snapshot_view(snapshot),
        links=paper_links(facts),
        claims=_section("claims", ledger.claims(snapshot, snapshot_signed, record_data), guide),
        citations=_section(
            "inbound citations",
            ledger.inbound_citations(pub.bundle.state if pub.bundle else None, record_data),
            guide,
        ),
        badge_html=text_markup(_badge_html(pub.pith_number, record_on_primary)),
        integrity_href=None if integrity_path is None else href(base, integrity_path),
        record_signed=pub.record is not None,
        has_bundle=pub.bundle is not None,
        paths=paths,
        page_url=page_url,
        hrefs=paths.under(base),
        record_on_primary=record_on_primary,
        guide=guide,
        jsonld=_scholarly_article(pub, paper_fields, facts, site, page_url),
    )


def _scholarly_article(
    pub: Publication, paper: dict[str, str], facts: CanonicalFacts, site: SiteInfo, page_url: str | None
) -> dict[str, Any]:
    authors = [a.strip() for a in str(paper.get("authors_text", "")).split(",") if a.strip()]
    identifiers = [pub.pith_number]
    if facts.source_kind == "arxiv":
        arxiv = facts.source_id
        identifiers += [f"arXiv:{arxiv}v{facts.source_version}", f"doi:10.48550/arxiv.{arxiv}"]
    article: dict[str, Any] = {
        "@context": "https://schema.org",
        "@type": "ScholarlyArticle",
        "name": str(paper.get("title", "")),
        "author": [{"@type": "Person", "name": a} for a in authors],
        "datePublished": facts.submitted_at,
        "identifier": identifiers,
        "about": [facts.primary_cat, *facts.cross_cats],
        "sameAs": f"{site.primary_url}/pith/{pub.body}",
    }
    if facts.license:
        article["license"] = facts.license
    if page_url:
        article["url"] = page_url
    return article
