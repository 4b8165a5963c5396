"""`pith-mirror upload SITE URL`: the real command, in a process of its own, into the
S3 stand-in (its settings from the environment, as an operator's would be)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import storagekit

from generator.build.journal import undo_path
from generator.publish.storage import open_storage
from generator.site.layout import MANIFEST_PATH

from .conftest import RECORD_BODY, REPO


def upload(s3: storagekit.S3StandIn | None, *argv: str | Path) -> subprocess.CompletedProcess[str]:
    """`python -m generator upload ARGV...`, with the stand-in's settings in the environment."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if s3 is not None:
        env |= s3.environment()
    command = [sys.executable, "-m", "generator", "upload", *map(str, argv)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_a_site_goes_up_and_a_second_upload_writes_nothing(
    s3: storagekit.S3StandIn, site_copy: Callable[[str], Path]
) -> None:
    site = site_copy("site")
    bucket = s3.new_bucket()
    first = upload(s3, site, f"s3://{bucket}/mirror/")
    assert first.returncode == 0, first.stderr
    count = int(re.search(r"uploaded ([\d,]+) object", first.stdout).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert count > 100 and " 0 already there, 0 deleted" in first.stdout
    status, headers = s3.head(f"/{bucket}/mirror/pith/{RECORD_BODY}.html")
    assert status == 200 and headers["content-type"].startswith("text/html")

    s3.proxy.reset()
    again = upload(s3, site, f"s3://{bucket}/mirror/")
    assert again.returncode == 0, again.stderr
    assert "uploaded 0 object(s)" in again.stdout and f"{count:,} already there" in again.stdout
    assert [p for p in s3.proxy.puts() if "/.pith-mirror/" not in p] == []


def test_a_site_whose_build_did_not_finish_is_not_uploaded(
    s3: storagekit.S3StandIn, site_copy: Callable[[str], Path]
) -> None:
    site = site_copy("site")
    undo_path(site).mkdir()  # (the journal a build stopped while changing SITE leaves)
    bucket = s3.new_bucket()
    s3.proxy.reset()
    result = upload(s3, site, f"s3://{bucket}/mirror/")
    assert result.returncode == 1 and "refusing to upload" in result.stdout
    assert s3.proxy.puts() == []


def test_an_edited_site_is_not_uploaded(s3: storagekit.S3StandIn, site_copy: Callable[[str], Path]) -> None:
    site = site_copy("site")
    page = site / "pith" / f"{RECORD_BODY}.json"
    page.write_bytes(page.read_bytes().replace(b"{", b"{ ", 1))
    bucket = s3.new_bucket()
    s3.proxy.reset()
    result = upload(s3, site, f"s3://{bucket}/mirror/")
    assert result.returncode == 1 and "disagree with its manifest" in result.stdout
    assert [p for p in s3.proxy.puts() if "/.pith-mirror/" not in p] == []  # (only its lease, given back)


def test_a_site_missing_a_record_page_is_not_uploaded(
    s3: storagekit.S3StandIn, site_copy: Callable[[str], Path]
) -> None:
    """Deleted from SITE by hand: a full upload would delete the published page too."""
    site = site_copy("site")
    (site / "paper" / RECORD_BODY[:8] / "index.html").unlink()
    bucket = s3.new_bucket()
    s3.proxy.reset()
    result = upload(s3, site, f"s3://{bucket}/mirror/")
    assert result.returncode == 1 and "refusing to upload" in result.stdout, result.stdout
    assert f"paper/{RECORD_BODY[:8]}/index.html: missing, though the manifest lists" in result.stderr
    assert [p for p in s3.proxy.puts() if "/.pith-mirror/" not in p] == []


def test_a_folder_that_is_no_built_site_and_an_unknown_scheme_are_refused(
    s3: storagekit.S3StandIn, tmp_path: Path, built_site: Path
) -> None:
    (tmp_path / "notes").mkdir()
    result = upload(s3, tmp_path / "notes", "s3://bucket/x/")
    assert result.returncode == 2 and "build it first" in result.stderr and "Traceback" not in result.stderr
    result = upload(s3, built_site, "ftp://host/x/")
    assert result.returncode == 2 and "not a folder nor a storage URL" in result.stderr
    assert (built_site / MANIFEST_PATH).is_file()


def test_an_upload_to_a_folder(site_copy: Callable[[str], Path], tmp_path: Path) -> None:
    site = site_copy("site")
    result = upload(None, site, tmp_path / "copy")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "copy" / MANIFEST_PATH).read_bytes() == (site / MANIFEST_PATH).read_bytes()


def test_a_folder_target_apart_from_the_site_only(site_copy: Callable[[str], Path]) -> None:
    """Into the folder that holds SITE (a project's), into SITE itself, or into a folder
    inside it: the upload would delete SITE's own files, and what is beside them, as
    objects the site does not have. Refused, nothing touched."""
    site = site_copy("site")
    project = site.parent
    (project / "keys.json").write_text("{}")
    before = sorted(p.relative_to(project) for p in project.rglob("*") if p.name != ".site.lock")
    for target in (project, site, site / "copy"):
        result = upload(None, site, target)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert "site folder" in result.stderr and "upload into a folder apart from it" in result.stderr
    assert sorted(p.relative_to(project) for p in project.rglob("*") if p.name != ".site.lock") == before


def test_another_writers_store_below_the_prefix_is_left_as_it_is(
    s3: storagekit.S3StandIn, site_copy: Callable[[str], Path]
) -> None:
    """A content store below the site's prefix (a pull's documents, its state and its
    lease): a full upload neither compares nor deletes its objects. A prefix that is
    itself a content store is refused: its documents are no files of the site."""
    site = site_copy("site")
    bucket = s3.new_bucket()
    store = {
        "mirror/content/AAAA.bundle.json": b"{}",
        "mirror/content/.pith-pull.json": b"{}",
        "mirror/content/.pith-mirror/lease-pull.json": b"{}",
    }
    bucket_root = open_storage(f"s3://{bucket}/", options=s3.options())
    for key, data in store.items():
        bucket_root.write(key, data, "application/json", "no-cache")
    result = upload(s3, site, f"s3://{bucket}/mirror/", "--full")
    assert result.returncode == 0, result.stderr
    assert "0 deleted, 3 not the site's left as they are" in result.stdout
    assert all(bucket_root.read(key) == data for key, data in store.items())
    s3.proxy.reset()
    refused = upload(s3, site, f"s3://{bucket}/mirror/content/")
    assert refused.returncode == 2 and "holds a pull's content store (.pith-pull.json)" in refused.stderr
    assert [p for p in s3.proxy.puts() if "/.pith-mirror/" not in p] == []


def test_a_file_name_no_store_can_hold_is_refused_before_anything_is_written(
    s3: storagekit.S3StandIn, site_copy: Callable[[str], Path]
) -> None:
    """A tab, a backslash, or bytes that are not UTF-8 in a name: the store refuses such
    a key, and that used to end in a traceback after the first waves were written."""
    for index, name in enumerate(("tab\tx.html", "back\\slash.html", b"latin-\xe9.html")):
        site = site_copy(f"site{index}")
        (site / os.fsdecode(name)).write_text("x")
        bucket = s3.new_bucket()
        s3.proxy.reset()
        result = upload(s3, site, f"s3://{bucket}/mirror/")
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert "a file name an object store cannot hold" in result.stderr
        assert [p for p in s3.proxy.puts() if "/.pith-mirror/" not in p] == []


def test_a_store_inside_a_folder_of_the_site_leaves_the_rest_of_that_folder_the_sites(
    s3: storagekit.S3StandIn, site_copy: Callable[[str], Path]
) -> None:
    """Another writer's store is the folder holding its state, not the whole top-level
    folder: one at `pith/store/` keeps its objects, and the site's own stale `pith/`
    object beside it is still deleted."""
    site = site_copy("site")
    bucket = s3.new_bucket()
    bucket_root = open_storage(f"s3://{bucket}/", options=s3.options())
    store = {"mirror/pith/store/AAAA.bundle.json": b"{}", "mirror/pith/store/.pith-pull.json": b"{}"}
    for key, data in {**store, "mirror/pith/ZZZZZZZZZZZZZZZZZZZZZZZZZZ.html": b"stale"}.items():
        bucket_root.write(key, data, "text/html", "no-cache")
    result = upload(s3, site, f"s3://{bucket}/mirror/", "--full")
    assert result.returncode == 0, result.stderr
    assert "1 deleted, 2 not the site's left as they are" in result.stdout
    assert all(bucket_root.read(key) == data for key, data in store.items())
