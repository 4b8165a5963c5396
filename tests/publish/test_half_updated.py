"""A half-updated or edited site is never vouched for: `checksums` and mirror-key
signing refuse it, and `verify-site` checks the files against the manifest too.

The half-updated site is made as a killed incremental build leaves one: its undo
journal (journal.Journal, the build's own mechanism) holds the old copy of a
record's file, which was replaced by other bytes, and nothing committed it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from generator.build import journal
from generator.build.write import one_build_at_a_time, reading_site
from generator.commands import publish_commands
from generator.publish import integrity
from generator.publish.integrity import SIGNATURE_PATH, SUMS_PATH, generate_mirror_key, sha256sums

from .conftest import BUNDLE_BODY, CONTENT, RECORD_BODY, REPO, Result, publish_cli, run_module

RECORD_FILE_PATH = f"pith/{RECORD_BODY}.json"


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "mirror-key.json"
    generate_mirror_key(path, "lab-mirror")
    return path


def half_update(site: Path) -> None:
    """Replace one record file through an undo journal that is never committed (a kill)."""
    changed = site.parent / "new-record.json"
    changed.write_bytes((site / RECORD_FILE_PATH).read_bytes() + b"\n")
    undo = journal.Journal(site)
    undo.replace(changed, RECORD_FILE_PATH)
    undo._created.close()  # (the process is gone: its files stay as they are)


def test_checksums_refuse_a_site_a_killed_build_left_half_updated(
    site_copy: Callable[[str], Path], key: Path, tmp_path: Path
) -> None:
    site = site_copy("site")
    half_update(site)
    for extra in ([], ["--mirror-key", str(key)]):
        result = run_module("checksums", site, *extra, cwd=tmp_path)
        assert result.code == 1, result
        assert "a build of this site is running or did not finish" in result.err
        assert f"{RECORD_FILE_PATH}: file differs from its manifest entry" in result.err
        assert "refusing to write SHA256SUMS" in result.out
        assert not (site / SUMS_PATH).exists() and not (site / SIGNATURE_PATH).exists()
    verified = run_module("verify-site", site, cwd=tmp_path)
    assert verified.code == 1 and "did not finish" in verified.err


def test_after_the_next_build_the_site_can_be_signed(
    site_copy: Callable[[str], Path], key: Path, tmp_path: Path
) -> None:
    """The next build undoes the killed one; then the site is whole, and signed."""
    site = site_copy("site")
    before = (site / RECORD_FILE_PATH).read_bytes()
    half_update(site)
    built = run_module("build", CONTENT, site, "--jobs", "1", "--quiet", cwd=tmp_path)
    assert built.code == 0, built.err
    assert (site / RECORD_FILE_PATH).read_bytes() == before
    assert run_module("checksums", site, "--mirror-key", key, cwd=tmp_path).code == 0
    assert run_module("verify-site", site, "--trust", key, cwd=tmp_path).code == 0


def test_an_edited_file_is_refused_and_fails_verify_site_even_with_fresh_sums(
    site_copy: Callable[[str], Path], key: Path, tmp_path: Path
) -> None:
    """Without any journal: a bundle changed by hand. SHA256SUMS regenerated over the
    edit agrees with the files, and still the site does not verify."""
    site = site_copy("site")
    bundle = site / "pith" / BUNDLE_BODY / "bundle.json"
    bundle.write_bytes(bundle.read_bytes().replace(b"{", b"{ ", 1))
    result = run_module("checksums", site, "--mirror-key", key, cwd=tmp_path)
    assert result.code == 1
    assert f"pith/{BUNDLE_BODY}/bundle.json: file differs from its manifest entry" in result.err
    assert "did not finish" not in result.err
    (site / SUMS_PATH).write_bytes(sha256sums(site))  # (as another tool would write them)
    verified = run_module("verify-site", site, cwd=tmp_path)
    assert verified.code == 1
    assert "bundle_sha256" in verified.err and "does NOT verify" in verified.out


@pytest.fixture
def locked(site_copy: Callable[[str], Path]) -> Iterator[Path]:
    site = site_copy("site")
    with one_build_at_a_time(site):
        yield site


def test_a_build_running_now_is_waited_for_not_signed(locked: Path, key: Path, tmp_path: Path) -> None:
    result = run_module("checksums", locked, "--mirror-key", key, cwd=tmp_path)
    assert result.code == 1 and "is running or did not finish" in result.err
    assert "another pith-mirror command is using it" in result.out
    assert not (locked / SUMS_PATH).exists() and not (locked / SIGNATURE_PATH).exists()


def test_a_finished_build_leaves_no_mark(site_copy: Callable[[str], Path], tmp_path: Path) -> None:
    """The lock file stays beside SITE after every build: only a held lock counts."""
    site = site_copy("site")
    built = run_module("build", CONTENT, site, "--jobs", "1", "--quiet", cwd=tmp_path)
    assert built.code == 0, built.err
    assert (tmp_path / ".site.lock").exists()
    assert not journal.unfinished(site)
    assert run_module("checksums", site, cwd=tmp_path).code == 0


def test_an_incremental_build_does_not_sign_a_site_edited_since_its_cache(tmp_path: Path, key: Path) -> None:
    """The build trusts its cache for records it does not render again: a record file
    edited in SITE since would be signed as published. It is refused, and the site
    is left as it was."""
    content = tmp_path / "content"
    content.mkdir()
    for document in CONTENT.glob("*.record.json"):
        (content / document.name).write_bytes(document.read_bytes())
    site = tmp_path / "site"
    args = ["build", content, site, "--jobs", "1", "--quiet", "--mirror-key", key]
    assert run_module(*args, cwd=tmp_path).code == 0
    record = site / RECORD_FILE_PATH
    record.write_bytes(record.read_bytes() + b" ")
    for document in CONTENT.glob("*.bundle.json"):
        (content / document.name).write_bytes(document.read_bytes())
    before = {p: p.read_bytes() for p in site.rglob("*") if p.is_file()}
    result = run_module(*args, cwd=tmp_path)
    assert result.code == 2, result
    assert "refusing to sign a site whose files disagree with its manifest" in result.err
    assert f"{RECORD_FILE_PATH}: file differs from its manifest entry" in result.err
    assert {p: p.read_bytes() for p in site.rglob("*") if p.is_file()} == before
    assert run_module(*args, "--clean", cwd=tmp_path).code == 0
    assert run_module("verify-site", site, "--trust", key, cwd=tmp_path).code == 0


def test_unfinished_in_a_process_of_its_own(site_copy: Callable[[str], Path]) -> None:
    """The lock is seen across processes (flock), as a separate `checksums` sees a build."""
    site = site_copy("site")
    code = (
        "import sys, pathlib, generator.build.journal as j;"
        f" sys.exit(j.unfinished(pathlib.Path({str(site)!r})))"
    )
    with one_build_at_a_time(site):
        held = subprocess.run([sys.executable, "-c", code], cwd=REPO, timeout=60)
    free = subprocess.run([sys.executable, "-c", code], cwd=REPO, timeout=60)
    assert (held.returncode, free.returncode) == (1, 0)


def test_a_build_cannot_start_while_checksums_are_made(
    site_copy: Callable[[str], Path], key: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`checksums` holds SITE's lock from its check to its last write: a build started
    meanwhile (a real one, in a process of its own) is refused, so the sums and the
    signature describe one site, not a mix of the old and the new."""
    site = site_copy("site")
    builds: list[Result] = []

    def sums_while_a_build_starts(folder: Path) -> bytes:
        data = sha256sums(folder)
        builds.append(run_module("build", CONTENT, site, "--jobs", "1", "--quiet", cwd=tmp_path))
        return data

    monkeypatch.setattr(integrity, "sha256sums", sums_while_a_build_starts)
    result = publish_cli("checksums", site, "--mirror-key", key)
    assert result.code == 0, result
    [build] = builds
    assert build.code == 2, build
    assert (
        "another pith-mirror command (a build, `checksums` or `upload`) is using this site now" in build.err
    )
    assert run_module("verify-site", site, "--trust", key, cwd=tmp_path).code == 0
    assert not journal.unfinished(site)  # (the lock went with the command)
    assert run_module("build", CONTENT, site, "--jobs", "1", "--quiet", cwd=tmp_path).code == 0


def test_a_build_cannot_start_while_the_site_is_uploaded(
    site_copy: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`upload` holds SITE's lock while it reads and sends the files: a build started
    meanwhile (a real one) is refused, so the store never gets some files of one build
    and some of the next while the upload says it succeeded."""
    site = site_copy("site")
    builds: list[Result] = []
    check = publish_commands.files_disagree

    def check_while_a_build_starts(folder: Path, paths: set[str] | None = None) -> list[str]:
        builds.append(run_module("build", CONTENT, site, "--jobs", "1", "--quiet", cwd=tmp_path))
        return check(folder, paths)

    monkeypatch.setattr(publish_commands, "files_disagree", check_while_a_build_starts)
    result = publish_cli("upload", site, (tmp_path / "bucket").as_uri())
    assert result.code == 0, result
    assert builds and all(b.code == 2 and "is using this site" in b.err for b in builds), builds
    assert not journal.unfinished(site)
    assert run_module("build", CONTENT, site, "--jobs", "1", "--quiet", cwd=tmp_path).code == 0


def test_a_site_reached_through_a_linked_folder_is_locked_once(tmp_path: Path) -> None:
    """A build of `link/site` (`link` a link to `real`) locks the file beside the real
    folder; `checksums` and `upload` given either spelling take that one lock, once (a
    second `flock` of the same file by the same command would refuse itself)."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    linked, real = tmp_path / "link" / "site", tmp_path / "real" / "site"
    assert run_module("build", CONTENT, linked, "--jobs", "1", "--quiet", cwd=tmp_path).code == 0
    for spelled in (linked, real):
        result = publish_cli("checksums", spelled)
        assert result.code == 0, result
        assert publish_cli("upload", spelled, (tmp_path / "bucket").as_uri()).code == 0
    assert [p.name for p in (tmp_path / "real").glob(".*.lock")] == [".site.lock"]
    with one_build_at_a_time(linked):  # (a build given the linked spelling)
        for spelled in (linked, real):
            assert publish_cli("checksums", spelled).code == 1
            assert publish_cli("upload", spelled, (tmp_path / "bucket").as_uri()).code == 1


def test_uploads_share_the_lock_and_a_build_meanwhile_is_refused(
    site_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    """An upload only reads SITE: it holds the lock shared, so a second upload (to another
    store) and `verify-site` go on beside it, while a build and `checksums`, which
    write, are refused until it is done."""
    site = site_copy("site")
    assert publish_cli("checksums", site).code == 0
    with reading_site(site):  # (an upload in progress)
        assert not journal.unfinished(site)  # (what verify-site and upload ask)
        verified = run_module("verify-site", site, cwd=tmp_path)
        assert verified.code == 0 and "every file matches SHA256SUMS" in verified.out, verified
        assert publish_cli("upload", site, (tmp_path / "other-store").as_uri()).code == 0
        built = run_module("build", CONTENT, site, "--jobs", "1", "--quiet", cwd=tmp_path)
        assert built.code == 2 and "is using this site" in built.err
        assert publish_cli("checksums", site).code == 1
    assert publish_cli("checksums", site).code == 0
