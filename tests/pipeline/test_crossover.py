"""Past a share of changed documents an incremental build builds fully instead (it
was twice as slow as a full build at 340 of 600); a mass `touch` changes no byte
and stays incremental. Either way the site is the one a fresh build makes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from sitekit import Project, assert_same_as_fresh, record_doc

from generator.build import full_or_incremental as crossover
from generator.commands.cli import main

ARGS = ["build", "content", "site", "--keys", "keys.json", "--jobs", "1"]
KNOWN = 8
"""Documents the first build caches: a quarter of them is 2."""


@pytest.fixture
def built(project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Project:
    monkeypatch.chdir(project.root)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    monkeypatch.setattr(crossover, "MIN_DOCUMENTS", KNOWN)  # (a small tree stands for a large one)
    project.write_keys()
    for i in range(KNOWN):
        add(project, i)
    assert mode(capsys) == "full"
    return project


def add(project: Project, i: int) -> None:
    project.add(f"r/{i:02d}.json", record_doc(source_id=f"2204.{i:05d}", title=f"Paper {i}"))


def mode(capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    code = main(ARGS)
    out, err = capsys.readouterr()
    assert code == 0, err
    found = re.search(r"\((full|incremental): \d+ record\(s\) rendered", out)
    assert found, out
    return found.group(1)


@pytest.mark.parametrize(("added", "expected"), [(2, "incremental"), (3, "full")])
def test_more_than_a_quarter_of_the_documents_changed_builds_fully(
    built: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path, added: int, expected: str
) -> None:
    for i in range(KNOWN, KNOWN + added):
        add(built, i)
    assert mode(capsys) == expected
    assert_same_as_fresh(built, tmp_path / "fresh")


def test_changed_and_removed_documents_count_too(
    built: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """One edited (other bytes), one removed, one added: three of eight."""
    first = built.content / "r/00.json"
    first.write_bytes(first.read_bytes().replace(b"{", b"{ ", 1))
    built.remove("r/01.json")
    add(built, KNOWN)
    capsys.readouterr()
    assert main([*ARGS, "--allow-removals"]) == 0
    assert "(full:" in capsys.readouterr().out
    assert_same_as_fresh(built, tmp_path / "fresh")


def test_every_file_touched_but_none_changed_stays_incremental(
    built: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fresh checkout or a copy without times changes every stat and no byte."""
    for path in built.content.rglob("*.json"):
        os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    assert mode(capsys) == "incremental"


def test_a_small_site_always_builds_incrementally(
    built: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(crossover, "MIN_DOCUMENTS", KNOWN + 1)
    for i in range(KNOWN, KNOWN + 4):
        add(built, i)
    assert mode(capsys) == "incremental"
