"""Settings for a build: defaults, then a config file, then command-line flags.

Rules:
- A config file is `[tool.pith-mirror]` in the mirror's `pyproject.toml`, or
  the top level of `pith-mirror.toml` (looked up in the working folder), or
  the file named by `--config`.
- Every key is known; an unknown key or a value of the wrong type is a
  `ConfigError` naming the key, never silently ignored.
- `base_url` decides every link: the site works at a domain root ("/") or
  under a sub-path ("https://example.github.io/mirror/" -> "/mirror/").
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, quote, unquote, urlsplit

from ..trust.errors import ConfigError
from ..trust.load import DEFAULT_MAX_BYTES, is_utf8, read_settings_file, shown_name

PRIMARY_URL = "https://pith.science"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
PROJECT_ROOT = PACKAGE_ROOT.parent


def default_templates() -> Path:
    """The repository's templates/ (a checkout or editable install), else the installed copy."""
    checkout = PROJECT_ROOT / "templates"
    return checkout if checkout.is_dir() else PACKAGE_ROOT / "templates"


@dataclass(frozen=True, slots=True)
class SiteConfig:
    content: Path = Path("content")
    site: Path = Path("site")
    base_url: str = "/"
    site_title: str = "Pith mirror"
    primary_url: str = PRIMARY_URL
    keys: Path | None = None
    templates: Path = field(default_factory=default_templates)
    max_bytes: int = DEFAULT_MAX_BYTES
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    cache: Path | None = None
    cname: str | None = None
    mirror_key: Path | None = None
    per_page: int = 50
    checksums: bool = False
    """Write SHA256SUMS of the whole site (and sign it with mirror_key) after each build."""
    relative: bool = False
    """Links relative to each page, so the site opens from disk (`relative_links.py`)."""
    allow_removals: bool = False
    """Let a build unpublish any share of the mirror (see removal_guard.py)."""
    deployed: Path | None = None
    """The live site's mirror.json: its numbers count as published (see removal_guard.py)."""
    scheduler: str | None = None
    """Run the workers' tasks on a Dask cluster: "local" (a cluster of `jobs` worker
    processes started on this machine) or a scheduler's address, "tcp://host:8786"
    (see build/cluster.py). None: the local process pool."""
    content_store: str | None = None
    """The documents' folder in an object store ("s3://bucket/prefix/"), when `content`
    was given as such a URL (see build/content_store.py): `content` is then
    `STORE_CONTENT` / its name, a path no file can be read from."""

    @property
    def base_path(self) -> str:
        """The path every URL starts with: "/" or "/mirror/", percent-encoded where
        base_url holds letters beyond ASCII (see `ascii_path`)."""
        path = urlsplit(self.base_url).path or "/"
        return ascii_path(path if path.endswith("/") else path + "/")

    @property
    def absolute_base(self) -> str | None:
        """ "https://host/path/" when base_url names a host, else None; in ASCII
        (see `ascii_path`). UnicodeError for a host IDNA cannot write (`validate`
        refuses such a base_url)."""
        parts = urlsplit(self.base_url)
        if parts.scheme in ("http", "https") and parts.netloc:
            return f"{parts.scheme}://{_ascii_netloc(parts)}{self.base_path}"
        return None

    @property
    def cache_dir(self) -> Path:
        """Beside SITE by default, so separate sites never share a cache."""
        return self.cache if self.cache is not None else self.site.parent / ".pith-cache" / self.site.name


_KEYS: dict[str, tuple[type, ...]] = {
    "content": (str,),
    "site": (str,),
    "base_url": (str,),
    "site_title": (str,),
    "primary_url": (str,),
    "keys": (str,),
    "templates": (str,),
    "max_bytes": (int,),
    "jobs": (int,),
    "cache": (str,),
    "cname": (str,),
    "mirror_key": (str,),
    "per_page": (int,),
    "checksums": (bool,),
    "relative": (bool,),
    "allow_removals": (bool,),
    "deployed": (str,),
    "scheduler": (str,),
}
_TOML_TYPE_NAMES: dict[type, str] = {
    bool: "true or false",
    int: "an integer",
    float: "a number with a fraction",
    str: "a string",
    list: "an array",
    dict: "a table",
}
STORE_SCHEMES = ("s3", "gs", "az")
"""Object stores that `content` may name (build/content_store.py)."""
STORE_CONTENT = Path(os.devnull)
"""The folder `content` names when the documents are in an object store: below
/dev/null nothing can be read or listed, so code that treats it as a folder by
mistake fails instead of reading some other folder."""


def store_url(value: str) -> str | None:
    """`value` as an object store's folder, "s3://bucket/prefix/", or None for a path.
    ConfigError for such a URL naming no bucket."""
    scheme, sep, rest = value.partition("://")
    if not sep or scheme.lower() not in STORE_SCHEMES:
        return None
    if not rest.strip("/"):
        raise ConfigError("content", f"{value}: names no bucket ({scheme}://BUCKET/PREFIX/)")
    return f"{scheme.lower()}://{rest.strip('/')}/"


_PATH_KEYS = {"content", "site", "keys", "templates", "cache", "mirror_key", "deployed"}


def local_folder(value: str, key: str) -> str:
    """CONTENT or SITE given as a folder: a path as it is, a `file://` URL as its path.
    Any other URL is a ConfigError: taken for a path, `s3://bucket/site/` was a folder
    `s3:/bucket/site` below this one, and a build "published" into it with exit 0."""
    scheme, sep, _rest = value.partition("://")
    if not sep or not scheme or not scheme.replace("+", "").replace("-", "").replace(".", "").isalnum():
        return value
    parts = urlsplit(value)
    if parts.scheme.lower() == "file":
        if parts.netloc not in ("", "localhost") or parts.query or parts.fragment or not parts.path:
            raise ConfigError(key, f"{value}: a file:// URL names a folder on this machine (file:///PATH)")
        return unquote(parts.path)
    if key == "site":
        raise ConfigError(
            key,
            f"{value}: SITE is a folder on this machine; a build does not write into object storage"
            f" itself. Build into a folder, then publish it: pith-mirror upload SITE {value}",
        )
    raise ConfigError(
        key,
        f"{value}: neither a folder (a path, file:///PATH) nor an object store (s3://, gs:// or az://BUCKET/PREFIX/)",
    )


def _toml_type_name(value: object) -> str:
    """TOML's own name for a value's type; the only others TOML has are dates and times."""
    names = (name for kind, name in _TOML_TYPE_NAMES.items() if isinstance(value, kind))
    return next(names, "a date or time")


def find_config_file(explicit: Path | None, cwd: Path) -> tuple[Path, dict[str, Any]] | None:
    """The settings table and where it came from, or None when there is none."""
    if explicit is not None:
        return explicit, _read_table(explicit, explicit.name == "pyproject.toml")
    for name in ("pith-mirror.toml", "pyproject.toml"):
        candidate = cwd / name
        if candidate.is_file():
            table = _read_table(candidate, name == "pyproject.toml")
            if table or name == "pith-mirror.toml":
                return candidate, table
    return None


def _read_table(path: Path, in_pyproject: bool) -> dict[str, Any]:
    """The settings in a file: all of it, or only `[tool.pith-mirror]` of a pyproject.toml
    (none when it has no such table). A `tool` or `tool.pith-mirror` that is there but
    no table (`tool = 5`, or the easy slip `[[tool.pith-mirror]]`) is refused: ignoring it
    would build with the defaults while the user believes their settings apply."""
    raw = read_settings_file(path, "config")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError("config", f"{shown_name(str(path))} is not valid TOML: {exc}") from None
    except RecursionError:  # (tomllib recurses into nested arrays and inline tables)
        raise ConfigError(
            "config", f"{shown_name(str(path))} nests arrays or tables too deeply to be a settings file"
        ) from None
    if not in_pyproject:
        return data
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(
            "tool", f"in {shown_name(str(path))}: expected a table, found {_toml_type_name(tool)}"
        )
    table = tool.get("pith-mirror", {})
    if isinstance(table, list) and table and all(isinstance(item, dict) for item in table):
        raise ConfigError(
            "tool.pith-mirror",
            f"in {shown_name(str(path))}: found an array of tables ([[tool.pith-mirror]]);"
            " write one table, [tool.pith-mirror]",
        )
    if not isinstance(table, dict):
        raise ConfigError(
            "tool.pith-mirror",
            f"in {shown_name(str(path))}: expected a table ([tool.pith-mirror]),"
            f" found {_toml_type_name(table)}",
        )
    return table


def apply(config: SiteConfig, settings: dict[str, Any], origin: Path | None = None) -> SiteConfig:
    """Overlay settings (from a file or flags) on a config, checking every key."""
    changes: dict[str, Any] = {}
    for key, value in settings.items():
        if value is None:
            continue
        name = key.replace("-", "_")
        if name not in _KEYS:
            raise ConfigError(key, "unknown setting")
        expected = _KEYS[name]
        if not isinstance(value, (*expected, Path)) or (isinstance(value, bool) and bool not in expected):
            wanted = _TOML_TYPE_NAMES[expected[0]]
            raise ConfigError(key, f"expected {wanted}, found {_toml_type_name(value)}")
        if name == "content":
            changes["content_store"] = url = store_url(value) if isinstance(value, str) else None
            if url is not None:
                changes[name] = STORE_CONTENT / url.rstrip("/").rpartition("/")[2]
                continue
        if name in ("content", "site") and isinstance(value, str):
            value = local_folder(value, name)
        if name in _PATH_KEYS:
            path = Path(str(value))
            value = (origin.parent / path) if origin is not None and not path.is_absolute() else path
            if name == "site" and value.name in ("", ".."):
                # "." or "..": a full build renames the site folder, which needs its real
                # name, and the default cache goes beside it, not inside
                value = value.absolute().resolve()
        changes[name] = value
    updated = replace(config, **changes)
    validate(updated)
    return updated


MIN_MAX_BYTES = 1024
MAX_MAX_BYTES = 1 << 30
"""1 GiB: far past any document, and within what one read can ask for (2**64 bytes
failed deep in the reading code, with a traceback)."""
JOBS_PER_CORE = 4
_NOT_IN_URLS = frozenset('"<>\\^`{|}')


_PATH_SAFE = "/%:@!$&'()*+,;="
"""ASCII a URL path may hold as it is (with letters, digits and "-._~", which
`quote` never encodes): only what lies beyond ASCII is percent-encoded."""


def check_max_bytes(value: int) -> None:
    """ConfigError unless `value` is a usable max_bytes (the settings' and `verify --max-bytes`)."""
    if not MIN_MAX_BYTES <= value <= MAX_MAX_BYTES:
        raise ConfigError("max_bytes", f"must be from {MIN_MAX_BYTES} to {MAX_MAX_BYTES} (1 GiB)")


def ascii_path(path: str) -> str:
    """`path` with every character beyond ASCII percent-encoded as UTF-8.

    A base URL may be written as a reader writes it ("https://bücher.example/café/"),
    and browsers encode it on the way. Sitemaps, robots.txt, the feed and the
    manifest are read by programs that expect URLs, which hold ASCII only
    (RFC 3986): every URL the site writes is in that form, links included."""
    return path if path.isascii() else quote(path, safe=_PATH_SAFE)


def _ascii_netloc(parts: SplitResult) -> str:
    """The host part of a URL with a host beyond ASCII in its IDNA form ("xn--")."""
    if parts.netloc.isascii():
        return parts.netloc
    userinfo, at, _ = parts.netloc.rpartition("@")
    host = (parts.hostname or "").encode("idna").decode("ascii")
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{ascii_path(userinfo)}{at}{host}{port}"


def max_jobs() -> int:
    """The most worker processes a build may start: more only fight over the cores (and
    an unbounded number can fork until the machine runs out of processes)."""
    return JOBS_PER_CORE * (os.cpu_count() or 1)


_HOST_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def is_host_name(name: str) -> bool:
    """A DNS host name, as the CNAME file holds it: dot-separated labels of ASCII
    letters, digits and inner hyphens, 63 characters each, 253 in all; the last
    label is not a number (that would be an IP address)."""
    labels = name.split(".")
    return (
        len(name) <= 253
        and all(_HOST_LABEL.fullmatch(label) for label in labels)
        and not labels[-1].isdigit()
    )


def is_http_url_with_host(url: str) -> bool:
    """An http:// or https:// URL that names a host (and, if any, a port that is one),
    with no query or fragment: pages append "/pith/<number>" to it."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # e.g. "http://[" or a port out of range
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and port != 0
        and "?" not in url
        and "#" not in url
        and _url_characters_ok(url)
    )


_SCHEDULER = re.compile(
    r"(?:(?:tcp|tls|ws|wss)://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):([0-9]{1,5})"
)


def is_scheduler(value: str) -> bool:
    """ "local", or a Dask scheduler's address: [PROTOCOL://]HOST:PORT, as `dask worker`
    and `Client` take it (tcp:// when no protocol is named)."""
    if value == "local":
        return True
    found = _SCHEDULER.fullmatch(value)
    return found is not None and 1 <= int(found.group(1)) <= 65535


MAX_BASE_URL = 2048
"""Longer is no address a reader types or a host serves; it also bounds how much of
a site's manifest is read to tell that pith-mirror wrote it (change_check.py)."""


def _url_characters_ok(url: str) -> bool:
    """No white space, controls or characters URLs never hold, and none that XML
    cannot hold (the feed and sitemaps carry the URL; `isprintable` is false for
    those, U+FFFE and U+FFFF included): the rest of Unicode is fine, as browsers
    percent-encode it."""
    return all(c not in _NOT_IN_URLS and not c.isspace() and c.isprintable() for c in url)


def validate(config: SiteConfig) -> None:
    for name in ("base_url", "primary_url", "site_title", "cname"):
        value = getattr(config, name)
        if isinstance(value, str) and not is_utf8(value):
            raise ConfigError(name, "holds bytes that are not UTF-8")
    for name in ("content", "site", "templates", "cache", "keys", "mirror_key", "deployed"):
        path = getattr(config, name)
        if path is not None and "\0" in str(path):  # (every system call would refuse it, unexplained)
            raise ConfigError(name, "the path holds a NUL character (\\u0000), which no file name can")
        whole = None if path is None else str(path.absolute())  # (the current folder's name counts too)
        if whole is not None and not is_utf8(whole):
            raise ConfigError(name, f"the path {shown_name(whole)} is not valid UTF-8; rename it")
    if len(config.base_url) > MAX_BASE_URL:
        raise ConfigError(
            "base_url", f"is {len(config.base_url):,} characters long; at most {MAX_BASE_URL:,}"
        )
    try:
        parts = urlsplit(config.base_url)
        port = parts.port if parts.scheme else None
    except ValueError:  # e.g. "http://[" (an unclosed IPv6 bracket) or "http://h:99999"
        raise ConfigError("base_url", f"{config.base_url!r} is not a path or an http(s) URL") from None
    if parts.scheme not in ("", "http", "https") or (parts.scheme and not parts.hostname) or port == 0:
        raise ConfigError("base_url", f"{config.base_url!r} is not a path or an http(s) URL")
    if "?" in config.base_url or "#" in config.base_url:  # (an empty one too: links would carry it)
        raise ConfigError("base_url", "a base URL has no query or fragment")
    if not parts.scheme and not config.base_url.startswith("/"):
        raise ConfigError("base_url", f"{config.base_url!r} is a relative path: a path starts with '/'")
    if not parts.scheme and parts.netloc:  # "//host/": a link to another host, not a path
        raise ConfigError("base_url", f"{config.base_url!r} names a host: write it as https://host/...")
    if config.base_path.startswith("//"):  # "//host/...": browsers read a link to another host
        raise ConfigError(
            "base_url", f"{config.base_url!r} has a path starting with '//', which links read as another host"
        )
    if not _url_characters_ok(config.base_url):
        raise ConfigError(
            "base_url", f"{config.base_url!r} holds a character a URL cannot (percent-encode it)"
        )
    try:
        config.absolute_base  # noqa: B018 (its host in IDNA form, which may not exist)
    except UnicodeError:
        raise ConfigError(
            "base_url", f"the host of {config.base_url!r} has no IDNA form, which a URL needs"
        ) from None
    if not is_http_url_with_host(config.primary_url):
        raise ConfigError(
            "primary_url", f"{config.primary_url!r} is not an http(s) URL with a host, like {PRIMARY_URL}"
        )
    if not 1 <= config.jobs <= max_jobs():
        cores = os.cpu_count() or 1
        raise ConfigError(
            "jobs",
            f"must be from 1 to {max_jobs()} ({JOBS_PER_CORE} worker processes for each of {cores} core(s))",
        )
    check_max_bytes(config.max_bytes)
    if config.scheduler is not None and not is_scheduler(config.scheduler):
        raise ConfigError(
            "scheduler",
            f'{config.scheduler!r} is neither "local" nor a Dask scheduler\'s address such as'
            " tcp://host:8786",
        )
    if config.per_page < 1:
        raise ConfigError("per_page", "must be at least 1")
    if config.cname is not None and not is_host_name(config.cname):
        raise ConfigError(
            "cname",
            f"{config.cname!r} is not a domain name: name one like mirror.example.org (letters, digits,"
            " hyphens and dots only; an international name in its xn-- form)",
        )


def inside(folder: Path, path: Path) -> bool:
    """Whether `path`, links followed, is inside `folder`: an input file inside the
    site folder, which a full build replaces whole, would be published."""
    return folder.resolve() in path.resolve().parents


INSIDE_SITE = "is inside the site folder, which a full build replaces and publishes: move it out"


CACHE_NAMES = re.compile(
    r"templates|build-cache|\.?(?:build-cache|unchanged-check)\.json(?:\.stale|\.tmp-\d+)?"
)
"""The only names a cache folder holds: the build state's head and the folder of its
partitions (state.py), the check for no
change (change_check.py), a cache set aside while a warm build runs, each file's
temporary name while it is written (write.temporary_path), and the compiled
templates' folder (templating.py)."""


def check_cache_folder(folder: Path) -> None:
    """ConfigError unless `folder` may be the build cache: a folder of the mirror's own.

    The rule: the folder does not exist yet, or is empty, or holds nothing but the
    cache's own files (`CACHE_NAMES`). A build writes, renames and deletes files
    there, so a folder holding anything else (`/etc`, a home folder, a project) is
    someone else's and is refused, whatever it is. (Where it may be is checked with
    the other folders: never in CONTENT or SITE; see `change_check.check_site`.)"""
    shown = shown_name(str(folder))
    try:
        with os.scandir(folder) as entries:
            foreign = next((e.name for e in entries if not CACHE_NAMES.fullmatch(e.name)), None)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise ConfigError("cache", f"{shown} is a file, not a folder") from None
    except OSError as exc:
        raise ConfigError("cache", f"cannot list {shown}: {exc.strerror}") from None
    if foreign is not None:
        raise ConfigError(
            "cache",
            f"{shown} holds {shown_name(foreign)!r}, which is no build cache file: the cache must be"
            " a folder of the mirror's own (new, empty, or used only as its cache), since builds"
            " write and delete files there; name another, such as .pith-cache/site beside the site",
        )


def load_config(explicit: Path | None, flags: dict[str, Any], cwd: Path | None = None) -> SiteConfig:
    config = SiteConfig()
    try:
        here = cwd or Path.cwd()
    except FileNotFoundError:  # e.g. the shell was in a site folder that a full build replaced
        raise ConfigError("current folder", "it no longer exists: change into it again") from None
    found = find_config_file(explicit, here)
    if found is not None:
        origin, table = found
        config = apply(config, table, origin if origin.is_absolute() else origin.resolve())
    build_time()  # (a bad SOURCE_DATE_EPOCH is refused now, before anything is built or written)
    config = apply(config, flags)
    # A full build replaces SITE whole: a keys or settings file there would be deleted
    # by the next one, and a mirror key published first.
    for name, path in (
        ("settings file", explicit),
        ("keys file", config.keys),
        ("mirror key", config.mirror_key),
    ):
        if path is not None and inside(config.site, path):
            raise ConfigError(str(path), f"the {name} {INSIDE_SITE}")
    return config


LAST_EPOCH = 253402300799
"""9999-12-31T23:59:59Z: the last time a four-digit year (and so every date the site shows) can hold."""


def build_time() -> str | None:
    """The only clock a build reads: SOURCE_DATE_EPOCH, for reproducible output.

    Unset or empty, there is none. Anything else must be a whole number of seconds in
    ASCII digits up to LAST_EPOCH; other values are refused rather than ignored (as the
    reproducible-builds specification asks), since the user meant to fix the time.
    (`str.isdigit` alone would let through "²", which `int` refuses.)"""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if not epoch:
        return None
    shown = repr(epoch) if len(epoch) <= 30 else repr(epoch[:30]) + "..."
    if not (epoch.isascii() and epoch.isdigit()):
        raise ConfigError(
            "SOURCE_DATE_EPOCH",
            f"{shown} is not a whole number of seconds since 1970 (ASCII digits only)",
        )
    seconds = epoch.lstrip("0") or "0"  # (leading zeros could pass int()'s 4,300-digit limit)
    if len(seconds) > len(str(LAST_EPOCH)) or int(seconds) > LAST_EPOCH:
        raise ConfigError(
            "SOURCE_DATE_EPOCH",
            f"{shown} is later than 9999-12-31T23:59:59Z ({LAST_EPOCH}), the last time a date here can hold",
        )
    return datetime.fromtimestamp(int(seconds), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
