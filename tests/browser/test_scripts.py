"""The static scripts as files: loadable as classic <script>s, and within ES2020."""

from __future__ import annotations

import hashlib
import re

import pytest

from .conftest import STATIC

SCRIPTS = ["canonical.js", "verify.js", "search.js", "resolve.js"]

# Syntax and built-ins newer than ES2020 (or, for look-behind, missing from Safari < 16.4):
# one of these makes the whole file fail to parse, or throw, in an older browser.
TOO_NEW = {
    "logical assignment (ES2021)": r"(\?\?=|\|\|=|&&=)",
    "String.replaceAll (ES2021)": r"\.replaceAll\(",
    "Array/String .at() (ES2022)": r"\.at\(",
    "Object.hasOwn (ES2022)": r"Object\.hasOwn\(",
    "String.isWellFormed (ES2024)": r"\.isWellFormed\(",
    "structuredClone": r"\bstructuredClone\(",
    "regex look-behind": r"\(\?<[=!]",
    "class fields / private names": r"^\s+(#\w+|static\s+\w+\s*=)",
    "top-level await / modules": r"^\s*(import|export)\s",
}


@pytest.mark.parametrize("name", SCRIPTS)
def test_no_syntax_newer_than_es2020(name):
    text = (STATIC / name).read_text("utf-8")
    code = re.sub(r"/\*.*?\*/|^\s*//.*$", "", text, flags=re.S | re.M)  # comments may mention anything
    found = {what for what, pattern in TOO_NEW.items() if re.search(pattern, code, re.M)}
    assert not found, f"{name} uses {sorted(found)}"


@pytest.mark.parametrize("name", SCRIPTS)
def test_no_markup_from_strings(name):
    """Document text reaches the page through textContent only."""
    text = (STATIC / name).read_text("utf-8")
    assert not re.search(
        r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function", text
    )


def test_scripts_load_as_classic_scripts(run_node):
    exposed = run_node("run_globals.js", {})
    assert {"parse", "parseBytes", "canonical", "sha256"} <= set(exposed["PithCanonical"])
    assert {"verifyFiles", "checkDocuments"} <= set(exposed["PithVerify"])
    assert {"queryTokens", "SearchIndex"} <= set(exposed["PithSearch"])
    assert {"shardOf", "parseQuery"} <= set(exposed["PithResolve"])
    assert exposed["sample"] == '{"a":[10],"b":1.0}'
    assert exposed["shard"] == hashlib.sha256(b"a b/..").hexdigest()[:4] == "9e4a"


ON_SITE = ["/", "/pith/Z5NAPRQP/", "/search/terms/ab.json", "/a page/x.html"]
OFF_SITE = [
    "//evil.example/x",
    "/\\evil.example/x",
    "/\t/evil.example/x",  # a URL parser drops the tab: "//evil.example/x"
    "/\n/evil.example/x",
    "/\r\n/evil.example/x",
    "/pith/\x00x",
    "https://evil.example/",
    "pith/relative",
    "",
]


def test_paths_from_site_data_stay_on_the_site(run_node):
    """Each script follows a path from the site's JSON only when a browser would read it
    as a path on this site: no scheme, no second slash or backslash, no control character."""
    answer = run_node("run_site_path.js", ON_SITE + OFF_SITE)
    assert set(answer) == {"verify.js", "search.js", "resolve.js"}
    for name, results in answer.items():
        assert results == ON_SITE + [None] * len(OFF_SITE), name
