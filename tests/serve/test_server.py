"""The preview server against a built site: URLs as a static host resolves them, and nothing else.

These tests build the site once (no watcher) and talk to the real server over
loopback with raw HTTP, so traversal attempts reach the server unnormalised.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from generator.build.pipeline import build
from generator.commands.serve import LIVE_RELOAD_TAG, candidates, inject_live_reload, read_inside, resolve
from generator.commands.watch import Counter
from generator.trust.keys import Keyring

from .conftest import BUNDLE_PAGE, RECORD_PAGE, SEED_BUNDLE, SEED_RECORD, TEMPLATES, Preview, Workspace

SECRET = "top secret, outside SITE"


@pytest.fixture(scope="module")
def built_once(tmp_path_factory: pytest.TempPathFactory, real_keyring: Keyring) -> Path:
    """One real build of both documents for the whole module (tests get copies)."""
    space = Workspace(tmp_path_factory.mktemp("built"), real_keyring)
    space.content.mkdir()
    space.add(SEED_RECORD)
    space.add(SEED_BUNDLE)
    build(space.config(templates=TEMPLATES), space.keyring)
    return space.site


@pytest.fixture
def built(workspace: Workspace, built_once: Path) -> Workspace:
    """A copy of the built site, plus a few files a real build does not make."""
    shutil.copytree(built_once, workspace.site, symlinks=True)
    (workspace.site / "extra").mkdir()
    (workspace.site / "extra" / "index.html").write_text("<html><body>extra index</body></html>")
    (workspace.site / "logo.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    (workspace.root / "secret.txt").write_text(SECRET)
    return workspace


@pytest.fixture
def served(built: Workspace, start_server: Callable[..., Preview]) -> Preview:
    return start_server(built.site)


def test_pretty_urls_resolve_like_a_static_host(built: Workspace, served: Preview) -> None:
    site = built.site
    page = served.client.request(RECORD_PAGE)
    assert page.status == 200
    assert page.body == inject_live_reload((site / "pith/GO43K6A5MHLNBUADUVZ3AKFBNI.html").read_bytes())

    folder = served.client.request(RECORD_PAGE + "/")
    assert folder.status == 200
    assert folder.body == inject_live_reload(
        (site / "pith/GO43K6A5MHLNBUADUVZ3AKFBNI/index.html").read_bytes()
    )

    exact = served.client.request(BUNDLE_PAGE + ".json")
    assert exact.status == 200
    assert exact.body == (site / "pith/Z5NAPRQPUU4SIDOBV5N2FREXWZ.json").read_bytes()

    # A folder with no sibling .html answers with its index.html, without a redirect.
    extra = served.client.request("/extra")
    assert extra.status == 200
    assert b"extra index" in extra.body
    assert served.client.request("/").body == inject_live_reload((site / "index.html").read_bytes())


def test_query_string_takes_no_part_in_finding_the_file(built: Workspace, served: Preview) -> None:
    reply = served.client.request("/api/pith-number/resolve?arxiv=2111.04007&json=true")
    assert reply.status == 200
    assert reply.body == inject_live_reload((built.site / "api/pith-number/resolve.html").read_bytes())
    assert served.client.status(RECORD_PAGE + "?x=1#frag") == 200


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (RECORD_PAGE, "text/html; charset=utf-8"),
        (BUNDLE_PAGE + ".json", "application/json; charset=utf-8"),
        ("/.well-known/pith/mirror.json", "application/json; charset=utf-8"),
        ("/sitemap.xml", "application/xml"),
        ("/feed.xml", "application/atom+xml; charset=utf-8"),
        ("/logo.svg", "image/svg+xml"),
        ("/assets/site.css", "text/css; charset=utf-8"),
        ("/assets/site.js", "text/javascript; charset=utf-8"),
        ("/robots.txt", "text/plain; charset=utf-8"),
        ("/favicon.ico", "image/x-icon"),
    ],
)
def test_content_types(served: Preview, path: str, expected: str) -> None:
    reply = served.client.request(path)
    assert reply.status == 200, path
    assert reply.header("Content-Type") == expected


def test_miss_gets_the_sites_404_page(built: Workspace, served: Preview) -> None:
    for path in ("/pith/NOSUCHNUMBERAAAAAAAAAAAAAA", "/nothing/here/", "/api/pith-number/resolve/nope.json"):
        reply = served.client.request(path)
        assert reply.status == 404, path
        assert reply.header("Content-Type") == "text/html; charset=utf-8"
        assert reply.body == inject_live_reload((built.site / "404.html").read_bytes())


def test_head_sends_the_headers_of_get_without_a_body(served: Preview) -> None:
    for path in (RECORD_PAGE, BUNDLE_PAGE + ".json", "/missing"):
        got = served.client.request(path)
        head = served.client.request(path, method="HEAD")
        assert head.status == got.status
        assert head.body == b""
        assert head.header("Content-Length") == str(len(got.body))
        assert head.header("Content-Type") == got.header("Content-Type")


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_only_get_and_head(served: Preview, method: str) -> None:
    reply = served.client.request(RECORD_PAGE, method=method)
    assert reply.status == 405
    assert reply.header("Allow") == "GET, HEAD"


@pytest.mark.parametrize(
    "path",
    [
        "/../secret.txt",
        "/pith/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E/secret.txt",
        "/pith/%2e%2e/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/..%2Fsecret.txt",
        "/..\\secret.txt",
        "/%5c..%5csecret.txt",
        "/index.html%00.txt",
        "/./index.html",
    ],
)
def test_traversal_is_refused(served: Preview, path: str) -> None:
    reply = served.client.request(path)
    assert reply.status in (400, 403), path
    assert SECRET.encode() not in reply.body


def test_symlinks_leading_outside_site_are_refused(built: Workspace, served: Preview) -> None:
    outside = built.root / "outside"
    outside.mkdir()
    (outside / "page.html").write_text(SECRET)
    os.symlink(built.root / "secret.txt", built.site / "leak.txt")
    os.symlink(outside, built.site / "leakdir")
    os.symlink(outside / "page.html", built.site / "leakpage.html")
    os.symlink(built.site / "robots.txt", built.site / "inside.txt")

    for path in ("/leak.txt", "/leakdir/page.html", "/leakdir/page", "/leakpage", "/leakpage.html"):
        reply = served.client.request(path)
        assert reply.status in (403, 404), path
        assert SECRET.encode() not in reply.body, path
    # A link that stays inside SITE is just another name for a file of the site.
    assert served.client.request("/inside.txt").body == (built.site / "robots.txt").read_bytes()


def test_site_is_looked_up_again_on_every_request(built: Workspace, served: Preview) -> None:
    """A build swaps SITE by renaming folders; the server must follow the name, not the folder."""
    assert served.client.status(BUNDLE_PAGE) == 200
    fresh = built.root / "fresh"
    shutil.copytree(built.site, fresh)
    shutil.rmtree(fresh / "pith")
    os.rename(built.site, built.root / "old-site")
    os.rename(fresh, built.site)
    assert served.client.status(BUNDLE_PAGE) == 404
    assert served.client.status("/robots.txt") == 200


def test_live_reload_is_injected_when_served_and_never_written(built: Workspace, served: Preview) -> None:
    for path in (RECORD_PAGE, "/", "/report", "/missing"):
        body = served.client.request(path).body
        assert body.count(LIVE_RELOAD_TAG) == 1, path
        assert body.index(LIVE_RELOAD_TAG) < body.lower().rindex(b"</body>"), path
    assert LIVE_RELOAD_TAG not in served.client.request(BUNDLE_PAGE + ".json").body

    script = served.client.request("/__pith-mirror/livereload.js")
    assert script.status == 200
    assert script.header("Content-Type") == "text/javascript; charset=utf-8"
    assert b"/__pith-mirror/generation" in script.body
    assert b"location.reload()" in script.body

    for file in built.site.rglob("*"):
        if file.is_file():
            assert b"__pith-mirror" not in file.read_bytes(), file


def test_generation_endpoint_follows_the_shared_counter(
    built: Workspace, start_server: Callable[..., Preview]
) -> None:
    counter = Counter()
    running = start_server(built.site, generation=counter)
    first = running.client.request("/__pith-mirror/generation")
    assert first.header("Content-Type") == "application/json"
    assert first.header("Cache-Control") == "no-store"
    instance = running.server.instance
    assert json.loads(first.body) == {"generation": 0, "server": instance}
    counter.bump()
    after = json.loads(running.client.request("/__pith-mirror/generation").body)
    assert after == {"generation": 1, "server": instance}
    assert running.client.status("/__pith-mirror/anything-else") == 404
    # a restarted server counts from 0 again: the page tells it apart by its instance
    other = start_server(built.site, generation=Counter())
    assert other.server.instance != instance
    assert (
        json.loads(other.client.request("/__pith-mirror/generation").body)["server"] == other.server.instance
    )


@pytest.mark.parametrize(
    ("base_path", "requested", "location"),
    [
        ("/my%20mirror/", "/my%20mirror/", "/my%20mirror/"),
        ("/日本/", "/%E6%97%A5%E6%9C%AC/", "/%E6%97%A5%E6%9C%AC/"),
    ],
    ids=["percent-encoded", "not-ascii"],
)
def test_a_base_path_with_escapes_or_other_scripts_is_served_where_it_says(
    built: Workspace, start_server: Callable[..., Preview], base_path: str, requested: str, location: str
) -> None:
    """Requests arrive percent-encoded; the base was compared still encoded (every page
    404), and a redirect to a base outside Latin-1 ended the request with a traceback."""
    running = start_server(built.site, base_path=base_path)
    assert running.client.status(requested.rstrip("/") + RECORD_PAGE) == 200
    for bare in ("/", requested.rstrip("/")):
        reply = running.client.request(bare)
        assert (reply.status, reply.header("Location")) == (302, location)


def test_no_injection_when_live_reload_is_off(built: Workspace, start_server: Callable[..., Preview]) -> None:
    running = start_server(built.site, live_reload=False)
    assert (
        running.client.request(RECORD_PAGE).body
        == (built.site / "pith/GO43K6A5MHLNBUADUVZ3AKFBNI.html").read_bytes()
    )


def test_site_under_a_base_path(built: Workspace, start_server: Callable[..., Preview]) -> None:
    """A project site (base_url https://example.github.io/mirror/) is previewed under /mirror/."""
    running = start_server(built.site, base_path="/mirror/")
    assert running.server.url.endswith("/mirror/")
    assert running.client.status("/mirror" + RECORD_PAGE) == 200
    assert running.client.status(RECORD_PAGE) == 404
    root = running.client.request("/")
    assert (root.status, root.header("Location")) == (302, "/mirror/")
    assert running.client.status("/mirror/../secret.txt") in (403, 404)


def test_resolve_order_and_refusals(tmp_path: Path) -> None:
    """The lookup itself, without HTTP: file, then .html, then index.html; never outside."""
    site = tmp_path / "site"
    (site / "a").mkdir(parents=True)
    (site / "a.html").write_text("a")
    (site / "a" / "index.html").write_text("a/")
    (site / "b").mkdir()
    (site / "b" / "index.html").write_text("b/")
    assert candidates(["", "a"]) == ["a", "a.html", "a/index.html"]
    assert candidates(["", "a", ""]) == ["a/index.html"]
    assert resolve(site, "/a").file == (site / "a.html").resolve()
    assert resolve(site, "/a/").file == (site / "a" / "index.html").resolve()
    assert resolve(site, "/b").file == (site / "b" / "index.html").resolve()
    assert resolve(site, "/c").status == 404
    assert resolve(site, "/%2e%2e/x").status == 403
    assert resolve(site, "/%ff").status == 400


def test_a_site_folder_swapped_for_a_link_is_not_followed(tmp_path: Path) -> None:
    """A SITE that is a link is refused when serve starts; one swapped in while it runs
    served the files of wherever it pointed."""
    site, outside = tmp_path / "site", tmp_path / "outside"
    site.mkdir()
    (site / "index.html").write_text("mirror")
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    assert resolve(site, "/").status == 200
    site.rename(tmp_path / "site.old")
    site.symlink_to(outside, target_is_directory=True)
    assert resolve(site, "/secret.txt").status == 404
    assert resolve(site, "/").status == 404


def test_a_fifo_is_read_as_nothing_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "x.html"
    os.mkfifo(fifo)
    answers: list[bytes | None] = []
    reader = threading.Thread(target=lambda: answers.append(read_inside(fifo)), daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # (a blocking open waits for a writer: give it one, so the thread ends)
        with open(fifo, "wb"):
            pass
        pytest.fail("read_inside waited on a FIFO")
    assert answers == [None]


def test_a_request_target_that_is_no_url_gets_400(served: Preview) -> None:
    host, port = served.server.server_address[:2]
    with socket.create_connection((str(host), int(port)), timeout=10) as connection:
        connection.sendall(b"GET http://[/ HTTP/1.0\r\n\r\n")
        reply = connection.recv(1000)
    assert reply.startswith(b"HTTP/1.0 400 ") or reply.startswith(b"HTTP/1.1 400 "), reply
