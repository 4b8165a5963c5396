"""`compare` against sites and servers that misbehave: a clear error, never a traceback.

The servers are real sockets on 127.0.0.1, answering every request with the
same bytes, so each way an answer can be broken is exactly the one tested.
"""

from __future__ import annotations

import json
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import manifestkit
import pytest
from netkit import raw_server

from generator.commands.cli import main
from generator.publish import compare
from generator.site.layout import MANIFEST_PATH
from generator.site.manifest import read_published

from .conftest import BUNDLE_NUMBER, RECORD_BODY, RECORD_NUMBER

DEEP = b"[" * 100_000


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str]:
    """The real CLI in this process: exit code and stderr."""
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def sends(data: bytes) -> Callable[[socket.socket], None]:
    return lambda conn: conn.sendall(data)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (b"GARBAGE\r\n\r\n", "ClientResponseError"),
        (b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 10_001 + b"\r\n", "Too many headers"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "cut short"),
    ],
    ids=["bad-status-line", "too-many-headers", "cut-off-chunk"],
)
def test_an_answer_that_is_not_http(
    built_site: Path, capsys: pytest.CaptureFixture[str], answer: bytes, said: str
) -> None:
    with raw_server(sends(answer)) as url:
        code, err = run(capsys, "compare", built_site, url)
    assert code == 2
    assert f"cannot fetch {url}{MANIFEST_PATH}: the answer is not valid HTTP" in err
    assert said in err


def test_a_redirect_to_another_scheme_is_refused_with_a_reason(
    built_site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = b"HTTP/1.1 302 Found\r\nLocation: ftp://127.0.0.1:1/m\r\nContent-Length: 0\r\n\r\n"
    with raw_server(sends(answer)) as url:
        code, err = run(capsys, "compare", built_site, url)
    assert code == 2
    assert f"{url}{MANIFEST_PATH} redirects to ftp://127.0.0.1:1/m, which is not followed" in err


def test_a_server_that_trickles_is_given_up_on(
    built_site: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each byte comes well within the socket timeout; the whole file does not come in time."""
    monkeypatch.setattr(compare, "FETCH_TIMEOUT", 0.5)

    def trickle(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n")
        for _ in range(40):
            conn.sendall(b" ")
            time.sleep(0.05)

    started = time.monotonic()
    with raw_server(trickle) as url:
        code, err = run(capsys, "compare", built_site, url)
    assert code == 2
    assert f"{url}{MANIFEST_PATH} took longer than 0.5 seconds to arrive" in err
    assert time.monotonic() - started < 1.9


def _header_trickle(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    for _ in range(40):
        conn.sendall(b"a")
        time.sleep(0.05)
    conn.sendall(b"\r\nContent-Length: 0\r\n\r\n")


def _handshake_trickle(conn: socket.socket) -> None:
    conn.sendall(b"\x16\x03\x03\x40\x00")  # a TLS handshake record of 16 kB, to come
    for _ in range(40):
        conn.sendall(b"\x00")
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("scheme", "trickle"),
    [("http", _header_trickle), ("https", _handshake_trickle)],
    ids=["headers", "tls-handshake"],
)
def test_a_server_that_trickles_before_the_body_is_given_up_on(
    built_site: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
    trickle: Callable[[socket.socket], None],
) -> None:
    """A socket timeout bounds one read: headers (or a TLS handshake) that come a
    byte at a time must be bounded by the time limit for the whole answer too."""
    monkeypatch.setattr(compare, "FETCH_TIMEOUT", 0.5)
    started = time.monotonic()
    with raw_server(trickle) as url:
        url = url.replace("http:", f"{scheme}:", 1)
        code, err = run(capsys, "compare", built_site, url)
    assert code == 2
    assert f"{url}{MANIFEST_PATH} took longer than 0.5 seconds to arrive" in err
    assert time.monotonic() - started < 1.9


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://[x", "http://[x is not a valid URL"),
        ("https://a b/", "'https://a b/' is not a valid URL (it holds a space"),
        ("http://a:99999/", "http://a:99999/ is not a valid URL"),
    ],
)
def test_a_url_that_is_not_one(
    built_site: Path, capsys: pytest.CaptureFixture[str], url: str, said: str
) -> None:
    code, err = run(capsys, "compare", built_site, url)
    assert code == 2 and said in err


@pytest.fixture
def two_sites(built_site: Path, tmp_path: Path) -> tuple[Path, Path]:
    return (
        Path(shutil.copytree(built_site, tmp_path / "a", symlinks=True)),
        Path(shutil.copytree(built_site, tmp_path / "b", symlinks=True)),
    )


def test_a_manifest_nested_too_deep(two_sites: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_sites
    (a / MANIFEST_PATH).write_bytes(DEEP)
    code, err = run(capsys, "compare", a, b)
    assert code == 2 and f"{MANIFEST_PATH} is not valid JSON: it nests too deeply" in err


def test_a_state_file_nested_too_deep(
    two_sites: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_sites
    (a / "pith" / RECORD_BODY / "state.json").write_bytes(DEEP)
    code = main(["compare", str(a), str(b)])
    out = capsys.readouterr().out
    assert code == 1
    assert f"pith/{RECORD_BODY}/state.json: {compare.LIES} (not valid JSON: it nests too deeply)" in out


def test_a_manifest_whose_records_are_not_a_list(
    two_sites: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_sites
    manifest = json.loads((a / MANIFEST_PATH).read_bytes())
    manifest["records"] = 5
    (a / MANIFEST_PATH).write_text(json.dumps(manifest))
    code, err = run(capsys, "compare", a, b)
    assert code == 2 and f"{MANIFEST_PATH}: /records: records is not a list" in err


@pytest.mark.parametrize("records", [5, "x", {"pith_number": "x"}])
def test_the_build_reads_a_manifest_of_the_wrong_shape_as_unreadable(
    built_site: Path, tmp_path: Path, records: object
) -> None:
    """`read_published` (the build's own reading) lists nothing, as for a missing manifest."""
    manifest = json.loads((built_site / MANIFEST_PATH).read_bytes())
    assert read_published(built_site)  # (the real one lists its records)
    (tmp_path / MANIFEST_PATH).parent.mkdir(parents=True)
    (tmp_path / MANIFEST_PATH).write_text(json.dumps({**manifest, "records": records}))
    assert read_published(tmp_path) == {}
    (tmp_path / MANIFEST_PATH).write_bytes(DEEP)
    assert read_published(tmp_path) == {}


def test_an_entry_whose_number_lacks_its_prefix_is_refused_not_a_traceback(
    two_sites: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An entry naming a bare body ("GO43...", no "pith:YYYY:") was taken for a number,
    and taking its body apart ended compare, and a build over that site, in an IndexError."""
    a, b = two_sites

    def bare(entry: dict[str, object]) -> None:
        entry["pith_number"] = str(entry["pith_number"]).rsplit(":", 1)[1]

    manifestkit.forge(a, bare)
    # (the build's own reading: SITE's record files stand in for the shards it cannot trust)
    assert sorted(read_published(a)) == [BUNDLE_NUMBER, RECORD_NUMBER]
    code = main(["compare", str(a), str(b)])
    captured = capsys.readouterr()
    assert code == 2 and "Traceback" not in captured.err, captured.err
    assert "/records: does not list 1 number(s) starting" in captured.err


_NO_HASH = "what it holds does not hash to its state_sha256"


@pytest.mark.parametrize(
    ("forge", "why"),
    [
        (lambda state: state.update(equivocation_count=3), _NO_HASH),
        (
            lambda state: state["current"]["source_aliases"].append(
                {"alias_kind": "doi", "alias_value": "10.9/x"}
            ),
            _NO_HASH,
        ),
        (lambda state: state.update(extra=float("nan")), "not valid JSON: NaN is not a finite JSON number"),
    ],
    ids=["a count", "an alias", "a value canonical JSON cannot hold"],
)
def test_a_state_file_altered_under_its_own_hash_is_found(
    two_sites: tuple[Path, Path], capsys: pytest.CaptureFixture[str], forge: Any, why: str
) -> None:
    """Only the file's own state_sha256 field was compared with the manifest: a
    state.json altered with that field kept was "identical"."""
    a, b = two_sites
    path = a / "pith" / RECORD_BODY / "state.json"
    state = json.loads(path.read_bytes())
    forge(state)
    path.write_text(json.dumps(state))
    code = main(["compare", str(a), str(b)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert f"pith/{RECORD_BODY}/state.json: {compare.LIES} ({why})" in out
