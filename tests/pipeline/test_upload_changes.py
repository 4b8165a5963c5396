"""An upload after an incremental build sends what the build changed, found in
SITE's change log (publish/change_log.py), not by listing the storage and reading
every file: and the storage still ends up holding the site, file for file."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import factories as f
import manifestkit
import pytest
from extraskit import need
from sitekit import BOTH_KEYS, Project, bundle_events, record_doc, tree

from generator.build.pipeline import build
from generator.publish import change_log
from generator.publish.integrity import files_disagree
from generator.publish.storage import RESERVED, StorageError, StoredObject
from generator.publish.storage_local import LocalStorage
from generator.publish.upload import UploadRefused, UploadReport, upload_site
from generator.site.config import SiteConfig
from generator.site.layout import MANIFEST_PATH, SIGNATURE_PATH, SUMS_PATH
from generator.trust.errors import BuildError, RemovalsRefused


@dataclass(frozen=True)
class RecordingStorage(LocalStorage):
    """A folder that notes every call a full upload would make and a change upload should not."""

    calls: list[tuple[str, str]] = field(default_factory=list, compare=False)
    fail_after: list[int] = field(default_factory=list, compare=False)
    """[n]: the write after n more fails (a store gone down part-way)."""

    def write(self, key: str, data: bytes, content_type: str, cache_control: str) -> None:
        if self.fail_after:
            if self.fail_after[0] == 0:
                raise StorageError(self.url(key), key, "the store answered 503 Service Unavailable")
            self.fail_after[0] -= 1
        self.calls.append(("write", key))
        super().write(key, data, content_type, cache_control)

    def delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        self.calls.extend(("delete", key) for key in keys)
        super().delete(keys)

    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        self.calls.append(("list", prefix))
        return super().list(prefix)

    def written(self) -> list[str]:
        return [key for call, key in self.calls if call == "write"]


def paper(n: int, snapshots: int = 1) -> dict[str, object]:
    title = f"Uploaded paper {n}"
    record = f.canonical_record(source_id=f"2302.{n:05d}", title=title, submitted_at="2023-02-01T00:00:00Z")
    return f.bundle(record=record, title=title, events=bundle_events(record, title, snapshots))


@pytest.fixture
def project(tmp_path: Path) -> Project:
    p = Project(tmp_path / "mirror")
    for n in range(4):
        p.add(f"b/{n}.json", paper(n))
    p.add("r/0.json", record_doc(source_id="2302.10000", title="A record alone"))
    assert p.build().published == 5
    return p


def holds_the_site(storage: LocalStorage, site: Path) -> None:
    """The storage holds exactly the site's files (but the host's `_headers`)."""
    expected = {path: data for path, data in tree(site).items() if path != "_headers"}
    assert tree(storage.root) == expected


def changed_files(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def upload(project: Project, storage: RecordingStorage, **options: bool) -> UploadReport:
    storage.calls.clear()
    return upload_site(project.site, storage, workers=2, **options)


def test_after_a_full_upload_only_the_changed_files_are_sent(project: Project, tmp_path: Path) -> None:
    storage = RecordingStorage(tmp_path / "bucket")
    first = upload(project, storage)
    assert first.compared and ("list", "") in storage.calls
    holds_the_site(storage, project.site)

    before = tree(project.site)
    project.add("b/2.json", paper(2, snapshots=2))  # (one bundle, one event longer)
    report = project.build()
    assert report.mode == "incremental" and len(report.changed) == 1
    changed = changed_files(before, tree(project.site))
    assert changed and MANIFEST_PATH in changed
    # (what it made with the bytes SITE had, it left; it wrote all but the old shard, removed)
    assert report.files_written == len(changed) - 1
    # of the manifest, the index and the one shard that holds the changed number
    record = f.canonical_record(
        source_id="2302.00002", title="Uploaded paper 2", submitted_at="2023-02-01T00:00:00Z"
    )
    body = f.pith_body(record)
    shards = {p for p in changed if p.startswith(".well-known/pith/mirror/")}
    now = tree(project.site)
    (shard,) = (p for p in shards if p in now)  # (the new one; the old one went)
    (old,) = shards - {shard}
    assert shard.startswith(f".well-known/pith/mirror/{body[0]}.") and old.startswith(shard[:-22])

    log = change_log.read_log(project.site)
    assert log is not None
    logged = change_log.paths_since(log, 0)  # (what the build put)
    again = upload(project, storage)
    assert not again.compared and again.unchanged == 0
    assert ("list", "") not in storage.calls, "a change upload lists nothing"
    assert changed - {old} <= set(again.written) <= logged and len(again.written) < 50
    # (only files whose bytes changed: its short forms and redirect pages are as they were)
    assert set(again.written) | set(again.deleted) == changed == logged and again.deleted == (old,)
    assert not any(p.startswith(f"pith/{body[:8]}") and p.endswith("index.html") for p in changed)
    assert again.written[-1] == MANIFEST_PATH  # (the integrity set last, as a full upload orders it)
    assert again.written.index(shard) < again.written.index(MANIFEST_PATH)  # (what it names, first)
    holds_the_site(storage, project.site)

    nothing = upload(project, storage)  # (no build since: nothing to send)
    assert not nothing.compared and nothing.written == () and nothing.deleted == ()
    assert storage.written() == []


def test_a_removed_record_is_deleted_and_an_added_one_written(project: Project, tmp_path: Path) -> None:
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    before = tree(project.site)
    project.remove("b/1.json")
    project.add("b/9.json", paper(9))
    project.build()
    after = tree(project.site)
    report = upload(project, storage)
    assert not report.compared
    gone = set(before) - set(after)
    assert gone and set(report.deleted) == gone
    assert set(after) - set(before) <= set(report.written)
    holds_the_site(storage, project.site)


def test_builds_between_uploads_are_sent_together(project: Project, tmp_path: Path) -> None:
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    before = tree(project.site)
    project.add("b/0.json", paper(0, snapshots=2))
    project.build()
    project.add("b/3.json", paper(3, snapshots=3))
    project.build()
    report = upload(project, storage)
    sent = set(report.written) | set(report.deleted)  # (a manifest shard replaced: a new name)
    assert not report.compared and changed_files(before, tree(project.site)) <= sent
    holds_the_site(storage, project.site)


def test_a_full_build_a_restored_site_or_full_compare_every_object(project: Project, tmp_path: Path) -> None:
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    assert not upload(project, storage).compared

    build(project.config(), BOTH_KEYS, incremental=False)  # (a whole new tree: a new log)
    assert upload(project, storage).compared
    assert not upload(project, storage).compared

    copy = tmp_path / "copy"  # (SITE put back from a copy: the log cannot vouch for it)
    shutil.copytree(project.site, copy)
    shutil.rmtree(project.site)
    copy.rename(project.site)
    assert upload(project, storage).compared
    assert upload(project, storage).compared  # (until a build publishes into it again)
    project.add("b/2.json", paper(2, snapshots=2))
    project.build()
    assert upload(project, storage).compared  # (the storage's note went with the first full upload)
    project.add("b/3.json", paper(3, snapshots=2))
    project.build()
    assert not upload(project, storage).compared

    assert upload(project, storage, full=True).compared
    holds_the_site(storage, project.site)


def test_a_storage_written_from_another_site_is_compared_in_full(project: Project, tmp_path: Path) -> None:
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    other = Project(tmp_path / "other")
    other.add("b/0.json", paper(0))
    other.build()
    with pytest.raises(RemovalsRefused, match="would unpublish 4 of the 5 records"):
        upload(other, storage)  # (it has one of the five: the upload's own removal guard)
    assert upload(other, storage, allow_removals=True).compared  # (its log is not the storage's)
    holds_the_site(storage, other.site)
    assert upload(project, storage).compared  # (and the first site's log no longer either)
    holds_the_site(storage, project.site)


def test_an_upload_stopped_part_way_is_finished_by_the_next(project: Project, tmp_path: Path) -> None:
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    project.add("b/2.json", paper(2, snapshots=2))
    project.build()
    storage.fail_after.append(2)
    with pytest.raises(StorageError):
        upload(project, storage)
    storage.fail_after.clear()
    report = upload(project, storage)
    assert not report.compared, "the storage's note still names the last upload: its changes are sent again"
    holds_the_site(storage, project.site)

    storage.fail_after.append(5)
    with pytest.raises(StorageError):
        upload(project, storage, force=True)  # (a full upload: the note is taken away first)
    storage.fail_after.clear()
    assert storage.read_note("published") is None
    assert upload(project, storage).compared
    holds_the_site(storage, project.site)


def test_a_publication_that_did_not_complete_makes_the_next_upload_full(
    project: Project, tmp_path: Path
) -> None:
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    change_log.ahead(project.site, ["pith/X.html"])  # (as a build stopped while it published leaves it)
    assert upload(project, storage).compared
    holds_the_site(storage, project.site)


def test_checksums_and_a_signature_are_sent_after_the_command_writes_them(
    project: Project, tmp_path: Path
) -> None:
    from generator.commands.cli import main
    from generator.publish.integrity import generate_mirror_key

    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    key = tmp_path / "mirror-key.json"
    generate_mirror_key(key, "test-mirror")
    assert main(["checksums", str(project.site), "--mirror-key", str(key)]) == 0
    report = upload(project, storage)
    assert not report.compared and report.written == (SUMS_PATH, SIGNATURE_PATH)
    holds_the_site(storage, project.site)

    project.add("b/2.json", paper(2, snapshots=2))  # (a build without --checksums: the stale ones go)
    project.build()
    report = upload(project, storage)
    assert not report.compared and SIGNATURE_PATH in report.deleted and SUMS_PATH in report.deleted
    holds_the_site(storage, project.site)


def test_a_change_upload_to_an_s3_stand_in(project: Project) -> None:
    """On moto's S3 on loopback: one changed bundle is a handful of PUTs and no listing."""
    need("moto.server", "ci")
    need("obstore", "storage")
    import storagekit

    from generator.publish.storage import open_storage

    with storagekit.s3_stand_in() as s3:
        bucket = s3.new_bucket()
        storage = open_storage(f"s3://{bucket}/mirror/", options=s3.options())
        upload_site(project.site, storage, workers=4)
        project.add("b/2.json", paper(2, snapshots=2))
        project.build()
        log = change_log.read_log(project.site)
        assert log is not None
        s3.proxy.reset()
        report = upload_site(project.site, storage, workers=4)
        assert not report.compared
        objects = [p for p in s3.proxy.puts() if "/.pith-mirror/" not in p]
        assert len(objects) == len(report.written) and set(report.written) <= change_log.paths_since(log, 0)
        assert not [p for m, p in s3.proxy.seen if m == "GET" and "list-type" in p], "no listing"
        listed = {o.key for o in storage.list() if not o.key.startswith(RESERVED)}
        assert listed == set(tree(project.site)) - {"_headers"}
        assert all(storage.read(key) == project.read(key) for key in report.written)


def test_checksums_into_a_restored_site_do_not_make_the_log_trusted(project: Project, tmp_path: Path) -> None:
    """SITE put back from an older copy, then `checksums`: the log those checksums are
    added to no longer describes SITE, so the next upload compares every object."""
    from generator.commands.cli import main

    older = tmp_path / "older"
    shutil.copytree(project.site, older)
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    project.add("b/2.json", paper(2, snapshots=2))
    project.build()
    assert not upload(project, storage).compared
    shutil.rmtree(project.site)
    older.rename(project.site)
    assert main(["checksums", str(project.site)]) == 0
    with pytest.raises(RemovalsRefused, match="fewer events for 1 record"):
        upload(project, storage)  # (the older copy would roll one back: refused unless meant)
    report = upload(project, storage, allow_removals=True)
    assert report.compared
    holds_the_site(storage, project.site)


def test_objects_kept_by_keep_removed_are_deleted_by_the_next_upload(
    project: Project, tmp_path: Path
) -> None:
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    before = set(tree(project.site))
    project.remove("b/1.json")
    project.build()
    gone = before - set(tree(project.site))
    kept = upload(project, storage, delete=False)
    # (but the manifest's old shard: part of the old manifest, not a page of the site)
    assert not kept.compared and set(kept.kept) | set(kept.deleted) == gone
    assert kept.deleted and all(k.startswith(".well-known/pith/mirror/") for k in kept.deleted)
    again = upload(project, storage)
    assert set(again.deleted) == set(kept.kept)
    holds_the_site(storage, project.site)

    project.remove("b/3.json")  # (the same after a full upload)
    build(project.config(), BOTH_KEYS, incremental=False)  # (allowed: the project's settings)
    # (a full upload of a full build, whose removal the build was allowed: even keeping its
    # objects, the manifest no longer lists the record)
    assert upload(project, storage, delete=False).kept
    assert upload(project, storage).deleted  # (the stored manifest is SITE's now)
    holds_the_site(storage, project.site)


def test_keep_removed_uploads_of_grown_bundles_stay_uploads_of_changes(
    project: Project, tmp_path: Path
) -> None:
    """Each change of a record gives its manifest shard a new name: the old one is
    deleted even with `delete` off, so nothing is kept, the storage's note moves on,
    and the next upload is again one of the changes, not a comparison of everything."""
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    for events in (2, 3, 4):
        project.add("b/2.json", paper(2, snapshots=events))
        assert project.build().mode == "incremental"
        report = upload(project, storage, delete=False)
        assert not report.compared and report.kept == () and len(report.deleted) == 1
    holds_the_site(storage, project.site)


def test_a_manifest_another_writer_replaced_makes_the_next_upload_full(
    project: Project, tmp_path: Path
) -> None:
    """A writer that keeps no note (another tool, an older version) rewrote the stored
    manifest: the note's record of it no longer matches, so every object is compared."""
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    storage.write(MANIFEST_PATH, b'{"records": []}', "application/json", "no-cache")
    (tmp_path / "bucket" / "pith" / "stray.html").write_text("another site's page")
    report = upload(project, storage)
    assert report.compared and "pith/stray.html" in report.deleted
    holds_the_site(storage, project.site)


def test_warm_rebuilds_as_serve_makes_them_are_uploaded_by_their_changes(
    project: Project, tmp_path: Path
) -> None:
    from generator.build.state import WarmCache

    storage = RecordingStorage(tmp_path / "bucket")
    warm = WarmCache()
    build(project.config(), BOTH_KEYS, warm=warm)
    upload(project, storage)
    before = tree(project.site)
    project.add("b/0.json", paper(0, snapshots=3))
    report = build(project.config(), BOTH_KEYS, warm=warm)
    assert report.mode == "incremental"
    again = upload(project, storage)
    sent = set(again.written) | set(again.deleted)  # (a manifest shard replaced: a new name)
    assert not again.compared and changed_files(before, tree(project.site)) <= sent
    holds_the_site(storage, project.site)


ABOUT = "# About\n\n{}\n"


@pytest.mark.parametrize(
    ("first", "then"),
    [
        (("b/1.json", paper(1, snapshots=2)), ("b/2.json", paper(2, snapshots=2))),
        # (a page's text, its title kept: the manifest, which names records only, is the same)
        (
            ("pages/about.md", ABOUT.format("One text.").encode()),
            ("pages/about.md", ABOUT.format("Another.").encode()),
        ),
    ],
    ids=["another record", "a page edited another way"],
)
def test_a_site_rolled_back_by_a_snapshot_is_compared_in_full(
    project: Project, tmp_path: Path, first: tuple[str, object], then: tuple[str, object]
) -> None:
    """A snapshot restore (a file system's rollback, a VM's) brings SITE, its log and the
    build cache back with every file's inode and time as they were: the log then numbers
    the builds that follow as the abandoned ones were numbered, and the storage's note
    matches it by log and number. Each publication also has an ID of its own, which the
    note names and the rolled-back history does not have: the upload compares every object."""
    project.add("pages/about.md", ABOUT.format("The first text.").encode())
    project.build()
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    folders = {project.site: tmp_path / "site-then", project.config().cache_dir: tmp_path / "cache-then"}
    for folder, snapshot in folders.items():
        shutil.copytree(folder, snapshot, copy_function=os.link)  # (the same inodes and times)
    log = change_log.log_path(project.site)
    logged = log.read_bytes()
    project.add(*first)
    assert project.build().mode == "incremental"
    assert not upload(project, storage).compared  # (the note: this log, this publication)

    for folder, snapshot in folders.items():  # (rolled back: the manifest is the very file it was)
        shutil.rmtree(folder)
        snapshot.rename(folder)
    log.write_bytes(logged)
    project.add(*then)  # (a publication numbered as the abandoned one was)
    assert project.build().mode == "incremental"
    assert upload(project, storage).compared
    holds_the_site(storage, project.site)


def test_a_replaced_manifest_shard_is_removed_only_after_the_index_that_no_longer_names_it(
    project: Project, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A reader of SITE (a server pointed at it) who read the old index finds every
    shard it names until the new index is in place: the new shard goes in under its
    new name, then the index, then the old shard goes. (SITE is changed by a child
    process: each step is written down in a file.)"""
    from generator.build import journal

    log = tmp_path / "steps.txt"
    replace, remove = journal.Journal.replace, journal.Journal.remove

    def note(*lines: str) -> None:
        with open(log, "a", encoding="utf-8") as out:
            out.writelines(f"{line}\n" for line in lines)

    def replacing(self: journal.Journal, source: Path, path: str) -> None:
        note(f"put {path}")
        replace(self, source, path)

    def removing(self: journal.Journal, paths: set[str]) -> None:
        note(*(f"remove {path}" for path in sorted(paths)))
        remove(self, paths)

    monkeypatch.setattr(journal.Journal, "replace", replacing)
    monkeypatch.setattr(journal.Journal, "remove", removing)
    old = set(manifestkit.shard_paths(project.site))
    project.add("b/2.json", paper(2, snapshots=2))
    assert project.build().mode == "incremental"
    new = set(manifestkit.shard_paths(project.site))
    (gone,), (came,) = old - new, new - old
    steps = log.read_text("utf-8").splitlines()
    assert steps.index(f"put {came}") < steps.index(f"put {MANIFEST_PATH}") < steps.index(f"remove {gone}")


def test_a_file_in_a_folder_linked_back_into_site_is_not_sent(project: Project, tmp_path: Path) -> None:
    """An upload of changes checked that a file is no link, not that no folder on its way
    is one: SITE's `paper/` moved elsewhere and linked back sent whatever that folder now
    held as the site's. Refused, as a full upload refuses the link itself."""
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    project.add("b/2.json", paper(2, snapshots=2))
    assert project.build().mode == "incremental"
    log = change_log.read_log(project.site)
    assert log is not None
    named = sorted(p for p in change_log.paths_since(log, 0) if p.startswith("paper/"))
    assert named
    elsewhere = tmp_path / "elsewhere"
    (project.site / "paper").rename(elsewhere)
    (project.site / "paper").symlink_to(elsewhere)
    (elsewhere / named[0].removeprefix("paper/")).write_text("not from the build")
    with pytest.raises(BuildError, match="a symbolic link, or a file in a linked folder"):
        upload(project, storage)
    assert "not from the build" not in {d.decode(errors="replace") for d in tree(storage.root).values()}


def test_a_stored_manifest_another_tool_left_unreadable_still_guards(
    project: Project, tmp_path: Path
) -> None:
    """The stored index cut short by another tool: the record documents the store holds
    stand for what it publishes, so a much smaller site is still refused."""
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    index = storage.root / MANIFEST_PATH
    index.write_bytes(index.read_bytes()[:300])
    other = Project(tmp_path / "other")
    other.add("b/0.json", paper(0))
    other.build()
    with pytest.raises(RemovalsRefused, match="would unpublish 4 of the 5 records"):
        upload(other, storage)


def removals_guarded(project: Project) -> SiteConfig:
    return replace(project.config(), allow_removals=False)


def test_removals_allowed_to_a_full_build_are_not_asked_for_again_by_its_upload(
    project: Project, tmp_path: Path
) -> None:
    """The build was told once (`--allow-removals`); SITE's change log says which records
    it let go, and a full upload lets those through while the log describes SITE."""
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    project.remove("b/1.json")
    project.remove("b/2.json")
    with pytest.raises(RemovalsRefused):  # (2 of 5: the build asks)
        build(removals_guarded(project), BOTH_KEYS, incremental=False)
    build(project.config(), BOTH_KEYS, incremental=False)
    log = change_log.read_log(project.site)
    assert log is not None and len(log.permitted) == 2 and set(log.permitted.values()) == {0}
    report = upload(project, storage)
    assert report.compared and report.deleted
    holds_the_site(storage, project.site)


def test_a_permission_covers_only_the_records_the_build_let_go_and_the_site_it_left(
    project: Project, tmp_path: Path
) -> None:
    for n in range(4, 10):  # (11 records: one of them is within the share a build may drop)
        project.add(f"b/{n}.json", paper(n))
    project.build()
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    project.remove("b/1.json")
    build(project.config(), BOTH_KEYS, incremental=False)  # (let go, as allowed)
    project.remove("b/2.json")  # (within the share: nothing asked, nothing kept)
    build(removals_guarded(project), BOTH_KEYS, incremental=False)
    log = change_log.read_log(project.site)
    assert log is not None and len(log.permitted) == 0  # (a full build starts a new log)
    with pytest.raises(RemovalsRefused, match="would unpublish 2 of the 11 records"):
        upload(project, storage)

    project.remove("b/3.json")
    build(project.config(), BOTH_KEYS)  # (incremental, allowed: b/3 let go)
    log = change_log.read_log(project.site)
    assert log is not None and len(log.permitted) == 1
    with pytest.raises(RemovalsRefused, match="would unpublish 2 of the 11 records"):
        upload(project, storage)  # (b/1 and b/2 were not let go by a build of this log)

    restored = Project(tmp_path / "restored")  # (SITE restored from a copy: the log no longer says)
    shutil.copytree(project.site, restored.site)
    shutil.copy(change_log.log_path(project.site), change_log.log_path(restored.site))
    with pytest.raises(RemovalsRefused, match="would unpublish 3 of the 11 records"):
        upload(restored, storage)
    assert upload(project, storage, allow_removals=True).deleted
    holds_the_site(storage, project.site)


def test_a_page_deleted_from_site_by_hand_is_not_deleted_from_the_storage(
    project: Project, tmp_path: Path
) -> None:
    """An incremental build's cache says the page is there, so nothing puts it back; the
    upload names it instead of deleting the published page, full or of changes."""
    storage = RecordingStorage(tmp_path / "bucket")
    upload(project, storage)
    body = f.pith_body(paper(1)["canonical_record"])
    page = f"pith/{body}.html"
    (project.site / page).unlink()
    storage.calls.clear()
    with pytest.raises(UploadRefused) as refused:
        upload_site(project.site, storage, full=True, check=lambda paths: files_disagree(project.site, paths))
    assert any(f"{page}: missing, though the manifest lists" in p for p in refused.value.problems)
    assert (storage.root / page).is_file() and storage.written() == []

    project.add("b/1.json", paper(1, snapshots=2))  # (its page rendered again: back in SITE)
    project.build()
    assert (project.site / page).is_file()
    (project.site / page).unlink()  # (gone again, now that the log names it)
    storage.calls.clear()
    with pytest.raises(UploadRefused):
        upload_site(project.site, storage, check=lambda paths: files_disagree(project.site, paths))
    assert (storage.root / page).is_file() and storage.written() == []
