#!/usr/bin/env python3
"""What listing a large store costs: the same N objects listed page after page
(`Storage.list`) and in ranges listed at once (`Storage.list_cut`).

    python bench/listing.py --records 20000 [--latency MS] [--rounds K] [--out FILE]

What one run does (see bench/README.md):
1. names N objects as `pull` names documents (`<body>.bundle.json`, the bodies of N bench
   bundles, spread over base32);
2. serves their listing on loopback as S3 answers `ListObjectsV2` (pages of at most 1,000
   keys, `prefix`, `start-after`, continuation tokens), each request held --latency ms
   (default 50) in its own thread, as a store's fleet answers requests side by side.
   Not moto: moto builds each page in Python, about 140 ms of its own CPU a page here
   whatever the bucket's size, one page at a time, so it would measure moto. (The
   tests check the ranges against moto's S3, tests/publish/test_storage_listing.py.)
3. K rounds, alternating which goes first: the objects listed page after page, and in
   ranges cut at the body's first character (a content store's listing, as `build`,
   `verify` and `pull` make it), through the project's S3 storage (obstore);
4. checks that both listings name every object once; prints a table; writes JSON
   (default bench/results/listing.json); exits 1 if a check failed.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import json
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # (the loopback HTTP server the tests use: tests/netkit.py)

from netkit import http_server  # noqa: E402

from bench import corpus  # noqa: E402
from bench.measure import loadavg, machine  # noqa: E402

PAGE = 1000
"""Keys S3 answers at most in one listing request."""


class Listing:
    """The keys of one bucket, in order, and the listing requests made of them."""

    def __init__(self, keys: list[str], latency: float) -> None:
        self.keys, self.latency = sorted(keys), latency
        self.requests = 0
        self.lock = threading.Lock()

    def page(self, query: dict[str, list[str]]) -> bytes:
        with self.lock:
            self.requests += 1
        time.sleep(self.latency)
        prefix = query.get("prefix", [""])[0]
        after = query.get("continuation-token", query.get("start-after", [""]))[0]
        at = bisect.bisect_right(self.keys, after) if after else bisect.bisect_left(self.keys, prefix)
        found: list[str] = []
        while at < len(self.keys) and len(found) <= PAGE and self.keys[at].startswith(prefix):
            found.append(self.keys[at])
            at += 1
        truncated, found = len(found) > PAGE, found[:PAGE]
        contents = "".join(
            f"<Contents><Key>{escape(key)}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
            f"<ETag>&quot;99914b932bd37a50b983c5e7c90ae93b&quot;</ETag><Size>2</Size>"
            "<StorageClass>STANDARD</StorageClass></Contents>"
            for key in found
        )
        token = f"<NextContinuationToken>{escape(found[-1])}</NextContinuationToken>" if truncated else ""
        return (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            f"<Name>bench</Name><Prefix>{escape(prefix)}</Prefix><KeyCount>{len(found)}</KeyCount>"
            f"<MaxKeys>{PAGE}</MaxKeys><IsTruncated>{'true' if truncated else 'false'}</IsTruncated>"
            f"{contents}{token}</ListBucketResult>"
        ).encode()


@contextlib.contextmanager
def serve(listing: Listing) -> Iterator[str]:
    """`listing` as an S3 endpoint on loopback (listing requests only); its URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # (quiet)
            pass

        def do_GET(self) -> None:
            query = parse_qs(urlsplit(self.path).query)
            if query.get("list-type") != ["2"]:
                self.send_error(501, "listing only")
                return
            body = listing.page(query)
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with http_server(Handler) as url:
        yield url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/listing.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20000, metavar="N", help="objects: one bundle each")
    parser.add_argument("--latency", type=float, default=50.0, metavar="MS", help="held per listing request")
    parser.add_argument("--rounds", type=int, default=3, metavar="K")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "listing.json")
    args = parser.parse_args(argv)

    from generator.publish.storage import open_storage
    from generator.trust.model import BODY_CHARACTERS

    results: dict[str, Any] = {"objects": args.records, "latency_ms": args.latency}
    results["machine"], results["load_before"] = machine(), loadavg()
    names = [f"{corpus.make_bundle(index)[0]}.bundle.json" for index in range(args.records)]
    listing = Listing([f"mirror/content/{name}" for name in names], args.latency / 1000)
    rows: dict[str, list[tuple[float, int]]] = {"pages": [], "ranges": []}
    same = True
    with serve(listing) as endpoint:
        options = {
            "endpoint": endpoint,
            "region": "us-east-1",
            "access_key_id": "bench",
            "secret_access_key": "bench",
            "virtual_hosted_style_request": "false",
        }
        storage = open_storage("s3://bench/mirror/content/", options=options)
        for round_ in range(args.rounds):
            for way in ("pages", "ranges") if round_ % 2 == 0 else ("ranges", "pages"):
                listing.requests = 0
                started = time.monotonic()
                found = list(storage.list()) if way == "pages" else storage.list_cut("", BODY_CHARACTERS)
                rows[way].append((time.monotonic() - started, listing.requests))
                same = same and sorted(stored.key for stored in found) == sorted(names)
    for way, row in rows.items():
        results[way] = {"seconds": [round(s, 3) for s, _ in row], "requests": row[0][1]}
    results["same_keys"] = same
    results["load_after"] = loadavg()

    page, cut = (statistics.median(s for s, _ in rows[way]) for way in ("pages", "ranges"))
    print(f"\n{args.records:,} objects, each listing request held {args.latency:g} ms\n")
    print(f"{'listing':<8} {'median s':>9} {'requests':>9}")
    for way, seconds in (("pages", page), ("ranges", cut)):
        print(f"{way:<8} {seconds:>9.2f} {results[way]['requests']:>9}")
    print(f"\nranges: {page / cut:.1f}x as fast; every object listed once by both: {same}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", "utf-8")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
