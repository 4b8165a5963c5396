"""The build state's partition width chosen by its count of numbers (32 partitions, or
1,024 from `entries.WIDE_FROM`): a state cut again when its count crosses a threshold,
the site the same bytes whichever the width, and a state whose width does not fit its
partitions never trusted.

The thresholds are lowered here (a mirror of a few records crosses them), in this
process, where the build's state is saved."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import manifestkit
import pytest
from sitekit import Project, assert_same_as_fresh, record_doc

from generator.build import entries
from generator.build.state import CACHE_FILE, PARTS_FOLDER

SOURCES = ("2304.00101", "2304.00102", "2304.00103", "2304.00104")


@pytest.fixture
def low_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Six numbers or more: 1,024 partitions; fewer than four: 32 again."""
    monkeypatch.setattr(entries, "WIDE_FROM", 6)
    monkeypatch.setattr(entries, "NARROW_BELOW", 4)


def head_of(project: Project) -> dict[str, Any]:
    return json.loads((project.config().cache_dir / CACHE_FILE).read_bytes().partition(b"\n")[2])


def write_head(project: Project, head: dict[str, Any]) -> None:
    payload = json.dumps(head).encode()
    (project.config().cache_dir / CACHE_FILE).write_bytes(
        hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
    )


def stored_parts(project: Project) -> dict[str, bytes]:
    """Every partition file of the state, by name, with its bytes."""
    folder = project.config().cache_dir / PARTS_FOLDER
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def part_names(project: Project) -> set[str]:
    return {name.split(".")[0] for name in stored_parts(project)}


def bodies(project: Project) -> list[str]:
    """The body of every number SITE's manifest lists."""
    return [number.split(":")[2] for number in manifestkit.numbers(project.site)]


@pytest.fixture
def mirror(tmp_path: Path, low_thresholds: None) -> Project:
    p = Project(tmp_path / "mirror")
    p.add_real()  # (two numbers: the real record's and the real bundle's)
    for index, source in enumerate(SOURCES):
        p.add(f"{index}.json", record_doc(source_id=source, title=f"Record {index}"))
    assert p.build().mode == "full"
    return p


def test_the_partition_width_follows_the_count_with_a_margin() -> None:
    wide, narrow = entries.WIDE_FROM, entries.NARROW_BELOW
    assert narrow < wide
    assert entries.partition_width(wide - 1) == entries.partition_width(wide - 1, entries.NARROW) == 1
    assert entries.partition_width(wide) == entries.partition_width(wide, entries.NARROW) == 2
    # (between the two thresholds a state keeps the width it has)
    assert entries.partition_width(narrow, entries.WIDE) == 2
    assert entries.partition_width(wide - 1, entries.WIDE) == 2
    assert entries.partition_width(narrow - 1, entries.WIDE) == 1
    assert entries.partition_of(f"pith:2026:{'AB' + 'C' * 24}", 2) == "AB"
    assert entries.partition_of(f"pith:2026:{'AB' + 'C' * 24}", 1) == "A"
    assert entries.partition_of("pith:2026:short", 2) == entries.NO_NUMBER


def test_a_state_past_the_threshold_is_cut_in_two_characters(mirror: Project) -> None:
    head = head_of(mirror)
    assert head["width"] == 2 and len(bodies(mirror)) == 6
    assert part_names(mirror) == set(head["parts"]) == {body[:2] for body in bodies(mirror)}


def test_one_change_in_a_wide_state_rewrites_its_partition_alone(mirror: Project, tmp_path: Path) -> None:
    before = stored_parts(mirror)
    document = mirror.content / "2.json"  # (the same record in other bytes: the same number)
    document.write_text(json.dumps(json.loads(document.read_bytes()), indent=3))
    report = mirror.build()
    assert report.mode == "incremental" and report.changed == ("content/2.json",)
    after = stored_parts(mirror)
    assert after.keys() == before.keys()
    changed = {name.split(".")[0] for name in after if after[name] != before[name]}
    assert len(changed) == 1 and len(changed.pop()) == 2
    assert_same_as_fresh(mirror, tmp_path / "fresh")


def test_a_state_whose_count_falls_and_rises_is_cut_again_incrementally(
    mirror: Project, tmp_path: Path
) -> None:
    for index in range(3):  # six numbers to three: under NARROW_BELOW
        (mirror.content / f"{index}.json").unlink()
    report = mirror.build()
    assert report.mode == "incremental" and report.published == 3
    head = head_of(mirror)
    assert head["width"] == 1
    assert part_names(mirror) == set(head["parts"]) == {body[0] for body in bodies(mirror)}
    assert_same_as_fresh(mirror, tmp_path / "fresh-narrow")
    # five numbers: between the thresholds, the state stays narrow
    mirror.add("0.json", record_doc(source_id=SOURCES[0], title="Record 0"))
    mirror.add("1.json", record_doc(source_id=SOURCES[1], title="Record 1"))
    assert mirror.build().mode == "incremental" and head_of(mirror)["width"] == 1
    mirror.add("2.json", record_doc(source_id=SOURCES[2], title="Record 2"))
    report = mirror.build()
    assert report.mode == "incremental" and report.rendered == 1 and head_of(mirror)["width"] == 2
    assert part_names(mirror) == {body[:2] for body in bodies(mirror)}
    assert_same_as_fresh(mirror, tmp_path / "fresh-wide")
    # and the state cut again is trusted by the next build
    mirror.add("3.json", record_doc(source_id=SOURCES[3], title="Record 3"))
    assert mirror.build().mode == "incremental"


@pytest.mark.parametrize("width", [1, 3, "2", True, None])
def test_a_head_whose_width_does_not_name_its_partitions_is_not_trusted(mirror: Project, width: Any) -> None:
    """Partitions named by two characters under a head that says one (or a width of
    no known kind): the next build is a full one, never a wrong incremental one."""
    head = head_of(mirror)
    head["width"] = width
    write_head(mirror, head)
    mirror.add("extra.json", record_doc(source_id="2304.00199", title="Extra"))
    report = mirror.build()
    assert report.mode == "full" and report.published == 7
    assert head_of(mirror)["width"] == 2


def test_between_the_thresholds_a_wide_state_stays_wide(mirror: Project, tmp_path: Path) -> None:
    (mirror.content / "0.json").unlink()  # (six numbers to five: under WIDE_FROM, not NARROW_BELOW)
    report = mirror.build()
    assert report.mode == "incremental" and report.published == 5
    assert head_of(mirror)["width"] == 2 and part_names(mirror) == {body[:2] for body in bodies(mirror)}
    assert_same_as_fresh(mirror, tmp_path / "fresh")


def test_a_state_cut_again_keeps_its_site_wide_fingerprint(mirror: Project) -> None:
    """The full build cut its state as 32 partitions and again as 1,024 when it saved: the
    fingerprint of the site-wide inputs it saved is the one the next build makes of the
    same records, so a build that finds only a touched file makes no site-wide file."""
    saved = head_of(mirror)["sitewide_inputs"]
    document = mirror.content / "1.json"
    stat = document.stat()
    os.utime(document, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert mirror.build().mode == "incremental"
    assert head_of(mirror)["sitewide_inputs"] == saved
