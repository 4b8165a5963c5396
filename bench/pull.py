#!/usr/bin/env python3
"""Performance of `pith-mirror pull`: N documents from a mirror on a loopback port.

    python bench/pull.py --records 20000 [--jobs 8] [--build-jobs J] [--out results.json]

What one run does (see bench/README.md):
1. writes N deterministic signed bundles (bench/corpus.py) and the bench key
   into /dev/shm/pith-pull-bench-<pid>/ (a temp dir if there is no /dev/shm);
2. builds them into a site with `python -m generator build` (not timed here:
   bench/run.py measures builds);
3. serves that site over HTTP/1.1 with keep-alive on 127.0.0.1, port 0,
   counting the requests;
4. times `python -m generator pull --all` into an empty content folder (start-up
   included): documents written per second, requests made;
5. times the same pull again with nothing changed: the target is the manifest
   alone (its index and each shard it names) and no document fetched;
6. prints the results and writes them as JSON; removes every folder it made.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing import Pool
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import corpus  # noqa: E402


class Counting(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    count = 0
    documents = 0
    lock = threading.Lock()

    def do_GET(self) -> None:
        with Counting.lock:
            Counting.count += 1
            if self.path.endswith((".json",)) and "/pith/" in self.path and "mirror.json" not in self.path:
                Counting.documents += 1
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _write(args: tuple[Path, int]) -> None:
    folder, index = args
    body, data = corpus.make_bundle(index)
    (folder / f"{body}.bundle.json").write_bytes(data)


def run(command: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, done


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--records", type=int, required=True, metavar="N", help="how many bundles the source mirror serves"
    )
    parser.add_argument("--jobs", type=int, default=8, metavar="J", help="pull's --jobs (default 8)")
    parser.add_argument(
        "--build-jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="J",
        help="--jobs of the build that makes the source site (default: all cores)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO / "bench" / "results" / "pull.json",
        metavar="FILE",
        help="results as JSON (default bench/results/pull.json)",
    )
    args = parser.parse_args()

    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(prefix="pith-pull-bench-", dir=shm if shm.is_dir() else None))
    try:
        origin, site, pulled, keys = base / "origin", base / "site", base / "pulled", base / "keys.json"
        origin.mkdir()
        print(f"bench: writing {args.records:,} signed bundles into {origin} ...", file=sys.stderr)
        with Pool(max(1, os.cpu_count() or 1)) as pool:
            pool.map(_write, [(origin, i) for i in range(args.records)], chunksize=200)
        corpus.write_keys(keys)
        print("bench: building the mirror to pull from ...", file=sys.stderr)
        build = [sys.executable, "-m", "generator", "build", "--keys", str(keys), str(origin), str(site)]
        _, done = run([*build, "--quiet", "--jobs", str(args.build_jobs)])
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return 1
        server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Counting, directory=str(site)))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        pull = [sys.executable, "-m", "generator", "pull", "--all", "--from", url, "--content", str(pulled)]
        pull += ["--keys", str(keys), "--rate", "0", "--jobs", str(args.jobs), "--quiet"]

        print(f"bench: pull --all of {args.records:,} numbers from {url} ...", file=sys.stderr)
        cold, done = run(pull)
        if done.returncode != 0:
            print(done.stdout, done.stderr, file=sys.stderr)
            return 1
        cold_requests, cold_documents = Counting.count, Counting.documents
        written = sum(1 for p in pulled.iterdir() if not p.name.startswith("."))

        Counting.count = Counting.documents = 0
        again, done = run(pull)
        if done.returncode != 0:
            print(done.stdout, done.stderr, file=sys.stderr)
            return 1
        server.shutdown()
        results = {
            "records": args.records,
            "jobs": args.jobs,
            "cpus": os.cpu_count(),
            "loadavg": os.getloadavg(),
            "cold_pull_seconds": round(cold, 2),
            "documents_written": written,
            "documents_per_second": round(written / cold, 1),
            "cold_requests": cold_requests,
            "cold_document_requests": cold_documents,
            "no_change_pull_seconds": round(again, 2),
            "no_change_requests": Counting.count,
            "no_change_document_requests": Counting.documents,
            "summary_line": done.stdout.strip(),
        }
        print(json.dumps(results, indent=2))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        index = json.loads((site / ".well-known/pith/mirror.json").read_bytes())
        manifest_requests = 1 + len(index.get("shards", []))
        results["manifest_requests"] = manifest_requests
        fetched = results["no_change_document_requests"]
        ok = results["no_change_requests"] == manifest_requests and fetched == 0
        target = f"{manifest_requests} requests, the manifest's index and shards, and no document"
        print(f"no-change re-pull: {'met' if ok else 'MISSED'} (target: {target})")
        return 0 if ok else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
