"""Refusals grouped by cause (`generator.trust.causes`): one cause per document, chosen
from the problems the real verifier finds in real signed documents."""

from __future__ import annotations

from typing import Any

import factories as f

from generator.trust.causes import EXAMPLES, by_cause, cause_of, pinned_names, terminal_lines
from generator.trust.errors import Code, Rejection
from generator.trust.keys import Keyring, default_keyring

REAL = default_keyring()
PINNED = pinned_names(REAL)


def rejections(doc: Any, name: str, keyring: Keyring) -> list[Rejection]:
    result = f.verdict(doc, keyring)
    assert not result.ok
    return [Rejection(name, p.pointer, p.code, p.message) for p in result.problems]


def test_bundles_signed_by_a_key_not_pinned_are_one_cause_naming_the_key() -> None:
    """The issue's case: thousands of bundles built without the right --keys gave 13
    lines each. Now: one cause, naming the key and its fingerprint, and how to pin it."""
    found = [r for i in range(5) for r in rejections(f.bundle(), f"content/b{i}.json", REAL)]
    assert len(found) >= 5 * 10
    (cause,) = by_cause(found, PINNED)
    assert cause.code is Code.KEY_NOT_PINNED
    assert [r.file for r in cause.files] == [f"content/b{i}.json" for i in range(5)]
    assert f.TEST_KEY_ID in cause.message and f.TEST_SIGNER.fingerprint_hex in cause.message
    assert "--keys FILE" in cause.hint and "content/b0.json" in cause.hint
    assert "pith-v1-2026-05, fingerprint 8d4b5ee74e4693bc" in cause.hint
    assert all(r.more >= 9 for r in cause.files)


def test_two_foreign_keys_are_two_causes() -> None:
    found = rejections(f.bundle(), "content/a.json", REAL)
    found += rejections(f.bundle(signer=f.SECOND_SIGNER), "content/b.json", REAL)
    causes = by_cause(found, PINNED)
    assert [c.code for c in causes] == [Code.KEY_NOT_PINNED, Code.KEY_NOT_PINNED]
    assert {c.files[0].file for c in causes} == {"content/a.json", "content/b.json"}


def test_an_edited_title_is_the_cause_not_the_hashes_and_signatures_it_breaks() -> None:
    doc = f.bundle()
    doc["events"][1]["payload"]["graph_snapshot"]["paper"]["title"] = "Forged"
    found = rejections(doc, "content/x.json", f.TEST_SIGNER.keyring())
    broken = {Code.EVENT_HASH_MISMATCH, Code.BUNDLE_BAD_SIGNATURE, Code.STATE_MISMATCH}
    assert broken <= {r.code for r in found}
    cause = cause_of(found)
    assert cause.code is Code.TITLE_MISMATCH
    assert cause.pointer == "/events/1/payload/graph_snapshot/paper/title"
    (group,) = by_cause(found, PINNED)
    assert group.files[0].more == len(found) - 1
    assert "changed after the resolver signed it" in group.hint


def test_a_flipped_event_signature_is_the_cause_not_the_state_it_changes() -> None:
    doc = f.bundle()
    signature = doc["events"][0]["signature"]
    signature["signature_b64"] = f.flip_signature_byte(signature["signature_b64"])
    found = rejections(doc, "content/x.json", f.TEST_SIGNER.keyring())
    assert {Code.STATE_MISMATCH, Code.BUNDLE_HASH_MISMATCH} <= {r.code for r in found}
    cause = cause_of(found)
    assert (cause.code, cause.pointer) == (Code.EVENT_BAD_SIGNATURE, "/events/0/signature/signature_b64")


def test_an_edited_state_is_named_by_its_own_hash() -> None:
    doc = f.bundle()
    doc["state"]["valid_event_count"] = 5
    found = rejections(doc, "content/x.json", f.TEST_SIGNER.keyring())
    assert cause_of(found).code is Code.STATE_HASH_MISMATCH


def test_the_terminal_names_a_few_files_and_counts_the_rest() -> None:
    found = [r for i in range(EXAMPLES + 4) for r in rejections(f.bundle(), f"content/b{i:02}.json", REAL)]
    found += [Rejection("content/cut.json", "", Code.JSON_INVALID, "the file ends early, after 9 bytes")]
    lines = terminal_lines(by_cause(found, PINNED), "site/report.json")
    assert lines[0].startswith(f"refused {EXAMPLES + 5:,} file(s) for 2 cause(s)")
    assert "site/report.json" in lines[0]
    assert lines[1].startswith(f"key.not_pinned: {EXAMPLES + 4} file(s): ")
    assert f.TEST_SIGNER.fingerprint_hex in lines[1]
    assert lines[2].startswith("  hint: ")
    named = [line for line in lines if line.startswith("  content/b")]
    assert len(named) == EXAMPLES
    assert named[0].startswith("  content/b00.json: /public_keys/0/public_key_b64: key.not_pinned: ")
    assert "more problem(s) that follow from it" in named[0]
    assert "  ... and 4 more file(s) with this cause" in lines
    assert "  content/cut.json: json.invalid: the file ends early, after 9 bytes" in lines
    assert len(lines) == 1 + (2 + EXAMPLES + 1) + (2 + 1)


def test_a_file_name_with_a_control_character_stays_on_one_line() -> None:
    found = [Rejection("content/a\nfake: ok.json", "", Code.JSON_INVALID, "x\x1b[2J")]
    lines = terminal_lines(by_cause(found, PINNED), "site/report.json")
    assert all("\n" not in line and "\x1b" not in line for line in lines)


def test_nothing_refused_prints_nothing() -> None:
    assert terminal_lines(by_cause([], PINNED), "site/report.json") == []
