"""generator/render.py: one publication's files, and the pieces its pages are made of.

The pages themselves are compared byte for byte by the golden and pipeline
tests; these pin the pieces the record and paper pages share, so a page never
shows a document string unescaped.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import factories
import pytest
from markupsafe import Markup

from generator.site import claims_and_citations as ledger
from generator.site.config import SiteConfig
from generator.site.page_model import Publication, graph_snapshot, paper_block
from generator.site.record_page import PaperText, RecordPage, RecordPaths
from generator.site.render import (
    REASONS,
    merged_state,
    provenance_line,
    reason,
    record_context,
    render_publication,
)
from generator.site.templating import make_environment, page_context
from generator.trust import verify as verify_module
from generator.trust.keys import Keyring
from generator.trust.model import Provenance
from generator.trust.verify import verify_document

HOSTILE = "<script>alert('x')</script> & \"quoted\""
ESCAPED = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &#34;quoted&#34;"


@pytest.mark.parametrize(
    ("status", "mark", "label"),
    [("verified", "v", "Verified"), ("signed", "s", "Signed"), ("unsigned", "u", "Not signed")],
)
def test_a_provenance_line_escapes_its_names_and_reasons(status: Any, mark: str, label: str) -> None:
    """A reason the guide page does not word is shown on the line itself, escaped."""
    line = provenance_line((HOSTILE, Provenance(status, HOSTILE)), guide="/guide")
    assert isinstance(line, Markup)
    assert line == f'<p class="prov"><b class="{mark}">{label}</b> {ESCAPED} ({ESCAPED})</p>'
    known = provenance_line((HOSTILE, Provenance(status, REASONS[0][2])), guide='/"x"/guide')
    assert known == (
        f'<p class="prov"><b class="{mark}">{label}</b> <a href="/&#34;x&#34;/guide#title">{ESCAPED}</a></p>'
    )


def test_a_section_s_provenance_is_one_line_grouped_by_status_each_part_linked_to_its_reason() -> None:
    title, record, unsigned = (
        Provenance(status, text)
        for anchor, status, text in REASONS
        if anchor in ("title", "record", "unsigned")
    )
    line = provenance_line(("title", title), ("authors", unsigned), ("source", record), guide="/mirror/guide")
    assert line.count('class="prov"') == 1
    assert line.count("<b ") == 2  # Verified: title, source · Not signed: authors
    assert line.index(">title<") < line.index(">source<") < line.index("Not signed") < line.index(">authors<")
    # the technical words are on the guide page, once for every record, not on the line
    assert "title_canon_sha256" not in line
    assert '<a href="/mirror/guide#title">title</a>' in line
    assert '<a href="/mirror/guide#unsigned">authors</a>' in line
    # parts with one reason share its link
    assert provenance_line(("authors", unsigned), ("status badges", unsigned), guide="/guide") == (
        '<p class="prov"><b class="u">Not signed</b> <a href="/guide#unsigned">authors, status badges</a></p>'
    )
    # (made once for a section's shape and reasons, then the same object on every page)
    assert provenance_line(("x", Provenance("signed", "y")), guide="/g") is provenance_line(
        ("x", Provenance("signed", "y")), guide="/g"
    )


def test_a_part_signed_in_an_event_names_the_event_s_row() -> None:
    signed = Provenance("signed", "signed in event sha256:abc")
    assert reason(signed, {"sha256:abc": 2}) == ("signed", "event", "event 2")
    assert reason(signed, {}) == ("signed", "event", "event sha256:abc")  # (no row: its id)


def test_words_added_to_a_known_reason_stay_on_the_line() -> None:
    aliases = next(text for anchor, _, text in REASONS if anchor == "aliases")
    found = reason(Provenance("verified", f"{aliases}; 2 other alias(es) are left out"))
    assert found == ("verified", "aliases", "2 other alias(es) are left out")
    line = provenance_line(
        ("aliases", Provenance("verified", f"{aliases}; 2 other alias(es) are left out")), guide="/guide"
    )
    assert line == (
        '<p class="prov"><b class="v">Verified</b> <a href="/guide#aliases">aliases</a>'
        " (2 other alias(es) are left out)</p>"
    )


def test_every_reason_the_verifier_gives_in_fixed_words_is_on_the_guide_page() -> None:
    """A reason worded the same for every record is said once, on the guide page (a new
    one left out would be shown on each page's line instead: correct, but heavy)."""
    fixed = [p for p in vars(verify_module).values() if isinstance(p, Provenance)]
    fixed += [
        ledger.claims({"claims": {"items": []}}, True, None).provenance,  # type: ignore[union-attr]
        ledger.claims({"claims": {"items": []}}, False, None).provenance,  # type: ignore[union-attr]
        ledger.claims(None, False, {"paper_claims": []}).provenance,  # type: ignore[union-attr]
        ledger.inbound_citations({"current": {"citation_signatures": [{}]}}, None).provenance,  # type: ignore[union-attr]
        ledger.inbound_citations(None, {"inbound_citations": {"sample": []}}).provenance,  # type: ignore[union-attr]
        ledger.inbound_citations({"current": {"citation_signatures": []}}, None).provenance,  # type: ignore[union-attr]
    ]
    assert len(fixed) >= 13
    for provenance in fixed:
        status, anchor, detail = reason(provenance)
        assert anchor and not detail, provenance
        assert (anchor, status, provenance.text) in REASONS
    anchors = [anchor for anchor, _, _ in REASONS]
    assert len(anchors) == len(set(anchors))


def bundle_publication(keyring: Keyring, title: str = "A Small Test Paper") -> tuple[Publication, bytes]:
    doc = factories.bundle(title=title)
    verdict, verified = verify_document(factories.source_document(doc), keyring)
    assert verified is not None, verdict.problems
    return Publication(verified.pith_number, None, verified), factories.to_bytes(doc)


@pytest.fixture
def config(tmp_path: Path) -> SiteConfig:
    return SiteConfig(site=tmp_path / "site", cache=tmp_path / "cache")


def test_the_context_is_the_same_with_or_without_the_paper_block(
    keyring: Keyring, config: SiteConfig
) -> None:
    pub, raw = bundle_publication(keyring)
    _, summary = render_publication(
        pub, merged_state(pub), None, raw, make_environment(config, keyring), config
    )
    snapshot, origin = graph_snapshot(pub)
    paths = RecordPaths.of(pub.body, True)
    given = record_context(pub, summary, snapshot, origin, None, config, paths=paths, paper=paper_block(pub))
    computed = record_context(pub, summary, snapshot, origin, None, config, paths=paths)
    assert given == computed


def test_the_template_context_is_the_page_one_level_deep(keyring: Keyring, config: SiteConfig) -> None:
    """Every field, by name, as the very value the page holds: templates read its
    parts' attributes, so nothing may be turned into dicts or copied."""
    pub, raw = bundle_publication(keyring)
    _, summary = render_publication(
        pub, merged_state(pub), None, raw, make_environment(config, keyring), config
    )
    page = record_context(pub, summary, *graph_snapshot(pub), None, config)
    context = page_context(page)
    assert list(context) == [f.name for f in fields(RecordPage)]
    assert all(context[name] is getattr(page, name) for name in context)
    assert isinstance(context["paper"], PaperText) and isinstance(context["paths"], RecordPaths)


def test_lookup_links_follow_the_aliases_in_order(keyring: Keyring, config: SiteConfig) -> None:
    """Each alias links the resolver's own look-up of it, which the resolve page answers."""
    pub, raw = bundle_publication(keyring)
    _, summary = render_publication(
        pub, merged_state(pub), None, raw, make_environment(config, keyring), config
    )
    context = record_context(pub, summary, *graph_snapshot(pub), None, config)
    assert [(kind, value) for kind, value, _ in context.aliases] == list(summary.aliases)
    assert len(summary.aliases) == 6
    assert [link for _, _, link in context.aliases] == [
        f"/api/pith-number/resolve?{kind}={value}&json=true" for kind, value in summary.aliases
    ]
    doi = [link for kind, _, link in context.aliases if kind == "doi"]
    assert doi == ["/api/pith-number/resolve?doi=10.48550/arxiv.2101.00001&json=true"]


def test_the_pages_escape_the_papers_text(keyring: Keyring, config: SiteConfig) -> None:
    pub, raw = bundle_publication(keyring, title=HOSTILE)
    files, _ = render_publication(
        pub, merged_state(pub), None, raw, make_environment(config, keyring), config
    )
    pages = {f.path: f.data.decode("utf-8") for f in files if f.path.endswith(".html")}
    assert set(pages) == {
        f"pith/{pub.body}.html",
        f"pith/{pub.body}/index.html",
        f"paper/{pub.body[:8]}.html",
        f"paper/{pub.body[:8]}/index.html",
    }
    for path, html in pages.items():
        assert "<script>alert" not in html
        if path.endswith("/index.html"):  # (a folder twin: it names no title)
            assert "alert" not in html and 'http-equiv="refresh"' in html
            continue
        assert f"<h1>{ESCAPED}</h1>" in html or f'<h1 data-fact="title">{ESCAPED}</h1>' in html
    # in JSON-LD, the title is JSON with '<', '>' and '&' written as \u escapes
    jsonld_title = '"name":"\\u003cscript\\u003ealert(\'x\')\\u003c/script\\u003e \\u0026 \\"quoted\\""'
    assert jsonld_title in pages[f"pith/{pub.body}.html"]


def record_and_bundle(keyring: Keyring, bundle_events: str) -> Publication:
    """A number with its record document and a bundle: `bundle_events` is "created"
    (record_created only) or "snapshot" (record_created and a graph snapshot)."""
    record = factories.canonical_record()
    events = [factories.record_created_event(factories.TEST_SIGNER, record)]
    if bundle_events == "snapshot":
        events.append(factories.graph_snapshot_event(factories.TEST_SIGNER, record, "A Small Test Paper"))
    doc = factories.record_document(record=record)
    doc["graph_snapshot"]["references"] = {"resolved_work": 7}  # unsigned: anyone can write it
    verified = {}
    for kind, data in (("record", doc), ("bundle", factories.bundle(record=record, events=events))):
        verdict, verified[kind] = verify_document(factories.source_document(data), keyring)
        assert verified[kind] is not None, verdict.problems
    return Publication(verified["record"].pith_number, verified["record"], verified["bundle"])


def group_of(name: str, line: str) -> str:
    """The status group of a provenance line (its label, and each name linked to its reason) naming `name`."""
    groups = line.split("<b ")[1:]
    return next(g for g in groups if f"{name}</a>" in g or f"{name}, " in g)


def test_an_unsigned_snapshot_does_not_set_the_badges_of_a_bundles_state(
    keyring: Keyring, config: SiteConfig
) -> None:
    pub = record_and_bundle(keyring, "created")
    snapshot, origin = graph_snapshot(pub)
    assert origin == "from the record document's unsigned part"
    _, summary = render_publication(
        pub, merged_state(pub), b"{}", b"{}", make_environment(config, keyring), config
    )
    context = record_context(pub, summary, snapshot, origin, None, config)
    assert ("refs pending", False) in context.status
    assert '<a href="/guide#merged">' in group_of("status badges", context.prov.header)


def test_a_record_only_status_may_show_the_unsigned_snapshot_under_its_unsigned_label(
    keyring: Keyring, config: SiteConfig
) -> None:
    pub = record_and_bundle(keyring, "created")
    record_only = Publication(pub.pith_number, pub.record, None)
    snapshot, origin = graph_snapshot(record_only)
    _, summary = render_publication(
        record_only, merged_state(record_only), b"{}", None, make_environment(config, keyring), config
    )
    context = record_context(record_only, summary, snapshot, origin, None, config)
    assert ("refs resolved", True) in context.status
    assert "Not signed" in group_of("status badges", context.prov.header)


@pytest.mark.parametrize(
    ("with_bundle", "label", "says"),
    [
        (False, "Not signed", '<a href="/guide#receipt-times">'),
        (True, "Signed", '<a href="/guide#receipt">'),
    ],
)
def test_the_receipt_times_say_whether_a_signature_covers_them(
    keyring: Keyring, config: SiteConfig, with_bundle: bool, label: str, says: str
) -> None:
    pub = record_and_bundle(keyring, "snapshot")
    if not with_bundle:
        pub = Publication(pub.pith_number, pub.record, None)
    _, summary = render_publication(
        pub,
        merged_state(pub),
        b"{}",
        b"{}" if with_bundle else None,
        make_environment(config, keyring),
        config,
    )
    line = record_context(pub, summary, *graph_snapshot(pub), None, config).prov.receipt
    assert f">{label}</b> {says}times and builder</a>" in line
    assert says in line


@pytest.mark.parametrize(
    ("snapshot_paper", "expected"),
    [
        (None, None),
        ({"authors_text": "A. Author"}, {"authors_text": "A. Author"}),
        (
            {"title": "A Small Test Paper", "headline": "h", "extra": "x"},
            {"title": "A Small Test Paper", "headline": "h"},
        ),
    ],
    ids=["no-snapshot", "snapshot-without-title", "snapshot-with-title"],
)
def test_a_derived_record_says_of_the_paper_only_what_a_signed_snapshot_does(
    keyring: Keyring, config: SiteConfig, snapshot_paper: dict[str, str] | None, expected: Any
) -> None:
    """A title filled in as "" would not hash to title_canon_sha256: the reader's
    browser would call the record altered."""
    record = factories.canonical_record()
    events = [factories.record_created_event(factories.TEST_SIGNER, record)]
    if snapshot_paper is not None:
        event = factories.graph_snapshot_event(factories.TEST_SIGNER, record, "A Small Test Paper")
        event["payload"]["graph_snapshot"]["paper"] = snapshot_paper
        events.append(factories.seal_event(factories.TEST_SIGNER, event))
    doc = factories.bundle(record=record, events=events)
    verdict, verified = verify_document(factories.source_document(doc), keyring)
    assert verified is not None, verdict.problems
    pub = Publication(verified.pith_number, None, verified)
    files, _ = render_publication(
        pub, merged_state(pub), None, factories.to_bytes(doc), make_environment(config, keyring), config
    )
    derived = json.loads(next(f.data for f in files if f.path == f"pith/{pub.body}.json"))
    assert derived.get("paper") == expected
