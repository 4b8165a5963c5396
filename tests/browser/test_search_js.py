"""search.js against a small index written in the build's format (see search.js).

The index is made here from the rules the build follows (a Python reference,
`terms_of`), and each query's results from search.js must equal those of a
Python reference search over the same index. The fetch log shows that only the
shards and record chunks a query needs are loaded, and each only once.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import unicodedata
from typing import Any

import pytest

from generator.site.search_index import words_of

from .conftest import BUNDLE_FILE, RECORD_FILE

CHUNK = 7  # small, so results span several record chunks


def words(text: str) -> list[str]:
    """Words of a title or author list: NFC, lower-cased, split on anything not a
    letter, digit or combining mark (the build's own rule, `search_index.words_of`)."""
    return [w for w in words_of(text) if len(w) >= 2]


def key_of(term: str) -> str:
    return "".join(c if re.fullmatch(r"[a-z0-9]", c) else "_" for c in term[:2])


def terms_of(number: str, title: str, authors: str, arxiv_id: str, version: int) -> set[str]:
    body = number.split(":")[2]
    terms = set(words(title)) | set(words(authors))
    terms |= {arxiv_id.lower(), f"{arxiv_id}v{version}".lower(), f"10.48550/arxiv.{arxiv_id}".lower()}
    terms |= {body.lower(), number.lower(), f"pith:{body[:8]}".lower()}
    terms |= {body[:n].lower() for n in (8, 12, 16)}
    return terms


def fake_number(seed: str, year: int = 2019) -> str:
    return f"pith:{year}:" + base64.b32encode(hashlib.sha256(seed.encode()).digest()).decode()[:26]


def make_records() -> list[tuple[str, str, str, str, int]]:
    record = json.loads(RECORD_FILE.read_bytes())
    bundle = json.loads(BUNDLE_FILE.read_bytes())
    paper = bundle["events"][1]["payload"]["graph_snapshot"]["paper"]
    records = [
        (record["pith_number"], record["paper"]["title"], record["paper"]["authors_text"], "2111.04007", 2),
        (bundle["pith_number"], paper["title"], paper["authors_text"], "2010.10458", 1),
        (
            fake_number("tex"),
            "Proton-$\\eta^\\prime$ interactions",
            'Daniel N\\"ust, Torbj{\\o}rn Sjöstrand (Lund)',
            "hep-lat/0407033",
            1,
        ),
        (
            fake_number("greek"),
            "Über die Σ-Funktion in 3 Dimensionen",
            "Ἀριστοτέλης, 李四",
            "math/0101001",
            3,
        ),
        (fake_number("gpt"), "GPT-3 and deep learning at scale", "A. Author", "2005.14165", 4),
        # stored decomposed ("o" and a combining diaeresis), as text pasted from a PDF often is
        (fake_number("nfd"), "Schro\u0308dinger wave mechanics", "E. Author", "2401.00001", 1),
        (fake_number("hindi"), "हिन्दी भाषा का अध्ययन", "क. लेखक", "2402.00002", 1),
    ]
    records += [
        (fake_number(f"n{i}"), f"Deep learning study number {i}", f"Author {i}", f"1901.{i:05d}", 1)
        for i in range(120)
    ]
    return records


RECORDS = make_records()


def build_index(base: str) -> dict[str, Any]:
    files: dict[str, Any] = {
        f"{base}search/meta.json": {
            "format": 1,
            "records": len(RECORDS),
            "chunk_size": CHUNK,
            "prefix_length": 2,
        }
    }
    shards: dict[str, dict[str, list[int]]] = {}
    for index, (number, title, authors, arxiv_id, version) in enumerate(RECORDS):
        for term in terms_of(number, title, authors, arxiv_id, version):
            shards.setdefault(key_of(term), {}).setdefault(term, []).append(index)
    for key, table in shards.items():
        files[f"{base}search/terms/{key}.json"] = {t: sorted(ids) for t, ids in sorted(table.items())}
    for k in range(0, len(RECORDS), CHUNK):
        files[f"{base}search/records/{k // CHUNK}.json"] = [
            [n, t, a, x, f"{base}pith/{n.split(':')[2]}"] for n, t, a, x, _v in RECORDS[k : k + CHUNK]
        ]
    return files


JS_SPACE = "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+"
"""What JavaScript's `\\s` matches (Python's also takes \\x1c-\\x1f and \\x85)."""

ID_PREFIX = re.compile(r"https?://(?:dx\.)?doi\.org/|doi:|https?://(?:www\.)?arxiv\.org/abs/|arxiv:")


def reference_pieces(query: str) -> list[tuple[str | None, list[str]]]:
    """(identifier or None, words) for each piece a record must match."""
    pieces: list[tuple[str | None, list[str]]] = []
    for piece in re.split(JS_SPACE, unicodedata.normalize("NFC", query).lower()):
        value = ID_PREFIX.sub("", piece, count=1) if ID_PREFIX.match(piece) else piece
        split = list(dict.fromkeys(words(value)))
        if re.search(r"[0-9/:.]", value) and len(value) >= 2:
            pieces.append((value, split))
        else:
            pieces += [(None, [word]) for word in split]
    return pieces


def reference_tokens(query: str) -> list[str]:
    tokens = [t for p in reference_pieces(query) for t in ([p[0]] if p[0] is not None else p[1])]
    return list(dict.fromkeys(tokens))


def reference_search(files: dict[str, Any], base: str, query: str) -> tuple[list[str], int, list[str]]:
    def indexes(tokens: list[str]) -> set[int]:
        sets = []
        for token in tokens:
            table = files.get(f"{base}search/terms/{key_of(token)}.json", {})
            sets.append({i for term, ids in table.items() if term.startswith(token) for i in ids})
        return set.intersection(*sets) if sets else set()

    pieces = reference_pieces(query)
    if not pieces:
        return [], 0, []
    tokens: list[str] = []
    sets = []
    for identifier, split in pieces:
        found = indexes([identifier]) if identifier is not None else set()
        if identifier is not None and (found or not split):
            tokens.append(identifier)
        else:
            tokens += split
            found = indexes(split)
        sets.append(found)
    matched = sorted(set.intersection(*sets))
    return list(dict.fromkeys(tokens)), len(matched), [RECORDS[i][0] for i in matched[:50]]


QUERIES = [
    "varuna",
    "VARUNA",
    "  Varuna  ",
    "var",
    "deep learning",
    "learning deep",
    "deep lear",
    "Deep Learning study 7",
    "2111.04007",
    "2111.04007v2",
    "2111.040",
    "10.48550/arXiv.2111.04007",
    "10.48550/arxiv.2111",
    "hep-lat/0407033",
    "hep-lat/04",
    "HEP-LAT",
    "pith:2021:GO43K6A5MHLNBUADUVZ3AKFBNI",
    "pith:go43",
    "GO43K6A5",
    "go43k6a5mhln",
    "z5naprqpuu4sidobv5n2frexwz",
    "über",
    "ÜBER DIE",
    "σ-funktion",
    "ἀριστοτέλης",
    "李四",
    "gpt-3",
    "GPT-3 scale",
    "x",
    "",
    "   ",
    "nomatch",
    "a b",
    "sjöstrand",
    'N\\"ust',
    "eta prime",
    "torbj",
    "math/0101001v3",
    "1901.00017",
    "pith:",
    "10.48550",
    "cloud clusters sivathanu",
    "arXiv:2111.04007",
    "ARXIV:2111.04007v2",
    "doi:10.48550/arXiv.2111.04007",
    "https://doi.org/10.48550/arXiv.2010.10458",
    "http://dx.doi.org/10.48550/arxiv.2010.10458",
    "https://arxiv.org/abs/hep-lat/0407033",
    "Varuna 2111.04007",
    "varuna arXiv:2010.10458",
    "deep 1901.00017 learning",
    "GPT-3 2005.14165",
    "pith:go43 varuna",
    "Schro\u0308dinger",
    "Schrödinger wave",
    "हिन्दी",
    "भाषा हिन्दी",
    "arxiv:",
    "doi:x",
]


@pytest.fixture(scope="module", params=["/", "/mirror/"])
def answers(request, run_node):
    base = request.param
    files = build_index(base)
    ops = [{"op": "search", "query": q, "fresh": True} for q in QUERIES]
    return base, files, run_node("run_search.js", {"base": base, "files": files, "ops": ops})


def test_results_match_reference(answers):
    base, files, got = answers
    for query, answer in zip(QUERIES, got, strict=True):
        tokens, total, numbers = reference_search(files, base, query)
        assert (answer["tokens"], answer["total"]) == (tokens, total), query
        assert [row[0] for row in answer["rows"]] == numbers, query
        for row in answer["rows"]:
            assert row[4] == f"{base}pith/{row[0].split(':')[2]}"


def test_expected_hits(answers):
    """Hand-checked answers, independent of the reference search."""
    _base, _files, got = answers
    by_query = dict(zip(QUERIES, got, strict=True))
    go43, z5na = RECORDS[0][0], RECORDS[1][0]
    for query in (
        "varuna",
        "VARUNA",
        "2111.04007",
        "2111.04007v2",
        "10.48550/arXiv.2111.04007",
        "pith:2021:GO43K6A5MHLNBUADUVZ3AKFBNI",
        "pith:go43",
        "GO43K6A5",
        "go43k6a5mhln",
    ):
        assert [r[0] for r in by_query[query]["rows"]] == [go43], query
    assert [r[0] for r in by_query["z5naprqpuu4sidobv5n2frexwz"]["rows"]] == [z5na]
    assert by_query["hep-lat/04"]["total"] == 1 and by_query["hep-lat/04"]["rows"][0][3] == "hep-lat/0407033"
    assert by_query["deep learning"]["total"] == 123  # 120 studies, both real titles, the GPT-3 paper
    assert len(by_query["deep learning"]["rows"]) == 50
    assert by_query["gpt-3"]["tokens"] == ["gpt"] and by_query["gpt-3"]["total"] == 1
    assert by_query["李四"]["total"] == 1 and by_query["ἀριστοτέλης"]["total"] == 1
    assert by_query["x"]["total"] == 0 and by_query["x"]["tokens"] == []
    assert by_query["nomatch"]["total"] == 0
    # identifiers as they are written and pasted, alone or with words
    for query in (
        "arXiv:2111.04007",
        "ARXIV:2111.04007v2",
        "doi:10.48550/arXiv.2111.04007",
        "Varuna 2111.04007",
        "pith:go43 varuna",
    ):
        assert [r[0] for r in by_query[query]["rows"]] == [go43], query
    for query in ("https://doi.org/10.48550/arXiv.2010.10458", "http://dx.doi.org/10.48550/arxiv.2010.10458"):
        assert [r[0] for r in by_query[query]["rows"]] == [z5na], query
    assert by_query["varuna arXiv:2010.10458"]["total"] == 0  # (two records: none has both)
    assert [r[3] for r in by_query["https://arxiv.org/abs/hep-lat/0407033"]["rows"]] == ["hep-lat/0407033"]
    assert [r[3] for r in by_query["deep 1901.00017 learning"]["rows"]] == ["1901.00017"]
    assert [r[3] for r in by_query["GPT-3 2005.14165"]["rows"]] == ["2005.14165"]
    # one word however it is encoded, and words whose letters carry marks
    for query in ("Schro\u0308dinger", "Schrödinger wave"):
        assert [r[3] for r in by_query[query]["rows"]] == ["2401.00001"], query
    for query in ("हिन्दी", "भाषा हिन्दी"):
        assert [r[3] for r in by_query[query]["rows"]] == ["2402.00002"], query
    assert by_query["arxiv:"]["tokens"] == [] and by_query["doi:x"]["tokens"] == []


def test_only_needed_files_are_fetched(answers):
    base, _files, got = answers
    by_query = dict(zip(QUERIES, got, strict=True))
    assert by_query["varuna"]["fetched"] == sorted(
        [f"{base}search/meta.json", f"{base}search/terms/va.json", f"{base}search/records/0.json"]
    )
    assert by_query["pith:go43"]["fetched"] == sorted(
        [f"{base}search/meta.json", f"{base}search/terms/pi.json", f"{base}search/records/0.json"]
    )
    assert by_query["李四"]["fetched"][-1] == f"{base}search/terms/__.json"
    # 50 of 123 results: the first 50 indexes only need the chunks they fall in.
    deep = by_query["deep learning"]["fetched"]
    assert f"{base}search/terms/de.json" in deep and f"{base}search/terms/le.json" in deep
    assert sum("/records/" in u for u in deep) <= 50 // CHUNK + 2
    assert by_query["x"]["fetched"] == []


def test_shards_and_chunks_are_cached(run_node):
    base = "/"
    files = build_index(base)
    ops = [{"op": "search", "query": q} for q in ("varuna", "varuna", "var", "deep", "deep learning")]
    got = run_node("run_search.js", {"base": base, "files": files, "ops": ops})
    assert got[1]["fetched"] == [] and got[2]["fetched"] == []
    assert f"{base}search/terms/de.json" not in got[4]["fetched"]


def test_query_tokens(run_node):
    cases = {
        "Deep  Learning": ["deep", "learning"],
        "2111.04007": ["2111.04007"],
        "hep-th/9901001": ["hep-th/9901001"],
        "pith:GO43K6A5": ["pith:go43k6a5"],
        "GO43K6A5": ["go43k6a5"],
        "10.48550/ArXiv.2111.04007": ["10.48550/arxiv.2111.04007"],
        "a": [],
        "a b c": [],
        "Proton-$\\eta^\\prime$": ["proton", "eta", "prime"],
        "deep deep": ["deep"],
        "2111 04007": ["2111", "04007"],
        "Über-Σύστημα": ["über", "σύστημα"],
        "Dvořák’s theorem": ["dvořák", "theorem"],
        "arXiv:2111.04007": ["2111.04007"],
        "Varuna  https://doi.org/10.48550/arXiv.2111.04007": ["varuna", "10.48550/arxiv.2111.04007"],
        "हिन्दी": ["हिन्दी"],
        "Schro\u0308dinger": ["schrödinger"],
    }
    got = run_node(
        "run_search.js", {"base": "/", "files": {}, "ops": [{"op": "tokens", "query": q} for q in cases]}
    )
    assert [g["tokens"] for g in got] == list(cases.values())
