"""The mirror manifest lists exactly the published records, with hashes recomputed here from the files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from generator.canonical import canonical_json
from generator.manifest import MANIFEST_PATH, read_published

from .conftest import BUNDLE_BODY, BUNDLE_NUMBER, RECORD_BODY, RECORD_NUMBER


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_manifest_lists_exactly_the_published_records(built_site: Path) -> None:
    manifest = json.loads((built_site / MANIFEST_PATH).read_bytes())
    report = json.loads((built_site / "report.json").read_bytes())
    numbers = [r["pith_number"] for r in manifest["records"]]
    assert numbers == sorted(numbers) == sorted(report["published"]) == [BUNDLE_NUMBER, RECORD_NUMBER]
    assert manifest["record_count"] == 2
    record_files = sorted(p.name for p in (built_site / "pith").glob("*.json"))
    assert record_files == sorted(f"{n.rsplit(':', 1)[1]}.json" for n in numbers)
    assert set(read_published(built_site)) == set(numbers)


def test_every_hash_matches_the_published_files(built_site: Path) -> None:
    manifest = json.loads((built_site / MANIFEST_PATH).read_bytes())
    for entry in manifest["records"]:
        body = entry["pith_number"].rsplit(":", 1)[1]
        record = built_site / "pith" / f"{body}.json"
        assert entry["record_sha256"] == sha(record)
        canonical = json.loads(record.read_bytes())["canonical_record"]
        assert entry["canonical_sha256"] == hashlib.sha256(canonical_json(canonical)).hexdigest()

        state = json.loads((built_site / "pith" / body / "state.json").read_bytes())
        unhashed = {k: v for k, v in state.items() if k != "state_sha256"}
        assert (
            entry["state_sha256"]
            == state["state_sha256"]
            == hashlib.sha256(canonical_json(unhashed)).hexdigest()
        )
        assert entry["event_count"] == state["event_count"]

        bundle = built_site / "pith" / body / "bundle.json"
        if body == BUNDLE_BODY:
            assert (
                entry["bundle_sha256"]
                == sha(bundle)
                == sha(built_site / ".well-known/pith" / body / "bundle.json")
            )
            document = json.loads(bundle.read_bytes())
            assert entry["event_count"] == len(document["events"]) == 2
            assert entry["key_ids"] == sorted({k["key_id"] for k in document["public_keys"]})
        else:
            assert body == RECORD_BODY
            assert entry["bundle_sha256"] is None and not bundle.exists()
