"""Helpers for the build's tests (the fixtures built on them are in conftest.py).

A `Project` is one small mirror in a temporary folder: `content/` with signed
documents (the two real ones and/or documents from `tests/factories.py`),
`site/` for the output and a keys file pinning both the real resolver key and
the tests' key. Builds run in-process with `jobs=1` unless a test says so.

The link checker and the tree helpers live here too, so every test module
checks the site the same way.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
import sys
from dataclasses import dataclass, replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

TESTS = Path(__file__).resolve().parent.parent
if str(TESTS) not in sys.path:  # for `factories`, whatever pytest's import mode
    sys.path.insert(0, str(TESTS))

import factories as f  # noqa: E402
import pytest  # noqa: E402

from generator.build.pipeline import build  # noqa: E402
from generator.build.report import BuildReport  # noqa: E402
from generator.commands.cli import main  # noqa: E402
from generator.site.config import SiteConfig  # noqa: E402
from generator.trust.keys import Keyring, default_keyring, keyring_from_json  # noqa: E402

REPO = TESTS.parent
CONTENT = REPO / "content"
REAL_RECORD = CONTENT / "GO43K6A5MHLNBUADUVZ3AKFBNI.record.json"
REAL_BUNDLE = CONTENT / "Z5NAPRQPUU4SIDOBV5N2FREXWZ.bundle.json"
RECORD_BODY = "GO43K6A5MHLNBUADUVZ3AKFBNI"
BUNDLE_BODY = "Z5NAPRQPUU4SIDOBV5N2FREXWZ"
RECORD_NUMBER = f"pith:2021:{RECORD_BODY}"
BUNDLE_NUMBER = f"pith:2020:{BUNDLE_BODY}"

SUB_BASE_URL = "https://example.github.io/mirror/"


def key_entries() -> list[dict[str, Any]]:
    """The real resolver key and the tests' key, as a keys file holds them."""
    real = [dict(k.entry) for k in default_keyring().keys]
    return [*real, f.TEST_SIGNER.key_entry()]


BOTH_KEYS: Keyring = keyring_from_json(key_entries(), "real + test")


# ---------------------------------------------------------------- trees


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root (hidden ones included) -> its bytes, by relative posix path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def all_paths(root: Path) -> set[str]:
    """Every file, folder and link under root, relative (for "nothing else was written")."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def html_files(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if p.is_file())


# ---------------------------------------------------------------- projects


@dataclass
class Project:
    root: Path

    @property
    def content(self) -> Path:
        return self.root / "content"

    @property
    def site(self) -> Path:
        return self.root / "site"

    @property
    def staging(self) -> Path:
        return self.root / ".site.staging"

    @property
    def keys_file(self) -> Path:
        return self.root / "keys.json"

    def add(self, name: str, doc: Any) -> Path:
        """Write a document (dict -> JSON via the factory; bytes as they are) into content/."""
        path = self.content / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(doc, bytes):
            path.write_bytes(doc)
        else:
            f.write(path, doc)
        return path

    def add_real(self, record: bool = True, bundle: bool = True) -> None:
        self.content.mkdir(parents=True, exist_ok=True)
        if record:
            shutil.copyfile(REAL_RECORD, self.content / REAL_RECORD.name)
        if bundle:
            shutil.copyfile(REAL_BUNDLE, self.content / REAL_BUNDLE.name)

    def remove(self, name: str) -> None:
        (self.content / name).unlink()

    def config(self, **overrides: Any) -> SiteConfig:
        # (these builds take documents down on purpose; the removal guard has its own tests)
        config = SiteConfig(content=self.content, site=self.site, jobs=1, allow_removals=True)
        return replace(config, **overrides)

    def build(self, **overrides: Any) -> BuildReport:
        self.content.mkdir(parents=True, exist_ok=True)
        return build(self.config(**overrides), BOTH_KEYS)

    def write_keys(self) -> Path:
        self.keys_file.write_text(json.dumps(key_entries()), "utf-8")
        return self.keys_file

    def read(self, path: str) -> bytes:
        return (self.site / path).read_bytes()

    def json(self, path: str) -> Any:
        return json.loads(self.read(path))

    def text(self, path: str) -> str:
        return self.read(path).decode("utf-8")

    def lookup(self, kind: str, value: str) -> dict[str, Any] | None:
        return lookup(self.site, kind, value)

    def looked_up(self, kind: str, value: str) -> str | None:
        """The Pith number a value's look-up names, or None."""
        entry = self.lookup(kind, value)
        return None if entry is None else str(entry["pith_number"])


ABOUT_MD = """# About this mirror

This mirror re-verifies every record.

<script>alert("md")</script>

<div onclick="alert(2)">raw block</div>

A [bad link](javascript:alert(3)) and a [good one](https://example.org/).
"""


# ---------------------------------------------------------------- documents


def record_doc(
    source_id: str = "2101.00001",
    version: int = 1,
    title: str = "A Small Test Paper",
    submitted_at: str = "2021-01-02T03:04:05Z",
    **record_kw: Any,
) -> dict[str, Any]:
    """A valid record document for a given arXiv id (the factory's, with its own canonical record)."""
    record = f.canonical_record(
        source_id=source_id, version=version, title=title, submitted_at=submitted_at, **record_kw
    )
    return f.record_document(record=record, title=title)


def bundle_events(
    record: dict[str, Any], title: str, snapshots: int, start_day: int = 10, integrity: bool = False
) -> list[dict[str, Any]]:
    """record_created plus `snapshots` graph_snapshot events on successive days (with
    `integrity`, each naming the paper's integrity report, as the resolver's do)."""
    events = [f.record_created_event(f.TEST_SIGNER, record)]
    for i in range(snapshots):
        created_at = f"2026-07-{start_day + i:02d}T00:00:00Z"
        if not integrity:
            events.append(f.graph_snapshot_event(f.TEST_SIGNER, record, title, created_at=created_at))
            continue
        snapshot = f.graph_snapshot(record, title)
        snapshot["integrity"]["endpoint"] = f"/pith/{record['source']['id']}/integrity.json"
        payload = {"graph_snapshot": snapshot, "verdict_id": None}
        events.append(
            f.event(f.TEST_SIGNER, f.pith_number(record), "graph_snapshot", payload, created_at=created_at)
        )
    return events


# ---------------------------------------------------------------- links


class _Refs(HTMLParser):
    """Collects every URL a page refers to: a/link href, script/img src, meta refresh,
    and the data-*-json / data-keys attributes that the browser verifier fetches."""

    URL_DATA_ATTRS = ("data-record-json", "data-bundle-json", "data-state-json", "data-keys")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v or "") for k, v in attrs}
        if tag in ("a", "link") and "href" in a:
            self.refs.append((f"<{tag} href>", a["href"]))
        if tag in ("script", "img", "iframe", "source") and "src" in a:
            self.refs.append((f"<{tag} src>", a["src"]))
        if tag == "meta" and a.get("http-equiv", "").lower() == "refresh":
            content = a.get("content", "")
            _, _, rest = content.partition(";")
            rest = rest.strip()
            if rest.lower().startswith("url="):
                self.refs.append(("<meta refresh>", rest[4:].strip().strip("'\"")))
        if tag == "form" and a.get("action"):
            self.refs.append(("<form action>", a["action"]))
        for name in self.URL_DATA_ATTRS:
            if a.get(name):
                self.refs.append((f"[{name}]", a[name]))


def page_refs(html: str) -> list[tuple[str, str]]:
    parser = _Refs()
    parser.feed(html)
    parser.close()
    return parser.refs


def resolves(site: Path, path: str) -> bool:
    """Does the URL path (relative to the site root, no leading slash) answer on GitHub Pages?"""
    path = unquote(path)
    if path == "" or path.endswith("/"):
        return (site / path / "index.html").is_file()
    return any((site / p).is_file() for p in (path, f"{path}.html", f"{path}/index.html"))


_IDS = re.compile(r'\sid="([^"]*)"')


def broken_anchors(site: Path, base_path: str = "/") -> list[str]:
    """Every link to a part of a page (`/guide#checks`, `#main`) whose page has no
    element of that id: a link that lands at the top of the wrong place."""
    problems: list[str] = []
    ids: dict[Path, set[str]] = {}
    for page in html_files(site):
        name = page.relative_to(site).as_posix()
        for where, url in page_refs(page.read_text("utf-8")):
            parts = urlsplit(url)
            if not parts.fragment or parts.scheme or url.startswith("//"):
                continue
            if url.startswith("#"):
                target: Path | None = page
            elif parts.path.startswith(base_path):
                rest = unquote(parts.path[len(base_path) :])
                found = [
                    site / p for p in (rest, f"{rest}.html", f"{rest}/index.html") if (site / p).is_file()
                ]
                target = found[0] if found and rest and not rest.endswith("/") else None
            else:
                target = None
            if target is None:
                problems.append(f"{name}: {where} {url!r}: no page to find the part in")
                continue
            if target not in ids:
                ids[target] = set(html.unescape(i) for i in _IDS.findall(target.read_text("utf-8")))
            if unquote(parts.fragment) not in ids[target]:
                problems.append(f"{name}: {where} {url!r}: its page has no id {parts.fragment!r}")
    return problems


def broken_links(site: Path, base_path: str = "/", absolute_base: str | None = None) -> list[str]:
    """Every internal link of every HTML page that does not resolve, or is not under base_path."""
    problems: list[str] = []
    for page in html_files(site):
        name = page.relative_to(site).as_posix()
        for where, url in page_refs(page.read_text("utf-8")):
            parts = urlsplit(url)
            if absolute_base and url.startswith(absolute_base):
                path = urlsplit(url).path
            elif parts.scheme in ("http", "https") or url.startswith("//"):
                continue  # external
            elif parts.scheme:
                problems.append(f"{name}: {where} {url!r}: not an http(s) or internal link")
                continue
            elif url.startswith("#"):
                continue
            else:
                path = parts.path
            if not path.startswith(base_path):
                problems.append(f"{name}: {where} {url!r} is not under the base path {base_path!r}")
                continue
            if not resolves(site, path[len(base_path) :]):
                problems.append(f"{name}: {where} {url!r} does not resolve to a file of the site")
    return problems


def fresh_tree(project: Project, root: Path, **settings: Any) -> dict[str, bytes]:
    """The site a fresh build of `project`'s content makes, in a new folder under `root`
    (with `settings`, such as a number of jobs, for that build)."""
    fresh = Project(root)
    shutil.copytree(project.content, fresh.content)
    fresh.build(**settings)
    return tree(fresh.site)


def assert_same_as_fresh(project: Project, root: Path, ignore: tuple[str, ...] = ("report",)) -> None:
    """An incremental site equals a fresh build of the same content (the report
    may differ: it notes what the incremental build unpublished)."""
    ours, theirs = tree(project.site), fresh_tree(project, root)
    assert sorted(ours) == sorted(theirs)
    assert [p for p in ours if ours[p] != theirs[p] and not p.startswith(ignore)] == []


RESOLVE = "api/pith-number/resolve"


def shard_of(kind: str, value: str, width: int) -> str:
    """The rule of docs/published-files.md, written independently of the build: the first
    `width` hex digits of SHA-256 of the value's UTF-8 bytes, a DOI's lower-cased first."""
    key = value.lower() if kind == "doi" else value
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:width]


def lookup(site: Path, kind: str, value: str) -> dict[str, Any] | None:
    """A value's look-up entry, found as a script finds it: the width from the index, then
    the shard that names; None when the shard or its entry is not there."""
    width = json.loads((site / RESOLVE / "index.json").read_bytes())["shard_hex_digits"]
    shard = shard_of(kind, value, width)
    path = site / RESOLVE / kind / f"{shard}.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_bytes())
    assert (data["alias_kind"], data["shard"]) == (kind, shard), path
    entry: dict[str, Any] | None = data["entries"].get(value.lower() if kind == "doi" else value)
    return entry


def lookup_shards(site: Path) -> dict[str, dict[str, Any]]:
    """Every look-up shard of a site, by its path, as JSON."""
    root = site / RESOLVE
    return {
        p.relative_to(site).as_posix(): json.loads(p.read_bytes())
        for p in sorted(root.glob("*/*.json"))
        if p.is_file()
    }


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`pith-mirror ARGS` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err
