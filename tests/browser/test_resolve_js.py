"""resolve.js: the look-up shard rule shared with the build, and query parsing.

The shard of a value is checked against the build's own functions
(generator.site.layout) and against the rule written out here with hashlib, for
examples and for random text (slashes, dots, "~", "%", any Unicode), all in one
Node call per test.
"""

from __future__ import annotations

import hashlib

from hypothesis import strategies as st

from generator.site import layout

from .conftest import hypothesis_batch

KINDS = ["arxiv", "arxiv_version", "doi", "pith_short_8", "pith_short_12", "pith_short_16"]

EXAMPLES = [
    "2111.04007",
    "hep-th/9901001",
    "10.48550/arXiv.hep-lat/0407033",
    "a b",
    "é",
    "É/Ü",
    "😀",
    "..",
    "a//b",
    "/etc/passwd",
    "a\\b",
    "x\x00y",
    "100%",
    "~",
    "__proto__",
    "İstanbul",  # (lower-cased to "i̇stanbul" by Python and JavaScript alike)
    "ΣΑΣ",  # (a final sigma: "σας" in both)
    "",
]

# (characters this Python's Unicode database has not assigned are left out: a browser
# whose Unicode is newer may lower-case them, the build cannot; see published-files.md)
VALUES = st.text(
    st.one_of(st.sampled_from("/.~-_ a%AÉ"), st.characters(codec="utf-8", exclude_categories=("Cn",))),
    max_size=12,
)


def reference_shard(kind: str, value: str, width: int) -> str | None:
    """The rule as docs/published-files.md states it."""
    if kind not in KINDS or not value:
        return None
    key = value.lower() if kind == "doi" else value
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:width]


def test_shards_of_examples(run_node):
    cases = [[kind, value, width] for value in EXAMPLES for kind in [*KINDS, "other"] for width in (1, 2, 6)]
    got = run_node("run_resolve.js", {"shard": cases})["shard"]
    assert got == [reference_shard(*case) for case in cases]
    assert got[0] == hashlib.sha256(b"2111.04007").hexdigest()[:1]


def test_random_values_fall_in_the_shard_the_build_files_them_in(run_node):
    """300 Hypothesis-generated values, each for a kind and a width: resolve.js asks for
    the shard the build writes the value's entry in (layout.lookup_key, layout.shard_hex)."""
    values = hypothesis_batch(VALUES, 300)
    cases = [[KINDS[i % 6] if i % 7 else "doi", v, 1 + i % 3] for i, v in enumerate(values)]
    got = run_node("run_resolve.js", {"shard": cases})["shard"]
    built = []
    for kind, value, width in cases:
        key = layout.lookup_key(kind, value)
        built.append(None if key is None else layout.shard_hex(key)[:width])
    assert got == built == [reference_shard(*case) for case in cases]


def test_shard_paths(run_node):
    cases = [
        ["/", "arxiv", "3f"],
        ["/mirror/", "doi", "0"],
        ["/", "nonsense", "3f"],
        ["/", "arxiv", "../x"],
        ["/", "arxiv", "3F"],
        ["/", "arxiv", ""],
    ]
    assert run_node("run_resolve.js", {"path": cases})["path"] == [
        "/api/pith-number/resolve/arxiv/3f.json",
        "/mirror/api/pith-number/resolve/doi/0.json",
        None,
        None,
        None,
        None,
    ]


def test_the_width_comes_from_the_index(run_node):
    indexes = [{"shard_hex_digits": 2}, {"shard_hex_digits": 1}, {"shard_hex_digits": 0}, {}, None]
    indexes += [{"shard_hex_digits": "2"}, {"shard_hex_digits": 2.5}, {"shard_hex_digits": 65}, []]
    got = run_node("run_resolve.js", {"width": indexes})["width"]
    assert got == [2, 1, None, None, None, None, None, None, None]


def test_an_entry_is_an_own_member_of_the_shards_entries(run_node):
    entry = {"pith_number": "pith:2021:X", "record": "/pith/X", "json": "/pith/X.json"}
    shard = {"entries": {"2111.04007": entry, "bad": "a string"}}
    cases = [
        [shard, "2111.04007"],
        [shard, "2111.04008"],
        [shard, "__proto__"],
        [shard, "constructor"],
        [shard, "toString"],
        [shard, "bad"],
        [{"entries": None}, "x"],
        [{}, "x"],
        [None, "x"],
    ]
    got = run_node("run_resolve.js", {"entry": cases})["entry"]
    assert got == [entry, None, None, None, None, None, None, None, None]


def test_queries(run_node):
    queries = {
        "?arxiv=2111.04007&json=true": {"kind": "arxiv", "value": "2111.04007", "wantJson": True},
        "?arxiv=2111.04007&json=1": {"kind": "arxiv", "value": "2111.04007", "wantJson": True},
        "?arxiv=2111.04007&json=false": {"kind": "arxiv", "value": "2111.04007", "wantJson": False},
        "?arxiv=2111.04007": {"kind": "arxiv", "value": "2111.04007", "wantJson": False},
        "?doi=10.48550/ARXIV.2111.04007": {
            "kind": "doi",
            "value": "10.48550/arxiv.2111.04007",
            "wantJson": False,
        },
        "?doi=10.48550%2Farxiv.hep-lat%2F0407033": {
            "kind": "doi",
            "value": "10.48550/arxiv.hep-lat/0407033",
            "wantJson": False,
        },
        "?pith_short_8=GO43K6A5": {"kind": "pith_short_8", "value": "GO43K6A5", "wantJson": False},
        "?pith_short_12=go43k6a5mhln": {"kind": "pith_short_12", "value": "GO43K6A5MHLN", "wantJson": False},
        "?arxiv_version=hep-th/9901001v1&json=TRUE": {
            "kind": "arxiv_version",
            "value": "hep-th/9901001v1",
            "wantJson": True,
        },
        "?json=true&arxiv=a+b": {"kind": "arxiv", "value": "a b", "wantJson": True},
    }
    bad = ["", "?", "?json=true", "?foo=bar", "?arxiv=", "?arxiv=%20%20"]
    got = run_node("run_resolve.js", {"parse": list(queries) + bad})["parse"]
    assert got[: len(queries)] == list(queries.values())
    for query, answer in zip(bad, got[len(queries) :], strict=True):
        assert set(answer) == {"error"} and answer["error"], query


def test_queries_accept_every_form_search_accepts(run_node):
    """The home page's search reads identifiers as they are cited; the resolve page read
    only the bare value, so `?arxiv=arXiv:…`, `?arxiv=…v1` and `?doi=https://doi.org/…`
    found nothing. A version makes the value an arxiv_version alias, whichever kind names it."""
    queries = {
        "?arxiv=arXiv:2111.04007": ("arxiv", "2111.04007"),
        "?arxiv=ARXIV:2111.04007": ("arxiv", "2111.04007"),
        "?arxiv=2111.04007v1": ("arxiv_version", "2111.04007v1"),
        "?arxiv=arXiv:2111.04007v2": ("arxiv_version", "2111.04007v2"),
        "?arxiv=https://arxiv.org/abs/2111.04007": ("arxiv", "2111.04007"),
        "?arxiv=http://www.arxiv.org/abs/hep-th/9901001v1": ("arxiv_version", "hep-th/9901001v1"),
        "?arxiv=https://arxiv.org/pdf/2111.04007v1.pdf": ("arxiv_version", "2111.04007v1"),
        "?arxiv_version=2111.04007": ("arxiv", "2111.04007"),
        "?doi=https://doi.org/10.48550/arXiv.2111.04007": ("doi", "10.48550/arxiv.2111.04007"),
        "?doi=http://dx.doi.org/10.48550/arXiv.2111.04007": ("doi", "10.48550/arxiv.2111.04007"),
        "?doi=doi:10.48550/arXiv.2111.04007": ("doi", "10.48550/arxiv.2111.04007"),
        "?pith_short_8=pith:GO43K6A5": ("pith_short_8", "GO43K6A5"),
    }
    got = run_node("run_resolve.js", {"parse": list(queries)})["parse"]
    assert [(g.get("kind"), g.get("value")) for g in got] == list(queries.values())
    bare = run_node("run_resolve.js", {"parse": ["?doi=https://doi.org/", "?arxiv=arXiv:"]})["parse"]
    assert all(set(answer) == {"error"} for answer in bare)


def test_a_miss_links_the_same_query_on_the_primary(run_node):
    cases = [
        ["https://pith.science", "?arxiv=arXiv:2111.04007"],
        ["https://pith.science/", "?doi=10.1/x&json=true"],
        ["javascript:alert(1)", "?arxiv=1"],
        ["", "?arxiv=1"],
    ]
    assert run_node("run_resolve.js", {"primary": cases})["primary"] == [
        "https://pith.science/api/pith-number/resolve?arxiv=arXiv:2111.04007",
        "https://pith.science/api/pith-number/resolve?doi=10.1/x&json=true",
        None,
        None,
    ]
