"""`compare` fetches through the same client as `pull`: a file cut short is a fetch error
(exit 2), not a file that differs; a refused redirect says why; the whole comparison has a
time budget."""

from __future__ import annotations

import time
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

from .pullkit import REAL_BUNDLE_BODY, Server, answer, run


def cut_short(handler: SimpleHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", "5000")
    handler.end_headers()
    handler.wfile.write(b'{"cut": ')
    handler.close_connection = True


def test_a_file_cut_short_is_a_fetch_error(built: tuple[Path, Path], server: Server) -> None:
    server.routes[f"/pith/{REAL_BUNDLE_BODY}/bundle.json"] = cut_short
    result = run("compare", built[1], server.url)
    assert result.code == 2, result.out
    assert f"cannot fetch {server.url}pith/{REAL_BUNDLE_BODY}/bundle.json" in result.err
    assert "cut short" in result.err and "differs" not in result.out


def test_a_redirect_loop_is_reported_with_its_reason(built: tuple[Path, Path], server: Server) -> None:
    server.routes["/.well-known/pith/mirror.json"] = answer(
        302, headers={"Location": "/.well-known/pith/mirror.json"}
    )
    result = run("compare", built[1], server.url)
    assert result.code == 2
    assert "which is not followed (a redirect loop)" in result.err


def test_a_redirect_to_a_file_url_is_reported_with_its_reason(
    built: tuple[Path, Path], server: Server
) -> None:
    server.routes["/.well-known/pith/mirror.json"] = answer(302, headers={"Location": "file:///etc/passwd"})
    result = run("compare", built[1], server.url)
    assert result.code == 2
    assert (
        "redirects to file:///etc/passwd, which is not followed (from http only to http or https)"
        in result.err
    )


def test_the_whole_comparison_has_a_budget(built: tuple[Path, Path], server: Server) -> None:
    server.delay = 0.3
    started = time.monotonic()
    result = run("compare", built[1], server.url, "--budget", "1")
    assert result.code == 2
    assert "budget of 1 seconds" in result.err
    assert time.monotonic() - started < 5
