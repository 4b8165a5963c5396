"""Fetch one file over http(s) from a server nobody vouches for: within a size
limit and a time limit for the whole answer, headers and redirects included.

A socket timeout bounds one read only: a server that sends a byte a second,
in its headers or its body, would never time out. So a timer shuts the
request's sockets down when the time is up (what is blocked reading then
returns at once), and the body is read a socket read at a time, the clock
checked after each.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from types import TracebackType
from typing import Any


class TooSlow(Exception):
    """The whole answer did not arrive within the time limit."""


class TooLarge(Exception):
    """The body is larger than the size limit."""


class RedirectRefused(Exception):
    """A redirect to a URL that is not followed: from https to anything but https
    (the rest of the answer would come unauthenticated, or through a handler
    no deadline watches, such as ftp), or from http to anything but http(s)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


def fetch(request: urllib.request.Request, limit: int, seconds: float, chunk: int = 64 * 1024) -> bytes:
    """The body of the answer to `request`: at most `limit` bytes, all of it within
    `seconds` of the call. Raises TooSlow, TooLarge, or what urllib raises
    (HTTPError for a status that is not a success, URLError, OSError,
    http.client.HTTPException)."""
    with _Deadline(seconds) as deadline:
        try:
            with _opener(deadline).open(request, timeout=seconds) as response:
                return _read_body(response, limit, deadline, chunk)
        except TooLarge:
            raise
        except Exception:
            if deadline.passed():  # (a socket timed out, or was shut at the deadline)
                raise TooSlow from None
            raise


def _read_body(response: http.client.HTTPResponse, limit: int, deadline: _Deadline, chunk: int) -> bytes:
    """`read1` returns what one read of the socket gives, so the clock is
    checked every time anything arrives, however slowly it trickles in."""
    chunks: list[bytes] = []
    size = 0
    while data := response.read1(chunk):
        size += len(data)
        if size > limit:
            raise TooLarge
        if deadline.passed():
            raise TooSlow
        chunks.append(data)
    if deadline.passed():  # (a socket shut at the deadline reads as the end of the body)
        raise TooSlow
    return b"".join(chunks)


class _Deadline:
    """Shuts down every socket it watches when `seconds` have passed.

    It keeps a duplicate of each socket (one connection, another descriptor):
    TLS takes over the descriptor of the socket it wraps and detaches the
    original object, which could then no longer be shut down; shutting down a
    duplicate ends the connection all the same, and the duplicates are its own
    to close."""

    def __init__(self, seconds: float) -> None:
        self.ends = time.monotonic() + seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._timer.cancel()
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()

    def passed(self) -> bool:
        return self.expired or time.monotonic() > self.ends

    def watch(self, sock: socket.socket) -> None:
        duplicate = sock.dup()
        with self._lock:
            self._sockets.append(duplicate)
            if self.expired:
                _shut(duplicate)

    def connection(
        self, address: tuple[str, int], timeout: Any = None, source_address: Any = None
    ) -> socket.socket:
        """`socket.create_connection`, each attempt within what is left of the time,
        and the socket watched from the start (TLS handshake included).

        create_connection gives every address of the name the whole timeout, and
        a socket is watched only once connected: a name with many addresses that
        never answer held the fetch that long for each of them."""
        host, port = address
        error: OSError | None = None
        for family, kind, proto, _, where in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
            left = self.ends - time.monotonic()
            if left <= 0:
                break
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(min(timeout, left) if isinstance(timeout, int | float) else left)
                if source_address:
                    sock.bind(source_address)
                sock.connect(where)
                self.watch(sock)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            return sock
        raise error if error is not None else TimeoutError(f"no time left to connect to {host}")

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _opener(deadline: _Deadline) -> urllib.request.OpenerDirector:
    """urllib's default opener, each of its connections (a redirect's too) made
    through `deadline`. (`_create_connection` is what http.client's own
    `connect` calls to open the socket; should a later Python stop calling it,
    the connections go unwatched and only the body's clock remains, which the
    tests of a trickling server would show.)"""

    class Plain(http.client.HTTPConnection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._create_connection = deadline.connection

    class Tls(http.client.HTTPSConnection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._create_connection = deadline.connection

    context = ssl.create_default_context()

    class PlainHandler(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> Any:
            return self.do_open(Plain, req)

    class TlsHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> Any:
            return self.do_open(Tls, req, context=context)

    return urllib.request.build_opener(PlainHandler, TlsHandler(context=context), SafeRedirects)


class SafeRedirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirects, but never from https to plain http, nor to another scheme."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        allowed = ("https",) if req.type == "https" else ("http", "https")
        if urllib.parse.urlsplit(newurl).scheme.lower() not in allowed:
            raise RedirectRefused(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)
