"""SITE as a mount point (a tmpfs, a container volume): no rename can replace it.

A full build swaps a new folder in by renaming, and an incremental one renames
staged files into SITE: on a mount point the first failed with "Device or
resource busy" and the second with "Invalid cross-device link". The real CLI on
a real tmpfs mounted at SITE (skipped, with the reason, where mounting is not
allowed) must build, rebuild and clean-build the same bytes as on a plain folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import factories as f
import pytest
from sitekit import REPO, Project, tree

ARGS = ["build", "content", "site", "--keys", "keys.json", "--jobs", "1"]


def run_build(project: Project, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "generator", *ARGS, *extra],
        cwd=project.root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Project]:
    """A project whose site/ is a tmpfs of its own."""
    project = Project(tmp_path / "mirror")
    project.content.mkdir(parents=True)
    project.write_keys()
    project.site.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(project.site)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield project
    finally:
        subprocess.run(["umount", str(project.site)], check=True)


def document(i: int) -> bytes:
    record = f.canonical_record(source_id=f"2112.{i:05d}", title=f"Paper number {i}")
    return f.to_bytes(f.bundle(record=record, title=f"Paper number {i}"))


def reference(root: Path, documents: dict[str, bytes]) -> dict[str, bytes]:
    project = Project(root)
    project.content.mkdir(parents=True)
    project.write_keys()
    for name, data in documents.items():
        (project.content / name).write_bytes(data)
    result = run_build(project)
    assert result.returncode == 0, result.stderr
    return tree(project.site)


def test_a_site_that_is_a_mount_point_is_built_in_place(mounted: Project, tmp_path: Path) -> None:
    documents = {f"b{i}.json": document(i) for i in range(4)}
    for name, data in documents.items():
        (mounted.content / name).write_bytes(data)
    assert os.path.ismount(mounted.site)

    first = run_build(mounted)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("is a mount point: its files were replaced in place") == 1
    assert tree(mounted.site) == reference(tmp_path / "one", documents)
    assert os.path.ismount(mounted.site)

    documents["b9.json"] = document(9)  # an incremental build: files renamed in from another file system
    (mounted.content / "b9.json").write_bytes(documents["b9.json"])
    again = run_build(mounted)
    assert again.returncode == 0 and "(incremental:" in again.stdout, again.stderr
    assert tree(mounted.site) == reference(tmp_path / "two", documents)

    del documents["b0.json"]  # a full build over it: files no longer published are removed
    (mounted.content / "b0.json").unlink()  # (one of five: a take-down, said so)
    clean = run_build(mounted, "--clean", "--allow-removals")
    assert clean.returncode == 0, clean.stderr
    fresh = reference(tmp_path / "three", documents)
    ours = tree(mounted.site)
    # (what SITE took down with a bundle, which a site never built with b0 has no word of)
    withdrawn = json.loads(ours.pop(".well-known/pith/withdrawn.json"))
    assert [r["pith_number"] for r in withdrawn["records"]] == [json.loads(document(0))["pith_number"]]
    assert sorted(ours) == sorted(fresh)
    assert [p for p in ours if ours[p] != fresh[p] and not p.startswith("report")] == []
    for leftover in (".site.staging", ".site.undo", ".site.previous"):
        assert not (mounted.root / leftover).exists()
