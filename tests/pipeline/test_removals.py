"""The removal guard: a build that would unpublish the whole mirror (an empty
content folder) or more than 10 % of it stops with exit 2, names the numbers,
and leaves SITE exactly as it was, unless removals are allowed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import factories as f
import manifestkit
import pytest
from sitekit import REPO, Project, bundle_events, record_doc, tree
from sitekit import run_cli as run

from generator.build import journal
from generator.publish import change_log
from generator.publish.storage_local import LocalStorage
from generator.publish.upload import refuse_unpublishing, upload_site
from generator.site.layout import MANIFEST_PATH
from generator.trust.errors import RemovalsRefused

ARGS = ["build", "content", "site", "--keys", "keys.json", "--jobs", "1", "--quiet"]
COUNT = 12
"""Records in each test's mirror: one of them is 8 % (allowed), two are 17 % (refused)."""


def doc_name(i: int) -> str:
    return f"r/{i:02d}.json"


@pytest.fixture
def mirror(project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Project:
    """A project of COUNT records, built once (its cache kept: the next build is incremental)."""
    monkeypatch.chdir(project.root)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    project.write_keys()
    for i in range(COUNT):
        project.add(doc_name(i), record_doc(source_id=f"2203.{i:05d}", title=f"Paper {i}"))
    code, _, err = run(ARGS, capsys)
    assert code == 0, err
    return project


def published(project: Project) -> list[str]:
    return manifestkit.numbers(project.site)


def unmount(project: Project) -> None:
    """What a content folder not mounted yet looks like: there, and empty."""
    shutil.rmtree(project.content)
    project.content.mkdir()


@pytest.mark.parametrize("clean", [False, True], ids=["incremental", "full"])
def test_an_empty_content_folder_unpublishes_nothing(
    mirror: Project, clean: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    numbers, before = published(mirror), tree(mirror.site)
    unmount(mirror)
    code, out, err = run([*ARGS, *(["--clean"] if clean else [])], capsys)
    assert code == 2, (out, err)
    assert "the content folder holds no documents (is it mounted?)" in err
    assert f"would unpublish {COUNT} of the {COUNT} published record(s) (100%)" in err
    assert ", ".join(sorted(numbers)[:5]) + f" and {COUNT - 5} more" in err
    assert "--allow-removals" in err and "Traceback" not in err
    assert tree(mirror.site) == before  # not one file changed
    assert not journal.undo_path(mirror.site).exists()
    assert not (mirror.root / ".site.staging").exists()


def test_a_share_of_ten_percent_or_less_is_unpublished_and_more_is_refused(
    mirror: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    numbers = published(mirror)
    mirror.remove(doc_name(0))  # 1 of 12: 8 %
    code, _, err = run(ARGS, capsys)
    assert code == 0, err
    assert len(published(mirror)) == COUNT - 1
    before = tree(mirror.site)
    mirror.remove(doc_name(1))
    mirror.remove(doc_name(2))  # 2 of 11: 18 %
    code, _, err = run(ARGS, capsys)
    assert code == 2
    assert f"would unpublish 2 of the {COUNT - 1} published record(s) (18%), more than the 10% allowed" in err
    assert len(published(mirror)) == COUNT - 1 and set(published(mirror)) < set(numbers)
    assert tree(mirror.site) == before
    code, _, err = run([*ARGS, "--allow-removals"], capsys)
    assert code == 0, err
    assert len(published(mirror)) == COUNT - 3


def test_the_settings_file_can_allow_removals(mirror: Project, capsys: pytest.CaptureFixture[str]) -> None:
    unmount(mirror)
    (mirror.root / "pith-mirror.toml").write_text("allow_removals = true\n", "utf-8")
    code, _, err = run(ARGS, capsys)
    assert code == 0, err
    assert published(mirror) == []
    (mirror.root / "pith-mirror.toml").write_text('allow_removals = "yes"\n', "utf-8")
    code, _, err = run(ARGS, capsys)
    assert code == 2 and "configuration: allow_removals: expected true or false" in err


def test_a_fresh_folder_is_checked_against_the_deployed_manifest(
    mirror: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """As in CI: SITE is new, the deployed site's mirror.json says what is published."""
    deployed = mirror.root / "deployed-mirror.json"
    shutil.copyfile(mirror.site / MANIFEST_PATH, deployed)
    fresh = ["build", "content", "fresh", "--keys", "keys.json", "--jobs", "1", "--quiet"]
    code, _, err = run([*fresh, "--deployed", str(deployed)], capsys)
    assert code == 2 and "deployed-mirror.json names a shard not beside it: no " in err
    assert not (mirror.root / "fresh").exists()
    # (its shards beside it, as the site holds them: .well-known/pith/mirror/<prefix>.<hash>.json)
    shutil.copytree(mirror.site / ".well-known/pith/mirror", mirror.root / "mirror")
    shard = next((mirror.root / "mirror").iterdir())
    manifestkit.tamper(shard, b'"event_count": ', b'"event_count": 1')
    code, _, err = run([*fresh, "--deployed", str(deployed)], capsys)
    assert code == 2 and "is not the shard the manifest names (its sha256 differs)" in err
    shutil.copyfile(mirror.site / ".well-known/pith/mirror" / shard.name, shard)
    code, _, err = run([*fresh, "--deployed", str(deployed)], capsys)
    assert code == 0, err  # everything deployed is still in content
    shutil.rmtree(mirror.root / "fresh")
    unmount(mirror)
    code, _, err = run([*fresh, "--deployed", str(deployed)], capsys)
    assert code == 2 and f"would unpublish {COUNT} of the {COUNT}" in err
    assert not (mirror.root / "fresh").exists()
    code, _, err = run([*fresh, "--deployed", "missing.json"], capsys)
    assert code == 2 and "configuration: deployed: cannot read missing.json" in err
    (mirror.root / "other.json").write_text('{"records": [{"pith_number": "x"}]}', "utf-8")
    code, _, err = run([*fresh, "--deployed", "other.json"], capsys)
    assert code == 2 and "is not a manifest pith-mirror wrote" in err


def test_the_real_command_refuses_in_its_own_process(mirror: Project) -> None:
    """The scheduled-job case end to end: a new interpreter, exit status 2, the site whole."""
    before = tree(mirror.site)
    unmount(mirror)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "generator", *ARGS],
        cwd=mirror.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done
    assert "is it mounted?" in done.stderr and "Traceback" not in done.stderr
    assert tree(mirror.site) == before


def test_documents_kept_published_do_not_count(mirror: Project, capsys: pytest.CaptureFixture[str]) -> None:
    """Refused documents keep their numbers published: nothing is removed, nothing refused."""
    for i in range(COUNT // 2):
        (mirror.content / doc_name(i)).write_bytes(b"{ broken")
    code, _, err = run(ARGS, capsys)
    assert code == 1, err
    assert "would unpublish" not in err
    assert len(published(mirror)) == COUNT


def empty_content_is_refused_and_site_kept(mirror: Project, capsys: pytest.CaptureFixture[str]) -> None:
    """A build without its cache, of a content folder that lost all but two records."""
    before = tree(mirror.site)
    for i in range(COUNT - 2):
        mirror.remove(doc_name(i))
    code, _, err = run([*ARGS, "--clean"], capsys)
    assert code == 2 and f"would unpublish {COUNT - 2} of the {COUNT}" in err, err
    assert tree(mirror.site) == before


@pytest.mark.parametrize("damage", ["deleted", "edited"])
def test_a_damaged_manifest_shard_does_not_let_a_build_without_its_cache_unpublish(
    mirror: Project, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    """Without its cache, the build reads what SITE publishes from the manifest; a
    shard it cannot trust stands for the numbers SITE's record files show, so
    emptying content/ is still refused, and SITE is left as it was."""
    shard = next((mirror.site / ".well-known/pith/mirror").iterdir())
    if damage == "deleted":
        shard.unlink()
    else:
        manifestkit.tamper(shard, b'"event_count": 0', b'"event_count": 9')
    empty_content_is_refused_and_site_kept(mirror, capsys)


@pytest.mark.parametrize("damage", ["cut short", "no shards", "an empty 1.0 manifest", "not UTF-8"])
def test_a_damaged_manifest_index_does_not_let_a_build_without_its_cache_unpublish(
    mirror: Project, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    """Nor does a damaged or shortened index: every record file SITE holds that the
    manifest does not list counts as published."""
    index = mirror.site / MANIFEST_PATH
    data = index.read_bytes()
    index.write_bytes(
        {
            "cut short": data[:400],
            "no shards": data.replace(data[data.index(b'"shards"') :], b'"shards": []}'),
            "an empty 1.0 manifest": json.dumps(
                {**{k: v for k, v in json.loads(data).items() if k != "shards"}, "records": []}
            ).encode(),
            "not UTF-8": data.replace(b"{", b"{\xff", 1),
        }[damage]
    )
    empty_content_is_refused_and_site_kept(mirror, capsys)


@pytest.mark.parametrize("change", ["added", "grown", "nothing"])
def test_a_shard_deleted_by_hand_is_written_again_by_the_next_incremental_build(
    mirror: Project, capsys: pytest.CaptureFixture[str], change: str
) -> None:
    """The cache vouches for the manifest's index only: a shard that is not in SITE
    as the last build left it is made again, though no number in it changed, both
    when the build makes every shard (a number added) and when it replaces the
    entries of the numbers that changed in their shards (a bundle grown)."""
    title = "A paper in a bundle"
    record = f.canonical_record(source_id="2203.09999", title=title)
    mirror.add("b.json", f.bundle(record=record, title=title, events=bundle_events(record, title, 1)))
    code, _, err = run(ARGS, capsys)
    assert code == 0, err
    shards = sorted((mirror.site / ".well-known/pith/mirror").iterdir())
    kept = {path.name: path.read_bytes() for path in shards}
    if change == "added":
        mirror.add(doc_name(COUNT), record_doc(source_id="2203.00100", title="One more"))
    elif change == "grown":
        mirror.add("b.json", f.bundle(record=record, title=title, events=bundle_events(record, title, 2)))
    victim = next(path for path in shards if not f.pith_body(record).startswith(path.name.split(".")[0]))
    victim.unlink()
    code, _, err = run(ARGS, capsys)
    assert code == 0, err
    assert victim.read_bytes() == kept[victim.name]
    assert len(manifestkit.numbers(mirror.site)) == COUNT + (2 if change == "added" else 1)


@pytest.mark.parametrize("edit", ["deleted", "replaced by the older bundle"])
def test_a_listed_bundle_no_copy_in_site_vouches_for_stops_a_build_without_its_cache(
    mirror: Project, capsys: pytest.CaptureFixture[str], edit: str
) -> None:
    """Both published copies of a bundle deleted or replaced by hand, the cache lost, and
    an older bundle in content: nothing left to compare it with, it was published (a
    rollback the manifest, listing the newer bundle's hash and events, shows). The build
    stops before SITE changes, unless removals are allowed."""
    title = "A paper whose bundle grew"
    record = f.canonical_record(source_id="2203.09998", title=title)
    older = f.bundle(record=record, title=title, events=bundle_events(record, title, 1))
    mirror.add("b.json", f.bundle(record=record, title=title, events=bundle_events(record, title, 2)))
    code, _, err = run(ARGS, capsys)
    assert code == 0, err
    bucket = LocalStorage(mirror.root / "bucket")
    upload_site(mirror.site, bucket, workers=1)
    body = f.pith_body(record)
    for path in (f"pith/{body}/bundle.json", f".well-known/pith/{body}/bundle.json"):
        if edit == "deleted":
            (mirror.site / path).unlink()
        else:
            (mirror.site / path).write_bytes(f.to_bytes(older))
    shutil.rmtree(mirror.root / ".pith-cache")
    mirror.add("b.json", older)
    before = tree(mirror.site)
    code, _, err = run(ARGS, capsys)
    assert code == 2 and f"lists a bundle of 3 event(s) for {f.pith_number(record)}" in err, err
    assert "neither SITE nor the content holds it or a newer one" in err
    assert tree(mirror.site) == before
    code, _, err = run([*ARGS, "--allow-removals"], capsys)  # (meant: the older bundle goes out)
    assert code == 0 and "lists a bundle" not in err, err
    assert (mirror.site / f"pith/{body}/bundle.json").read_bytes() == f.to_bytes(older)
    # (the upload is not asked again: SITE's change log names the roll-back the build was allowed)
    log = change_log.read_log(mirror.site)
    assert log is not None and dict(log.permitted) == {body: len(older["events"])}
    with pytest.raises(RemovalsRefused, match="fewer events"):  # (a permission for another count)
        refuse_unpublishing(mirror.site, bucket, False, {body: len(older["events"]) + 1})
    upload_site(mirror.site, bucket, workers=1)
    assert (bucket.root / f"pith/{body}/bundle.json").read_bytes() == f.to_bytes(older)


def test_a_file_where_the_undo_journal_goes_is_named_and_site_stays(
    mirror: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    undo = mirror.root / ".site.undo"
    undo.write_text("not a journal")
    mirror.add("c.json", record_doc(source_id="2204.09000", title="One more"))
    before = tree(mirror.site)
    code, _, err = run(ARGS, capsys)
    assert code == 2 and ".site.undo: is in the way" in err and "Traceback" not in err, err
    assert tree(mirror.site) == before
