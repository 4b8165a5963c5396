"""`document_path` decides for one name what `discover_names` decides for a
whole tree: a watcher relies on them agreeing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from generator.trust.load import discover_names, document_path

NAMES = [
    "a.json",
    "a.bundle.json",
    "notes.txt",
    ".hidden.json",
    "#draft.json",
    "x.json~",
    "sub/b.json",
    "sub/.git/c.json",
    "sub/deeper/d.json",
    ".cache/e.json",
    "pages/f.json",
    "sub/pages/g.json",
    "folder.json/h.json",
]


@pytest.fixture
def content(tmp_path: Path) -> Path:
    root = tmp_path / "content"
    for name in NAMES:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"{}")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.json").write_bytes(b"{}")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "inner-link").symlink_to(root / "sub", target_is_directory=True)
    (root / "file-link.json").symlink_to(root / "a.json")
    (root / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    return root


def test_document_path_agrees_with_discover_names(content: Path) -> None:
    listed = {rel: path for path, rel in discover_names(content)}
    assert "sub/b.json" in listed and "file-link.json" in listed  # (the tree is not trivial)
    asked = set(NAMES) | {
        "linked/o.json",
        "inner-link/b.json",
        "file-link.json",
        "dangling.json",
        "missing.json",
        "folder.json",
        "sub",
        "",
        "sub//b.json",
        "../content/a.json",
    }
    for rel in sorted(asked | set(listed)):
        assert document_path(content, rel) == listed.get(rel), rel


def test_a_deleted_file_is_no_document(content: Path) -> None:
    os.unlink(content / "sub" / "b.json")
    assert document_path(content, "sub/b.json") is None
