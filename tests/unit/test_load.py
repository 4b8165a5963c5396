"""generator/load.py: (1) the size cap and (2) the strict decode, each failure with its code.

A document with no single canonical form (duplicate keys, NaN, bytes or escapes
that are not Unicode) must never get past `decode`.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import factories as f
import pytest

from generator.trust.canonical import JsonFloat, canonical_json
from generator.trust.errors import Code, RejectionError
from generator.trust.load import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_DEPTH,
    Limits,
    decode,
    discover,
    is_ignored_name,
    load_document,
    read_bytes,
)

LIMITS = Limits()


def refused(raw: bytes, limits: Limits = LIMITS) -> tuple[str, str, str]:
    with pytest.raises(RejectionError) as info:
        decode(raw, limits)
    problem = info.value.problem
    return problem.code.value, problem.pointer, problem.message


def nested(depth: int) -> bytes:
    """An object whose key "a" holds depth-1 nested arrays: `depth` containers in all."""
    return b'{"a":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


# ---------------------------------------------------------------- (2) strict decode: refusals

REFUSED = [
    pytest.param(b"", "json.invalid", "", id="empty"),
    pytest.param(b" \n\t\r ", "json.invalid", "", id="whitespace-only"),
    pytest.param(b'{"a": [1, 2', "json.invalid", "", id="truncated"),
    pytest.param(b'{"a": 1,}', "json.invalid", "", id="trailing-comma"),
    pytest.param(b"{'a': 1}", "json.invalid", "", id="single-quotes"),
    pytest.param(b'{"a": 01}', "json.invalid", "", id="leading-zero"),
    pytest.param(b'{"a": "x\ty"}', "json.invalid", "", id="raw-control-char-in-string"),
    pytest.param(b'{"a": "\\x41"}', "json.invalid", "", id="bad-escape"),
    pytest.param(b'{"a": 1, "a": 2}', "json.duplicate_key", "/a", id="duplicate-top"),
    pytest.param(
        b'{"x": {"y": [0, {"k": 1, "z": 2, "k": 3}]}}',
        "json.duplicate_key",
        "/x/y/1/k",
        id="duplicate-nested",
    ),
    pytest.param(b'{"a/b~": {}, "a/b~": {}}', "json.duplicate_key", "/a~1b~0", id="duplicate-escaped"),
    pytest.param(b'{"a": 1, "\\u0061": 2}', "json.duplicate_key", "/a", id="duplicate-by-escape"),
    pytest.param(b"\xef\xbb\xbf{}", "json.bom", "", id="bom-utf8"),
    pytest.param(b"\xff\xfe{\x00}\x00", "json.bom", "", id="bom-utf16le"),
    pytest.param(b"\xfe\xff\x00{\x00}", "json.bom", "", id="bom-utf16be"),
    pytest.param(b'{"a": "\xff"}', "json.invalid_utf8", "", id="invalid-utf8"),
    pytest.param(b'{"a": "\xc3"}', "json.invalid_utf8", "", id="truncated-utf8"),
    pytest.param(b'{"a": "\xc0\xaf"}', "json.invalid_utf8", "", id="overlong-utf8"),
    pytest.param(b'{"a": "\xed\xa0\x80"}', "json.invalid_utf8", "", id="encoded-surrogate"),
    pytest.param(b'{"a": {"b": "x\\ud800y"}}', "json.invalid_utf8", "/a/b", id="lone-high-surrogate"),
    pytest.param(b'{"a": ["\\udfff"]}', "json.invalid_utf8", "/a/0", id="lone-low-surrogate"),
    pytest.param(b'{"a": "\\ude00\\ud83d"}', "json.invalid_utf8", "/a", id="reversed-pair"),
    pytest.param(b'{"a": {"\\ud800": 1}}', "json.invalid_utf8", "/a", id="lone-surrogate-key"),
    pytest.param(b'{"a": NaN}', "json.non_finite", "", id="nan"),
    pytest.param(b'{"a": Infinity}', "json.non_finite", "", id="infinity"),
    pytest.param(b'{"a": [-Infinity]}', "json.non_finite", "", id="minus-infinity"),
    pytest.param(b'{"a": 1E400}', "json.non_finite", "", id="overflowing-float"),
    pytest.param(b'{"a": -1e99999}', "json.non_finite", "", id="overflowing-negative-float"),
    pytest.param(b'{"a": 1} {"b": 2}', "json.trailing_data", "", id="two-values"),
    pytest.param(b'{"a": 1}x', "json.trailing_data", "", id="trailing-garbage"),
    pytest.param(b'{"a": 1}\x00', "json.trailing_data", "", id="trailing-nul"),
    pytest.param(b"[1, 2]", "json.not_object", "", id="array"),
    pytest.param(b'"text"', "json.not_object", "", id="string"),
    pytest.param(b"42", "json.not_object", "", id="number"),
    pytest.param(b"null", "json.not_object", "", id="null"),
    pytest.param(b"[" * 100_000 + b"]" * 100_000, "json.too_deep", "", id="100000-brackets"),
    pytest.param(b'{"a":' + b"[" * 100_000, "json.too_deep", "", id="100000-open-brackets"),
    # regression: compact objects nested deeper than orjson.dumps allows (254) made the
    # fast path raise TypeError instead of falling back to the strict path
    pytest.param(nested(300), "json.too_deep", "/a" + "/0" * (DEFAULT_MAX_DEPTH - 1), id="300-in-object"),
    pytest.param(nested(100_000), "json.too_deep", "", id="100000-in-object"),
    pytest.param(
        nested(DEFAULT_MAX_DEPTH + 1),
        "json.too_deep",
        "/a" + "/0" * (DEFAULT_MAX_DEPTH - 1),
        id="one-level-too-deep",
    ),
    pytest.param(b'{"a": ' + b"9" * 5000 + b"}", "json.invalid", "", id="5000-digit-integer"),
    # a duplicate key found first, then what the search for it could not decode:
    # each raised out of the search (a traceback that stopped the whole build)
    pytest.param(
        b'{"x": {"a": 1, "a": 2}, "y": ' + b"9" * 5000 + b"}",
        "json.duplicate_key",
        "/x/a",
        id="duplicate-then-5000-digit-integer",
    ),
    pytest.param(
        b'{"x": {"a": 1, "a": 2}, "y": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        "json.duplicate_key",
        "",
        id="duplicate-then-5000-brackets",
    ),
]


@pytest.mark.parametrize(("raw", "code", "where"), REFUSED)
def test_decode_refuses(raw: bytes, code: str, where: str) -> None:
    got_code, got_pointer, message = refused(raw)
    assert (got_code, got_pointer) == (code, where)
    assert message


def test_messages_say_where() -> None:
    assert "byte 7" in refused(b'{"a": "\xff"}')[2]
    assert "line 2 column" in refused(b'{\n"a": }')[2]
    assert "'k' appears twice" in refused(b'{"k": 1, "k": 1}')[2]
    # (json's own message ends "at", before a position it leaves to the line and column)
    assert refused(b'{"a": "\x01"}')[2].endswith("line 1 column 8: invalid control character")


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": [1, 2',
        b'{"a": "abc',
        b'{"a',
        b'{"a": tru',
        b'{"a": 1.',
        b'{"a": -',
        b'{"a": {"b": [\n  ',
    ],
)
def test_a_file_cut_off_says_that_it_ends_early(raw: bytes) -> None:
    """A copy or download that stopped is another cause than a wrong character: said so."""
    code, _, message = refused(raw)
    assert code == "json.invalid"
    assert message.startswith(f"the file ends early, after {len(raw):,} bytes"), message


def test_a_real_record_cut_in_the_middle_says_that_it_ends_early(seed_record_path: Path) -> None:
    raw = seed_record_path.read_bytes()
    message = refused(raw[: len(raw) // 2])[2]
    assert "the file ends early" in message and "line 1 column" in message


@pytest.mark.parametrize("raw", [b'{"a": 1,}', b'{"a": 01}', b'{"a": tx}', b'{"a": 1.x}', b"{'a': 1}"])
def test_a_wrong_character_is_not_called_an_early_end(raw: bytes) -> None:
    assert "ends early" not in refused(raw)[2]


def test_an_integer_too_long_to_read_is_named_in_the_readers_terms() -> None:
    code, _, message = refused(b'{"n": ' + b"9" * 10_000 + b"}")
    assert code == "json.invalid"
    assert message == "an integer has more than 4,300 digits, more than any Pith document holds"


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        (b"null", "null"),
        (b"[1]", "an array"),
        (b'"text"', "a string"),
        (b"42", "an integer"),
        (b"4.5", "a number with a fraction"),
        (b"true", "true"),
    ],
)
def test_a_top_level_value_is_named_as_json_names_it(raw: bytes, named: str) -> None:
    assert refused(raw)[2] == f"the top level is {named}, not an object"


def test_depth_limit_is_inclusive() -> None:
    assert decode(nested(DEFAULT_MAX_DEPTH), LIMITS)["a"] is not None
    small = Limits(max_depth=3)
    assert decode(nested(3), small)
    assert refused(nested(4), small)[:2] == ("json.too_deep", "/a/0/0")
    assert refused(b'{"a": {"b": {"c": {}}}}', small)[:2] == ("json.too_deep", "/a/b/c")


# ---------------------------------------------------------------- (2) strict decode: what passes


def test_accepts_whitespace_around_the_value() -> None:
    assert decode(b' \r\n\t{"a": 1} \n', LIMITS) == {"a": 1}


def test_keeps_ints_as_int_and_floats_as_jsonfloat() -> None:
    value = decode(b'{"i": 1, "big": 123456789012345678901234567890, "f": 1.5, "e": 1e16, "z": -0.0}', LIMITS)
    assert type(value["i"]) is int and type(value["big"]) is int
    assert value["big"] == 123456789012345678901234567890
    for name in ("f", "e", "z"):
        assert type(value[name]) is JsonFloat
    assert canonical_json(value) == b'{"big":123456789012345678901234567890,"e":1e+16,"f":1.5,"i":1,"z":-0.0}'


def test_accepts_escapes_astral_characters_and_surrogate_pairs() -> None:
    raw = '{"a": "\\u00e9\\ud83d\\ude00\\n\\"\\\\\\/", "b": "é😀\u2028", "\\ud83d\\ude00": 1}'.encode()
    value = decode(raw, LIMITS)
    assert value == {"a": 'é😀\n"\\/', "b": "é😀\u2028", "😀": 1}


def test_a_backslash_before_u_d800_text_is_not_a_surrogate() -> None:
    assert decode(b'{"a": "\\\\ud800"}', LIMITS) == {"a": "\\ud800"}


def test_fast_and_strict_paths_agree_on_the_seeds(seed_record_path: Path, seed_bundle_path: Path) -> None:
    """Compact orjson bytes take the fast path, indented bytes the strict one: same values."""
    for path in (seed_record_path, seed_bundle_path):
        value = decode(path.read_bytes(), LIMITS)
        compact = canonical_json(value)
        again = decode(compact, LIMITS)
        assert again == value
        assert canonical_json(again) == compact


def test_real_documents_decode_unchanged(seed_record_path: Path, seed_bundle_path: Path) -> None:
    for path in (seed_record_path, seed_bundle_path):
        assert decode(path.read_bytes(), LIMITS) == json.loads(path.read_bytes())


# ---------------------------------------------------------------- (1) size cap and reading


def test_size_cap_is_inclusive(tmp_path: Path) -> None:
    body = b'{"a": "' + b"x" * 100 + b'"}'
    path = tmp_path / "doc.json"
    path.write_bytes(body)
    assert read_bytes(path, tmp_path, Limits(max_bytes=len(body))) == body
    with pytest.raises(RejectionError) as info:
        read_bytes(path, tmp_path, Limits(max_bytes=len(body) - 1))
    assert info.value.problem.code is Code.FILE_TOO_LARGE
    assert info.value.problem.pointer == ""


@pytest.mark.parametrize("stated_size", [0, 1, 50])
def test_a_file_longer_than_its_stated_size_is_read_whole_and_capped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stated_size: int
) -> None:
    """The read asks for the size the file says it has; a file that grew since is still read
    to its end, and still refused once it passes the cap."""
    body = b'{"a": "' + b"x" * 100 + b'"}'
    path = tmp_path / "doc.json"
    path.write_bytes(body)
    real_fstat = os.fstat

    def stale_fstat(fd: int) -> os.stat_result:
        stat = list(real_fstat(fd))
        stat[6] = stated_size  # st_size
        return os.stat_result(stat)

    monkeypatch.setattr(os, "fstat", stale_fstat)
    assert read_bytes(path, tmp_path, Limits(max_bytes=len(body))) == body
    with pytest.raises(RejectionError) as info:
        read_bytes(path, tmp_path, Limits(max_bytes=len(body) - 1))
    assert info.value.problem.code is Code.FILE_TOO_LARGE


def test_short_reads_are_continued_to_the_end_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A single read may return fewer bytes than asked; the file is still read whole and capped."""
    body = b'{"a": "' + b"x" * 100 + b'"}'
    path = tmp_path / "doc.json"
    path.write_bytes(body)
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, size: real_read(fd, min(size, 7)))
    assert read_bytes(path, tmp_path, Limits(max_bytes=len(body))) == body
    with pytest.raises(RejectionError) as info:
        read_bytes(path, tmp_path, Limits(max_bytes=len(body) - 1))
    assert info.value.problem.code is Code.FILE_TOO_LARGE


def test_default_size_cap_refuses_a_20_mb_file(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    with path.open("wb") as handle:
        handle.write(b'{"a": "')
        handle.write(b"x" * (20 * 1024 * 1024))
        handle.write(b'"}')
    assert path.stat().st_size > DEFAULT_MAX_BYTES
    with pytest.raises(RejectionError) as info:
        load_document(path, "big.json", tmp_path, LIMITS)
    assert info.value.problem.code is Code.FILE_TOO_LARGE


def test_unreadable_file(tmp_path: Path) -> None:
    folder = tmp_path / "folder.json"
    folder.mkdir()
    with pytest.raises(RejectionError) as info:
        read_bytes(folder, tmp_path, LIMITS)
    assert info.value.problem.code is Code.FILE_UNREADABLE


def test_symbolic_link_out_of_content_is_refused(tmp_path: Path) -> None:
    content = tmp_path / "content"
    content.mkdir()
    outside = f.write(tmp_path / "secret.json", {"a": 1})
    inside = f.write(content / "real.json", {"a": 2})
    (content / "out.json").symlink_to(outside)
    (content / "in.json").symlink_to(inside)
    with pytest.raises(RejectionError) as info:
        read_bytes(content / "out.json", content, LIMITS)
    assert info.value.problem.code is Code.FILE_OUTSIDE_CONTENT
    assert load_document(content / "in.json", "in.json", content, LIMITS).data == {"a": 2}


def test_a_symbolic_link_loop_is_unreadable_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "self.json").symlink_to(tmp_path / "self.json")
    (tmp_path / "a.json").symlink_to(tmp_path / "b.json")
    (tmp_path / "b.json").symlink_to(tmp_path / "a.json")
    for name in ("self.json", "a.json"):
        with pytest.raises(RejectionError) as info:
            read_bytes(tmp_path / name, tmp_path, LIMITS)
        assert info.value.problem.code is Code.FILE_UNREADABLE
        assert "loops" in info.value.problem.message


def test_load_document_keeps_the_raw_bytes(tmp_path: Path) -> None:
    doc = f.record_document()
    path = f.write(tmp_path / "r.json", doc)
    source = load_document(path, "r.json", tmp_path, LIMITS)
    assert source.file == "r.json"
    assert source.raw == path.read_bytes()
    assert source.data == doc
    assert source.raw_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- discovery


@pytest.mark.parametrize(
    ("name", "ignored"),
    [
        ("a.json", False),
        (".hidden.json", True),
        ("#a.json#", True),
        (".#a.json", True),
        ("a.json~", True),
        ("a.json.swp", True),
        ("a.json.tmp", True),
        ("a.json.part", True),
        ("a.json.crdownload", True),
    ],
)
def test_is_ignored_name(name: str, ignored: bool) -> None:
    assert is_ignored_name(name) is ignored


def test_discover_is_sorted_and_skips_pages_hidden_and_temporaries(tmp_path: Path) -> None:
    content = tmp_path / "content"
    for name in [
        "b.json",
        "a.json",
        "notes.md",
        ".hidden.json",
        "a.json~",
        "x.json.swp",
        "pages/about.json",
        "sub/pages/kept.json",
        "sub/z.json",
        "sub/c.json",
        ".git/config.json",
    ]:
        path = content / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "o.json").write_text("{}")
    os.symlink(outside, content / "linked")
    names = [name for _, name in discover(content)]
    # a folder's files (sorted) come before its sub-folders (sorted), at every level; a
    # link to a folder is listed by its own name, never followed (reading it is refused)
    assert names == ["a.json", "b.json", "linked", "sub/c.json", "sub/z.json", "sub/pages/kept.json"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    """Opening a pipe for reading waits for a writer: the real CLI must answer at once."""
    os.mkfifo(tmp_path / "pipe.json")
    result = subprocess.run(
        [sys.executable, "-m", "generator", "verify", str(tmp_path / "pipe.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert "file.unreadable" in result.stdout + result.stderr
    assert "not a regular file" in result.stdout + result.stderr


def test_a_link_to_a_folder_is_listed_and_refused_by_name(tmp_path: Path) -> None:
    """Listed so that the build keeps the numbers its documents may hold; its reason
    says it is a link to a folder, inside content or not."""
    content = tmp_path / "content"
    (content / "real").mkdir(parents=True)
    (content / "real" / "a.json").write_text("{}")
    os.symlink(content / "real", content / "inner")
    os.symlink(tmp_path, content / "outer")
    assert [name for _, name in discover(content)] == ["inner", "outer", "real/a.json"]
    with pytest.raises(RejectionError) as inner:
        read_bytes(content / "inner", content, LIMITS)
    assert (inner.value.problem.code.value, inner.value.problem.message) == (
        "file.unreadable",
        "a symbolic link to a folder, which is never followed",
    )
    with pytest.raises(RejectionError) as outer:
        read_bytes(content / "outer", content, LIMITS)
    assert outer.value.problem.code.value == "file.outside_content"
