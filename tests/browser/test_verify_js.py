"""verify.js, run under Node's Web Crypto on the real documents and on tampered copies.

Every case goes through PithVerify.verifyFiles from the bytes a browser would
fetch (strict parse included), in one Node process. Each case names the steps
that must fail; all other steps must pass. Where a case changes only a record
or bundle document, the Python verifier (generator.trust.verify) must reach the same
verdict: the browser must never call verified what the build refuses, or the
other way round.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import factories
import pytest

from generator.site.config import SiteConfig
from generator.site.page_model import Publication
from generator.site.render import merged_state, render_publication
from generator.site.templating import make_environment
from generator.trust.canonical import b32
from generator.trust.keys import Keyring, default_keyring, keyring_from_json
from generator.trust.load import Limits, SourceDocument, decode
from generator.trust.merge import merge, state_sha256
from generator.trust.parse import parse
from generator.trust.verify import verify_document

from .conftest import BUNDLE_FILE, PINNED_KEYS_FILE, RECORD_FILE

REAL_KEYS = PINNED_KEYS_FILE.read_bytes()
REAL_RECORD = json.loads(RECORD_FILE.read_bytes())
REAL_BUNDLE = json.loads(BUNDLE_FILE.read_bytes())
TEST_KEYS = json.dumps([factories.TEST_SIGNER.key_entry()]).encode()

RECORD_STEPS = ["load", "keys", "canonical-hash", "pith-number", "receipt-signature", "title", "aliases"]
BUNDLE_STEPS = [*RECORD_STEPS, "event-0", "event-1", "paper", "bundle-keys", "bundle-signature", "state"]


def derived_record(bundle: dict[str, Any], derived_by: Any = None) -> dict[str, Any]:
    """What the mirror publishes as /pith/<P>.json for a number it only has a bundle of
    (shaped like generator/render.py's: a `derived_by` object, the receipt copied)."""
    snapshot = next(e for e in bundle["events"] if e["event_type"] == "graph_snapshot")
    created = next(e for e in bundle["events"] if e["event_type"] == "record_created")
    return {
        "derived_by": derived_by
        or {"tool": "pith-mirror", "version": "test", "note": "derived from the bundle"},
        "record_type": "pith_number_record",
        "pith_number": bundle["pith_number"],
        "short_pith_number": bundle["short_pith_number"],
        "canonical_sha256": bundle["canonical_sha256"],
        "source": copy.deepcopy(bundle["source"]),
        "canonical_record": copy.deepcopy(bundle["canonical_record"]),
        "receipt": copy.deepcopy(created["payload"]["receipt"]),
        "paper": copy.deepcopy(snapshot["payload"]["graph_snapshot"]["paper"]),
        "aliases": copy.deepcopy(bundle["source_aliases"]),
    }


def record_only_state(record: dict[str, Any]) -> dict[str, Any]:
    """The state the mirror publishes for a number with a record document only: the empty merge."""
    parsed, _ = parse(factories.source_document(record))
    assert parsed is not None
    confirmed, _ = parsed.confirmed_aliases()
    aliases = sorted(confirmed, key=lambda a: str(a.get("alias_kind")))
    state = merge(record["pith_number"], record["canonical_record"], aliases, [])
    state["derived_by"] = {"tool": "pith-mirror", "version": "test"}
    state["state_sha256"] = state_sha256(state)
    return state


def as_bytes(doc: Any) -> bytes:
    return doc if isinstance(doc, bytes) else json.dumps(doc, ensure_ascii=False, indent=1).encode("utf-8")


@dataclass
class Case:
    record: Any
    bundle: Any = None
    state: Any = None
    keys: Any = REAL_KEYS
    signed: bool = True
    number: str | None = None
    crypto: str = "webcrypto"
    result: str = "verified"
    failing: set[str] = field(default_factory=set)
    steps: list[str] | None = None
    python: str | None = None  # "record" or "bundle": also verify that document in Python
    python_keys: Any = None
    says: str = ""  # a fragment the first failing step's sentence must contain
    shown: list[dict[str, str]] | None = None  # the page's data-fact values, when the page is checked too

    def request(self) -> dict[str, Any]:
        doc = self.bundle if isinstance(self.bundle, dict) else self.record
        number = self.number or (doc["pith_number"] if isinstance(doc, dict) else REAL_RECORD["pith_number"])
        body = number.split(":")[-1]

        def file(name: str, content: Any) -> dict[str, str] | None:
            if content is None:
                return None
            if isinstance(content, str):  # a failed fetch
                return {"name": name, "error": content}
            return {"name": name, "b64": base64.b64encode(as_bytes(content)).decode("ascii")}

        return {
            "pith_number": number,
            "shown": self.shown,
            "record_signed": self.signed,
            "crypto": self.crypto,
            "files": {
                "record": file(f"/pith/{body}.json", self.record),
                "bundle": file(f"/pith/{body}/bundle.json", self.bundle),
                "state": file(f"/pith/{body}/state.json", self.state),
                "keys": file("/pith-signing-key.json", self.keys),
            },
        }


def changed(doc: dict[str, Any], *edits: tuple[tuple[Any, ...], Any]) -> dict[str, Any]:
    """A deep copy of doc with each (path, value) set."""
    result = copy.deepcopy(doc)
    for path, value in edits:
        node = result
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
    return result


def flip(sig: str) -> str:
    return factories.flip_signature_byte(sig, 5)


def unused_bits_set(sig: str) -> str:
    """The same 64 bytes, spelled with the unused low bits of the last character set
    (base64 decoders ignore them): one signature, another text."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    assert sig.endswith("==")
    last = alphabet.index(sig[-3])
    respelled = sig[:-3] + alphabet[last | 0b1111] + "=="
    assert base64.b64decode(respelled) == base64.b64decode(sig) and respelled != sig
    return respelled


class _Facts(HTMLParser):
    """The text of every element a page marks with data-fact, as a browser's
    textContent gives it (character references decoded, CR LF and CR read as LF)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, dict[str, str] | None]] = []
        self.facts: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("meta", "link", "br", "img", "input", "wbr", "hr"):
            return
        fact = dict(attrs).get("data-fact")
        entry = None if fact is None else {"fact": fact, "text": ""}
        if entry is not None:
            self.facts.append(entry)
        self.open.append((tag, entry))

    def handle_endtag(self, tag: str) -> None:
        while self.open:
            if self.open.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        for _, entry in self.open:
            if entry is not None:
                entry["text"] += data.replace("\r\n", "\n").replace("\r", "\n")


def built_page_facts(doc: dict[str, Any], keyring: Keyring, edit: Any = None) -> list[dict[str, str]]:
    """The data-fact values of the record page the mirror builds for `doc` (a record
    document or a bundle), `edit` (a function of the HTML) applied first: what a
    reader's browser hands the check."""
    raw = as_bytes(doc)
    _, verified = verify_document(
        SourceDocument(file="doc.json", raw=raw, data=decode(raw, Limits())), keyring
    )
    assert verified is not None
    is_record = "record_type" in doc
    pub = Publication(verified.pith_number, verified if is_record else None, None if is_record else verified)
    folder = Path(tempfile.mkdtemp(prefix="pith-facts-"))
    config = SiteConfig(site=folder / "site", cache=folder / "cache")
    env = make_environment(config, keyring)
    files, _ = render_publication(
        pub, merged_state(pub), raw if is_record else None, None if is_record else raw, env, config
    )
    page = next(f.data.decode("utf-8") for f in files if f.path == f"pith/{pub.body}.html")
    parser = _Facts()
    parser.feed(edit(page) if edit else page)
    return parser.facts


R, B = REAL_RECORD, REAL_BUNDLE
DERIVED = derived_record(B)
BSTATE = B["state"]
ATTACKER_REAL_ID = factories.Signer(factories.ATTACKER_SEED_HEX, key_id="pith-v1-2026-05")


def factory_cases() -> dict[str, Case]:
    s = factories.TEST_SIGNER
    record = factories.record_document(s)
    bundle = factories.bundle(s)
    forged = changed(
        bundle, (("state", "current", "graph_snapshots"), []), (("state", "valid_event_count"), 1)
    )
    forged["state"]["state_sha256"] = state_sha256(forged["state"])
    forged_state = factories.sign_bundle(s, forged)
    sigma = factories.record_document(s, title="ΣΑΣ: Über İstanbul and the ǅ digraph  in  2 spaces")
    bidi = factories.record_document(s, title="A title that overrides \u202e")
    # aliases as a record document may list them: out of kind order, and one (an ISBN)
    # that the canonical record does not determine, which the mirror leaves out
    odd_aliases = factories.record_document(s)
    odd_aliases["aliases"] = [
        {"alias_kind": "isbn", "alias_value": "978-3-16-148410-0", "created_at": factories.CREATED_AT},
        *reversed(odd_aliases["aliases"]),
    ]
    attacker_bundle = factories.bundle(factories.ATTACKER)
    impostor_bundle = factories.bundle(factories.IMPOSTOR)
    # Four events, served out of merge order, two of them claiming the same prev_event
    # (an equivocation the merge must list, exactly as generator/merge.py does).
    fork = factories.bundle(s)
    first, second = fork["events"]
    record_ = fork["canonical_record"]
    late = [
        factories.graph_snapshot_event(
            s, record_, "A Small Test Paper", created_at=at, prev_event=second["event_id"]
        )
        for at in ("2026-07-07T00:00:00Z", "2026-07-06T00:00:00Z")
    ]
    fork = factories.restate(changed(fork, (("events",), [late[0], second, late[1], first])))
    assert fork["state"]["equivocation_count"] == 1
    fork = factories.sign_bundle(s, fork)
    common = {"keys": TEST_KEYS, "python_keys": factories.TEST_SIGNER.keyring()}
    return {
        "factory-record": Case(record, steps=RECORD_STEPS, python="record", **common),
        "factory-record-non-ascii-title": Case(sigma, python="record", **common),
        "factory-record-bidi-title": Case(bidi, python="record", **common),
        "factory-record-unordered-and-unconfirmed-aliases-with-its-state": Case(
            odd_aliases, state=record_only_state(odd_aliases), python="record", **common
        ),
        "factory-bundle": Case(
            derived_record(bundle), bundle, signed=False, steps=BUNDLE_STEPS, python="bundle", **common
        ),
        "factory-bundle-four-events-with-equivocation": Case(
            derived_record(fork), fork, signed=False, python="bundle", **common
        ),
        "factory-state-forged-and-resigned": Case(
            derived_record(forged_state),
            forged_state,
            signed=False,
            result="failed",
            failing={"state"},
            python="bundle",
            says="differs at /state/current/graph_snapshots",
            **common,
        ),
        "factory-signed-by-attacker": Case(
            derived_record(attacker_bundle),
            attacker_bundle,
            signed=False,
            result="failed",
            failing={
                "receipt-signature",
                "event-0",
                "event-1",
                "paper",
                "bundle-keys",
                "bundle-signature",
                "state",
            },
            python="bundle",
            says="not pinned key test-key-2026's",
            **common,
        ),
        "factory-impostor-key": Case(
            derived_record(impostor_bundle),
            impostor_bundle,
            signed=False,
            result="failed",
            failing={"receipt-signature", "event-0", "event-1", "paper", "bundle-signature", "state"},
            python="bundle",
            says="does not verify with the pinned key test-key-2026",
            **common,
        ),
    }


def page_cases() -> dict[str, Case]:
    """The page step: what a built record page shows against what the files say."""
    real = default_keyring()
    title, authors = R["paper"]["title"], R["paper"]["authors_text"]
    signed_authors = B["events"][1]["payload"]["graph_snapshot"]["paper"]["authors_text"]
    fingerprint = json.loads(REAL_KEYS)[0]["fingerprint_sha256_hex"]
    s = factories.TEST_SIGNER
    # a signed title holding controls and a right-to-left override: the page shows them
    # visibly (and closes the override), and the check reads them the same way
    odd = factories.record_document(s, title="Zero\x00 and feed\x0c and \u202eoverride\x7f and \x85 end")

    def aliases_plus(html: str) -> str:
        at = html.index("</ul>", html.index('id="aliases-h"'))
        row = (
            '<li><span data-fact="alias-kind">doi</span>: '
            '<a href="/x" data-fact="alias-value">10.1/forged</a></li>'
        )
        return html[:at] + row + html[at:]

    def failing(edit: Any, says: str) -> Case:
        return Case(R, shown=built_page_facts(R, real, edit), result="failed", failing={"page"}, says=says)

    return {
        "page-real-record-as-built": Case(R, shown=built_page_facts(R, real), steps=[*RECORD_STEPS, "page"]),
        "page-real-bundle-as-built": Case(
            DERIVED, B, BSTATE, signed=False, shown=built_page_facts(B, real), steps=[*BUNDLE_STEPS, "page"]
        ),
        "page-control-characters-shown-visibly": Case(
            odd, shown=built_page_facts(odd, s.keyring()), keys=TEST_KEYS, steps=[*RECORD_STEPS, "page"]
        ),
        "page-title-edited-after-the-build": failing(
            lambda h: h.replace(f">{title}<", ">Varuna: A Forged Title<"), "shows the title"
        ),
        "page-author-added-after-the-build": failing(
            lambda h: h.replace(f">{authors}<", f">{authors}, Mallory<"), "shows the authors"
        ),
        "page-alias-added-after-the-build": failing(aliases_plus, "shows the alias"),
        "page-fingerprint-edited-after-the-build": failing(
            lambda h: h.replace(f">{fingerprint}<", ">" + "0" * 32 + "<"), "signing key's fingerprint"
        ),
        "page-date-edited-after-the-build": failing(
            lambda h: h.replace('data-fact="submitted">2021-11-07<', 'data-fact="submitted">2019-11-07<'),
            "submission date",
        ),
        "page-title-no-longer-marked": failing(
            lambda h: h.replace('data-fact="title"', ""), "does not show its title"
        ),
        **{
            f"page-{fact}-no-longer-marked": failing(
                lambda h, fact=fact: h.replace(f'data-fact="{fact}"', ""), f"does not show its {fact}"
            )
            for fact in ("categories", "license")
        },
        # The authors a page marks as signed may be only those of a signed graph
        # snapshot: not those of an unsigned block the record JSON holds beside it,
        # whether a derived record (where the mirror writes none) or the resolver's
        # record document (whose paper block no signature covers).
        "page-authors-of-an-unsigned-snapshot-block-in-a-derived-record": Case(
            changed(DERIVED, (("graph_snapshot",), {"paper": {"authors_text": "Mallory Forger"}})),
            B,
            BSTATE,
            signed=False,
            shown=built_page_facts(B, real, lambda h: h.replace(f">{signed_authors}<", ">Mallory Forger<")),
            result="failed",
            failing={"page"},
            says="shows the authors",
        ),
        "page-authors-of-the-record-documents-unsigned-block-beside-a-bundle": Case(
            changed(
                DERIVED,
                (("receipt",), B["events"][0]["payload"]["receipt"]),
                (("paper", "authors_text"), "Unsigned Person"),
            ),
            B,
            BSTATE,
            shown=built_page_facts(B, real, lambda h: h.replace(f">{signed_authors}<", ">Unsigned Person<")),
            result="failed",
            failing={"page"},
            says="shows the authors",
        ),
    }


CASES: dict[str, Case] = {
    # the real documents
    "real-record": Case(R, steps=RECORD_STEPS, python="record"),
    "real-bundle-derived-record": Case(DERIVED, B, BSTATE, signed=False, steps=BUNDLE_STEPS, python="bundle"),
    "real-bundle-no-state-json": Case(DERIVED, B, signed=False, python="bundle"),
    "real-record-with-its-derived-state": Case(R, state=record_only_state(R), steps=[*RECORD_STEPS, "state"]),
    "real-record-derived-state-altered": Case(
        R,
        state=changed(record_only_state(R), (("current", "source_aliases"), [])),
        result="failed",
        failing={"state"},
        says="Merged state: state.json declares state_sha256",
    ),
    "real-record-derived-state-altered-and-rehashed": Case(
        R,
        state=(lambda st: changed(st, (("state_sha256",), state_sha256(st))))(
            changed(record_only_state(R), (("current", "source_aliases"), []))
        ),
        result="failed",
        failing={"state"},
        says="differs at /current/source_aliases",
    ),
    "derived-record-says-derived-by-as-a-string": Case(
        derived_record(B, derived_by="pith-mirror"), B, BSTATE, signed=False
    ),
    **{
        f"derived-record-paper-{what}": Case(
            changed(DERIVED, (("paper", field), value)),
            B,
            BSTATE,
            signed=False,
            result="failed",
            failing={"paper"},
            says="are not those of any signed graph snapshot in the bundle: they have been altered",
        )
        for what, field, value in [
            ("authors-altered", "authors_text", "Mallory Forger"),
            ("headline-altered", "headline", "Proves P = NP"),
            ("field-added", "retracted", True),
        ]
    },
    "derived-record-copied-receipt-altered": Case(
        changed(DERIVED, (("receipt", "signed_at"), "2030-01-01T00:00:00Z")),
        B,
        BSTATE,
        signed=False,
        result="failed",
        failing={"receipt-signature"},
        says="differs from the one in the bundle's record_created event",
    ),
    "real-key-file-is-one-object": Case(R, keys=json.dumps(json.loads(REAL_KEYS)[0]).encode()),
    "real-record-with-bundle-of-same-number": Case(
        changed(DERIVED, (("receipt",), B["events"][0]["payload"]["receipt"])), B, BSTATE, signed=True
    ),
    "title-case-and-spacing-allowed": Case(
        changed(
            R, (("paper", "title"), "VARUNA:  Scalable, Low-cost\nTraining of Massive Deep Learning Models")
        ),
        python="record",
    ),
    "title-unicode-spaces-allowed": Case(
        changed(
            R, (("paper", "title"), "\u3000" + R["paper"]["title"].replace(" ", "\t\u2003\u00a0") + "\r\n")
        ),
        python="record",
    ),
    # a record document, altered
    "record-title-joined-by-invisible-separators": Case(
        changed(R, (("paper", "title"), R["paper"]["title"].replace(" ", "\x1f", 2).replace(" ", "\x0b"))),
        result="failed",
        failing={"title"},
        python="record",
        says="has been altered",
    ),
    "record-title-altered": Case(
        changed(R, (("paper", "title"), R["paper"]["title"] + " (revised)")),
        result="failed",
        failing={"title"},
        python="record",
        says="has been altered",
    ),
    "record-snapshot-title-altered": Case(
        changed(R, (("graph_snapshot", "paper", "title"), "Another title")),
        result="failed",
        failing={"title"},
        python="record",
    ),
    "record-license-altered": Case(
        changed(R, (("canonical_record", "metadata", "license"), "CC0")),
        result="failed",
        failing={"canonical-hash", "pith-number", "receipt-signature", "aliases"},
        python="record",
        says="the record declares 33b9b5781d61d6d0",
    ),
    "record-version-is-a-float": Case(
        changed(R, (("canonical_record", "source", "version"), 2.0)),
        result="failed",
        failing={"canonical-hash", "pith-number", "receipt-signature", "aliases"},
        python="record",
    ),
    "record-receipt-flipped": Case(
        changed(R, (("receipt", "signature_b64"), flip(R["receipt"]["signature_b64"]))),
        result="failed",
        failing={"receipt-signature"},
        python="record",
        says="does not verify with the pinned key pith-v1-2026-05",
    ),
    "record-receipt-not-base64": Case(
        changed(R, (("receipt", "signature_b64"), "not*base64")),
        result="failed",
        failing={"receipt-signature"},
        python="record",
        says="not 64 bytes of standard base64",
    ),
    "record-receipt-base64-with-unused-bits-set": Case(
        changed(R, (("receipt", "signature_b64"), unused_bits_set(R["receipt"]["signature_b64"]))),
        result="failed",
        failing={"receipt-signature"},
        python="record",
        says="not 64 bytes of standard base64",
    ),
    "record-source-null": Case(
        changed(R, (("source",), None)),
        result="failed",
        failing={"canonical-hash"},
        python="record",
        says="the record's source null",
    ),
    "record-receipt-other-hash": Case(
        changed(R, (("receipt", "canonical_sha256"), "00" * 32)),
        result="failed",
        failing={"receipt-signature"},
        python="record",
    ),
    "record-alias-altered": Case(
        changed(R, (("aliases", 0, "alias_value"), "2111.04008")),
        result="failed",
        failing={"aliases"},
        python="record",
    ),
    "record-doi-alias-upper-case-is-fine": Case(
        changed(R, (("aliases", 2, "alias_value"), "10.48550/arXiv.2111.04007")),
        python="record",
    ),
    "record-source-altered": Case(
        changed(R, (("source", "version"), 3)),
        result="failed",
        failing={"canonical-hash"},
        python="record",
        says="the record's source",
    ),
    "record-short-number-altered": Case(
        changed(R, (("short_pith_number",), "pith:GO43K6A6")),
        result="failed",
        failing={"pith-number"},
        python="record",
    ),
    "page-shows-another-number": Case(
        R,
        number="pith:2021:AAAAAAAAAAAAAAAAAAAAAAAAAA",
        result="failed",
        failing={"pith-number"},
        says="this page shows",
    ),
    "record-with-duplicate-key": Case(
        RECORD_FILE.read_bytes().replace(b"{", b'{"record_type": "x",', 1),
        result="failed",
        failing={"load"},
        steps=["load"],
        says='duplicate key "record_type"',
    ),
    "record-with-nan": Case(
        RECORD_FILE.read_bytes().replace(b'"version":2', b'"version":NaN', 1),
        result="failed",
        failing={"load"},
        steps=["load"],
    ),
    "record-with-bom": Case(
        b"\xef\xbb\xbf" + RECORD_FILE.read_bytes(), result="failed", failing={"load"}, steps=["load"]
    ),
    "record-not-found": Case("HTTP 404", result="failed", failing={"load"}, steps=["load"], says="HTTP 404"),
    "record-derived-but-no-bundle": Case(
        R,
        signed=False,
        result="failed",
        failing={"receipt-signature"},
        says="no bundle",
    ),
    # the pinned key file
    "keys-pin-another-key-under-the-real-id": Case(
        R,
        keys=json.dumps([ATTACKER_REAL_ID.key_entry()]).encode(),
        result="failed",
        failing={"receipt-signature"},
        python="record",
        python_keys=keyring_from_json([ATTACKER_REAL_ID.key_entry()], "attacker"),
    ),
    "keys-wrong-fingerprint-in-key-file": Case(
        R,
        keys=json.dumps([dict(json.loads(REAL_KEYS)[0], fingerprint_sha256_hex="00" * 16)]).encode(),
        result="failed",
        failing={"keys", "receipt-signature"},
    ),
    "keys-file-empty-list": Case(R, keys=b"[]", result="failed", failing={"keys", "receipt-signature"}),
    # a bundle, altered
    "bundle-snapshot-title-altered": Case(
        DERIVED,
        changed(B, (("events", 1, "payload", "graph_snapshot", "paper", "title"), "Another title")),
        BSTATE,
        signed=False,
        result="failed",
        failing={"title", "event-1", "paper", "bundle-signature", "state"},
        python="bundle",
    ),
    "bundle-event-signature-flipped": Case(
        DERIVED,
        changed(
            B,
            (("events", 0, "signature", "signature_b64"), flip(B["events"][0]["signature"]["signature_b64"])),
        ),
        BSTATE,
        signed=False,
        result="failed",
        failing={"event-0", "bundle-signature", "state"},
        python="bundle",
    ),
    "bundle-event-receipt-flipped": Case(
        DERIVED,
        changed(
            B,
            (
                ("events", 0, "payload", "receipt", "signature_b64"),
                flip(B["events"][0]["payload"]["receipt"]["signature_b64"]),
            ),
        ),
        BSTATE,
        signed=False,
        result="failed",
        failing={"receipt-signature", "event-0", "bundle-signature", "state"},
        python="bundle",
    ),
    "bundle-event-other-subject": Case(
        DERIVED,
        changed(B, (("events", 1, "subject_pith_number"), R["pith_number"])),
        BSTATE,
        signed=False,
        result="failed",
        failing={"event-1", "paper", "bundle-signature", "state"},
        python="bundle",
    ),
    "bundle-embedded-key-replaced": Case(
        DERIVED,
        changed(B, (("public_keys", 0), ATTACKER_REAL_ID.key_entry())),
        BSTATE,
        signed=False,
        result="failed",
        failing={"bundle-keys", "bundle-signature"},
        python="bundle",
        says="proves nothing",
    ),
    "bundle-signature-flipped": Case(
        DERIVED,
        changed(B, (("bundle_signature", "signature_b64"), flip(B["bundle_signature"]["signature_b64"]))),
        BSTATE,
        signed=False,
        result="failed",
        failing={"bundle-signature"},
        python="bundle",
    ),
    "bundle-state-hash-altered": Case(
        DERIVED,
        changed(B, (("state", "state_sha256"), "0" * 64)),
        BSTATE,
        signed=False,
        result="failed",
        failing={"bundle-signature", "state"},
        python="bundle",
    ),
    "bundle-merge-version-altered": Case(
        DERIVED,
        changed(B, (("merge_version",), "other-merge")),
        BSTATE,
        signed=False,
        result="failed",
        failing={"bundle-signature", "state"},
        python="bundle",
    ),
    "state-json-altered": Case(
        DERIVED,
        B,
        changed(BSTATE, (("event_count",), 3)),
        signed=False,
        result="failed",
        failing={"state"},
        says="differs from the bundle's state at /event_count",
    ),
    "state-json-not-found": Case(
        DERIVED, B, "HTTP 404", signed=False, result="failed", failing={"load"}, steps=["load"]
    ),
    "derived-record-of-another-number": Case(
        derived_record(changed(B, (("canonical_record",), R["canonical_record"]))),
        B,
        BSTATE,
        signed=False,
        result="failed",
        failing={
            "canonical-hash",
            "pith-number",
            "receipt-signature",
            "aliases",
            "title",
            "event-0",
            "state",
        },
    ),
    "derived-record-without-derived-by": Case(
        {k: v for k, v in DERIVED.items() if k != "derived_by"},
        B,
        BSTATE,
        signed=False,
        result="failed",
        failing={"receipt-signature"},
    ),
    "derived-record-title-altered": Case(
        changed(DERIVED, (("paper", "title"), "Another title")),
        B,
        BSTATE,
        signed=False,
        result="failed",
        failing={"title", "paper"},
    ),
    # browsers without Ed25519 (or without Web Crypto at all, on plain HTTP)
    "no-ed25519-record": Case(R, crypto="no-ed25519", result="unsupported"),
    "no-ed25519-bundle": Case(DERIVED, B, BSTATE, signed=False, crypto="no-ed25519", result="unsupported"),
    "no-web-crypto-bundle": Case(DERIVED, B, BSTATE, signed=False, crypto="no-subtle", result="unsupported"),
    "no-web-crypto-hashes-still-checked": Case(
        changed(R, (("paper", "title"), "Another title")),
        crypto="no-subtle",
        result="failed",
        failing={"title"},
    ),
    "no-ed25519-cannot-see-a-bad-signature": Case(
        changed(R, (("receipt", "signature_b64"), flip(R["receipt"]["signature_b64"]))),
        crypto="no-ed25519",
        result="unsupported",
    ),
    **factory_cases(),
    **page_cases(),
}


@pytest.fixture(scope="module")
def answers(run_node) -> dict[str, dict[str, Any]]:
    names = list(CASES)
    results = run_node("run_verify.js", {"cases": [CASES[n].request() for n in names]})
    return dict(zip(names, results, strict=True))


@pytest.mark.parametrize("name", list(CASES))
def test_case(answers, name):
    case, answer = CASES[name], answers[name]
    steps = answer["steps"]
    by_id = {s["id"]: s for s in steps}
    assert answer["result"] == case.result, (answer["summary"], steps)
    failing = {s["id"] for s in steps if s["ok"] is False}
    assert failing == case.failing, [s["text"] for s in steps if s["ok"] is not True]
    if case.steps is not None:
        assert [s["id"] for s in steps] == case.steps
    if case.result == "verified":
        keys = json.loads(case.keys)
        key = keys[0] if isinstance(keys, list) else keys
        fingerprint = hashlib.sha256(base64.b64decode(key["public_key_b64"])).hexdigest()[:32]
        assert answer["summary"].startswith(
            f"Verified: these files are signed by key {key['key_id']}, fingerprint {fingerprint}"
        )
        assert all(s["ok"] is True for s in steps)
    elif case.result == "failed":
        first = next(s for s in steps if s["ok"] is False)
        assert answer["summary"] == "Not verified: " + first["text"]
        assert case.says in first["text"], first["text"]
    else:
        assert answer["summary"].startswith("Partly verified")
        unsupported = {s["id"] for s in steps if s["ok"] == "unsupported"}
        assert "receipt-signature" in unsupported
        assert unsupported <= {"receipt-signature", "bundle-signature"} | {
            i for i in by_id if i.startswith("event-")
        }
        assert "cannot check Ed25519 signatures; hashes were checked" in by_id["receipt-signature"]["text"]


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.python])
def test_python_verifier_agrees(answers, name):
    """generator.trust.verify reaches the same verdict on the record or bundle document."""
    case = CASES[name]
    doc = case.record if case.python == "record" else case.bundle
    raw = as_bytes(doc)
    keyring = case.python_keys or default_keyring()
    verdict, _ = verify_document(
        SourceDocument(file="doc.json", raw=raw, data=decode(raw, Limits())), keyring
    )
    js_ok = answers[name]["result"] == "verified"
    assert verdict.ok == js_ok, [p.message for p in verdict.problems]


def test_real_sentences(answers):
    """The plain-words sentences a reader sees, on the real documents."""
    record = {s["id"]: s["text"] for s in answers["real-record"]["steps"]}
    assert record["canonical-hash"] == (
        "Canonical hash: the canonical record hashes to 33b9b5781d61d6d0…, as the record says"
    )
    assert record["pith-number"] == (
        "Pith number: derived from the hash, matches pith:2021:GO43K6A5MHLNBUADUVZ3AKFBNI"
        " (short form pith:GO43K6A5)"
    )
    assert record["receipt-signature"] == (
        "Receipt signature: verifies with the pinned key pith-v1-2026-05"
        " (fingerprint 8d4b5ee74e4693bcd1df2446408b0d54)"
    )
    page = {s["id"]: s["text"] for s in answers["page-real-record-as-built"]["steps"]}["page"]
    assert page.startswith("This page: the ") and page.endswith(" are those of the verified files")
    assert answers["page-real-record-as-built"]["summary"] == (
        "Verified: these files are signed by key pith-v1-2026-05,"
        " fingerprint 8d4b5ee74e4693bcd1df2446408b0d54,"
        " and this page shows what they say. The key file came from this mirror: compare that fingerprint"
        " with the key the Pith resolver publishes (linked above) to know whether the resolver signed them."
    )
    assert record["title"].startswith("Title: “Varuna: Scalable, Low-cost Training")
    bundle = {s["id"]: s["text"] for s in answers["real-bundle-derived-record"]["steps"]}
    assert bundle["event-0"] == "Event 1 (record_created): hash and signature verify"
    assert bundle["event-1"] == "Event 2 (graph_snapshot): hash and signature verify"
    assert bundle["receipt-signature"].endswith("taken from the bundle's record_created event")
    assert bundle["bundle-signature"] == "Bundle signature: verifies with the pinned key pith-v1-2026-05"
    assert bundle["state"].startswith("Merged state: state.json equals the bundle's state;")
    assert "a4163a30e8828a51" in bundle["state"]


def test_an_override_a_title_opens_is_closed_before_the_verdict_s_own_words(answers):
    """A signed title ending in RIGHT-TO-LEFT OVERRIDE would reverse "matches
    title_canon_sha256 ..." after it, as a browser draws the step."""
    title = {s["id"]: s["text"] for s in answers["factory-record-bidi-title"]["steps"]}["title"]
    assert "overrides \u202e\u202c” matches title_canon_sha256" in title


def test_fallback_sha256_and_base32(run_node):
    """The plain-JS SHA-256 (used without Web Crypto) and base32 agree with Python."""
    samples = [os.urandom(n) for n in (*range(0, 140), 1000, 4096, 65537)] + [b"abc", b"\xff" * 64]
    samples.append(os.urandom(1 << 20))
    enc = [base64.b64encode(s).decode("ascii") for s in samples]
    got = run_node("run_helpers.js", {"sha256": enc, "base32": enc[:80]})
    assert got["sha256"] == [hashlib.sha256(s).hexdigest() for s in samples]
    assert got["base32"] == [b32(s) for s in samples[:80]]
