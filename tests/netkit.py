"""Servers on a loopback socket: one that answers every request with what a test
writes (`raw_server`: the tests of fetching from servers that misbehave, each way an
answer can be broken exactly the bytes the test sends), and an HTTP server for a
handler (`http_server`: the S3 stand-in's proxy, a site served over HTTP, the listing
benchmark's store)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextlib.contextmanager
def raw_server(answer: Callable[[socket.socket], None]) -> Iterator[str]:
    """A server on 127.0.0.1 that reads each request's head and calls `answer`; yields its URL."""
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
                while b"\r\n\r\n" not in head and (chunk := conn.recv(4096)):
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


@contextlib.contextmanager
def http_server(handler: Callable[..., BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` (a request handler class, or a partial of one) served on 127.0.0.1,
    each request in a thread of its own; yields the server's URL, stops it afterwards."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
