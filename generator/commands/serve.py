"""A local preview of SITE, served the way a static host serves it (`serve`).

The server only; the `serve` command that builds, watches and prints is in
`watch_commands`.

Rules:
- URLs resolve like GitHub Pages: the file itself, else `<path>.html`, else
  `<path>/index.html`; a miss gets `404.html` with status 404. The query
  string never takes part in finding a file. Only GET and HEAD.
- Nothing outside SITE is ever served: `.`/`..` segments (also percent-encoded),
  backslashes and NUL are refused, and every candidate is resolved through
  its symbolic links and must still be inside SITE.
- SITE is looked up again on every request: a build swaps the folder in by
  renaming, so a handle kept open would go on serving the old site.
- Live reload lives only here: HTML responses get one `<script>` tag that
  polls `/__pith-mirror/generation` and reloads the page when the number
  changes. Nothing of it is written into SITE; a production build has none.
- Listens on 127.0.0.1 unless told otherwise: a preview is not a public server.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import stat
import sys
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from ..site.headers import ATOM_TYPE, HOST_TYPES, TEXT_TYPE, host_type
from ..site.layout import SUMS_PATH
from ..trust.errors import ConfigError
from .watch import Counter
from .watching import Setup

INTERNAL = "/__pith-mirror/"
LIVE_RELOAD_TAG = b'<script src="/__pith-mirror/livereload.js"></script>'

LIVE_RELOAD_JS = b"""// pith-mirror preview: reload the page after each rebuild (never part of a built site).
(function () {
  "use strict";
  var seen = null;
  function poll() {
    fetch("/__pith-mirror/generation", { cache: "no-store" })
      .then(function (response) { return response.json(); })
      .then(function (data) {
        var now = data.server + ":" + data.generation;
        if (seen !== null && now !== seen) { location.reload(); return; }
        seen = now;
        setTimeout(poll, 500);
      })
      .catch(function () { setTimeout(poll, 2000); });
  }
  poll();
})();
"""

SPECIAL_TYPES = {"feed.xml": ATOM_TYPE, SUMS_PATH: TEXT_TYPE}
"""Files whose type their name, not their suffix, decides: as the `_headers` file
the build writes for hosts gives them (see site.headers._RULES)."""


def content_type(path: Path) -> str:
    """The type a static host would send; known site files first, then the hosts' table."""
    return SPECIAL_TYPES.get(path.name) or host_type(path.name)


@dataclass(frozen=True, slots=True)
class Lookup:
    """Where a URL leads: a file to send (200), a redirect, or an error status."""

    status: int
    file: Path | None = None
    location: str | None = None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _segments(url_path: str, base_path: str) -> list[str] | Lookup:
    """The decoded path below the base, as segments; a Lookup when it must not go further."""
    try:
        decoded = unquote(url_path, errors="strict")
    except UnicodeDecodeError:
        return Lookup(HTTPStatus.BAD_REQUEST)
    if "\\" in url_path or "\\" in decoded or "\0" in decoded:
        return Lookup(HTTPStatus.FORBIDDEN)
    # The base as a request spells it, decoded like the request: a base_url may be
    # percent-encoded ("/my%20mirror/") or not ("/日本/", which browsers encode).
    base = unquote(base_path)
    if not decoded.startswith(base):
        if decoded in ("/", base.rstrip("/")):
            return Lookup(HTTPStatus.FOUND, location=quote(base, safe=_LOCATION_SAFE))
        return Lookup(HTTPStatus.NOT_FOUND)
    segments = decoded[len(base) :].split("/")
    if any(segment in (".", "..") for segment in segments):
        return Lookup(HTTPStatus.FORBIDDEN)
    return segments


_LOCATION_SAFE = "/!$&'()*+,;=:@"
"""What a redirect's Location keeps as it is: the rest is percent-encoded (a header
is ASCII; a non-Latin-1 base path once ended the request with a traceback)."""


def candidates(segments: list[str]) -> list[str]:
    """Files that may answer a path, in a static host's order (see the module rules)."""
    clean = "/".join(segment for segment in segments if segment)
    if not clean:
        return ["index.html"]
    if segments[-1] == "":
        return [f"{clean}/index.html"]
    return [clean, f"{clean}.html", f"{clean}/index.html"]


def resolve(site: Path, url_path: str, base_path: str = "/") -> Lookup:
    """Find the file for a URL path (no query) under `site`, refusing anything outside it."""
    found = _segments(url_path, base_path)
    if isinstance(found, Lookup):
        return found
    if os.path.islink(site):  # (swapped in while serving: refused at start, and by every build)
        return Lookup(HTTPStatus.NOT_FOUND)
    root = os.path.realpath(site)
    for name in candidates(found):
        target = os.path.join(root, *name.split("/"))
        if not os.path.lexists(target):
            continue
        real = os.path.realpath(target)
        if not _inside(real, root):
            return Lookup(HTTPStatus.FORBIDDEN)
        if os.path.isfile(real):
            return Lookup(HTTPStatus.OK, file=Path(real))
    return Lookup(HTTPStatus.NOT_FOUND)


def read_inside(file: Path) -> bytes | None:
    """The bytes of a regular file, not following a link swapped in since `resolve`, nor
    waiting on a FIFO swapped in (opened without blocking, then refused); None if gone."""
    flags = (
        os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    )
    try:
        fd = os.open(file, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read()


def inject_live_reload(html: bytes) -> bytes:
    """Put the live-reload tag just before the last </body> (or at the end)."""
    at = html.lower().rfind(b"</body>")
    if at < 0:
        return html + LIVE_RELOAD_TAG
    return html[:at] + LIVE_RELOAD_TAG + html[at:]


class PreviewServer(ThreadingHTTPServer):
    """The preview HTTP server: SITE, the base path, and the shared generation."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        site: Path,
        *,
        base_path: str = "/",
        generation: Counter | None = None,
        live_reload: bool = True,
    ) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.site = site
        self.base_path = base_path
        self.generation = generation or Counter()
        self.instance = secrets.token_hex(8)
        """Which server this is: every server counts its builds from 0, so after a
        restart a page that saw build 1 of the last one would miss this one's."""
        self.live_reload = live_reload
        super().__init__(address, PreviewHandler)

    def follow(self, setup: Setup) -> None:
        """Serve the SITE and base path of the current settings (they may be read again)."""
        self.site = setup.config.site
        self.base_path = setup.config.base_path

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]  # the real port when asked for port 0
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}{self.base_path}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A browser that left mid-response is normal (a reload); anything else is a bug worth a traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class PreviewHandler(BaseHTTPRequestHandler):
    """GET and HEAD for SITE and the live-reload endpoints; quiet unless something fails."""

    server: PreviewServer
    server_version = "pith-mirror-preview"

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def _refuse_method(self) -> None:
        self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
        self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Successful requests are not logged: live reload polls twice a second."""

    def _answer(self, send_body: bool) -> None:
        try:
            path = urlsplit(self.path).path
        except ValueError:  # e.g. "GET http://[/": not a URL at all
            self._send(
                HTTPStatus.BAD_REQUEST,
                "text/plain; charset=utf-8",
                _reason(HTTPStatus.BAD_REQUEST),
                send_body,
            )
            return
        if path.startswith(INTERNAL):
            self._internal(path[len(INTERNAL) :], send_body)
            return
        for _ in range(2):  # (a full build swapped SITE between finding the file and reading it: again)
            lookup = resolve(self.server.site, path, self.server.base_path)
            if lookup.status != HTTPStatus.OK or lookup.file is None:
                break
            data = read_inside(lookup.file)
            if data is not None:
                self._send(HTTPStatus.OK, content_type(lookup.file), data, send_body)
                return
            lookup = Lookup(HTTPStatus.NOT_FOUND)  # removed by a build since it was found
        if lookup.status == HTTPStatus.FOUND and lookup.location:
            self._redirect(lookup.location)
        elif lookup.status == HTTPStatus.NOT_FOUND:
            self._not_found(send_body)
        else:
            self._send(lookup.status, "text/plain; charset=utf-8", _reason(lookup.status), send_body)

    def _internal(self, name: str, send_body: bool) -> None:
        if name == "livereload.js":
            self._send(HTTPStatus.OK, HOST_TYPES[".js"], LIVE_RELOAD_JS, send_body)
        elif name == "generation":
            data = json.dumps(
                {"generation": self.server.generation.value, "server": self.server.instance}
            ).encode()
            self._send(HTTPStatus.OK, "application/json", data, send_body)
        else:
            self._send(HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", _reason(404), send_body)

    def _not_found(self, send_body: bool) -> None:
        """SITE's own 404.html, as a static host does; a plain line when there is none."""
        page = resolve(self.server.site, "/404.html")
        data = read_inside(page.file) if page.file is not None else None
        if data is None:
            self._send(HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", _reason(404), send_body)
        else:
            self._send(HTTPStatus.NOT_FOUND, HOST_TYPES[".html"], data, send_body)

    def _redirect(self, location: str) -> None:
        self.send_response(HTTPStatus.FOUND)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send(self, status: int, kind: str, data: bytes, send_body: bool) -> None:
        if kind.startswith("text/html") and self.server.live_reload:
            data = inject_live_reload(data)
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")  # a preview must show the latest build
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if send_body:
            self.wfile.write(data)


def _reason(status: int) -> bytes:
    value = HTTPStatus(status)
    return f"{value.value} {value.phrase}\n".encode()


def open_server(host: str, port: int, site: Path, **options: Any) -> PreviewServer:
    """Listen, or say why not as a usage error (a port in use is not a bug)."""
    try:
        return PreviewServer((host, port), site, **options)
    except OSError as exc:
        raise ConfigError("port", f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
