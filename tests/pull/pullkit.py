"""Helpers for the tests of `pull`: a small signed corpus, a built site, and a real
HTTP server on a loopback port that serves it, with routes a test can make misbehave.

The corpus: the two real resolver documents, and test-key documents from
`tests/factories.py` (a record document, and a bundle that exists in an older
form with two events and a newer one with three). Sites are built with the
real CLI; `pull` runs through `generator.commands.cli.main`, in process, unless a test
must kill it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import factories as f  # noqa: E402
from netkit import http_server  # noqa: E402

from generator.commands.cli import main  # noqa: E402
from generator.trust.keys import default_keyring, keyring_from_json  # noqa: E402
from generator.trust.load import Limits, decode  # noqa: E402
from generator.trust.verify import verify_document  # noqa: E402

REPO = TESTS.parent
CONTENT = REPO / "content"
KEYS = [*(dict(k.entry) for k in default_keyring().keys), f.TEST_SIGNER.key_entry()]
KEYRING = keyring_from_json(KEYS, "real + test")

RECORD = f.canonical_record(source_id="2101.00001", title="A Record Only")
GROWN = f.canonical_record(
    source_id="2102.00002", title="A Bundle That Grows", submitted_at="2021-02-03T04:05:06Z"
)


def older_bundle() -> dict[str, Any]:
    """GROWN's bundle with two events (record_created, graph_snapshot)."""
    return f.bundle(record=GROWN, title="A Bundle That Grows")


def newer_bundle() -> dict[str, Any]:
    """GROWN's bundle with a third, later event: a superset of `older_bundle`."""
    first, second = older_bundle()["events"]
    third = f.graph_snapshot_event(
        f.TEST_SIGNER,
        GROWN,
        "A Bundle That Grows",
        created_at="2026-08-01T00:00:00Z",
        prev_event=second["event_id"],
    )
    return f.bundle(record=GROWN, title="A Bundle That Grows", events=[first, second, third])


RECORD_BODY = f.pith_body(RECORD)
GROWN_BODY = f.pith_body(GROWN)
REAL_RECORD_BODY = "GO43K6A5MHLNBUADUVZ3AKFBNI"
REAL_BUNDLE_BODY = "Z5NAPRQPUU4SIDOBV5N2FREXWZ"


def write_keys(folder: Path) -> Path:
    path = folder / "keys.json"
    path.write_text(json.dumps(KEYS))
    return path


def make_content(folder: Path, grown: dict[str, Any] | None = None) -> Path:
    """The corpus in `folder` (the newer bundle of GROWN unless told otherwise)."""
    folder.mkdir(parents=True, exist_ok=True)
    for real in CONTENT.glob("*.json"):
        (folder / real.name).write_bytes(real.read_bytes())
    f.write(folder / f"{RECORD_BODY}.record.json", f.record_document(record=RECORD, title="A Record Only"))
    f.write(folder / f"{GROWN_BODY}.bundle.json", grown if grown is not None else newer_bundle())
    return folder


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run(*argv: str | Path) -> Result:
    """`pith-mirror ARGV...` in process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return Result(code, out.getvalue(), err.getvalue())


def build(content: Path, site: Path, keys: Path) -> Path:
    result = run("build", content, site, "--keys", keys, "--jobs", "1", "--quiet")
    assert result.code == 0, result.err
    return site


def pull(source: str, content: Path, keys: Path, *args: str | Path) -> Result:
    return run("pull", "--from", source, "--content", content, "--keys", keys, "--rate", "0", *args)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def documents(content: Path) -> dict[str, bytes]:
    """The documents of a content folder (hidden files left out, as the build leaves them)."""
    return {p.name: p.read_bytes() for p in sorted(content.iterdir()) if not p.name.startswith(".")}


def all_whole_and_verified(content: Path) -> None:
    """Every document in `content` decodes and verifies (no half-written file)."""
    for name, data in documents(content).items():
        source = f.SourceDocument(name, data, decode(data, Limits()))
        assert verify_document(source, KEYRING)[1] is not None, name


Route = Callable[[SimpleHTTPRequestHandler], None]


@dataclass
class Server:
    """Serves `root` on 127.0.0.1; `routes` answer chosen paths (query included) instead."""

    root: Path
    url: str = ""
    routes: dict[str, Route] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    delay: float = 0.0
    """Seconds each answer waits (a slow host, so that a pull can be killed midway)."""

    def requests_for(self, needle: str) -> int:
        with self.lock:
            return sum(1 for line in self.log if needle in line)


class _Handler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # (keep-alive, as real static hosts)

    def __init__(self, *args: Any, owner: Server, **kwargs: Any) -> None:
        self.owner = owner  # (before the base class, which answers the request)
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        owner = self.owner
        with owner.lock:
            owner.log.append(self.path)
        if owner.delay:
            time.sleep(owner.delay)
        route = owner.routes.get(self.path) or owner.routes.get(self.path.split("?", 1)[0])
        if route is not None:
            route(self)
        else:
            super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve(root: Path) -> Iterator[Server]:
    owner = Server(root)
    with http_server(partial(_Handler, owner=owner, directory=str(root))) as url:
        owner.url = f"{url}/"
        yield owner


def answer(status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> Route:
    """A route that answers `status` with `body`."""

    def route(handler: SimpleHTTPRequestHandler) -> None:
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return route


def pull_process(
    source: str, content: Path, keys: Path, *args: str, stderr: int = subprocess.DEVNULL
) -> subprocess.Popen[str]:
    """`python -m generator pull ...` as a process of its own (to be killed); `stderr`
    `subprocess.PIPE` to read what it said."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    command = [sys.executable, "-m", "generator", "pull", "--from", source, "--content", str(content)]
    return subprocess.Popen(
        [*command, "--keys", str(keys), "--rate", "0", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
    )
