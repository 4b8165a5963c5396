"""A number taken down with a bundle cannot come back older (site/withdrawn.py): taking
it down and putting an older bundle back would otherwise roll it back in two builds,
each of them allowed."""

from __future__ import annotations

import json
import shutil

import factories as f
import pytest
from sitekit import Project, bundle_events, record_doc, tree
from sitekit import run_cli as run

from generator.site.withdrawn import WITHDRAWN_PATH

ARGS = ["build", "content", "site", "--keys", "keys.json", "--jobs", "1", "--quiet"]
TITLE = "A paper taken down"
RECORD = f.canonical_record(source_id="2204.01000", title=TITLE)
NUMBER, BODY = f.pith_number(RECORD), f.pith_body(RECORD)


def bundle(snapshots: int) -> dict[str, object]:
    return f.bundle(record=RECORD, title=TITLE, events=bundle_events(RECORD, TITLE, snapshots))


@pytest.fixture
def mirror(project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Project:
    """Twelve records (one of them taken down is within the removal guard) and the paper's
    bundle of three events; built once."""
    monkeypatch.chdir(project.root)
    project.write_keys()
    for i in range(12):
        project.add(f"r/{i:02d}.json", record_doc(source_id=f"2204.{i:05d}", title=f"Paper {i}"))
    project.add("b.json", bundle(2))
    code, _, err = run(ARGS, capsys)
    assert code == 0, err
    return project


def listed(project: Project) -> dict[str, int]:
    path = project.site / WITHDRAWN_PATH
    if not path.exists():
        return {}
    return {r["pith_number"]: r["event_count"] for r in json.loads(path.read_bytes())["records"]}


def test_a_number_taken_down_comes_back_only_with_every_event_it_had(
    mirror: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    events = len(bundle(2)["events"])  # type: ignore[arg-type]
    assert listed(mirror) == {}
    mirror.remove("b.json")
    code, _, err = run(ARGS, capsys)
    assert code == 0, err
    assert not (mirror.site / f"pith/{BODY}.json").exists() and listed(mirror) == {NUMBER: events}

    mirror.add("b.json", bundle(1))  # (signed, valid, and older: fewer events)
    before = tree(mirror.site)
    code, out, err = run(ARGS, capsys)
    assert code == 1, (out, err)
    assert "bundle.rollback" in out + err and "taken down holding that bundle" in out + err
    assert not (mirror.site / f"pith/{BODY}.json").exists() and listed(mirror) == {NUMBER: events}
    assert {p for p in tree(mirror.site) if tree(mirror.site)[p] != before.get(p)} <= {
        "report.html",
        "report.json",
    }

    for flags in (["--clean"], []):  # (a full build reads SITE's list as an incremental one does)
        code, out, err = run([*ARGS, *flags], capsys)
        assert code == 1 and "bundle.rollback" in out + err, (flags, out, err)
        assert not (mirror.site / f"pith/{BODY}.json").exists()

    mirror.add("b.json", bundle(2))  # (the very bundle it had: published again, no longer listed)
    code, _, err = run(ARGS, capsys)
    assert code == 0, err
    assert (mirror.site / f"pith/{BODY}/bundle.json").read_bytes() == f.to_bytes(bundle(2))
    assert listed(mirror) == {} and not (mirror.site / WITHDRAWN_PATH).exists()


def test_a_copy_of_site_without_its_cache_keeps_the_list(
    mirror: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    mirror.remove("b.json")
    assert run(ARGS, capsys)[0] == 0
    shutil.rmtree(mirror.root / ".pith-cache")
    mirror.add("b.json", bundle(1))
    code, out, err = run(ARGS, capsys)
    assert code == 1 and "bundle.rollback" in out + err, (out, err)
    assert not (mirror.site / f"pith/{BODY}.json").exists()


@pytest.mark.parametrize("damage", [b"{not json", b'{"withdrawn_type": "other", "records": []}', b""])
def test_a_damaged_list_stops_the_build_before_site_changes(
    mirror: Project, capsys: pytest.CaptureFixture[str], damage: bytes
) -> None:
    mirror.remove("b.json")
    assert run(ARGS, capsys)[0] == 0
    (mirror.site / WITHDRAWN_PATH).write_bytes(damage)
    mirror.add("b.json", bundle(1))
    before = tree(mirror.site)
    code, _, err = run(ARGS, capsys)
    assert code == 2 and "withdrawn.json: cannot be read" in err and "Traceback" not in err, err
    assert tree(mirror.site) == before
    (mirror.site / WITHDRAWN_PATH).unlink()  # (deleted on purpose: forgotten)
    code, _, err = run(ARGS, capsys)
    assert code == 0, err
    assert (mirror.site / f"pith/{BODY}.json").exists()
