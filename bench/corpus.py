"""Deterministic, realistic signed bundles for benchmarks (not for tests).

Each bundle has the shape of a real resolver bundle (record_created and
graph_snapshot events, six aliases, the merged state, a bundle signature),
signed with a fixed benchmark key. Titles, authors and abstracts come from a
seeded random generator, so the same N always gives the same bytes.

Run alone, it writes N such bundles into a folder's content/ and the key that
signed them into bench-keys.json beside it: a corpus to try the mirror on, such
as `pith-mirror build --keys OUT/bench-keys.json OUT/content OUT/site`, or
without `--keys`, to see thousands of files refused for one cause.
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

from nacl.signing import SigningKey

from generator.trust.canonical import b32, canonical_digest
from generator.trust.merge import merge

BENCH_SEED = bytes.fromhex("be" * 32)
KEY_ID = "bench-key-1"
WORDS = [
    "scalable",
    "distributed",
    "training",
    "deep",
    "learning",
    "public",
    "cloud",
    "clusters",
    "quantum",
    "field",
    "theory",
    "gravitational",
    "waves",
    "neutron",
    "stars",
    "graph",
    "neural",
    "networks",
    "protein",
    "folding",
    "sparse",
    "attention",
    "reinforcement",
    "bounds",
    "convex",
    "optimization",
    "lattice",
    "gauge",
    "symmetry",
    "inflation",
    "dark",
    "matter",
    "topological",
    "insulators",
    "superconductivity",
    "bayesian",
    "inference",
    "causal",
    "discovery",
    "robust",
]
NAMES = [
    "Ada",
    "Bo",
    "Chen",
    "Dara",
    "Eli",
    "Farah",
    "Goran",
    "Hana",
    "Ivo",
    "Jun",
    "Kofi",
    "Lena",
    "Mika",
    "Nour",
    "Omar",
    "Pia",
    "Rui",
    "Sana",
    "Teo",
    "Uma",
]
CATS = ("cs.DC", "cs.LG", "hep-th", "gr-qc", "quant-ph", "math.OC", "astro-ph.CO", "cond-mat.str-el")


def key() -> SigningKey:
    return SigningKey(BENCH_SEED)


def key_entry() -> dict[str, Any]:
    public = bytes(key().verify_key)
    digest = hashlib.sha256(public).digest()
    return {
        "key_id": KEY_ID,
        "algorithm": "ed25519",
        "format": "raw",
        "public_key_b64": base64.b64encode(public).decode(),
        "public_key_hex": public.hex(),
        "fingerprint_sha256_b32_first128bits": b32(digest)[:26],
        "fingerprint_sha256_hex": digest[:16].hex(),
        "rotates_at": None,
    }


@functools.lru_cache(maxsize=1)
def _fingerprint() -> str:
    return str(key_entry()["fingerprint_sha256_hex"])


def _sign(digest: bytes) -> str:
    return base64.b64encode(key().sign(digest).signature).decode()


def make_bundle(index: int) -> tuple[str, bytes]:
    """The `index`-th benchmark bundle: (26-char body, bytes)."""
    rng = random.Random(index)
    year = 2000 + index % 26
    arxiv_id = f"{year % 100:02d}{rng.randint(1, 12):02d}.{index:05d}"
    title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 12))).capitalize()
    authors = ", ".join(f"{rng.choice(NAMES)} {rng.choice(NAMES)}son" for _ in range(rng.randint(1, 12)))
    abstract = " ".join(rng.choice(WORDS) for _ in range(90))[:600]
    cats = sorted(rng.sample(CATS, 2))
    submitted = f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:17:29Z"
    canonical: dict[str, Any] = {
        "source": {"id": arxiv_id, "kind": "arxiv", "version": 1 + index % 3},
        "metadata": {
            "license": "http://arxiv.org/licenses/nonexclusive-distrib/1.0/",
            "primary_cat": cats[0],
            "submitted_at": submitted,
            "cross_cats_sorted": cats[1:],
            "title_canon_sha256": hashlib.sha256(title.lower().encode()).hexdigest(),
            "abstract_canon_sha256": hashlib.sha256(abstract.encode()).hexdigest(),
        },
        "schema_version": "1.0",
    }
    digest = canonical_digest(canonical)
    body = b32(digest)[:26]
    number = f"pith:{year}:{body}"
    entry = key_entry()
    fp = entry["fingerprint_sha256_hex"]
    receipt = {
        "kind": "pith_receipt",
        "key_id": KEY_ID,
        "algorithm": "ed25519",
        "signed_at": "2026-07-05T01:44:30.606701Z",
        "signature_b64": _sign(digest),
        "signed_message": "canonical_sha256_bytes",
        "builder_version": "pith-number-builder-2026-05-17-v1",
        "receipt_version": "0.3",
        "canonical_sha256": digest.hex(),
        "first_computed_at": "2026-07-05T01:44:30.606213Z",
        "public_key_fingerprint": fp,
    }
    source = canonical["source"]
    version = source["version"]
    aliases = [
        {"alias_kind": "arxiv", "alias_value": arxiv_id, "created_at": "2026-07-05T01:44:30Z"},
        {
            "alias_kind": "arxiv_version",
            "alias_value": f"{arxiv_id}v{version}",
            "created_at": "2026-07-05T01:44:30Z",
        },
        {
            "alias_kind": "doi",
            "alias_value": f"10.48550/arxiv.{arxiv_id}",
            "created_at": "2026-07-05T01:44:30Z",
        },
        *(
            {"alias_kind": f"pith_short_{n}", "alias_value": body[:n], "created_at": "2026-07-05T01:44:30Z"}
            for n in (12, 16, 8)
        ),
    ]
    signer = {
        "signer_id": "pith.science",
        "signer_type": "pith_registry",
        "key_id": KEY_ID,
        "public_key_fingerprint": fp,
    }
    snapshot = {
        "paper": {
            "title": title,
            "license": canonical["metadata"]["license"],
            "headline": "",
            "cross_cats": cats[1:],
            "primary_cat": cats[0],
            "authors_text": authors,
            "submitted_at": submitted,
            "abstract_excerpt": abstract,
        },
        "claims": {"count": 0, "items": [], "snapshot_sha256": "0" * 64},
        "source": source,
        "integrity": {"clean": True, "endpoint": f"/pith/{arxiv_id}/integrity.json", "findings": []},
        "references": {"count": 0, "sample": [], "resolved_work": 0},
        "builder_version": "pith-number-builder-2026-05-17-v1",
    }
    events = []
    for event_type, target, payload in (
        (
            "record_created",
            "record",
            {
                "canonical_record": canonical,
                "canonical_sha256": digest.hex(),
                "receipt": receipt,
                "source_kind": "arxiv",
                "source_id": arxiv_id,
                "source_version": version,
                "attestation_state": "computed",
            },
        ),
        ("graph_snapshot", "graph", {"graph_snapshot": snapshot, "verdict_id": None}),
    ):
        events.append(
            signed_event(
                {
                    "event_type": event_type,
                    "subject_pith_number": number,
                    "target": target,
                    "payload": payload,
                    "signer": signer,
                    "created_at": "2026-07-05T01:44:30Z",
                    "supersedes": [],
                    "prev_event": None,
                    "schema_version": "1.0",
                },
                "2026-07-08T18:08:17.334834Z",
            )
        )
    bundle: dict[str, Any] = {
        "bundle_type": "pith_open_graph_bundle",
        "bundle_version": "1.0",
        "pith_number": number,
        "short_pith_number": f"pith:{body[:8]}",
        "canonical_record": canonical,
        "canonical_sha256": digest.hex(),
        "source": source,
        "source_aliases": aliases,
        "events": events,
        "timestamp_proofs": [],
        "public_keys": [entry],
        "merge_version": "pith-open-graph-merge-v1",
        "built_at": "2026-07-08T18:08:17Z",
    }
    return body, sign_bundle(bundle, "2026-07-08T18:08:17.337562Z")


def signed_event(event: dict[str, Any], signed_at: str) -> dict[str, Any]:
    """`event` with its signature, content hash and id (SPEC.md: the hash is over
    the event without signature, content_sha256 and event_id)."""
    digest = canonical_digest(event)
    return {
        **event,
        "signature": {
            "signature_status": "signed_v1",
            "algorithm": "ed25519",
            "key_id": KEY_ID,
            "public_key_fingerprint": _fingerprint(),
            "signature_b64": _sign(digest),
            "signed_message": "open_graph_event_sha256_bytes",
            "signed_at": signed_at,
        },
        "content_sha256": digest.hex(),
        "event_id": "sha256:" + digest.hex(),
    }


def sign_bundle(bundle: dict[str, Any], signed_at: str) -> bytes:
    """The bundle's bytes, with its merged state recomputed and its signature over
    the whole (bundle_sha256 is over the bundle without its signature)."""
    bundle = {k: v for k, v in bundle.items() if k not in ("state", "bundle_signature")}
    bundle["state"] = merge(
        bundle["pith_number"], bundle["canonical_record"], bundle["source_aliases"], bundle["events"]
    )
    digest = canonical_digest(bundle)
    bundle["bundle_signature"] = {
        "signature_status": "signed_v1",
        "algorithm": "ed25519",
        "key_id": KEY_ID,
        "public_key_fingerprint": _fingerprint(),
        "signature_b64": _sign(digest),
        "signed_message": "bundle_sha256_bytes",
        "signed_at": signed_at,
        "bundle_sha256": digest.hex(),
    }
    return json.dumps(bundle, ensure_ascii=False, separators=(",", ":")).encode()


def write_keys(path: Path) -> None:
    path.write_text(json.dumps([key_entry()], indent=2) + "\n")


def changed_bundle(raw: bytes, stamp: int) -> bytes:
    """The same Pith number with one more signed event (a timestamp_anchor), re-merged
    and re-signed as the corpus is signed. A reader of the changed record page sees
    "anchored"."""
    bundle = json.loads(raw)
    number = bundle["pith_number"]
    proof = base64.b64encode(canonical_digest({"bench": stamp, "n": number})).decode()
    when = f"2026-07-09T00:00:{stamp % 60:02d}Z"
    event = {
        "event_type": "timestamp_anchor",
        "subject_pith_number": number,
        "target": "record",
        "payload": {
            "anchor_kind": "opentimestamps",
            "canonical_sha256": bundle["canonical_sha256"],
            "ots_proof_b64": proof,
            "anchored_at": when,
        },
        "signer": {
            "signer_id": "pith.science",
            "signer_type": "pith_registry",
            "key_id": KEY_ID,
            "public_key_fingerprint": key_entry()["fingerprint_sha256_hex"],
        },
        "created_at": when,
        "supersedes": [],
        "prev_event": None,
        "schema_version": "1.0",
    }
    bundle["events"].append(signed_event(event, "2026-07-09T00:00:01.000000Z"))
    bundle["built_at"] = "2026-07-09T00:00:02Z"
    return sign_bundle(bundle, "2026-07-09T00:00:02.000000Z")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/corpus.py",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n")[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--records", type=int, required=True, metavar="N", help="how many signed bundles")
    parser.add_argument(
        "out", type=Path, metavar="OUT", help="a new or empty folder for content/ and bench-keys.json"
    )
    args = parser.parse_args(argv)
    if args.records < 1:
        parser.error("--records must be at least 1")
    content = args.out / "content"
    if content.exists() and any(content.iterdir()):
        parser.error(f"{content} is not empty: the corpus goes into a new folder")
    content.mkdir(parents=True, exist_ok=True)
    for index in range(args.records):
        body, data = make_bundle(index)
        (content / f"{body}.bundle.json").write_bytes(data)
    write_keys(args.out / "bench-keys.json")
    print(f"{args.records:,} bundles in {content}, signed by the key in {args.out / 'bench-keys.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
