"""The built site on a plain static host (Python's http.server, which answers a folder
as GitHub Pages and a bucket's website do: `x` is sent on to `x/`, which serves
`x/index.html`), read in Chromium: the resolve page's documented address keeps its
look-up on the way through the folder twin."""

from __future__ import annotations

import functools
from http.server import SimpleHTTPRequestHandler
from typing import Any

import pytest
from netkit import http_server

from .test_pages import RECORD


@pytest.mark.parametrize("slash", ["", "/"])
def test_a_look_up_reaches_its_record_through_the_folder_twin(page: Any, real_site: Any, slash: str) -> None:
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(real_site.site))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    with http_server(handler) as url:
        page.goto(f"{url}/api/pith-number/resolve{slash}?arxiv=2111.04007")
        page.wait_for_url(f"**/pith/{RECORD}*")
        assert RECORD in page.url
