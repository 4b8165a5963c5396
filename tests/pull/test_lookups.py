"""Look-ups through a stand-in for the resolver's query-string resolve
(`api/pith-number/resolve?arxiv=...&json=true`), answering both ways the real one
may: JSON with `pith_number`, or a redirect to the record page. Nothing more of
the real answer is assumed, and the look-up is only a hint: the documents it
leads to must verify as the paper asked for."""

from __future__ import annotations

import hashlib
import json
import shutil
import urllib.parse
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

import factories as f
import pytest

from .pullkit import REAL_BUNDLE_BODY, REAL_RECORD_BODY, RECORD, RECORD_BODY, Server, answer, documents, pull

REAL_RECORD_NUMBER = f"pith:2021:{REAL_RECORD_BODY}"


def resolver(server: Server, names: dict[str, str]) -> list[dict[str, list[str]]]:
    """The served site without its look-up files, and a resolve endpoint that answers
    an arXiv look-up with JSON and a DOI look-up with a redirect; returns the queries seen."""
    shutil.rmtree(server.root / "api" / "pith-number" / "resolve")
    seen: list[dict[str, list[str]]] = []

    def resolve(handler: SimpleHTTPRequestHandler) -> None:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(handler.path).query)
        seen.append(query)
        if query.get("json") != ["true"]:
            answer(400)(handler)
        elif "arxiv" in query and query["arxiv"][0] in names:
            number = names[query["arxiv"][0]]
            answer(200, json.dumps({"pith_number": number, "other": "fields"}).encode())(handler)
        elif "doi" in query and query["doi"][0] in names:
            body = names[query["doi"][0]].rsplit(":", 1)[1]
            answer(302, headers={"Location": f"/pith/{body}"})(handler)
        else:
            answer(404, b"no such paper")(handler)

    server.routes["/api/pith-number/resolve"] = resolve
    return seen


@pytest.mark.parametrize(
    ("option", "asked", "query"),
    [
        ("--arxiv", "2111.04007", {"arxiv": ["2111.04007"], "json": ["true"]}),  # answered with JSON
        ("--doi", "10.48550/arXiv.2111.04007", {"doi": ["10.48550/arxiv.2111.04007"], "json": ["true"]}),
    ],
    ids=["arxiv-answered-with-json", "doi-answered-with-a-redirect"],
)
def test_a_look_up_on_the_resolver_finds_the_number(
    server: Server, content: Path, keys: Path, option: str, asked: str, query: dict[str, list[str]]
) -> None:
    seen = resolver(server, {query[next(iter(query))][0]: REAL_RECORD_NUMBER})
    result = pull(server.url, content, keys, option, asked, "--json")
    assert result.code == 0, result.err
    assert seen == [query]
    assert result.json()["results"][0]["pith_number"] == REAL_RECORD_NUMBER
    assert set(documents(content)) == {f"{REAL_RECORD_BODY}.record.json"}


def test_a_look_up_that_names_another_paper_is_refused(server: Server, content: Path, keys: Path) -> None:
    """The resolve answer is not signed: the signed record of the number it names must be
    the paper asked for."""
    resolver(server, {"2111.04007": f.pith_number(RECORD), "2010.10458": f"pith:2021:{RECORD_BODY}"})
    result = pull(server.url, content, keys, "--arxiv", "2111.04007", "--json")
    assert result.code == 1
    errors = result.json()["results"][0]["errors"]
    assert {e["code"] for e in errors} == {"pull.wrong_document"}
    assert documents(content) == {}
    assert pull(server.url, content, keys, "--arxiv", "2010.10458").code == 1
    assert pull(server.url, content, keys, "--arxiv", "2010.10458v1").code == 1
    assert documents(content) == {}


def test_a_paper_the_resolver_does_not_know(server: Server, content: Path, keys: Path) -> None:
    resolver(server, {})
    result = pull(server.url, content, keys, "--arxiv", "2401.99999", "--json")
    assert result.code == 1
    assert result.json()["results"][0]["errors"][0]["code"] == "fetch.not_found"
    assert result.json()["results"][0]["status"] == "failed"


def shard_path(kind: str, key: str, width: int) -> str:
    return f"/api/pith-number/resolve/{kind}/{hashlib.sha256(key.encode()).hexdigest()[:width]}.json"


def test_look_ups_on_a_mirror_read_its_index_once_then_shards(
    server: Server, content: Path, keys: Path
) -> None:
    """A pith-mirror site has no query-string resolve: pull reads the shards' width
    once, then for each look-up the shard the value falls in (a versioned arXiv id,
    a DOI as cited, lower-cased), and never asks the query."""
    width = json.loads((server.root / "api/pith-number/resolve/index.json").read_bytes())["shard_hex_digits"]
    server.log.clear()
    asked = ("--arxiv", "2010.10458v1", "--doi", "https://doi.org/10.48550/arXiv.2111.04007", "--json")
    result = pull(server.url, content, keys, *asked)
    assert result.code == 0, result.err
    assert set(documents(content)) == {f"{REAL_BUNDLE_BODY}.bundle.json", f"{REAL_RECORD_BODY}.record.json"}
    assert server.requests_for("/api/pith-number/resolve/index.json") == 1
    for path in (
        shard_path("arxiv_version", "2010.10458v1", width),
        shard_path("doi", "10.48550/arxiv.2111.04007", width),
    ):
        assert server.requests_for(path) == 1, path
    assert server.requests_for("/api/pith-number/resolve?") == 0


def test_a_paper_a_mirror_does_not_have(server: Server, content: Path, keys: Path) -> None:
    """A miss in the shard, or no shard at all, is the mirror's answer: not found."""
    width = json.loads((server.root / "api/pith-number/resolve/index.json").read_bytes())["shard_hex_digits"]
    written = {p.stem for p in (server.root / "api/pith-number/resolve/arxiv").iterdir()}
    ids = [f"2401.{i:05d}" for i in range(1000)]
    present = next(i for i in ids if hashlib.sha256(i.encode()).hexdigest()[:width] in written)
    absent = next(i for i in ids if hashlib.sha256(i.encode()).hexdigest()[:width] not in written)
    for arxiv_id in (present, absent):
        result = pull(server.url, content, keys, "--arxiv", arxiv_id, "--json")
        assert result.code == 1
        answer = result.json()["results"][0]
        assert (answer["status"], answer["errors"][0]["code"]) == ("failed", "fetch.not_found"), arxiv_id
    assert server.requests_for("/api/pith-number/resolve?") == 0
    assert documents(content) == {}
