"""client: every answer within its size and time limits, redirects checked, retries polite.

Real sockets on 127.0.0.1 (netkit.raw_server); each answers every connection the same way.
"""

from __future__ import annotations

import asyncio
import email.utils
import socket
import time

import aiohttp
import pytest
from netkit import raw_server

from generator.publish.client import (
    USER_AGENT,
    BlockingClient,
    Client,
    HttpStatus,
    Limits,
    NotHttp,
    RedirectRefused,
    TooLarge,
    TooSlow,
    _redirect_refusal,
    _retry_after,
    run_sync,
)


def get(url: str, limit: int = 1000, seconds: float = 5.0, retries: int = 0) -> bytes:
    with BlockingClient(Limits(limit=limit, seconds=seconds, retries=retries)) as client:
        return client.get(url).body


def trickle_body(conn: socket.socket) -> None:
    """A body of 1,000 bytes, one byte a second: each read comes well within any socket timeout."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    for _ in range(1000):
        conn.sendall(b" ")
        time.sleep(1)


def test_aiohttp_total_timeout_is_a_deadline_for_the_whole_answer() -> None:
    """What the client rests on, measured on aiohttp itself: ClientTimeout(total=1) ends
    the reading of a body that trickles in a byte a second after about one second.
    (`run_sync`: the browser tests may hold an event loop running in this thread.)"""

    async def read(url: str) -> bytes:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1.0)) as session,
            session.get(url) as response,
        ):
            return await response.read()

    with raw_server(trickle_body) as url:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            run_sync(read(url))
        took = time.monotonic() - started
    assert 0.9 < took < 2.5


def test_a_body_within_the_limits_is_returned_whole() -> None:
    with raw_server(lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")) as url:
        assert get(url) == b"hello"


def test_a_body_beyond_the_size_limit_is_refused_by_its_length() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world"
    with raw_server(lambda c: c.sendall(answer)) as url, pytest.raises(TooLarge):
        get(url, limit=10)


def test_a_body_beyond_the_size_limit_is_refused_while_read() -> None:
    """No Content-Length: the bytes are counted as they come."""
    chunk = b"400\r\n" + b"x" * 1024 + b"\r\n"
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk * 4 + b"0\r\n\r\n"
    with raw_server(lambda c: c.sendall(answer)) as url, pytest.raises(TooLarge):
        get(url, limit=3000)


def test_a_trickling_body_is_given_up_on_at_the_time_limit() -> None:
    with raw_server(trickle_body) as url:
        started = time.monotonic()
        with pytest.raises(TooSlow):
            get(url, seconds=1.0)
        assert time.monotonic() - started < 2.5


def test_a_redirect_to_a_server_that_trickles_its_headers_is_bounded_by_one_clock() -> None:
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


def test_a_body_cut_short_is_not_http() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"
    with raw_server(lambda c: c.sendall(answer)) as url, pytest.raises(NotHttp, match="cut short"):
        get(url)


def test_a_redirect_to_another_scheme_is_not_followed() -> None:
    redirect = b"HTTP/1.1 302 Found\r\nLocation: ftp://127.0.0.1:1/x\r\nContent-Length: 0\r\n\r\n"
    with raw_server(lambda c: c.sendall(redirect)) as url, pytest.raises(RedirectRefused) as caught:
        get(url)
    assert caught.value.target == "ftp://127.0.0.1:1/x"
    assert "from http only to http or https" in caught.value.reason


def test_a_redirect_loop_is_not_followed() -> None:
    redirect = b"HTTP/1.1 302 Found\r\nLocation: /again\r\nContent-Length: 0\r\n\r\n"
    with raw_server(lambda c: c.sendall(redirect)) as url, pytest.raises(RedirectRefused) as caught:
        get(url)
    assert "a redirect loop" in caught.value.reason


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
    """(No test server here has a certificate the default context trusts: the rule is
    checked on the function the client asks.)"""
    assert (_redirect_refusal(start, to, {start}) is None) == followed


def test_a_5xx_is_retried_and_a_404_is_not() -> None:
    calls: list[int] = []

    def flaky(conn: socket.socket) -> None:
        calls.append(1)
        if len(calls) < 3:
            conn.sendall(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n")
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    with raw_server(flaky) as url:
        assert get(url, retries=3) == b"ok"
    assert len(calls) == 3
    gone: list[int] = []

    def missing(conn: socket.socket) -> None:
        gone.append(1)
        conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

    with raw_server(missing) as url, pytest.raises(HttpStatus) as caught:
        get(url, retries=3)
    assert caught.value.status == 404 and len(gone) == 1


def test_retry_after_in_seconds_or_as_a_date() -> None:
    assert _retry_after("3") == 3.0
    later = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8 <= (_retry_after(later) or 0) <= 10
    assert _retry_after("soon") is None and _retry_after(None) is None
    # (a superscript is a digit to str.isdigit, not to float: the header holds no delay)
    assert _retry_after("²") is None


def test_a_retry_after_beyond_the_longest_wait_is_not_waited_for() -> None:
    answer = b"HTTP/1.1 429 Too Many\r\nRetry-After: 86400\r\nContent-Length: 0\r\n\r\n"
    with raw_server(lambda c: c.sendall(answer)) as url:
        started = time.monotonic()
        with pytest.raises(HttpStatus):
            get(url, retries=3)
        assert time.monotonic() - started < 2


def test_requests_name_pith_mirror_and_pace_themselves_per_host() -> None:
    heads: list[float] = []

    async def run(url: str) -> None:
        async with Client(Limits(rate=10, retries=0)) as client:
            await asyncio.gather(*(client.get(url) for _ in range(4)))

    def ok(conn: socket.socket) -> None:
        heads.append(time.monotonic())
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    with raw_server(ok) as url:
        run_sync(run(url))
    assert len(heads) == 4 and heads[-1] - heads[0] >= 0.25  # (4 starts at 10 a second: 0.3 s)
    assert USER_AGENT.startswith("pith-mirror/")


def test_run_sync_works_where_an_event_loop_is_already_running() -> None:
    """`pull` and `compare` called from inside a running loop (as an application that
    embeds the CLI calls them) run their own loop on a thread of their own."""

    async def inner() -> str:
        await asyncio.sleep(0)
        return "done"

    async def outer() -> str:
        return run_sync(inner())

    assert run_sync(outer()) == "done"
