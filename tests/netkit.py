"""Servers on a loopback socket: one that answers every request with what a test
writes (`raw_server`: the tests of fetching from servers that misbehave, each way an
answer can be broken exactly the bytes the test sends), and an HTTP server for a
handler (`http_server`: the S3 stand-in's proxy, a site served over HTTP, a source
mirror for `pull`, the benchmarks' stores and sources)."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextlib.contextmanager
def raw_server(answer: Callable[[socket.socket], None], read_head: bool = True) -> Iterator[str]:
    """A server on 127.0.0.1 that reads each request's head (with `read_head`; else
    nothing, for a client that waits to be spoken to) and calls `answer`; yields its URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn, contextlib.suppress(OSError):
                conn.settimeout(5)
                head = b""
                while read_head and b"\r\n\r\n" not in head and (chunk := conn.recv(4096)):
                    head += chunk
                answer(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    finally:
        stop.set()
        thread.join(10)
        listener.close()


class _QuietOnHangUp(ThreadingHTTPServer):
    """A client that hangs up (a pull that stopped at a bad shard) is no server error:
    printed, its traceback would land in the stderr a test captures from the client."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


@contextlib.contextmanager
def http_server(handler: Callable[..., BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` (a request handler class, or a partial of one) served on 127.0.0.1,
    each request in a thread of its own; yields the server's URL (no trailing slash),
    stops it afterwards."""
    server = _QuietOnHangUp(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.block_on_close = False
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
