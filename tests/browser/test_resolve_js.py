"""resolve.js: the alias-value encoding shared with the build, and query parsing.

The encoding is checked against the examples of the specification and, for
random text, against `reference_encode` below (the rule written in Python, as
the build writes it), all in one Node call per test.
"""

from __future__ import annotations

from hypothesis import strategies as st

from .conftest import hypothesis_batch

SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def reference_encode(value: str) -> str | None:
    """split on "/"; no empty segment; bytes outside [A-Za-z0-9._-] -> ~XX; "." and ".." -> dots as ~2E;
    a segment before the last that ends in ".json" ends in "~2Ejson"."""
    if not value:
        return None
    segments = value.split("/")
    if any(s == "" for s in segments):
        return None
    out = []
    for segment in segments:
        if segment in (".", ".."):
            out.append(segment.replace(".", "~2E"))
        else:
            out.append("".join(chr(b) if b in SAFE else f"~{b:02X}" for b in segment.encode("utf-8")))
    out = [s[: -len(".json")] + "~2Ejson" if s.endswith(".json") else s for s in out[:-1]] + out[-1:]
    return "/".join(out)


EXAMPLES = {
    "hep-th/9901001": "hep-th/9901001",
    "10.48550/arxiv.hep-lat/0407033": "10.48550/arxiv.hep-lat/0407033",
    "a b": "a~20b",
    "2111.04007": "2111.04007",
    "2111.04007v2": "2111.04007v2",
    "10.48550/arxiv.2111.04007": "10.48550/arxiv.2111.04007",
    "GO43K6A5": "GO43K6A5",
    "a~b": "a~7Eb",
    "100%": "100~25",
    "a+b=c?d#e&f": "a~2Bb~3Dc~3Fd~23e~26f",
    "é": "~C3~A9",
    "😀": "~F0~9F~98~80",
    ".": "~2E",
    "..": "~2E~2E",
    "a/./b": "a/~2E/b",
    "a/../b": "a/~2E~2E/b",
    "...": "...",
    ".hidden": ".hidden",
    "a\\b": "a~5Cb",
    "x\x00y": "x~00y",
    "": None,
    "/": None,
    "/a": None,
    "a/": None,
    "a//b": None,
    "a.json/b": "a~2Ejson/b",
    "x/y.json": "x/y.json",
    "a.json/b.json/c": "a~2Ejson/b~2Ejson/c",
}


VALUES = st.text(st.one_of(st.sampled_from("/.~-_ a%"), st.characters(codec="utf-8")), max_size=12)


def test_examples(run_node):
    got = run_node("run_resolve.js", {"encode": list(EXAMPLES)})["encode"]
    assert dict(zip(EXAMPLES, got, strict=True)) == EXAMPLES
    assert all(reference_encode(v) == want for v, want in EXAMPLES.items())


def test_random_values_match_the_python_rule(run_node):
    """300 Hypothesis-generated values (slashes, dots, "~", "%", any Unicode), one Node call."""
    values = hypothesis_batch(
        st.text(st.one_of(st.sampled_from("/.~-_ a%"), st.characters(codec="utf-8")), max_size=12), 300
    )
    got = run_node("run_resolve.js", {"encode": values})["encode"]
    assert got == [reference_encode(v) for v in values]


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


def test_lookup_paths(run_node):
    lookups = [
        ["/", "arxiv", "2111.04007"],
        ["/mirror/", "doi", "10.48550/arxiv.hep-lat/0407033"],
        ["/", "arxiv", "a b"],
        ["/", "arxiv", "/etc/passwd"],
        ["/", "arxiv", "../../secret"],
        ["/", "nonsense", "x"],
    ]
    got = run_node("run_resolve.js", {"lookup": lookups})["lookup"]
    assert got == [
        "/api/pith-number/resolve/arxiv/2111.04007.json",
        "/mirror/api/pith-number/resolve/doi/10.48550/arxiv.hep-lat/0407033.json",
        "/api/pith-number/resolve/arxiv/a~20b.json",
        None,
        "/api/pith-number/resolve/arxiv/~2E~2E/~2E~2E/secret.json",
        None,
    ]


def test_build_encoder_agrees(run_node):
    """The build's own encoder (generator.site.layout) writes the paths resolve.js asks for."""
    from generator.site.layout import encode_alias_value as build_encode

    values = [*EXAMPLES, *hypothesis_batch(VALUES, 200)]
    got = run_node("run_resolve.js", {"encode": values})["encode"]
    assert got == [build_encode(v) for v in values]
