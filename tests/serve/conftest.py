"""Fixtures for the preview server and the watcher: real folders, real events, a real server.

Every test builds its own site from copies of the two real documents in
content/, with a copy of the templates so a test may edit them. Waiting is
always a bounded poll (`poll`) or a bounded wait on the generation counter,
never a fixed sleep: a slow machine makes the tests slower, not flaky.
"""

from __future__ import annotations

import http.client
import io
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from generator.commands.serve import PreviewServer
from generator.commands.watch import Counter, Rebuilder
from generator.commands.watch_commands import Printer
from generator.commands.watching import Setup
from generator.site.config import SiteConfig
from generator.trust.keys import Keyring

REPO = Path(__file__).resolve().parents[2]
SEED_RECORD = REPO / "content" / "GO43K6A5MHLNBUADUVZ3AKFBNI.record.json"
SEED_BUNDLE = REPO / "content" / "Z5NAPRQPUU4SIDOBV5N2FREXWZ.bundle.json"
TEMPLATES = REPO / "templates"
RECORD_PAGE = "/pith/GO43K6A5MHLNBUADUVZ3AKFBNI"
BUNDLE_PAGE = "/pith/Z5NAPRQPUU4SIDOBV5N2FREXWZ"
TIMEOUT = 20.0
QUIET = 0.5
"""The watchers' pause in these tests (see `start_rebuilder`)."""


def poll(condition: Callable[[], Any], timeout: float = TIMEOUT, interval: float = 0.05) -> Any:
    """Return the condition's first truthy value; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout}s: {getattr(condition, '__name__', condition)}")
        time.sleep(interval)


def settled(rebuilder: Rebuilder) -> None:
    """Wait until the rebuilder has nothing noted and nothing building: the changes
    made before are built, so a count read now is not read in the middle of a burst."""
    poll(lambda: rebuilder.idle)


def tampered_bundle() -> bytes:
    """The real bundle with one character of its own signature changed (still valid base64)."""
    raw = SEED_BUNDLE.read_text("utf-8")
    signature = json.loads(raw)["bundle_signature"]["signature_b64"]
    flipped = signature[:10] + ("B" if signature[10] == "A" else "A") + signature[11:]
    assert raw.count(signature) == 1
    return raw.replace(signature, flipped).encode("utf-8")


class Transcript(io.StringIO):
    """A stream the rebuild thread writes to and the test reads, safely."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            return super().write(text)

    def text(self) -> str:
        with self._lock:
            return self.getvalue()


class StrictTranscript(Transcript):
    """A Transcript that, like a terminal writing UTF-8, cannot take a lone surrogate."""

    def write(self, text: str) -> int:
        text.encode("utf-8")  # (raises UnicodeEncodeError, as a real UTF-8 stream does)
        return super().write(text)


@dataclass
class Workspace:
    """A mirror project in a temporary folder: content/, templates/, site/ side by side."""

    root: Path
    keyring: Keyring
    jobs: int = 1
    out: Transcript = field(default_factory=Transcript)
    err: Transcript = field(default_factory=Transcript)

    @property
    def content(self) -> Path:
        return self.root / "content"

    @property
    def templates(self) -> Path:
        return self.root / "templates"

    @property
    def site(self) -> Path:
        return self.root / "site"

    def config(self, **changes: Any) -> SiteConfig:
        base = SiteConfig(
            content=self.content,
            site=self.site,
            templates=self.templates,
            cache=self.root / ".pith-cache",
            jobs=self.jobs,
            allow_removals=True,  # (documents are taken down on purpose; the guard has its own tests)
        )
        return replace(base, **changes)

    def add(self, source: Path, name: str | None = None) -> Path:
        target = self.content / (name or source.name)
        shutil.copyfile(source, target)
        return target

    def place(self, source: Path | bytes, name: str | None = None) -> Path:
        """Put a copy of a file (or these bytes) in content/ in one step, a rename from
        a name the build ignores: one event, so one rebuild, however slowly the
        machine copies."""
        assert name is not None or isinstance(source, Path)
        target = self.content / (name or source.name)  # type: ignore[union-attr]
        temporary = self.content / f".{target.name}.part"
        if isinstance(source, bytes):
            temporary.write_bytes(source)
        else:
            shutil.copyfile(source, temporary)
        os.replace(temporary, target)
        return target

    def report(self) -> dict[str, Any]:
        """The site's report.json as it is now ({} while there is none)."""
        try:
            data: dict[str, Any] = json.loads((self.site / "report.json").read_bytes())
        except (OSError, ValueError):
            return {}
        return data

    def rejected_codes(self, file: str) -> set[str]:
        return {r["code"] for r in self.report().get("rejections", []) if r.get("file") == file}


@pytest.fixture
def workspace(tmp_path: Path, real_keyring: Keyring) -> Workspace:
    space = Workspace(tmp_path / "mirror", real_keyring)
    space.content.mkdir(parents=True)
    shutil.copytree(TEMPLATES, space.templates)
    return space


@dataclass
class Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def header(self, name: str) -> str:
        return self.headers.get(name, "")


@dataclass
class Client:
    """Raw HTTP to the preview server: the path goes out exactly as written (no normalising)."""

    host: str
    port: int

    def request(self, path: str, method: str = "GET") -> Response:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        try:
            connection.putrequest(method, path, skip_accept_encoding=True)
            connection.endheaders()
            reply = connection.getresponse()
            return Response(reply.status, reply.headers, reply.read())
        finally:
            connection.close()

    def status(self, path: str) -> int:
        return self.request(path).status


@dataclass
class Preview:
    """A running server (and, when watching, a running rebuilder) over one workspace."""

    server: PreviewServer
    client: Client
    rebuilder: Rebuilder | None = None


@pytest.fixture
def start_server() -> Iterator[Callable[..., Preview]]:
    """Start a PreviewServer on a free loopback port; shut it down after the test."""
    started: list[tuple[PreviewServer, threading.Thread]] = []

    def start(site: Path, **options: Any) -> Preview:
        server = PreviewServer(("127.0.0.1", 0), site, **options)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        started.append((server, thread))
        host, port = server.server_address[:2]
        return Preview(server, Client(str(host), int(port)))

    yield start
    for server, thread in started:
        server.shutdown()
        server.server_close()
        thread.join(TIMEOUT)
        assert not thread.is_alive()


@pytest.fixture
def start_rebuilder(workspace: Workspace) -> Iterator[Callable[..., Rebuilder]]:
    """A Rebuilder over the workspace that has built once and is watching; stopped after the test."""
    started: list[Rebuilder] = []

    def start(load: Callable[[], Setup] | None = None, first_build: bool = True, **options: Any) -> Rebuilder:
        loader = load or (lambda: Setup(workspace.config(), workspace.keyring))
        # A longer pause than the real one: a copy descheduled for a moment between
        # creating and closing its file must still be one rebuild on a busy machine.
        options.setdefault("quiet", QUIET)
        rebuilder = Rebuilder(loader, on_report=Printer(workspace.out, workspace.err), **options)
        started.append(rebuilder)
        if first_build:
            rebuilder.rebuild("first build")
        rebuilder.start()
        return rebuilder

    yield start
    for rebuilder in started:
        rebuilder.stop()
        assert not rebuilder.running


@pytest.fixture
def preview(
    workspace: Workspace, start_rebuilder: Callable[..., Rebuilder], start_server: Callable[..., Preview]
) -> Callable[..., Preview]:
    """The `serve` command's wiring: one generation counter shared by rebuilder and server."""

    def start(**options: Any) -> Preview:
        generation = Counter()
        rebuilder = start_rebuilder(generation=generation, **options)
        running = start_server(workspace.site, generation=generation)
        rebuilder.on_setup(running.server.follow)
        running.rebuilder = rebuilder
        return running

    return start
