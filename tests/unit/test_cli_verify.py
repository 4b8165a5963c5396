"""`pith-mirror verify` end to end: malformed input gives exit 1 and a reason, never a
traceback; configuration problems give exit 2; `--json` has one exact shape."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import factories as f
import pytest

from generator.commands.cli import main
from generator.trust.errors import MAX_PROBLEMS

REPO = Path(__file__).resolve().parents[2]
CONTENT = REPO / "content"


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main(["verify", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, dict[str, Any], str]:
    code, out, err = run(capsys, "--json", *args)
    return code, json.loads(out), err


def keys_file(tmp_path: Path, data: Any, name: str = "keys.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def valid_record_bytes() -> bytes:
    return f.to_bytes(f.record_document())


def twenty_megabytes(path: Path) -> None:
    with path.open("wb") as handle:
        handle.write(b'{"record_type": "pith_number_record", "padding": "')
        handle.write(b"x" * (20 * 1024 * 1024))
        handle.write(b'"}')


MALFORMED = [
    pytest.param(b"", "json.invalid", "", id="empty-file"),
    pytest.param(valid_record_bytes()[:700], "json.invalid", "", id="truncated-json"),
    pytest.param(
        b'{"record_type": "pith_number_record", "receipt": {"key_id": "a", "kind": "r", "key_id": "b"}}',
        "json.duplicate_key",
        "/receipt/key_id",
        id="duplicate-key",
    ),
    pytest.param(
        b'{"record_type": "pith_number_record", "a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "json.too_deep",
        "",
        id="100000-nested-brackets",
    ),
    pytest.param(random.Random(20260705).randbytes(4096), "json.invalid_utf8", "", id="random-binary"),
    pytest.param(b"\xef\xbb\xbf" + valid_record_bytes(), "json.bom", "", id="bom"),
    pytest.param(
        valid_record_bytes().replace(b"A Small Test Paper", b"A Small \xff Paper", 1),
        "json.invalid_utf8",
        "",
        id="invalid-utf8",
    ),
    pytest.param(
        b'{"record_type": "pith_number_record", "canonical_record": {"x": NaN}}',
        "json.non_finite",
        "",
        id="nan",
    ),
    pytest.param(valid_record_bytes() + b'\n{"more": 1}\n', "json.trailing_data", "", id="trailing-data"),
    pytest.param(b"[" + valid_record_bytes() + b"]", "json.not_object", "", id="top-level-array"),
    pytest.param(
        b'{"record_type": "pith_record", "pith_number": "pith:2021:GO43K6A5MHLNBUADUVZ3AKFBNI"}',
        "doc.unknown_kind",
        "",
        id="unknown-kind",
    ),
    pytest.param(
        b'{"record_type": "pith_number_record", "paper": {"title": "\\udead"}}',
        "json.invalid_utf8",
        "/paper/title",
        id="lone-surrogate",
    ),
    pytest.param(None, "file.too_large", "", id="20-mb-file"),
]


@pytest.mark.parametrize(("raw", "code", "pointer"), MALFORMED)
def test_malformed_input_is_refused_with_a_reason(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, raw: bytes | None, code: str, pointer: str
) -> None:
    path = tmp_path / "doc.json"
    if raw is None:
        twenty_megabytes(path)
    else:
        path.write_bytes(raw)
    exit_code, out, err = run(capsys, path)
    assert exit_code == 1
    assert "Traceback" not in err
    assert out.startswith("REJECTED")
    where = f"{pointer}: " if pointer else ""  # the whole file: no pointer
    assert f"{path.as_posix()}: {where}{code}: " in err
    assert "1 checked, 0 verified, 1 rejected" in out

    exit_code, report, err = run_json(capsys, path)
    assert exit_code == 1
    assert "Traceback" not in err
    [result] = report["results"]
    assert result["ok"] is False
    assert [(e["code"], e["pointer"]) for e in result["errors"]] == [(code, pointer)]
    assert result["errors"][0]["message"]


def test_json_output_has_exactly_the_documented_shape(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = f.write(tmp_path / "a.json", f.bundle())
    bad_doc = f.record_document()
    bad_doc["paper"]["title"] = "Changed"
    bad = f.write(tmp_path / "b.json", bad_doc)
    code, report, _ = run_json(
        capsys, "--keys", keys_file(tmp_path, f.TEST_SIGNER.key_entry(), "k.keys"), good, bad
    )
    assert code == 1
    assert set(report) == {"results", "summary", "causes"}
    assert report["summary"] == {"checked": 2, "ok": 1, "rejected": 1}
    assert len(report["results"]) == 2
    for result in report["results"]:
        assert set(result) == {"path", "kind", "pith_number", "ok", "errors", "cause"}
        for error in result["errors"]:
            assert set(error) == {"code", "pointer", "message"}
    first, second = report["results"]
    assert first == {
        "path": good.as_posix(),
        "kind": "bundle",
        "pith_number": f.pith_number(f.canonical_record()),
        "ok": True,
        "errors": [],
        "cause": None,
    }
    assert (second["path"], second["kind"], second["ok"]) == (bad.as_posix(), "record", False)
    assert second["pith_number"] == bad_doc["pith_number"]
    assert [(e["code"], e["pointer"]) for e in second["errors"]] == [("title.mismatch", "/paper/title")]
    assert second["cause"] == second["errors"][0]
    (cause,) = report["causes"]
    assert set(cause) == {"code", "files", "sentence", "message", "hint", "refused"}
    assert (cause["code"], cause["files"]) == ("title.mismatch", 1)
    assert cause["refused"] == [
        {"file": bad.as_posix(), "pointer": "/paper/title", "message": cause["message"], "more_problems": 0}
    ]


def test_json_output_for_an_undecodable_file_has_null_kind_and_number(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b"[]")
    _, report, _ = run_json(capsys, path)
    result = report["results"][0]
    assert (result["kind"], result["pith_number"], result["ok"]) == (None, None, False)


def test_real_documents_verify_with_the_default_key(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, CONTENT)
    assert code == 0, err
    assert "2 checked, 2 verified, 0 rejected" in out
    assert err == ""


def test_real_documents_fail_with_another_pinned_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    keys = keys_file(tmp_path, {"key_id": f.TEST_KEY_ID, "public_key_b64": f.TEST_SIGNER.public_key_b64})
    code, report, _ = run_json(capsys, "--keys", keys, CONTENT)
    assert code == 1
    assert report["summary"] == {"checked": 2, "ok": 0, "rejected": 2}
    by_kind = {r["kind"]: r for r in report["results"]}
    assert ("key.unknown", "/receipt/key_id") in {
        (e["code"], e["pointer"]) for e in by_kind["record"]["errors"]
    }
    bundle_errors = {(e["code"], e["pointer"]) for e in by_kind["bundle"]["errors"]}
    assert ("key.not_pinned", "/public_keys/0/public_key_b64") in bundle_errors


@pytest.mark.parametrize("shape", ["object", "list"])
def test_keys_file_with_one_key_object_or_a_list(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, shape: str
) -> None:
    content = tmp_path / "content"
    f.write(content / "r.json", f.record_document())
    f.write(content / "b.json", f.bundle())
    entry = {"key_id": f.TEST_KEY_ID, "public_key_b64": f.TEST_SIGNER.public_key_b64}
    data: Any = entry if shape == "object" else [f.SECOND_SIGNER.key_entry(), entry]
    code, out, err = run(capsys, "--keys", keys_file(tmp_path, data), content)
    assert code == 0, err
    assert "2 checked, 2 verified, 0 rejected" in out
    # the same documents against the built-in key: refused
    code, out, err = run(capsys, content)
    assert code == 1
    assert "key.unknown" in err


@pytest.mark.parametrize(
    ("keys_content", "reason"),
    [
        (None, "cannot read"),
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[]", "pins no key"),
        (b'{"key_id": "k", "public_key_b64": "AAAA"}', "not 32 bytes"),
        (b'{"public_key_b64": "AAAA"}', "has no key_id"),
    ],
    ids=["missing", "invalid-json", "binary", "empty-list", "short-key", "no-key-id"],
)
def test_unusable_keys_file_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, keys_content: bytes | None, reason: str
) -> None:
    keys = tmp_path / "keys.json"
    if keys_content is not None:
        keys.write_bytes(keys_content)
    code, out, err = run(capsys, "--keys", keys, CONTENT)
    assert code == 2
    assert "Traceback" not in err
    assert err.startswith("pith-mirror: configuration: keys: ")
    assert reason in err
    assert out == ""


def test_unreadable_keys_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "--keys", tmp_path, CONTENT)  # a folder cannot be read as a file
    assert code == 2
    assert "configuration: keys: cannot read" in err


def test_nonexistent_path_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    code, _, err = run(capsys, CONTENT, missing)
    assert code == 2
    assert "Traceback" not in err
    assert "configuration: paths: no such file or folder" in err
    assert str(missing) in err


def test_folder_without_documents_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# notes")
    code, out, err = run(capsys, tmp_path)
    assert code == 1
    assert "no documents found" in err
    assert "0 checked" in out


def test_max_bytes_option(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = f.write(tmp_path / "r.json", f.record_document())
    keys = keys_file(tmp_path, f.TEST_SIGNER.key_entry(), "k.keys")
    code, _, _ = run(capsys, "--keys", keys, "--max-bytes", str(path.stat().st_size), path)
    assert code == 0
    code, _, err = run(capsys, "--keys", keys, "--max-bytes", str(path.stat().st_size - 1), path)
    assert code == 1
    assert f"{path.as_posix()}: file.too_large: " in err


@pytest.mark.parametrize("value", ["0", "-1", "5", str(2**30 + 1), str(2**64)])
def test_a_max_bytes_out_of_range_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: str
) -> None:
    """As `build` says of max_bytes: 0 is not "no limit", a limit below 1024 is a mistake,
    and one past 1 GiB no document needs (2**64 failed deep in the reading, a traceback)."""
    path = f.write(tmp_path / "r.json", f.record_document())
    code, out, err = run(capsys, "--max-bytes", value, path)
    assert code == 2
    assert "max_bytes: must be from 1024 to 1073741824 (1 GiB)" in err and not out


def test_stderr_lines_are_sorted_by_file_then_pointer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = f.record_document()
    doc["paper"]["title"] = "Changed"
    doc["aliases"][0]["alias_value"] = "0000.00000"
    doc["short_pith_number"] = "pith:AAAAAAAA"
    f.write(tmp_path / "b.json", doc)
    f.write(tmp_path / "a.json", doc)
    keys = keys_file(tmp_path.parent, f.TEST_SIGNER.key_entry(), f"{tmp_path.name}.keys")
    code, _, err = run(capsys, "--keys", keys, tmp_path)
    assert code == 1
    lines = err.splitlines()
    assert lines == sorted(lines)
    assert len(lines) == 6
    assert lines[0] == f"{(tmp_path / 'a.json').as_posix()}: /aliases/0/alias_value: alias.mismatch: " + (
        "arxiv alias is '0000.00000' but the canonical record gives '2101.00001'"
    )


def test_missing_paths_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["verify"])
    assert info.value.code == 2


# ---------------------------------------------------------------- the real entry point


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "generator", "verify", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


def test_subprocess_malformed_folder_exits_1_without_traceback(tmp_path: Path) -> None:
    for index, param in enumerate(MALFORMED):
        raw = param.values[0]
        if raw is not None:
            (tmp_path / f"{index:02d}-{param.id}.json").write_bytes(raw)
    twenty_megabytes(tmp_path / "99-big.json")
    result = cli("--json", tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["summary"] == {"checked": len(MALFORMED), "ok": 0, "rejected": len(MALFORMED)}
    expected = [param.values[1] for param in MALFORMED]
    assert [r["errors"][0]["code"] for r in report["results"]] == expected


def test_subprocess_real_documents_and_exit_codes(tmp_path: Path) -> None:
    ok = cli(CONTENT)
    assert ok.returncode == 0, ok.stderr
    assert "2 checked, 2 verified, 0 rejected" in ok.stdout
    missing = cli(tmp_path / "missing.json")
    assert missing.returncode == 2
    assert "Traceback" not in missing.stderr
    bad_keys = tmp_path / "keys.json"
    bad_keys.write_text("{")
    assert cli("--keys", bad_keys, CONTENT).returncode == 2


def test_subprocess_names_a_file_whose_name_is_not_utf8_as_the_build_does(tmp_path: Path) -> None:
    """A name with a byte that is not UTF-8 is shown with `\\xNN` (stdout is UTF-8, JSON too),
    and the file is refused unread, as the build refuses it, however good its document."""
    record = CONTENT / "GO43K6A5MHLNBUADUVZ3AKFBNI.record.json"
    folder, single = tmp_path / "content", tmp_path / os.fsdecode(b"single-\xff.json")
    folder.mkdir()
    (folder / os.fsdecode(b"caf\xe9-\xff.json")).write_bytes(record.read_bytes())
    single.write_bytes(b"{")
    shown = (f"{folder.as_posix()}/caf\\xe9-\\xff.json", f"{tmp_path.as_posix()}/single-\\xff.json")

    def verify(*args: str | Path) -> tuple[str, str]:
        command = [sys.executable, "-m", "generator", "verify", *map(str, args), folder, single]
        result = subprocess.run(command, capture_output=True, timeout=120, check=False)
        assert result.returncode == 1
        return result.stdout.decode("utf-8"), result.stderr.decode("utf-8")

    out, err = verify("--json")
    assert "Traceback" not in err
    report = json.loads(out)
    assert [(r["path"], r["ok"]) for r in report["results"]] == [(shown[0], False), (shown[1], False)]
    unnamed = "file.unreadable: the file name is not valid UTF-8; rename the file to publish it"
    assert [e["code"] for r in report["results"] for e in r["errors"]] == ["file.unreadable"] * 2
    out, err = verify()
    assert all(line.startswith("REJECTED") for line in out.splitlines()[:2])
    assert f" {shown[0]}  {unnamed}" in out and f" {shown[1]}  {unnamed}" in out
    assert err.startswith(f"{shown[0]}: ")


def test_a_good_document_in_a_folder_whose_name_is_not_utf8_verifies(tmp_path: Path) -> None:
    """Only the name within the folder given counts, as in a build: the folder's own
    name is the user's to choose."""
    folder = tmp_path / os.fsdecode(b"d\xe9")
    folder.mkdir()
    (folder / "ok.json").write_bytes((CONTENT / "GO43K6A5MHLNBUADUVZ3AKFBNI.record.json").read_bytes())
    command = [sys.executable, "-m", "generator", "verify", "--json", folder]
    result = subprocess.run(command, capture_output=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.decode("utf-8"))
    assert [(r["path"], r["ok"]) for r in report["results"]] == [
        (f"{tmp_path.as_posix()}/d\\xe9/ok.json", True)
    ]


def test_a_name_or_key_with_control_characters_prints_as_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A file name holding a newline would otherwise print a second, made-up line,
    and an escape sequence would reach the terminal."""
    doc = f.record_document()
    doc["canonical_record"]["\x1b[2J"] = "extra"  # (breaks the canonical hash)
    (tmp_path / "a\nfake: ok.json").write_bytes(f.to_bytes(doc))
    assert main(["verify", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    lines = (out + err).splitlines()
    assert [line for line in lines if "fake" in line] == [
        line for line in lines if "a\\x0afake: ok.json" in line
    ]
    assert any("/a\\x0afake: ok.json: " in line for line in lines), lines
    assert not any("\x1b" in line for line in lines)


def test_a_document_with_thousands_of_problems_lists_a_bounded_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A few hundred kilobytes of `{}` events are tens of thousands of problems: the
    report, the terminal and memory get the first MAX_PROBLEMS and a count of the rest."""
    bundle = json.loads((CONTENT / "Z5NAPRQPUU4SIDOBV5N2FREXWZ.bundle.json").read_bytes())
    bundle["events"] = [{}] * 20_000
    path = tmp_path / "junk.bundle.json"
    path.write_text(json.dumps(bundle))
    code, report, _err = run_json(capsys, path)
    assert code == 1
    (document,) = report["results"]
    problems = document["errors"]
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1]["code"] == "doc.more_problems"
    assert problems[-1]["message"].startswith("and ") and "more problem(s)" in problems[-1]["message"]
    more = int(problems[-1]["message"].split()[1].replace(",", ""))
    assert more > 20_000  # (every event misses several fields)
