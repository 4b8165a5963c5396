"""Which sources a pull asks (`pull.mirror_sources`): the mirrors a source lists."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from generator.publish.client import run_sync
from generator.publish.pull import mirror_sources


class Listing:
    """A client that answers every request with one mirror list."""

    def __init__(self, mirrors: list[str]) -> None:
        self.body = json.dumps({"mirrors": [{"base_url": url} for url in mirrors]}).encode()

    async def get(self, url: str, headers: Any = None, limit: int | None = None) -> SimpleNamespace:
        return SimpleNamespace(body=self.body)


def test_an_https_source_lends_its_trust_only_to_https_mirrors() -> None:
    """Over plain http anyone between could answer for a mirror, and a mirror's answer
    that names no document can keep a number from being asked of the next source: an
    https source's http mirrors are left out, as its redirects are followed only to https."""
    listed = ["http://plain.example/", "https://secure.example/m", "HTTP://shout.example/"]
    found = run_sync(mirror_sources(Listing(listed), "https://pith.example/"))  # type: ignore[arg-type]
    assert found == ("https://pith.example/", "https://secure.example/m/")
    found = run_sync(mirror_sources(Listing(listed), "http://lab.example/"))  # type: ignore[arg-type]
    assert found == (
        "http://lab.example/",
        "http://plain.example/",
        "https://secure.example/m/",
        "http://shout.example/",
    )
