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

from dataclasses import dataclass
from typing import Any

from jinja2 import (
    Environment,
    FileSystemBytecodeCache,
    FileSystemLoader,
    StrictUndefined,
    TemplateError,
    select_autoescape,
)
from markupsafe import Markup

from . import __version__, layout
from .canonical import canonical_json, pretty_json
from .config import SiteConfig
from .errors import BuildError
from .keys import Keyring
from .merge import merge, state_sha256
from .view import (
    Publication,
    Summary,
    aliases,
    checklist,
    events,
    graph_snapshot,
    paper_block,
    snapshot_view,
    status_line,
    summarize,
)

DERIVED_BY = {"tool": "pith-mirror", "version": __version__}
ACTIONS = {
    "timestamp_anchor": "Anchor a timestamp",
    "storage_attestation": "Attest storage",
    "author_attestation": "Claim authorship",
    "citation_signature": "Sign a citation",
    "replication_record": "Submit a replication",
}


@dataclass(frozen=True, slots=True)
class OutputFile:
    """One file of the site: where (relative to SITE), its bytes, and whether
    its bytes are the resolver's signed bytes (never to change)."""

    path: str
    data: bytes
    immutable: bool = False


def make_environment(config: SiteConfig, keyring: Keyring) -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(config.templates)),
        bytecode_cache=_bytecode_cache(config),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        auto_reload=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    base = config.base_path
    env.globals.update(
        url=lambda path="": base + path.lstrip("/"),
        site={
            "title": config.site_title,
            "base": base,
            "absolute_base": config.absolute_base,
            "primary_url": config.primary_url.rstrip("/"),
            "version": __version__,
        },
    )
    keys = {k.key_id: k.public_key_b64 for k in keyring.keys}
    env.globals["key_b64"] = lambda key_id: keys.get(key_id, "")
    env.filters["jsonld"] = _jsonld
    env.filters["short"] = lambda text, n=16: text if len(text) <= n else text[:n] + "…"
    return env


def _bytecode_cache(config: SiteConfig) -> FileSystemBytecodeCache | None:
    """Compiled templates, kept beside the build cache: compiling costs more than a small build.
    Jinja keys each entry by the template's source, so an edited template is never served stale."""
    folder = config.cache_dir / "templates"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return FileSystemBytecodeCache(str(folder))


def _jsonld(value: Any) -> Markup:
    """JSON for a <script> block: '<', '>' and '&' escaped so no text can close it."""
    text = pretty_json(value).decode("utf-8")
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


def page(path: str, html: str) -> list[OutputFile]:
    """Write a page at `path.html` and `path/index.html` (see layout)."""
    data = html.encode("utf-8")
    return [OutputFile(p, data) for p in layout.page_paths(path)]


def render_publication(
    pub: Publication,
    record_raw: bytes | None,
    bundle_raw: bytes | None,
    env: Environment,
    config: SiteConfig,
) -> tuple[list[OutputFile], Summary]:
    """Every file of one Pith number, and its summary for site-wide pages."""
    body = pub.body
    files: list[OutputFile] = []
    primary = pub.primary
    state = pub.bundle.state if pub.bundle is not None else None
    if state is None:
        state = _record_only_state(pub)
    state_bytes = canonical_json(state)

    if record_raw is not None:
        files.append(OutputFile(layout.record_json(body), record_raw, immutable=True))
        record_bytes = record_raw
    else:
        record_bytes = pretty_json(_derived_record(pub, config))
        files.append(OutputFile(layout.record_json(body), record_bytes))
    if bundle_raw is not None:
        files.append(OutputFile(layout.bundle_json(body), bundle_raw, immutable=True))
        files.append(OutputFile(layout.well_known_bundle(body), bundle_raw, immutable=True))
    files.append(OutputFile(layout.state_json(body), state_bytes, immutable=pub.bundle is not None))

    snapshot, snapshot_origin = graph_snapshot(pub)
    files.append(
        OutputFile(
            layout.graph_json(body),
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
            layout.events_json(body),
            pretty_json(
                {
                    "derived_by": DERIVED_BY,
                    "pith_number": pub.pith_number,
                    "provenance": "copied from the signed bundle; each event carries its own signature",
                    "event_count": len(primary.doc.events),
                    "events": [e.data for e in primary.doc.events],
                }
            ),
        )
    )
    integrity = snapshot.get("integrity") if isinstance(snapshot, dict) else None
    integrity_path = (
        layout.integrity_path(integrity.get("endpoint"), primary.doc.canonical_record.get("source"))
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

    summary = summarize(pub, record_bytes, bundle_raw, str(state["state_sha256"]), integrity_file)
    context = record_context(pub, summary, snapshot, snapshot_origin, integrity_path, config)
    files += page(layout.record_page(body), render_template(env, "record.html", context))
    files += page(layout.paper_page(body), render_template(env, "paper.html", context))
    return files, summary


def _provenance_sentence(origin: str) -> str:
    """For derived JSON: say outright when something is not signed."""
    if not origin:
        return "no graph snapshot"
    return origin if origin.startswith("signed") else f"not signed: {origin}"


def render_template(env: Environment, name: str, context: dict[str, Any]) -> str:
    """Render, turning any template failure into a BuildError that names the template."""
    try:
        return env.get_template(name).render(context)
    except TemplateError as exc:
        where = getattr(exc, "filename", None) or name
        raise BuildError(str(where), f"template error: {exc}") from None


def _record_only_state(pub: Publication) -> dict[str, Any]:
    """A record document has no events: its state is the empty merge, marked as derived."""
    assert pub.record is not None
    doc = pub.record.doc
    state = merge(doc.pith_number, doc.canonical_record, doc.data.get("aliases", []), [])
    state["derived_by"] = DERIVED_BY
    state["state_sha256"] = state_sha256(state)
    return state


def _derived_record(pub: Publication, config: SiteConfig) -> dict[str, Any]:
    """A record document for a bundle-only number, from the bundle's signed parts."""
    assert pub.bundle is not None
    doc = pub.bundle.doc
    paper, _ = paper_block(pub)
    return {
        "derived_by": {
            **DERIVED_BY,
            "from": layout.bundle_json(pub.body),
            "note": "derived by this mirror from the signed bundle; canonical_record and receipt "
            "are signed by the resolver, the rest is copied from signed events",
        },
        "record_type": "pith_number_record",
        "pith_number": doc.pith_number,
        "short_pith_number": doc.data.get("short_pith_number"),
        "schema_version": doc.canonical_record.get("schema_version"),
        "canonical_sha256": pub.bundle.canonical_sha256,
        "source": doc.canonical_record.get("source"),
        "canonical_record": doc.canonical_record,
        "receipt": doc.receipt,
        "paper": paper,
        "aliases": doc.data.get("source_aliases", []),
    }


def record_context(
    pub: Publication,
    summary: Summary,
    snapshot: dict[str, Any] | None,
    snapshot_origin: str,
    integrity_path: str | None,
    config: SiteConfig,
) -> dict[str, Any]:
    primary = pub.primary
    body = pub.body
    paper, paper_prov = paper_block(pub)
    canonical = primary.doc.canonical_record
    receipt = primary.doc.receipt
    primary_url = config.primary_url.rstrip("/")
    alias_rows = []
    for alias in aliases(pub):
        kind, value = str(alias.get("alias_kind", "")), str(alias.get("alias_value", ""))
        alias_rows.append({"kind": kind, "value": value, "lookup": layout.resolve_json(kind, value)})
    return {
        "pub": pub,
        "body": body,
        "summary": summary,
        "number": pub.pith_number,
        "short_number": f"pith:{body[:8]}",
        "paper": paper,
        "paper_prov": paper_prov,
        "title_prov": primary.provenance["title"],
        "record_prov": primary.provenance["record"],
        "alias_prov": primary.provenance["aliases"],
        "status_prov": primary.provenance["status"],
        "canonical": canonical,
        "canonical_pretty": pretty_json(canonical).decode("utf-8").rstrip("\n"),
        "canonical_sha256": primary.canonical_sha256,
        "receipt": receipt,
        "key_fingerprint": receipt.get("public_key_fingerprint", ""),
        "aliases": alias_rows,
        "events": events(pub),
        "checklist": checklist(pub),
        "status": status_line(pub),
        "snapshot": snapshot_view(snapshot),
        "snapshot_origin": snapshot_origin,
        "integrity_path": integrity_path,
        "record_signed": pub.record is not None,
        "has_bundle": pub.bundle is not None,
        "paths": {
            "record_page": layout.record_page(body),
            "record_json": layout.record_json(body),
            "bundle_json": layout.bundle_json(body) if pub.bundle else None,
            "well_known": layout.well_known_bundle(body) if pub.bundle else None,
            "state_json": layout.state_json(body),
            "graph_json": layout.graph_json(body),
            "events_json": layout.events_json(body),
            "paper_page": layout.paper_page(body),
        },
        "primary_links": {
            "record": f"{primary_url}/pith/{body}",
            "actions": [
                (label, f"{primary_url}/pith/{body}/action/{name}") for name, label in ACTIONS.items()
            ],
        },
        "documents": [
            d for d in ((pub.record, "record document"), (pub.bundle, "bundle")) if d[0] is not None
        ],
        "jsonld": _scholarly_article(pub, paper, canonical, config),
    }


def _scholarly_article(
    pub: Publication, paper: dict[str, Any], canonical: dict[str, Any], config: SiteConfig
) -> dict[str, Any]:
    source, metadata = canonical["source"], canonical["metadata"]
    authors = [a.strip() for a in str(paper.get("authors_text", "")).split(",") if a.strip()]
    identifiers = [pub.pith_number]
    if source.get("kind") == "arxiv":
        identifiers += [f"arXiv:{source['id']}v{source['version']}", f"doi:10.48550/arxiv.{source['id']}"]
    article: dict[str, Any] = {
        "@context": "https://schema.org",
        "@type": "ScholarlyArticle",
        "name": str(paper.get("title", "")),
        "author": [{"@type": "Person", "name": a} for a in authors],
        "datePublished": str(metadata["submitted_at"]),
        "identifier": identifiers,
        "about": [str(metadata["primary_cat"]), *[str(c) for c in metadata["cross_cats_sorted"]]],
        "sameAs": f"{config.primary_url.rstrip('/')}/pith/{pub.body}",
    }
    if metadata.get("license"):
        article["license"] = str(metadata["license"])
    if config.absolute_base:
        article["url"] = f"{config.absolute_base}{layout.record_page(pub.body)}"
    return article
