"""Before a build: has anything changed since the last one?

Rules:
- The answer comes from a small companion file of the build cache,
  `<cache dir>/unchanged-check.json` (the last build's cache key, its other
  inputs such as Markdown pages and the build clock, the SHA-256 of the manifest
  it published, its report, and the checksum of the build state's head it goes
  with), and from the state's index of every document's stat (state.py). When the
  key and the other inputs are the same, every document has exactly the stat it
  had and the site's manifest is the one that build wrote, nothing changed: the
  build repeats that report and touches nothing.
- Otherwise the build goes on from what this check read: the listing, the state's
  head and indexes, and the names that changed (`Look`), read and compared once.
- This module, and what it imports, stays small: a command that finds nothing
  changed (a scheduled build, a Makefile) answers before the code that renders
  and writes a site is imported, which costs more than the check itself.
- The file is trusted only through its checksum; anything unreadable or
  different means "changed", and the build goes on as usual.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .. import __version__
from ..site.config import MAX_BASE_URL, SiteConfig, build_time, check_cache_folder
from ..site.layout import MANIFEST_PATH, MANIFEST_TYPE
from ..site.markdown_pages import page_files, page_titles
from ..trust.errors import BuildError, Code, Rejection
from ..trust.files import file_sha256, open_regular, read_at_most, write_atomic
from ..trust.keys import Keyring
from ..trust.load import discover_names, is_utf8
from .journal import undo_path
from .report import BuildReport

CACHE_FORMAT = 36
"""The build cache's format (state.py), kept in its companion file too: code that
changes what the cache holds changes this, and the next build is then a full
one, not an answer that nothing changed. So does a verification rule made stricter:
a record the cache holds as verified is verified again."""
QUICK_FILE = "unchanged-check.json"
CACHE_FILE = "build-cache.json"
"""The build state's head (see state.py)."""
PARTS_FOLDER = "build-cache"
INDEX = ".index.json"
"""A partition's index of files: `{name: brief}` (see `checked_brief`)."""

Listed = list[tuple[str, str, int]]
"""(path, name, stat) of every document: see `content_files` and `stat_key`."""


@dataclass(frozen=True, slots=True)
class Unchanged:
    """What the last build reported, valid while no input has changed."""

    published: int
    rejections: tuple[Rejection, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LastState:
    """The build state's head and every partition's index of files, read and checked
    (see `read_last_state`): read once, by this check, for the build too."""

    checksum: str
    """The head's, as its first line holds it (see `write_checked`)."""
    head: dict[str, Any]
    indexes: dict[str, dict[str, list[Any]]]
    """Partition -> content name -> brief."""

    def still_saved(self, directory: Path) -> bool:
        """Whether the state's head in `directory` is still this one: a build that
        changed SITE since removed it, or saved another (see state.forget_saved)."""
        try:
            first = read_at_most(directory / CACHE_FILE, len(self.checksum) + 1)
        except OSError:
            return False
        return first == self.checksum.encode() + b"\n"


@dataclass(frozen=True, slots=True)
class Changed:
    """What a listing of every document showed changed since the state."""

    names: list[str]
    """Added, removed, or of another stat, in order."""
    listed: Listed
    """The listing's (path, name, stat) of those still there."""


@dataclass(frozen=True, slots=True)
class Look:
    """What a build knows before it reads its cache."""

    started: float
    """When the build started (`time.monotonic`): its report's time counts from here,
    so it includes importing the build's code when the CLI looked first."""
    key: str
    """See `build_key`."""
    extra: str
    """See `extra_inputs`."""
    report: BuildReport | None
    """The last build's report, when nothing changed since: then it is the whole build."""
    listed: Listed | None
    """Every document, when they were listed to tell: the build goes on from this
    listing instead of listing them again."""
    last: LastState | None = None
    """The build state this check compared the listing with."""
    changed: Changed | None = None
    """What changed since `last`, when the listing tells it (see `compare`)."""


def look(config: SiteConfig, keyring: Keyring, quick: bool) -> Look:
    """Check the folders, compute the build's key, and, with `quick`, tell whether
    anything changed since the last build. Raises BuildError for folders no build
    can use, and for an input that cannot be read."""
    started = time.monotonic()
    try:
        _check_folders(config)
        if config.mirror_key is not None:  # (a build signs last: a bad key must not wait for it)
            from ..publish.integrity import load_mirror_key

            load_mirror_key(config.mirror_key)
        key, extra = build_key(config, keyring), extra_inputs(config)
        # (a build killed while it changed SITE left its journal: a build must undo it)
        if not quick or undo_path(config.site).exists():
            return Look(started, key, extra, None, None)
        last, listed, state, changed = _last_if_unchanged(config, key, extra)
    except OSError as exc:  # e.g. an unreadable template
        raise BuildError.from_os_error(exc, str(config.site)) from None
    if last is None:
        return Look(started, key, extra, None, listed, state, changed)
    report = BuildReport(
        published=last.published,
        rejections=last.rejections,
        notes=last.notes,
        files_written=0,
        seconds=time.monotonic() - started,
        mode="incremental",
    )
    return Look(started, key, extra, report, None)


def _check_folders(config: SiteConfig) -> None:
    content = config.content
    if config.content_store is not None:  # (listing it is the test: a store has no folders)
        check_site(config)
        return
    if content.exists() and not content.is_dir():
        raise BuildError(str(content), "the content path is a file, not a folder of documents")
    if not content.is_dir():
        raise BuildError(str(content), "the content folder does not exist")
    check_site(config)


def check_site(config: SiteConfig) -> None:
    """Raise BuildError unless SITE may be built (and so served): a folder pith-mirror
    built, or a new or empty one, holding none of the inputs. `serve` asks before it
    serves anything: a folder the build refuses (a project folder holding content/
    and the mirror key, or /etc) must never be served as the site."""
    content, site = config.content, config.site
    if site.exists() and not site.is_dir():
        raise BuildError(str(site), "the site path exists and is not a folder")
    if site.is_symlink():  # (a full build renames the site folder: it would replace the link)
        raise BuildError(
            str(site),
            "the site folder is a symbolic link, which a full build would replace with a folder:"
            " name the folder it points to instead",
        )
    site_path, content_path = site.resolve(), content.resolve()
    # (a content store is no folder here: STORE_CONTENT, below /dev/null, holds nothing)
    if site_path == content_path or content_path in site_path.parents:
        raise BuildError(str(site), "the site folder must not be inside the content folder")
    # A full build replaces the whole site folder: nothing else may live there.
    for name, folder in (("content", content_path), ("templates", config.templates.resolve())):
        if site_path in folder.parents:
            raise BuildError(
                str(site), f"the {name} folder is inside the site folder, which a full build replaces"
            )
    # The cache is neither input nor output: in content/ its files would be read as
    # documents, in site/ they would be published (and a full build replaces them).
    cache_path = config.cache_dir.resolve()
    for name, folder, why in (
        ("content", content_path, "where its files would be read as documents"),
        ("site", site_path, "where its files would be published"),
    ):
        if cache_path == folder or folder in cache_path.parents:
            raise BuildError(
                str(config.cache_dir), f"the cache folder must be outside the {name} folder, {why}"
            )
    check_cache_folder(config.cache_dir)  # (and a folder of the mirror's own)
    if site.is_dir() and not _built_here(site / MANIFEST_PATH) and any(site.iterdir()):
        raise BuildError(
            str(site),
            f"the folder holds files but no {MANIFEST_PATH} that pith-mirror wrote, so pith-mirror"
            " did not build it, and a full build replaces the whole folder: name a new or empty folder",
        )


def is_built_site(site: Path) -> bool:
    """Whether `site` is a folder pith-mirror built (see `_built_here`)."""
    return _built_here(site / MANIFEST_PATH)


def inside_a_built_site(path: Path) -> Path | None:
    """The site folder pith-mirror built that holds `path`, if any: a file there is
    published (and a full build replaces it). Both as written and with its links
    followed: `kl/key.json`, with `kl` a link to a folder of a site, is in it."""
    for folder in (*path.absolute().parents, *path.resolve().parents):
        if _built_here(folder / MANIFEST_PATH):
            return folder
    return None


def _built_here(manifest: Path) -> bool:
    """Whether `manifest` is a regular file that begins as pith-mirror writes its
    manifest (sorted keys: only `base_url`, at most `MAX_BASE_URL` characters, and
    the generator come before the type). Its mere presence is not enough: a folder
    holding any file by that name would otherwise be replaced whole."""
    try:
        if not stat.S_ISREG(manifest.lstat().st_mode):  # (a named pipe would block the read)
            return False
        # ... and it must be the folder's own: a linked .well-known would lend it another site's
        if any(folder.is_symlink() for folder in (manifest.parent, manifest.parent.parent)):
            return False
        head = read_at_most(manifest, _MANIFEST_HEAD)
    except OSError:
        return False
    return (
        head.startswith(b"{")
        and f'"manifest_type": "{MANIFEST_TYPE}"'.encode() in head
        and b'"tool": "pith-mirror"' in head
    )


_MANIFEST_HEAD = 16 * MAX_BASE_URL
"""Room for the longest base URL, each character escaped in JSON (`\\uXXXX`), and the rest."""


def build_key(config: SiteConfig, keyring: Keyring) -> str:
    """Everything that, when it changes, changes what a build writes, on every page:
    the Markdown pages' titles are in every page's navigation, so a new, removed or
    renamed page makes the next build a full one."""
    digest = hashlib.sha256()
    options = {
        "version": __version__,
        "keys": keyring.fingerprint,
        "base_url": config.base_url,
        "site_title": config.site_title,
        "primary_url": config.primary_url,
        "max_bytes": config.max_bytes,
        "cname": config.cname,
        "per_page": config.per_page,
        "checksums": config.checksums,
        "mirror_key": str(config.mirror_key) if config.mirror_key else None,
        "content": config.content_store or str(config.content.resolve()),
        "navigation": page_titles(config.content / "pages"),
    }
    if config.relative:  # (named only when set: the key of every other build stays what it was)
        options["relative"] = True
    digest.update(orjson.dumps(options, option=orjson.OPT_SORT_KEYS))
    for path in sorted(p for p in config.templates.rglob("*") if p.is_file()):
        digest.update(path.relative_to(config.templates).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def extra_inputs(config: SiteConfig) -> str:
    """Inputs besides the documents: Markdown pages and the build clock."""
    digest = hashlib.sha256(str(build_time()).encode())
    for page in page_files(config.content / "pages"):  # (what the build would publish of them)
        digest.update(os.fsencode(page.path.name) + b"\0" + page.why.encode() + b"\0")
        digest.update(hashlib.sha256(page.text.encode()).digest())
    return digest.hexdigest()


def content_files(content: Path) -> Iterator[tuple[str, str]]:
    """(path, name) of every document in `content`, named as the build cache and
    rejections name them: the folder's own name, then the path within it
    ("content/a/b.json")."""
    top = content_top(content)
    return ((path, top + rel) for path, rel in discover_names(content))


def listed_content(config: SiteConfig) -> Listed:
    """(path, name, stat) of every document: a folder's, walked and statted, or an
    object store's, listed (build/content_store.py, imported only then)."""
    if config.content_store is not None:
        from .content_store import list_documents

        return [(path, name, tag_stat(size, tag)) for path, name, size, tag in list_documents(config)]
    return [(path, name, stat_key(path)) for path, name in content_files(config.content)]


def tag_stat(size: int, tag: str) -> int:
    """An object's size and store tag as the one integer a file's stat is kept as
    (`pack_stat`): the tag's hash takes the place of the time, so the same size and
    tag is the same document. Without a tag, a value no listing repeats, so the
    object is read again at every build."""
    digest = hashlib.sha256(tag.encode() if tag else os.urandom(16)).digest()
    return pack_stat(size, int.from_bytes(digest[:8], "big") >> 1, 0)


def content_top(content: Path) -> str:
    """The start of every document's name: the content folder's own name and a slash,
    as the watcher names changed files too. Not `content.name`, which is "" for "."
    and ".." for ".." (the watcher's hints then named no document)."""
    return os.path.basename(os.path.abspath(content)) + "/"


_U64 = (1 << 64) - 1


def stat_key(path: Path | str) -> int:
    """The file's size, modification time and inode, which say it is the file
    last seen (see `pack_stat`)."""
    st = os.stat(path)
    return pack_stat(st.st_size, st.st_mtime_ns, st.st_ino)


def pack_stat(size: int, mtime_ns: int, inode: int) -> int:
    """Size, modification time and inode as one integer, each exactly, as 64 bits:
    the main process keeps one per content file, and at 100,000 files a tuple
    of three costs about 11 MB more."""
    return (size & _U64) | (mtime_ns & _U64) << 64 | (inode & _U64) << 128


def unpack_stat(stat: int) -> list[int]:
    """[size, modification time, inode], as the cache files keep them."""
    mtime_ns = (stat >> 64) & _U64
    return [stat & _U64, mtime_ns - (1 << 64) if mtime_ns >> 63 else mtime_ns, stat >> 128]


def _last_if_unchanged(
    config: SiteConfig, key: str, extra: str
) -> tuple[Unchanged | None, Listed | None, LastState | None, Changed | None]:
    """The last report if nothing changed; otherwise None, every document when they
    were listed to tell, and the state and the names that changed since, when the
    state could be read. They are listed only once the saved report is known to be
    for this key, so a first build, or one after a change of settings, does not stat
    every input for nothing."""
    try:
        data = read_checked(config.cache_dir / QUICK_FILE)
        if data.get("format") != CACHE_FORMAT or data.get("key") != key or data.get("extra") != extra:
            return None, None, None, None
    except (OSError, ValueError, AttributeError):
        return None, None, None, None
    try:
        listed = listed_content(config)
    except OSError:
        return None, None, None, None
    try:
        state = read_last_state(config.cache_dir, key, str(data["state"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None, listed, None, None
    changed = compare(listed, state)
    try:
        if changed is None or changed.names:
            return None, listed, state, changed
        manifest = config.site / MANIFEST_PATH
        if not manifest.is_file() or file_sha256(manifest) != data["manifest_sha256"]:
            return None, listed, state, changed
        if not shards_present(config.site):
            return None, listed, state, changed
        last = Unchanged(
            published=int(data["published"]),
            rejections=tuple(Rejection(f, p, Code(c), m) for f, p, c, m in data["rejections"]),
            notes=tuple(str(n) for n in data["notes"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None, listed, state, changed
    return last, None, None, None


def shards_present(site: Path) -> bool:
    """Whether every shard SITE's manifest index names is a file of SITE (a stat each:
    32 of them, 1,024 at millions of records); False for an index that cannot be read.
    A shard deleted by hand is then written again by the next build."""
    # (read here, not through site.manifest: a build with nothing to do imports no more
    # than it needs, and that module brings the templates' engine)
    try:
        shards = orjson.loads(_read_whole(site / MANIFEST_PATH))["shards"]
        return all((site / str(shard["path"])).is_file() for shard in shards)
    except (OSError, ValueError, KeyError, TypeError):
        return False


def read_last_state(directory: Path, key: str, checksum: str | None = None) -> LastState:
    """The build state's head (of this format and key; with `checksum`, the very head
    the companion file names) and every partition's index, each as the head names it.
    Raises OSError, ValueError, KeyError, TypeError or AttributeError otherwise."""
    raw = _read_whole(directory / CACHE_FILE)
    found, _, payload = raw.partition(b"\n")
    if hashlib.sha256(payload).hexdigest().encode() != found or (
        checksum is not None and found.decode() != checksum
    ):
        raise ValueError("not the head named")
    head = orjson.loads(payload)
    if head.get("format") != CACHE_FORMAT or head.get("key") != key:
        raise ValueError("a state for another build")
    folder = directory / PARTS_FOLDER
    indexes: dict[str, dict[str, list[Any]]] = {}
    for part, value in sorted(head["parts"].items()):
        index = _read_whole(folder / f"{part}{INDEX}")
        if hashlib.sha256(index).hexdigest() != value["index"]:
            raise ValueError(f"{part}{INDEX} is not the file the head names")
        briefs = orjson.loads(index)
        if type(briefs) is not dict:
            raise ValueError("an index of another shape")
        indexes[part] = {name: checked_brief(brief) for name, brief in briefs.items()}
    return LastState(found.decode(), head, indexes)


def checked_brief(value: Any) -> list[Any]:
    """A file's brief, [size, modification time, inode, refused], as the state's
    index keeps it (ValueError if it is not one)."""
    if type(value) is not list or len(value) != 4:
        raise ValueError("a file's brief")
    size, mtime_ns, inode, refused = value
    if (
        type(size) is not int
        or type(mtime_ns) is not int
        or type(inode) is not int
        or type(refused) is not bool
    ):
        raise ValueError("a file's brief")
    return value


def compare(listed: Listed, state: LastState) -> Changed | None:
    """The names a listing shows added, removed or of another stat since `state`;
    None when one added is not UTF-8 (reports show it under another spelling, which
    the build's own listing makes)."""
    known: dict[str, list[Any]] = {}
    for briefs in state.indexes.values():
        known.update(briefs)
    present = [
        entry
        for entry in listed
        if (brief := known.get(entry[1])) is None or pack_stat(brief[0], brief[1], brief[2]) != entry[2]
    ]
    if not all(is_utf8(name) for _path, name, _stat in present if name not in known):
        return None
    gone = known.keys() - {name for _path, name, _stat in listed}
    return Changed(sorted({name for _path, name, _stat in present} | gone), present)


def _read_whole(path: Path) -> bytes:
    with open_regular(path) as handle:  # (a named pipe there would hang, a device never end)
        return handle.read()


def save_unchanged(
    directory: Path, key: str, extra: str, manifest_sha256: str, state: str, report: Unchanged
) -> None:
    """Write the companion file after a build (`state`: the checksum of the state's
    head that build wrote, see `write_checked`)."""
    write_checked(
        directory,
        QUICK_FILE,
        {
            "format": CACHE_FORMAT,
            "key": key,
            "extra": extra,
            "manifest_sha256": manifest_sha256,
            "state": state,
            "published": report.published,
            "rejections": [[r.file, r.pointer, r.code.value, r.message] for r in report.rejections],
            "notes": list(report.notes),
        },
    )


def read_checked(path: Path) -> Any:
    """A small JSON file written by `write_checked`: its SHA-256 on the first line, then
    the JSON. ValueError when the checksum does not match (a torn or edited file)."""
    raw = _read_whole(path)
    checksum, _, payload = raw.partition(b"\n")
    if hashlib.sha256(payload).hexdigest().encode() != checksum:
        raise ValueError("checksum")
    return orjson.loads(payload)


def write_checked(directory: Path, name: str, data: Any) -> str:
    """Write `data` as `read_checked` reads it, atomically; returns its checksum."""
    payload = orjson.dumps(data)
    directory.mkdir(parents=True, exist_ok=True)
    checksum = hashlib.sha256(payload).hexdigest()
    write_atomic(directory / name, checksum.encode() + b"\n" + payload)
    return checksum
