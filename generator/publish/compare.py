"""Do two mirrors serve the same records? Compare their manifests, and check each against its files.

Rules:
- A site is a folder, or the http(s) URL of a site's base (the folder that
  holds `.well-known/`). URLs are fetched through `client.py` (pooled
  connections, a size limit and a time limit for each whole answer, redirects
  checked and refused with their reason); nothing else is contacted. A bad
  URL, an answer that is not HTTP or is cut short, a refused redirect is a
  ConfigError (exit 2): a fetch error, never "the file differs".
- The whole comparison has a time budget (`budget`, seconds): a manifest of
  thousands of numbers answered slowly stops with a ConfigError when it is
  spent, and `progress` is told how far the check of each site's files went.
- Each site's `.well-known/pith/mirror.json` is read as the build reads it
  (`generator.site.manifest.published_entries`); a site without a readable manifest
  is a ConfigError (nothing to compare).
- A manifest is trusted only as far as the files agree with it: for every
  number listed, the record JSON and the bundle (both copies) must exist with
  the listed sha256, no bundle may exist where none is listed, and the state
  file must state the listed `state_sha256` and `event_count`. Anything else
  is reported as "file differs from its manifest entry".
- Library only: returns a `ComparisonResult`; the CLI prints it.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..site import layout
from ..site.layout import MANIFEST_PATH, MANIFEST_TYPE
from ..site.manifest import ManifestError, manifest_entries
from ..trust.errors import ConfigError, pointer
from ..trust.files import read_at_most
from ..trust.load import parse_json, shown_name
from ..trust.merge import state_sha256
from ..trust.model import number_body
from .client import BlockingClient, FetchError, HttpStatus, NotHttp, RedirectRefused, TooLarge, TooSlow
from .client import Limits as NetLimits

FIELDS = ("canonical_sha256", "record_sha256", "bundle_sha256", "state_sha256", "event_count", "key_ids")
FETCH_TIMEOUT = 30.0
FETCH_LIMIT = 64 * 1024 * 1024
BUDGET = 3600.0
"""The time one comparison may take in all, in seconds, unless told otherwise."""
LIES = "file differs from its manifest entry"


@dataclass(frozen=True, slots=True)
class ComparisonResult:
    a: str
    b: str
    missing_in_b: tuple[str, ...]
    """Numbers site A publishes and site B does not."""
    missing_in_a: tuple[str, ...]
    different: Mapping[str, tuple[str, ...]]
    """Number -> the manifest fields whose values differ between the sites."""
    same: int
    """Numbers listed by both with identical entries."""
    problems_a: tuple[str, ...] = field(default=())
    """Where site A's files disagree with its own manifest."""
    problems_b: tuple[str, ...] = field(default=())

    @property
    def identical(self) -> bool:
        differences = (self.missing_in_a, self.missing_in_b, self.different, self.problems_a, self.problems_b)
        return not any(differences)

    def as_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "identical": self.identical,
            "same": self.same,
            "missing_in_a": list(self.missing_in_a),
            "missing_in_b": list(self.missing_in_b),
            "different": {n: list(f) for n, f in sorted(self.different.items())},
            "problems_a": list(self.problems_a),
            "problems_b": list(self.problems_b),
        }


class Source(Protocol):
    @property
    def label(self) -> str: ...

    def close(self) -> None: ...

    def read(self, relative: str) -> bytes | None:
        """The file's bytes, or None when the site has no such file."""
        ...


@dataclass(frozen=True, slots=True)
class FolderSource:
    root: Path
    label: str
    budget: Budget | None = None
    """The comparison's time, as for a site served over http (None: no limit, for a check
    of one's own SITE before an upload or signing)."""

    def close(self) -> None:
        pass

    def read(self, relative: str) -> bytes | None:
        if self.budget is not None and self.budget.left() <= 0:
            raise ConfigError(
                "site", f"the comparison took longer than its budget of {self.budget.seconds:g} seconds"
            )
        path = self.root / relative
        try:
            # (read without blocking: a named pipe put there since is_file is refused, not waited on)
            data = read_at_most(path, FETCH_LIMIT + 1) if path.is_file() else None
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:  # (not "missing": a file the site has that cannot be read)
            raise ConfigError("site", f"cannot read {shown_name(str(path))}: {exc.strerror or exc}") from None
        if data is not None and len(data) > FETCH_LIMIT:
            raise ConfigError("site", f"{path} is larger than {FETCH_LIMIT} bytes")
        return data


class Budget:
    """The time left for a whole comparison."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds

    def left(self) -> float:
        return self.ends - time.monotonic()


class UrlSource:
    """A site served over http(s), read through one pooled client within a budget."""

    def __init__(self, base: str, label: str, budget: Budget | None = None) -> None:
        self.base = base
        self.label = label
        self.budget = budget or Budget(BUDGET)
        self._client: BlockingClient | None = None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def read(self, relative: str) -> bytes | None:
        url = self.base + relative
        left = self.budget.left()
        if left <= 0:
            raise ConfigError(
                "site", f"the comparison took longer than its budget of {self.budget.seconds:g} seconds"
            )
        if self._client is None:
            self._client = BlockingClient(
                NetLimits(limit=FETCH_LIMIT, seconds=FETCH_TIMEOUT, retries=0, jobs=4)
            )
        seconds = min(FETCH_TIMEOUT, left)
        try:
            return self._client.get(url, seconds=seconds).body
        except TooSlow:
            if seconds < FETCH_TIMEOUT:
                raise ConfigError(
                    "site",
                    f"{url} did not arrive within what was left of the comparison's budget of "
                    f"{self.budget.seconds:g} seconds",
                ) from None
            raise ConfigError("site", f"{url} took longer than {seconds:g} seconds to arrive") from None
        except TooLarge:
            raise ConfigError("site", f"{url} is larger than {FETCH_LIMIT} bytes") from None
        except RedirectRefused as exc:
            raise ConfigError("site", f"{url} {exc.reason}") from None
        except HttpStatus as exc:
            if exc.status in (404, 410):
                return None
            raise ConfigError("site", f"{url}: {exc.reason}") from None
        except NotHttp as exc:
            raise ConfigError(
                "site", f"cannot fetch {url}: the answer is not valid HTTP ({exc.reason})"
            ) from None
        except FetchError as exc:
            raise ConfigError("site", f"cannot fetch {url}: {exc.reason}") from None


def open_site(where: str | Path, budget: Budget | None = None) -> Source:
    """A folder path or an http(s) URL of a site's base."""
    text = str(where)
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (checked only when read: a bad port is a bad URL)
    except ValueError as exc:
        if not text.lower().startswith(("http:", "https:")):
            return _folder(where, budget)
        raise ConfigError("site", f"{text} is not a valid URL ({exc})") from None
    if parts.scheme in ("http", "https") and parts.netloc:
        if any(c.isspace() or not c.isprintable() for c in text):  # (urllib would refuse it later)
            raise ConfigError("site", f"{text!r} is not a valid URL (it holds a space or control character)")
        if parts.query or parts.fragment:
            raise ConfigError("site", f"{text}: a site URL has no query or fragment")
        return UrlSource(text if text.endswith("/") else text + "/", text, budget)
    return _folder(where, budget)


def _folder(where: str | Path, budget: Budget | None) -> FolderSource:
    root = Path(where)
    if not root.is_dir():
        raise ConfigError("site", f"no such folder: {root}")
    return FolderSource(root, str(where), budget)


def read_manifest(source: Source) -> dict[str, dict[str, Any]]:
    """The numbers a site's manifest lists; ConfigError when it has no readable manifest."""
    data = source.read(MANIFEST_PATH)
    if data is None:
        raise ConfigError("site", f"{source.label} has no {MANIFEST_PATH} (is it a pith-mirror site?)")
    try:
        parsed = parse_json(data)
    except ValueError as exc:
        raise ConfigError("site", f"{source.label}: {MANIFEST_PATH} is {exc}") from None
    if not isinstance(parsed, dict) or parsed.get("manifest_type") != MANIFEST_TYPE:
        raise ConfigError("site", f"{source.label}: {MANIFEST_PATH} is not a {MANIFEST_TYPE}")
    if not isinstance(parsed.get("records", []), list):
        # (the build reads such a manifest as listing nothing; a comparison would then lie)
        raise ConfigError(
            "site", f"{source.label}: {MANIFEST_PATH}: {pointer('records')}: records is not a list"
        )
    try:  # (as the build reads a manifest: `read_published`)
        return manifest_entries(parsed, source.read)
    except ManifestError as exc:
        raise ConfigError("site", f"{source.label}: {exc}") from None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


Progress = Callable[[str, int, int], None]
"""(what, done, total): how far a long comparison has come."""


def check_files(
    source: Source, published: Mapping[str, Mapping[str, Any]], progress: Progress | None = None
) -> list[str]:
    """Where the site's files disagree with its manifest, one sentence each."""
    problems: list[str] = []
    total = len(published)
    for done, (number, entry) in enumerate(sorted(published.items())):
        if progress is not None:
            progress(f"checking {source.label}", done, total)
        body = number_body(number)

        def lie(path: str, why: str, number: str = number) -> None:
            problems.append(f"{number}: {path}: {LIES} ({why})")

        record_path, bundle_path, well_known_path, state_path = layout.vouched_files(body)
        record = source.read(record_path)
        if record is None:
            lie(record_path, "missing")
        elif _sha256(record) != entry.get("record_sha256"):
            lie(record_path, "sha256 is not record_sha256")

        listed_bundle = entry.get("bundle_sha256")
        for path in (bundle_path, well_known_path):
            bundle = source.read(path)
            if listed_bundle is None:
                if bundle is not None:
                    lie(path, "a bundle is served but the manifest lists none")
            elif bundle is None:
                lie(path, "missing")
            elif _sha256(bundle) != listed_bundle:
                lie(path, "sha256 is not bundle_sha256")

        state_bytes = source.read(state_path)
        if state_bytes is None:
            lie(state_path, "missing")
            continue
        try:
            state = parse_json(state_bytes)
        except ValueError as exc:
            lie(state_path, str(exc))
            continue
        if not isinstance(state, dict):
            lie(state_path, "not a JSON object")
            continue
        if state.get("state_sha256") != entry.get("state_sha256"):
            lie(state_path, "its state_sha256 is not the listed one")
        else:  # (the field is only what the file says of itself: hash what it holds)
            try:
                held = state_sha256(state)
            except (ValueError, TypeError, RecursionError):  # (NaN, or nested past canonical_json)
                held = None
            if held != entry.get("state_sha256"):
                lie(state_path, "what it holds does not hash to its state_sha256")
        if state.get("event_count") != entry.get("event_count"):
            lie(state_path, "its event_count is not the listed one")
    return problems


def compare_sites(
    a: str | Path, b: str | Path, budget: float = BUDGET, progress: Progress | None = None
) -> ComparisonResult:
    """Compare two sites (folders or URLs): their manifests, and each manifest against its
    files, all within `budget` seconds."""
    clock = Budget(budget)
    with contextlib.ExitStack() as stack:
        site_a = open_site(a, clock)
        stack.callback(site_a.close)
        site_b = open_site(b, clock)
        stack.callback(site_b.close)
        published_a, published_b = read_manifest(site_a), read_manifest(site_b)
        different: dict[str, tuple[str, ...]] = {}
        same = 0
        for number in sorted(published_a.keys() & published_b.keys()):
            ea, eb = published_a[number], published_b[number]
            fields = tuple(f for f in FIELDS if ea.get(f) != eb.get(f))
            if fields:
                different[number] = fields
            else:
                same += 1
        return ComparisonResult(
            a=site_a.label,
            b=site_b.label,
            missing_in_b=tuple(sorted(published_a.keys() - published_b.keys())),
            missing_in_a=tuple(sorted(published_b.keys() - published_a.keys())),
            different=different,
            same=same,
            problems_a=tuple(check_files(site_a, published_a, progress)),
            problems_b=tuple(check_files(site_b, published_b, progress)),
        )
