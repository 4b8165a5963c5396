"""SHA256SUMS: coreutils' `sha256sum -c` accepts it, and catches a changed byte or a missing file."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fskit import refuse_listing

from generator.publish.integrity import (
    MAX_UNREAD_LINES,
    SIGNATURE_PATH,
    SUMS_PATH,
    check_sha256sums,
    parse_sha256sums,
    sha256sums,
)
from generator.trust.errors import BuildError

from .conftest import BUNDLE_BODY, publish_cli

SHA256SUM = shutil.which("sha256sum")
needs_coreutils = pytest.mark.skipif(SHA256SUM is None, reason="coreutils sha256sum not installed")


def coreutils_check(site: Path) -> subprocess.CompletedProcess[str]:
    assert SHA256SUM is not None
    return subprocess.run(
        [SHA256SUM, "-c", "--strict", SUMS_PATH], cwd=site, capture_output=True, text=True, check=False
    )


def small_site(folder: Path, files: dict[str, str]) -> Path:
    """A folder holding `files` (name -> text), for the checksums alone."""
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def write_sums(site: Path) -> bytes:
    data = sha256sums(site)
    (site / SUMS_PATH).write_bytes(data)
    return data


def test_lists_every_file_sorted_with_its_hash(site_copy: Callable[[str], Path]) -> None:
    site = site_copy("site")
    (site / SIGNATURE_PATH).write_text("{}")
    data = write_sums(site)
    lines = data.decode().splitlines()
    names = [line.split("  ", 1)[1] for line in lines]
    assert names == sorted(names)
    files = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    # (and not `_headers`, which a host reads and never serves: a copy of the site as served
    # must verify, and `upload` does not send it)
    assert names == [f for f in files if f not in (SUMS_PATH, SIGNATURE_PATH, "_headers")]
    assert ".well-known/pith/mirror.json" in names and ".nojekyll" in names and "_headers" in files
    for line in lines:
        digest, name = line.split("  ", 1)
        assert digest == hashlib.sha256((site / name).read_bytes()).hexdigest()
    assert sha256sums(site) == data


@needs_coreutils
def test_sha256sum_accepts_it(site_copy: Callable[[str], Path]) -> None:
    site = site_copy("site")
    write_sums(site)
    done = coreutils_check(site)
    assert done.returncode == 0, done.stdout + done.stderr
    assert check_sha256sums(site) == []


@needs_coreutils
def test_one_changed_byte_in_a_bundle_fails(site_copy: Callable[[str], Path]) -> None:
    site = site_copy("site")
    write_sums(site)
    bundle = site / "pith" / BUNDLE_BODY / "bundle.json"
    data = bytearray(bundle.read_bytes())
    data[100] ^= 0x01
    bundle.write_bytes(bytes(data))
    done = coreutils_check(site)
    assert done.returncode != 0
    assert f"pith/{BUNDLE_BODY}/bundle.json: FAILED" in done.stdout
    assert check_sha256sums(site) == [f"pith/{BUNDLE_BODY}/bundle.json: content differs from SHA256SUMS"]


@needs_coreutils
def test_a_deleted_file_fails(site_copy: Callable[[str], Path]) -> None:
    site = site_copy("site")
    write_sums(site)
    (site / ".well-known" / "pith" / BUNDLE_BODY / "bundle.json").unlink()
    done = coreutils_check(site)
    assert done.returncode != 0
    assert check_sha256sums(site) == [
        f".well-known/pith/{BUNDLE_BODY}/bundle.json: listed in SHA256SUMS but missing"
    ]


def test_an_added_file_is_reported(site_copy: Callable[[str], Path]) -> None:
    site = site_copy("site")
    write_sums(site)
    (site / "pith" / "extra.json").write_text("{}")
    assert check_sha256sums(site) == ["pith/extra.json: present but not listed in SHA256SUMS"]


def test_missing_sums_is_a_problem(site_copy: Callable[[str], Path]) -> None:
    site = site_copy("site")
    assert check_sha256sums(site)[0].startswith("SHA256SUMS is missing")


@needs_coreutils
def test_names_sha256sum_escapes(tmp_path: Path) -> None:
    site = small_site(
        tmp_path / "odd", {"back\\slash.txt": "a", "line\nbreak.txt": "b", "plain name.txt": "c"}
    )
    data = write_sums(site)
    assert data.count(b"\n") == 3
    done = coreutils_check(site)
    assert done.returncode == 0, done.stdout + done.stderr
    listed, bad = parse_sha256sums(data)
    assert not bad and set(listed) == {"back\\slash.txt", "line\nbreak.txt", "plain name.txt"}
    assert check_sha256sums(site) == []


def test_symbolic_links_are_refused(tmp_path: Path) -> None:
    site = small_site(tmp_path / "site", {"a.txt": "a"})
    (site / "b.txt").symlink_to(site / "a.txt")
    with pytest.raises(BuildError, match="symbolic link"):
        sha256sums(site)


def test_a_link_put_into_a_checked_site_fails_its_verification_not_the_command(
    site_copy: Callable[[str], Path],
) -> None:
    """verify-site answers 'does not verify' (exit 1) for a site that a link was put
    into, as for any other change; exit 2 is for a command that cannot run."""
    site = site_copy("site")
    assert publish_cli("checksums", site).code == 0
    (site / "index.html").unlink()
    (site / "index.html").symlink_to("/etc/hostname")
    (site / "assets-link").symlink_to(site / "assets", target_is_directory=True)
    result = publish_cli("verify-site", site)
    assert result.code == 1, result.err
    assert "index.html: is a symbolic link; a published site holds only files" in result.out + result.err
    assert "assets-link: is a symbolic link" in result.out + result.err
    assert "Traceback" not in result.err


def test_checksums_command_writes_the_file(site_copy: Callable[[str], Path]) -> None:
    site = site_copy("site")
    result = publish_cli("checksums", site)
    assert result.code == 0, result.err
    assert (site / SUMS_PATH).read_bytes() == sha256sums(site)
    assert not (site / SIGNATURE_PATH).exists()
    assert publish_cli("verify-site", site).code == 0


def test_checksums_of_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    assert publish_cli("checksums", tmp_path / "nope").code == 2
    assert publish_cli("verify-site", tmp_path / "nope").code == 2


def test_checksums_are_written_only_into_a_site_pith_mirror_built(tmp_path: Path) -> None:
    """`checksums` writes into the folder it is given: any folder (a home folder, a
    project) gained a SHA256SUMS of everything in it."""
    folder = tmp_path / "documents"
    folder.mkdir()
    (folder / "letter.txt").write_text("private")
    result = publish_cli("checksums", folder)
    assert result.code == 2, result.out + result.err
    assert "pith-mirror did not build it: SHA256SUMS is written only into a built site" in result.err
    assert sorted(p.name for p in folder.iterdir()) == ["letter.txt"]


@needs_coreutils
@pytest.mark.parametrize("odd", ["a\x0cb", "a\u2028b", "a\x85b", "a\x1cb"])
def test_a_name_str_splitlines_would_break_is_read_as_sha256sum_reads_it(tmp_path: Path, odd: str) -> None:
    """Lines end at "\\n" alone: splitlines also ended one at a form feed, U+2028
    and others, so a file so named, which sha256sum -c passed, was 'missing'."""
    site = small_site(tmp_path / "odd", {odd: "x", "plain.txt": "y"})
    write_sums(site)
    assert coreutils_check(site).returncode == 0
    assert check_sha256sums(site) == []


@needs_coreutils
def test_lines_joined_by_a_form_feed_or_a_name_listed_twice_fail_as_with_sha256sum(tmp_path: Path) -> None:
    site = small_site(tmp_path / "site", {"a.txt": "a", "b.txt": "b"})
    data = write_sums(site)
    first, second = data.splitlines(keepends=True)
    for forged in (
        first.rstrip(b"\n") + b"\x0c" + second,  # two lines as one: a name with a form feed in it
        first.replace(first[:64], b"0" * 64) + data,  # a.txt twice, the first time with a wrong hash
    ):
        (site / SUMS_PATH).write_bytes(forged)
        assert coreutils_check(site).returncode != 0
        assert check_sha256sums(site) != []


def test_a_folder_that_cannot_be_listed_is_an_error_not_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """os.walk skipped a folder it could not list without a word: its files were
    neither checked nor reported as unlisted, and verify-site passed."""
    site = small_site(tmp_path / "site", {"index.html": "i"})
    write_sums(site)
    (site / "assets").mkdir()
    (site / "assets" / "evil.js").write_text("x")  # (added since: not listed)
    refuse_listing(monkeypatch, "assets")
    for check in (sha256sums, check_sha256sums):  # (checksums, and verify-site)
        with pytest.raises(BuildError, match=r"cannot list this folder \(Permission denied\)") as info:
            check(site)
        assert info.value.path == str(site / "assets")


def test_a_tree_deeper_than_the_recursion_limit_is_listed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    deep = str(site)
    os.mkdir(deep)
    for _ in range(sys.getrecursionlimit() + 100):  # (one at a time: mkdir(parents=True) recurses too)
        deep += "/a"
        os.mkdir(deep)
    Path(deep, "f.txt").write_text("f")
    try:
        assert sha256sums(site).decode().endswith("/f.txt\n")
    finally:  # (removed here, bottom up: shutil.rmtree, as pytest cleans up with, recurses too)
        os.unlink(Path(deep, "f.txt"))
        while deep != str(site):
            os.rmdir(deep)
            deep = os.path.dirname(deep)


def test_millions_of_unreadable_lines_are_counted_not_listed(tmp_path: Path) -> None:
    """A hostile SHA256SUMS of empty lines must not become one message (and one
    string in memory) per line."""
    site = small_site(tmp_path / "site", {"a.txt": "a"})
    write_sums(site)
    with (site / SUMS_PATH).open("ab") as handle:
        handle.write(b"\n" * 50_000)
    problems = check_sha256sums(site)
    assert len(problems) == MAX_UNREAD_LINES + 1
    assert problems[0] == "SHA256SUMS line 2 is not '<sha256>  <path>'"
    assert (
        problems[-1]
        == f"and {50_000 - MAX_UNREAD_LINES:,} more lines of SHA256SUMS that are not '<sha256>  <path>'"
    )


def test_a_listed_file_replaced_by_a_folder_is_not_called_missing(tmp_path: Path) -> None:
    site = small_site(tmp_path / "site", {"a.txt": "a", "b.txt": "b"})
    write_sums(site)
    (site / "b.txt").unlink()
    (site / "b.txt").mkdir()
    (site / "a.txt").unlink()
    assert check_sha256sums(site) == [
        "a.txt: listed in SHA256SUMS but missing",
        "b.txt: listed in SHA256SUMS but not a regular file",
    ]


def test_a_listed_name_the_file_system_cannot_look_up_is_a_problem_not_a_crash(
    site_copy: Callable[[str], Path],
) -> None:
    site = site_copy("site")
    write_sums(site)
    long_name = "a" * 300  # (longer than a file name may be)
    with open(site / SUMS_PATH, "a") as sums:
        sums.write(f"{hashlib.sha256(b'').hexdigest()}  {long_name}\n")
    assert check_sha256sums(site) == [
        f"{long_name}: listed in SHA256SUMS but cannot be checked: File name too long"
    ]
    result = publish_cli("verify-site", site)
    assert result.code == 1 and "File name too long" in result.err


def test_a_record_file_the_manifest_does_not_list_stops_checksums(site_copy: Callable[[str], Path]) -> None:
    """A record document copied into SITE under another number: the build would count it as
    published (it reads record files on disk), so signing it would vouch for a forgery."""
    site = site_copy("site")
    forged = f"pith/{'A' * 26}.json"
    shutil.copy(site / f"pith/{BUNDLE_BODY}.json", site / forged)
    result = publish_cli("checksums", site)
    assert result.code == 1 and f"{forged}: a file of the record {'A' * 26}, which the manifest" in result.err
    assert not (site / SUMS_PATH).exists()
    (site / forged).unlink()
    assert publish_cli("checksums", site).code == 0
