"""Fetch files over http(s) from servers nobody vouches for: pooled, polite, bounded.

Rules:
- One `Client` holds one aiohttp session: keep-alive connections are pooled
  and reused, at most `jobs` of them at once.
- Every answer is bounded: at most `limit` bytes of body (the Content-Length
  is checked before reading, the bytes counted while reading), and all of it,
  redirects included, within `seconds` of the request. aiohttp's
  `ClientTimeout(total=...)` is a deadline for the whole answer (a server that
  trickles a byte a second is cut off at the limit, which the tests measure);
  `asyncio.timeout` around each attempt enforces the same clock whatever
  aiohttp does with it, so the promise does not rest on one library's reading
  of "total".
- Redirects are followed here, not by aiohttp, so each hop is checked: from
  https only to https, from http only to http or https (never `file:`,
  `ftp:` or anything else), at most MAX_REDIRECTS, and never back to a URL
  already visited (a loop). A refused redirect says why.
- 429, 5xx, a timeout and a dropped connection are retried up to `retries`
  times with exponential backoff and full jitter; a `Retry-After` (seconds or
  an HTTP date) is honoured, up to MAX_RETRY_AFTER. Other answers are final.
- Requests to one host start at most `rate` per second (0: no limit).
- Every request names pith-mirror and its version in `User-Agent`.
- Library only: it raises `FetchError`s; the commands decide what to print.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.utils
import random
import threading
import time
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

import aiohttp

from .. import __version__

T = TypeVar("T")
USER_AGENT = f"pith-mirror/{__version__} (+https://pith.science)"
MAX_REDIRECTS = 5
MAX_RETRY_AFTER = 120.0
"""The longest `Retry-After` waited for, in seconds; a server asking for more is
given up on for this request (and reported), not waited on for hours."""
BACKOFF_BASE = 0.5
BACKOFF_CAP = 30.0
READ_CHUNK = 64 * 1024
_CONDITIONAL = frozenset({"if-none-match", "if-modified-since"})


class FetchError(Exception):
    """A file could not be fetched; `reason` says why in words a person understands."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason


class TooSlow(FetchError):
    """The whole answer did not arrive within the time limit."""


class TooLarge(FetchError):
    """The body is larger than the size limit."""


class RedirectRefused(FetchError):
    """A redirect that is not followed: to another scheme, from https to http, a loop, too many."""

    def __init__(self, url: str, target: str, reason: str) -> None:
        super().__init__(url, f"redirects to {target}, which is not followed ({reason})")
        self.target = target


class HttpStatus(FetchError):
    """The final answer's status is not a success (nor 304 to a conditional request)."""

    def __init__(self, url: str, status: int, reason: str = "", retry_after: float | None = None) -> None:
        super().__init__(url, reason or f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after
        """Seconds the server asked to wait before trying again (429, 503), if it said."""


class NotHttp(FetchError):
    """An answer that is not valid HTTP: a bad status line, too many headers, a body cut short."""


class NoAnswer(FetchError):
    """No answer at all: the name does not resolve, the connection is refused or reset."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A successful answer (200), or `not_modified` for a 304 to a conditional request."""

    url: str
    """The URL that answered (after redirects)."""
    body: bytes
    etag: str | None
    last_modified: str | None
    not_modified: bool = False


@dataclass(frozen=True, slots=True)
class Limits:
    limit: int = 4 * 1024 * 1024
    """The largest body accepted, in bytes."""
    seconds: float = 30.0
    """The time allowed for one whole answer, redirects included."""
    retries: int = 4
    """How many times a 429, 5xx, timeout or dropped connection is tried again."""
    rate: float = 0.0
    """Requests started per second and host (0: no limit)."""
    jobs: int = 8
    """Connections open at once."""


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # (str.isdigit is true of "²", which float refuses)
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _redirect_refusal(current: str, target: str, seen: set[str]) -> str | None:
    """Why the redirect from `current` to `target` is not followed, or None to follow it."""
    scheme = urlsplit(target).scheme.lower()
    if urlsplit(current).scheme.lower() == "https":
        if scheme != "https":
            return "from https only to https"
    elif scheme not in ("http", "https"):
        return "from http only to http or https"
    if target in seen:
        return "a redirect loop"
    if len(seen) > MAX_REDIRECTS:
        return f"more than {MAX_REDIRECTS} redirects"
    return None


class _HostPacer:
    """At most `rate` request starts per second for each host."""

    def __init__(self, rate: float) -> None:
        self.gap = 1.0 / rate if rate > 0 else 0.0
        self.next_start: dict[str, float] = {}
        self.lock = asyncio.Lock()

    async def wait(self, url: str) -> None:
        if not self.gap:
            return
        host = urlsplit(url).netloc.lower()
        async with self.lock:
            now = time.monotonic()
            start = max(now, self.next_start.get(host, now))
            self.next_start[host] = start + self.gap
        if start > now:
            await asyncio.sleep(start - now)


class Client:
    """An http(s) client for untrusted servers; use as `async with Client(limits) as client`."""

    def __init__(self, limits: Limits = Limits()) -> None:
        self.limits = limits
        self.requests = 0
        """Requests sent (each attempt and each redirect hop counts)."""
        self._session: aiohttp.ClientSession | None = None
        self._pacer = _HostPacer(limits.rate)

    async def __aenter__(self) -> Client:
        connector = aiohttp.TCPConnector(limit=max(1, self.limits.jobs), limit_per_host=0)
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=self.limits.seconds),
            headers={"User-Agent": USER_AGENT},
            trust_env=False,
        )
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def get(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        limit: int | None = None,
        seconds: float | None = None,
    ) -> Answer:
        """The answer to GET `url`, retried as the rules say; raises a FetchError.
        `limit` and `seconds` replace the size and time limits for this one file (a
        manifest is larger than a document; a caller with a total budget has less time)."""
        attempt = 0
        while True:
            try:
                return await self._get_once(
                    url, dict(headers or {}), limit or self.limits.limit, seconds or self.limits.seconds
                )
            except (HttpStatus, TooSlow, NotHttp, NoAnswer) as exc:
                wait = self._retry_wait(exc, attempt)
                if wait is None:
                    raise
            attempt += 1
            await asyncio.sleep(wait)

    def _retry_wait(self, exc: FetchError, attempt: int) -> float | None:
        """Seconds to wait before trying again, or None when `exc` is final."""
        if attempt >= self.limits.retries:
            return None
        if isinstance(exc, HttpStatus):
            if exc.status != 429 and not 500 <= exc.status <= 599:
                return None
            if exc.retry_after is not None:
                return exc.retry_after if exc.retry_after <= MAX_RETRY_AFTER else None
        return random.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * 2**attempt))  # (full jitter)

    async def _get_once(self, url: str, headers: dict[str, str], limit: int, seconds: float) -> Answer:
        try:
            async with asyncio.timeout(seconds):
                return await self._follow(url, headers, limit, seconds)
        except TimeoutError:
            raise TooSlow(url, f"the answer took longer than {seconds:g} seconds") from None

    async def _follow(self, url: str, headers: dict[str, str], limit: int, seconds: float) -> Answer:
        assert self._session is not None, "use Client inside `async with`"
        current, seen = url, {url}
        while True:
            await self._pacer.wait(current)
            self.requests += 1
            try:
                async with self._session.get(
                    current,
                    headers=headers,
                    allow_redirects=False,
                    timeout=aiohttp.ClientTimeout(total=seconds),
                ) as response:
                    if response.status in (301, 302, 303, 307, 308):
                        location = response.headers.get("Location")
                        if not location:
                            raise HttpStatus(current, response.status, "a redirect without a Location")
                        target = urljoin(current, location)
                        why = _redirect_refusal(current, target, seen)
                        if why is not None:
                            raise RedirectRefused(url, target, why)
                        seen.add(target)
                        current = target
                        continue
                    if response.status == 304 and _CONDITIONAL & {h.lower() for h in headers}:
                        return Answer(current, b"", None, None, not_modified=True)
                    if response.status != 200:
                        asked = _retry_after(response.headers.get("Retry-After"))
                        raise HttpStatus(current, response.status, retry_after=asked)
                    body = await self._read(current, response, limit)
                    return Answer(
                        current, body, response.headers.get("ETag"), response.headers.get("Last-Modified")
                    )
            except aiohttp.InvalidURL as exc:
                raise NotHttp(current, f"not a valid URL ({exc})") from None
            except aiohttp.ClientPayloadError as exc:
                raise NotHttp(current, f"the answer was cut short ({_why(exc)})") from None
            except aiohttp.ServerTimeoutError:
                raise TooSlow(url, f"the answer took longer than {seconds:g} seconds") from None
            except aiohttp.ServerDisconnectedError:
                raise NotHttp(current, "the server closed the connection before it answered") from None
            except aiohttp.ClientResponseError as exc:  # (a bad status line, too many headers)
                said = exc.message.strip().splitlines()[0] if exc.message.strip() else ""
                raise NotHttp(current, f"{type(exc).__name__}: {said}" if said else _why(exc)) from None
            except aiohttp.ClientConnectionError as exc:
                raise NoAnswer(current, _why(exc)) from None
            except ValueError as exc:  # (a URL aiohttp cannot use at all, such as one without a host)
                raise NotHttp(current, f"not a valid URL ({exc})") from None

    async def _read(self, url: str, response: aiohttp.ClientResponse, limit: int) -> bytes:
        declared = response.content_length
        if declared is not None and declared > limit:
            raise TooLarge(url, f"the answer is {declared} bytes, more than the limit of {limit}")
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(READ_CHUNK):
            size += len(chunk)
            if size > limit:
                raise TooLarge(url, f"the answer is larger than the limit of {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)


def _why(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coroutine)`, also from a thread whose own event loop is running
    (an application that embeds the CLI, such as a browser driver's): there the
    coroutine runs on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


class BlockingClient:
    """A `Client` for callers that are not async (`compare`): one event loop, on a
    thread of its own, and one connection pool for all their requests. Close it (or
    use `with`)."""

    def __init__(self, limits: Limits = Limits()) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._client = Client(limits)
        self._call(self._client.__aenter__())

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def get(self, url: str, limit: int | None = None, seconds: float | None = None) -> Answer:
        return self._call(self._client.get(url, limit=limit, seconds=seconds))

    def close(self) -> None:
        self._call(self._client.__aexit__(None, None, None))
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> BlockingClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
