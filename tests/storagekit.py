"""An S3 stand-in on loopback for the storage tests: moto's server, and a proxy in front
of it that counts requests and answers some of them with a failure.

moto has no way to make its S3 fail on demand (its `/moto-api/` resets, seeds and
records, nothing more), so `FaultyProxy` forwards each request to moto unchanged
and instead answers the first `fail_next` requests that `fail_when` picks with
503 SlowDown (or another status): what S3 sends when a prefix is throttled. With
`after_forwarding`, moto does the request first and only its answer is lost.
Every request it saw is kept in `seen` (method, path), to count PUTs.
"""

from __future__ import annotations

import contextlib
import http.client
import secrets
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from netkit import http_server

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"}
SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)


@dataclass
class FaultyProxy:
    """A forwarding proxy on 127.0.0.1 in front of `upstream` ("127.0.0.1:PORT")."""

    upstream: str
    fail_next: int = 0
    """How many of the coming requests that `fail_when` picks to answer with `status`."""
    status: int = 503
    fail_when: Callable[[str, str], bool] = lambda method, path: True
    after_forwarding: bool = False
    """Fail only once moto has done the request: the store did it, the answer was lost."""
    seen: list[tuple[str, str]] = field(default_factory=list)
    failed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take_failure(self, method: str, path: str) -> bool:
        with self._lock:
            self.seen.append((method, path))
            if self.fail_next > 0 and self.fail_when(method, path):
                self.fail_next -= 1
                self.failed += 1
                return True
            return False

    def reset(self, fail_next: int = 0, status: int = 503, after_forwarding: bool = False) -> None:
        with self._lock:
            self.seen.clear()
            self.failed = 0
            self.fail_next = fail_next
            self.status = status
            self.after_forwarding = after_forwarding
            self.fail_when = lambda method, path: True

    def puts(self) -> list[str]:
        """The paths of every PUT seen (object writes; a bucket is made before the proxy counts)."""
        return [path for method, path in self.seen if method == "PUT"]


def _handler(proxy: FaultyProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # (quiet)
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            fail = proxy.take_failure(self.command, self.path)
            if fail and not proxy.after_forwarding:
                self._fail()
                return
            upstream = http.client.HTTPConnection(proxy.upstream, timeout=30)
            try:
                upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for name, value in self.headers.items():
                    if name.lower() not in _HOP_BY_HOP:
                        upstream.putheader(name, value)
                upstream.endheaders(body)
                answer = upstream.getresponse()
                data = answer.read()
                if fail:
                    self._fail()
                    return
                self.send_response(answer.status, answer.reason)
                for name, value in answer.getheaders():
                    if name.lower() not in _HOP_BY_HOP and name.lower() != "content-length":
                        self.send_header(name, value)
                # (a HEAD's length is the object's, as the store gave it: its body is empty)
                stored = answer.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", stored or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
            finally:
                upstream.close()

        def _fail(self) -> None:
            self.send_response(proxy.status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(SLOW_DOWN)))
            self.end_headers()
            self.wfile.write(SLOW_DOWN)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    return Handler


def serve_proxy(proxy: FaultyProxy) -> contextlib.AbstractContextManager[str]:
    """Run `proxy` on a loopback port; yields its endpoint URL, stops it afterwards."""
    return http_server(_handler(proxy))


@dataclass
class S3StandIn:
    """moto's S3 (`moto`, "127.0.0.1:PORT") and the proxy in front of it (`endpoint`)."""

    moto: str
    endpoint: str
    proxy: FaultyProxy
    buckets: int = 0
    tag: str = field(default_factory=lambda: secrets.token_hex(4))

    def new_bucket(self) -> str:
        """A fresh empty bucket (made straight on moto: the proxy counts only the test's requests).
        Named for this stand-in too: moto keeps its buckets per process, not per server, so a
        second stand-in's "mirror-1" would otherwise be the first one's, objects and all."""
        self.buckets += 1
        name = f"mirror-{self.tag}-{self.buckets}"
        connection = http.client.HTTPConnection(self.moto, timeout=30)
        try:
            # (readable by anyone, as a bucket serving a site is: `head` reads it unsigned)
            connection.request("PUT", f"/{name}", headers={"x-amz-acl": "public-read"})
            answer = connection.getresponse()
            answer.read()
            assert answer.status == 200, answer.status
        finally:
            connection.close()
        self.proxy.reset()
        return name

    def options(self) -> dict[str, str]:
        """Settings for `open_storage`: the proxy as endpoint, path-style, made-up keys."""
        return {
            "endpoint": self.endpoint,
            "region": "us-east-1",
            "access_key_id": "test-key",
            "secret_access_key": "test-secret",
            "virtual_hosted_style_request": "false",
        }

    def environment(self) -> dict[str, str]:
        """The same settings as an operator's environment holds them, for a command run
        in a new process (the proxy as endpoint, path-style, made-up keys)."""
        options = self.options()
        return {
            "AWS_ENDPOINT_URL": options["endpoint"],
            "AWS_REGION": options["region"],
            "AWS_ACCESS_KEY_ID": options["access_key_id"],
            "AWS_SECRET_ACCESS_KEY": options["secret_access_key"],
            "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
        }

    def head(self, path: str) -> tuple[int, dict[str, str]]:
        """An object's status and response headers, as a reader of the bucket gets them
        (straight from moto, unsigned: moto does not check signatures)."""
        connection = http.client.HTTPConnection(self.moto, timeout=30)
        try:
            connection.request("HEAD", path)
            answer = connection.getresponse()
            answer.read()
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}
        finally:
            connection.close()


@contextlib.contextmanager
def s3_stand_in() -> Iterator[S3StandIn]:
    """moto's server on a loopback port with a `FaultyProxy` in front, stopped afterwards."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        proxy = FaultyProxy(f"{host}:{port}")
        with serve_proxy(proxy) as endpoint:
            yield S3StandIn(f"{host}:{port}", endpoint, proxy)
    finally:
        server.stop()
