"""SITE's change log (publish/change_log.py): written ahead of each publication, read
back by an upload, and trusted only while it describes the SITE that is there."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from generator.publish import change_log
from generator.site.layout import MANIFEST_PATH


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / MANIFEST_PATH).parent.mkdir(parents=True)
    (site / MANIFEST_PATH).write_text('{"records": []}')
    return site


def publish(site: Path, paths: list[str], manifest: str | None = None) -> int:
    """One publication as a build makes it: paths logged first, then SITE changed."""
    seq = change_log.ahead(site, paths)
    if manifest is not None:
        (site / MANIFEST_PATH).write_text(manifest)
    change_log.completed(site, seq)
    return seq


def test_publications_are_numbered_and_their_paths_read_back(site: Path) -> None:
    log_id = change_log.start(site)
    change_log.completed(site, 0)
    assert publish(site, ["pith/A.json", "pith/A.html"]) == 1
    assert publish(site, ["pith/B.json", "pith/A.json"], manifest='{"records": [1]}') == 2
    log = change_log.read_log(site)
    assert log is not None and log.log_id == log_id and log.last_seq == 2
    assert change_log.position(site, log) == (log_id, 2)
    assert change_log.paths_since(log, 0) == {"pith/A.json", "pith/A.html", "pith/B.json"}
    assert change_log.paths_since(log, 1) == {"pith/B.json", "pith/A.json"}
    assert change_log.paths_since(log, 2) == set()


def test_a_new_log_has_a_new_id_and_no_paths(site: Path) -> None:
    first = change_log.start(site)
    publish(site, ["x.html"])
    second = change_log.start(site)
    log = change_log.read_log(site)
    assert first != second and log is not None and log.log_id == second and log.paths == ()


def test_no_log_is_started_by_the_first_publication(site: Path) -> None:
    assert change_log.read_log(site) is None and change_log.position(site, None) is None
    assert publish(site, ["x.html"]) == 1
    log = change_log.read_log(site)
    assert log is not None and change_log.position(site, log) == (log.log_id, 1)


def test_a_publication_that_did_not_complete_leaves_no_position(site: Path) -> None:
    change_log.start(site)
    publish(site, ["a.html"])
    change_log.ahead(site, ["b.html"])  # (the build stopped, or its publication was put back)
    log = change_log.read_log(site)
    assert log is not None and log.last_seq == 2 and change_log.position(site, log) is None
    publish(site, ["c.html"])  # (the next build completes: the unfinished one's paths still count)
    log = change_log.read_log(site)
    assert log is not None and change_log.position(site, log) == (log.log_id, 3)
    assert change_log.paths_since(log, 1) == {"b.html", "c.html"}


def test_a_manifest_edited_or_a_site_restored_from_a_copy_leaves_no_position(site: Path) -> None:
    publish(site, ["a.html"])
    log = change_log.read_log(site)
    assert change_log.position(site, log) is not None
    (site / MANIFEST_PATH).write_text('{"records": ["edited"]}')
    assert change_log.position(site, log) is None

    publish(site, ["b.html"])
    log = change_log.read_log(site)
    assert change_log.position(site, log) is not None
    copy = site.with_name("copy")
    shutil.copytree(site, copy)  # (the same bytes, another file: a restored SITE)
    shutil.rmtree(site)
    copy.rename(site)
    assert change_log.position(site, log) is None
    (site / MANIFEST_PATH).unlink()
    assert change_log.position(site, log) is None


@pytest.mark.parametrize("damage", [b'{"seq": 3, "pa', b"not json\n", b'{"seq": 7, "paths": []}\n'])
def test_a_damaged_log_is_not_read_and_the_next_publication_starts_another(site: Path, damage: bytes) -> None:
    old = change_log.start(site)
    publish(site, ["a.html"])
    with open(change_log.log_path(site), "ab") as log:
        log.write(damage)
    assert change_log.read_log(site) is None
    assert publish(site, ["b.html"]) == 1
    log = change_log.read_log(site)
    assert log is not None and log.log_id != old and change_log.paths_since(log, 0) == {"b.html"}


def test_a_long_log_starts_again(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(change_log, "LIMIT", 200)
    first = change_log.start(site)
    publish(site, [f"pith/{n:04d}.html" for n in range(20)])
    assert os.path.getsize(change_log.log_path(site)) > 200
    publish(site, ["x.html"])
    log = change_log.read_log(site)
    assert log is not None and log.log_id != first and change_log.paths_since(log, 0) == {"x.html"}


def test_the_log_lives_beside_the_site_never_in_it(site: Path) -> None:
    publish(site, ["a.html"])
    assert change_log.log_path(site) == site.parent / ".site.changes.jsonl"
    assert not any(p.name.endswith(".jsonl") for p in site.rglob("*"))


@pytest.mark.parametrize("listed", ['["/etc/passwd"]', '["../outside.html"]', '["a//b"]', '"abc"', "[7]"])
def test_a_log_naming_no_path_of_the_site_is_not_read(site: Path, listed: str) -> None:
    change_log.start(site)
    with open(change_log.log_path(site), "a", encoding="utf-8") as log:
        log.write(f'{{"seq": 1, "paths": {listed}}}\n')
    assert change_log.read_log(site) is None


def test_a_log_no_longer_describing_the_site_is_started_again(site: Path) -> None:
    """A publication into a SITE restored or edited since the last one starts a new log:
    what it adds must not be taken for all that changed since the last upload."""
    old = change_log.start(site)
    publish(site, ["a.html"])
    (site / MANIFEST_PATH).unlink()
    (site / MANIFEST_PATH).write_text('{"records": ["restored"]}')  # (another file)
    assert publish(site, ["SHA256SUMS"]) == 1
    log = change_log.read_log(site)
    assert log is not None and log.log_id != old


def test_the_site_named_as_dot_has_its_log_beside_it(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(site)
    assert change_log.log_path(Path(".")) == change_log.log_path(site) == site.parent / ".site.changes.jsonl"
    link = site.parent / "link"
    link.symlink_to(site)
    assert change_log.log_path(link) == change_log.log_path(site)


A, B = "A" * 26, "B" * 26


def test_removals_allowed_to_a_build_are_read_back_with_the_latest_word(site: Path) -> None:
    change_log.start(site)
    change_log.completed(site, 0, permitted={A: 0})
    seq = change_log.ahead(site, ["pith/B.json"])
    change_log.completed(site, seq, permitted={B: 3})
    seq = change_log.ahead(site, ["pith/A.json"])
    change_log.completed(site, seq, permitted={A: 2})  # (published again, then rolled back)
    log = change_log.read_log(site)
    assert log is not None and dict(log.permitted) == {A: 2, B: 3}
    change_log.start(site)  # (a new log: nothing allowed yet)
    log = change_log.read_log(site)
    assert log is not None and dict(log.permitted) == {}


@pytest.mark.parametrize(
    "permitted",
    ['{"pith:2026:' + A + '": 0}', '{"' + A + '": -1}', '{"' + A + '": true}', "[]", '{"a/../b": 0}'],
)
def test_a_permission_of_another_shape_makes_the_log_unreadable(site: Path, permitted: str) -> None:
    """Edited by hand: not taken as anything (the next upload compares every object and
    asks for --allow-removals again)."""
    change_log.start(site)
    stamp = change_log.manifest_stamp(site)
    line = '{"seq": 0, "manifest": ' + json.dumps(list(stamp)) + ', "permitted": ' + permitted + "}\n"
    with open(change_log.log_path(site), "a") as log:
        log.write(line)
    assert change_log.read_log(site) is None


def test_a_folder_where_the_log_goes_is_named_not_a_temporary_file(site: Path) -> None:
    change_log.log_path(site).mkdir()
    with pytest.raises(IsADirectoryError) as raised:
        change_log.start(site)
    assert raised.value.filename == str(change_log.log_path(site))
