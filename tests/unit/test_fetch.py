"""fetch: the whole answer within its size and time limits, redirects included.

Real sockets on 127.0.0.1 (netkit.raw_server); each answers every connection the same way.
"""

from __future__ import annotations

import socket
import time
import urllib.request

import pytest
from netkit import raw_server

from generator.fetch import RedirectRefused, SafeRedirects, TooLarge, TooSlow, fetch


def get(url: str, limit: int = 1000, seconds: float = 5.0) -> bytes:
    return fetch(urllib.request.Request(url), limit, seconds)


def test_a_body_within_the_limits_is_returned_whole() -> None:
    with raw_server(lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")) as url:
        assert get(url) == b"hello"


def test_a_body_beyond_the_size_limit_is_refused() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world"
    with raw_server(lambda c: c.sendall(answer)) as url, pytest.raises(TooLarge):
        get(url, limit=10)


def test_a_redirect_to_a_server_that_trickles_its_headers_is_bounded_by_one_clock() -> None:
    """The time limit is for the whole answer: the redirect's connection is watched too."""

    def trickle(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        for _ in range(60):
            conn.sendall(b"a")
            time.sleep(0.05)

    with raw_server(trickle) as slow:
        redirect = f"HTTP/1.1 302 Found\r\nLocation: {slow}\r\nContent-Length: 0\r\n\r\n".encode()
        with raw_server(lambda c: c.sendall(redirect)) as first:
            started = time.monotonic()
            with pytest.raises(TooSlow):
                get(first, seconds=0.5)
            assert time.monotonic() - started < 1.5


def test_a_server_that_says_nothing_is_given_up_on_at_the_time_limit() -> None:
    with raw_server(lambda c: time.sleep(3)) as url:
        started = time.monotonic()
        with pytest.raises(TooSlow):
            get(url, seconds=0.5)
        assert time.monotonic() - started < 1.5


def test_a_redirect_to_another_scheme_is_not_followed() -> None:
    """urllib follows a redirect to ftp:, through a handler no deadline watches."""
    redirect = b"HTTP/1.1 302 Found\r\nLocation: ftp://127.0.0.1:1/x\r\nContent-Length: 0\r\n\r\n"
    with raw_server(lambda c: c.sendall(redirect)) as url, pytest.raises(RedirectRefused) as caught:
        get(url)
    assert caught.value.url == "ftp://127.0.0.1:1/x"


def test_a_redirect_from_http_to_http_is_followed() -> None:
    with raw_server(lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")) as target:
        redirect = f"HTTP/1.1 301 Moved\r\nLocation: {target}\r\nContent-Length: 0\r\n\r\n".encode()
        with raw_server(lambda c: c.sendall(redirect)) as first:
            assert get(first) == b"ok"


@pytest.mark.parametrize(
    ("start", "to", "followed"),
    [
        ("https://a.example/x", "http://a.example/x", False),
        ("https://a.example/x", "HTTP://b.example/x", False),
        ("https://a.example/x", "ftp://a.example/x", False),
        ("https://a.example/x", "https://b.example/y", True),
        ("http://a.example/x", "https://a.example/x", True),
        ("http://a.example/x", "file:///etc/passwd", False),
    ],
)
def test_a_redirect_from_https_goes_only_to_https(start: str, to: str, followed: bool) -> None:
    """The rest of an answer that began over TLS never comes without it. (No test
    server here has a certificate the default context trusts: the rule is checked
    on the redirect handler fetch uses.)"""
    request = urllib.request.Request(start)
    if followed:
        assert SafeRedirects().redirect_request(request, None, 302, "Found", {}, to) is not None
    else:
        with pytest.raises(RedirectRefused):
            SafeRedirects().redirect_request(request, None, 302, "Found", {}, to)


def test_a_name_whose_addresses_never_answer_is_given_up_on_at_the_time_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """create_connection gave each address of a name the whole time limit, and a
    socket is watched only once connected: six addresses that never answer held
    the fetch six times the limit."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    # one connection fills a backlog of 0: a further one's SYN is dropped, and its connect waits
    queued = [socket.create_connection(("127.0.0.1", port), timeout=5)]
    address = (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: [address] * 6)
    started = time.monotonic()
    try:
        with pytest.raises((TooSlow, OSError)):
            get(f"http://unanswering.test:{port}/", seconds=0.5)
        assert time.monotonic() - started < 1.5
    finally:
        for sock in (*queued, listener):
            sock.close()
