"""The parts of a record page that lead to the paper and follow the resolver's page:
links to arXiv and doi.org, claims and inbound citations entry by entry, the
checklist (its whole text on the guide page), and the badge snippet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import factories
import pytest
from markupsafe import escape

from generator.site.config import SiteConfig
from generator.site.page_model import CHECKLIST, CHECKLIST_TEXT, Publication
from generator.site.paper_links import PaperLinks, paper_links, safe_url
from generator.site.render import merged_state, render_publication
from generator.site.sitewide import guide_html
from generator.site.templating import make_environment
from generator.trust.keys import Keyring
from generator.trust.model import CanonicalFacts
from generator.trust.parse import check_canonical_shape
from generator.trust.verify import verify_document

ROOT = Path(__file__).resolve().parents[2]
REAL_RECORD = json.loads((ROOT / "content" / "GO43K6A5MHLNBUADUVZ3AKFBNI.record.json").read_bytes())


def facts_of(canonical: dict[str, Any]) -> CanonicalFacts | None:
    """The facts parse makes of a canonical record: None when it refuses the shape."""
    return check_canonical_shape(canonical, ("canonical_record",), [])


def test_links_come_from_the_signed_arxiv_id_and_version() -> None:
    facts = facts_of(REAL_RECORD["canonical_record"])
    assert facts is not None
    assert paper_links(facts) == PaperLinks(
        abstract="https://arxiv.org/abs/2111.04007v2",
        pdf="https://arxiv.org/pdf/2111.04007v2",
        doi="10.48550/arXiv.2111.04007",
        doi_url="https://doi.org/10.48550/arXiv.2111.04007",
        license_url="http://arxiv.org/licenses/nonexclusive-distrib/1.0/",
    )
    old = facts_of(factories.canonical_record(source_id="hep-th/9901001", version=3, license=""))
    assert old is not None
    links = paper_links(old)
    assert links.abstract == "https://arxiv.org/abs/hep-th/9901001v3"
    assert links.doi_url == "https://doi.org/10.48550/arXiv.hep-th/9901001"
    assert links.license_url is None  # an empty license is no link


@pytest.mark.parametrize(
    "source",
    [
        {"kind": "arxiv", "id": "javascript:alert(1)", "version": 1},
        {"kind": "arxiv", "id": "2111.04007/../../x", "version": 1},
        {"kind": "arxiv", "id": "2111.04007\x00", "version": 1},
        {"kind": "arxiv", "id": "2111.04007", "version": 0},
        {"kind": "doi", "id": "2111.04007", "version": 1},
    ],
)
def test_no_link_is_made_from_an_unexpected_source(source: Any) -> None:
    facts = facts_of({**factories.canonical_record(license=""), "source": source})
    assert facts is not None
    assert paper_links(facts) == PaperLinks(None, None, None, None, None)


@pytest.mark.parametrize(
    "source",
    [
        {"kind": "arxiv", "id": "2111.04007", "version": "2"},
        {"kind": "arxiv", "id": "2111.04007", "version": True},
        "not an object",
    ],
)
def test_a_source_of_another_shape_gives_no_facts_to_link(source: Any) -> None:
    """Parse refuses it, so no page (and no link) is made from it."""
    assert facts_of({**factories.canonical_record(), "source": source}) is None


@pytest.mark.parametrize(
    "value",
    [
        "javascript:alert(1)",
        "JavaScript://example.org/%0aalert(1)",
        "data:text/html,<b>x</b>",
        "http://example.org/a b",
        "http://example.org/\x00",
        "http://example.org/\u202e",
        'http://example.org/"onmouseover="x',
        "//example.org/",
        "http:///nohost",
        "",
        None,
        7,
    ],
)
def test_a_license_becomes_a_link_only_when_it_is_a_plain_web_address(value: Any) -> None:
    assert safe_url(value) is None


def test_a_plain_web_address_is_kept_as_it_is() -> None:
    assert (
        safe_url("https://creativecommons.org/licenses/by/4.0/")
        == "https://creativecommons.org/licenses/by/4.0/"
    )


def record_page(keyring: Keyring, tmp_path: Path, doc: dict[str, Any]) -> str:
    raw = factories.to_bytes(doc)
    verdict, verified = verify_document(factories.source_document(doc), keyring)
    assert verified is not None, verdict.problems
    is_record = "record_type" in doc
    pub = Publication(verified.pith_number, verified if is_record else None, None if is_record else verified)
    config = SiteConfig(site=tmp_path / "site", cache=tmp_path / "cache")
    files, _ = render_publication(
        pub,
        merged_state(pub),
        raw if is_record else None,
        None if is_record else raw,
        make_environment(config, keyring),
        config,
    )
    return next(f.data.decode("utf-8") for f in files if f.path == f"pith/{pub.body}.html")


def section(page: str, heading_id: str) -> str:
    start = page.index(f'id="{heading_id}"')
    return page[start : page.index("</section>", start)]


def test_signed_claims_and_citations_are_listed_entry_by_entry(keyring: Keyring, tmp_path: Path) -> None:
    s = factories.TEST_SIGNER
    record = factories.canonical_record(title="A Paper With Claims")
    number = factories.pith_number(record)
    snapshot = factories.graph_snapshot(record, "A Paper With Claims")
    snapshot["claims"] = {
        "count": 2,
        "items": [{"claim": "Training scales <b>linearly</b>", "section": 4}, "A bare claim\x00 with a NUL"],
    }
    events = [
        factories.record_created_event(s, record),
        factories.event(s, number, "graph_snapshot", {"graph_snapshot": snapshot}, target="graph"),
        factories.event(
            s,
            number,
            "citation_signature",
            {"relationship": "supports", "citing_pith_number": "pith:2026:AAAA", "nested": {"a": [1, 2]}},
            created_at="2026-07-09T00:00:00Z",
        ),
    ]
    page = record_page(keyring, tmp_path, factories.bundle(s, record=record, events=events))
    claims = section(page, "claims-h")
    assert '<span class="count">2</span>' in claims
    assert "<dt>claim</dt><dd>Training scales &lt;b&gt;linearly&lt;/b&gt;</dd>" in claims
    assert "<dt>section</dt><dd>4</dd>" in claims
    assert "<li>A bare claim\u2400 with a NUL</li>" in claims  # the NUL shown visibly
    assert '<b class="s">Signed</b> <a href="/guide#claims">claims</a>' in claims
    citations = section(page, "citations-h")
    assert "<dt>relationship</dt><dd>supports</dd>" in citations
    assert "<dt>nested</dt><dd>{&#34;a&#34;:[1,2]}</dd>" in citations
    assert '<b class="s">Signed</b> <a href="/guide#citations">inbound citations</a>' in citations
    assert "not documented yet" in claims  # the page says it does not interpret them


def test_a_record_document_s_claims_and_citations_are_marked_not_signed(
    keyring: Keyring, tmp_path: Path
) -> None:
    doc = factories.record_document()
    doc["paper_claims"] = [{"claim": "Unsigned claim"}]
    doc["inbound_citations"] = {"count": 3, "sample": [{"from": "pith:2026:BBBB"}]}
    doc["graph_snapshot"].pop("claims")
    page = record_page(keyring, tmp_path, doc)
    claims, citations = section(page, "claims-h"), section(page, "citations-h")
    assert (
        "Unsigned claim" in claims and '<b class="u">Not signed</b> <a href="/guide#paper-claims">' in claims
    )
    assert '<span class="count">3</span>' in citations and "pith:2026:BBBB" in citations
    assert '<b class="u">Not signed</b> <a href="/guide#citations-unsigned">' in citations
    assert '<b class="s">' not in claims + citations


def test_each_checklist_row_links_its_action_and_the_guide_has_the_resolver_s_whole_text(
    keyring: Keyring, tmp_path: Path
) -> None:
    doc = factories.record_document()
    page = record_page(keyring, tmp_path, doc)
    body = doc["pith_number"].split(":")[2]
    checklist = section(page, "complete-h")
    for name, short, long, action in CHECKLIST:
        assert (
            f'<li><a href="https://pith.science/pith/{body}/action/{action}">{short} ↗</a> <span>open</span>'
            in (checklist)
        )
        assert long not in checklist and CHECKLIST_TEXT[name] not in checklist  # said once, on the guide
    assert '<a href="/guide#checklist">' in checklist
    config = SiteConfig(site=tmp_path / "site", cache=tmp_path / "cache")
    guide = guide_html(make_environment(config, keyring))
    for name, short, long, action in CHECKLIST:
        row = guide[guide.index(f'<h3 id="{action}">{short}</h3>') :]
        assert row.startswith(
            f'<h3 id="{action}">{short}</h3>\n<p><b>{long}.</b> {escape(CHECKLIST_TEXT[name])}</p>'
        )
    assert (
        "Stamps the canonical SHA-256 (the record's canonical hash) across three calendars."
        in guide.replace("&#39;", "'")
    )
    assert "Anyone can re-stamp; each stamp is an independent calendar receipt." in guide
    assert "Not peer review; a typed annotation." in guide


def test_the_badge_snippet_is_beside_the_latex_one(keyring: Keyring, tmp_path: Path) -> None:
    doc = factories.record_document()
    page = record_page(keyring, tmp_path, doc)
    latex = section(page, "latex-h")
    body = doc["pith_number"].split(":")[2]
    assert "Embed verified badge" in latex
    snippet = (
        f'<a href="https://pith.science/pith/{body}" title="Pith number, verified on the Pith resolver">'
    )
    # shown as text to copy, not as a link (in text, only '<', '>' and '&' need escaping)
    assert snippet.replace("<", "&lt;").replace(">", "&gt;") in latex


def test_the_page_links_to_the_paper_and_its_license(keyring: Keyring, tmp_path: Path) -> None:
    doc = factories.record_document()
    source = doc["canonical_record"]["source"]
    page = record_page(keyring, tmp_path, doc)
    assert f'href="https://arxiv.org/abs/{source["id"]}v{source["version"]}"' in page
    assert f'href="https://arxiv.org/pdf/{source["id"]}v{source["version"]}"' in page
    assert f'href="https://doi.org/10.48550/arXiv.{source["id"]}"' in page
    license_url = doc["canonical_record"]["metadata"]["license"]
    assert f'<a href="{license_url}" rel="license external" data-fact="license">' in page
