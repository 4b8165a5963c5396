"""The writer: paths stay inside the root, twins share an inode, nothing is
written through a file another path shares."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from generator.build import write
from generator.build.write import Writer, is_plain_relative, remove_tree
from generator.site.render import OutputFile
from generator.trust.errors import BuildError


def test_a_page_and_its_twin_share_one_inode(tmp_path: Path) -> None:
    data = b"<p>page</p>"
    Writer(tmp_path, atomic=False).write([OutputFile("x.html", data), OutputFile("x/index.html", data)])
    assert (tmp_path / "x.html").read_bytes() == data
    assert os.path.samefile(tmp_path / "x.html", tmp_path / "x/index.html")


def test_equal_bytes_that_are_not_the_same_object_are_separate_files(tmp_path: Path) -> None:
    first, second = bytes(bytearray(b"{}")), bytes(bytearray(b"{}"))
    assert first is not second
    Writer(tmp_path, atomic=False).write([OutputFile("a.json", first), OutputFile("b.json", second)])
    assert not os.path.samefile(tmp_path / "a.json", tmp_path / "b.json")


def test_overwriting_one_twin_leaves_the_other_alone(tmp_path: Path) -> None:
    writer = Writer(tmp_path, atomic=False)
    old = b"old page"
    writer.write([OutputFile("x.html", old), OutputFile("x/index.html", old)])
    writer.write([OutputFile("x.html", b"list page")])
    assert (tmp_path / "x.html").read_bytes() == b"list page"
    assert (tmp_path / "x/index.html").read_bytes() == old


def test_a_folder_removed_after_it_was_made_is_made_again(tmp_path: Path) -> None:
    writer = Writer(tmp_path, atomic=False)
    writer.write([OutputFile("pith/A/state.json", b"1")])
    (tmp_path / "pith/A/state.json").unlink()
    (tmp_path / "pith/A").rmdir()
    writer.write([OutputFile("pith/A/state.json", b"2")])
    assert (tmp_path / "pith/A/state.json").read_bytes() == b"2"


def test_atomic_writes_replace_the_file_and_leave_no_temporary(tmp_path: Path) -> None:
    writer = Writer(tmp_path, atomic=True)
    writer.write([OutputFile("a/b.json", b"1")])
    writer.write([OutputFile("a/b.json", b"2")])
    assert (tmp_path / "a/b.json").read_bytes() == b"2"
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["b.json"]


def test_one_path_twice_in_one_call_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="claim the same path"):
        Writer(tmp_path, atomic=False).write([OutputFile("a", b"1"), OutputFile("a", b"2")])


@pytest.mark.parametrize("path", ["/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a\\b", "a\0b", ""])
def test_paths_that_could_leave_the_root_are_refused(tmp_path: Path, path: str) -> None:
    assert not is_plain_relative(path)
    with pytest.raises(BuildError, match="plain relative path"):
        Writer(tmp_path / "site", atomic=False).write([OutputFile(path, b"x")])
    assert not (tmp_path / "site").exists() or not any((tmp_path / "site").rglob("*"))


@given(st.lists(st.sampled_from(["a", "b.c", ".", "..", "...", ".a", "", "\\", "\0", "é"]), max_size=5))
def test_the_path_check_is_the_segment_rule(segments: list[str]) -> None:
    """The one regular expression agrees with the rule it stands for."""
    for path in ("/".join(segments), "".join(segments), "/" + "/".join(segments)):
        parts = path.split("/")
        plain = "\\" not in path and "\0" not in path and all(p not in ("", ".", "..") for p in parts)
        assert is_plain_relative(path) == plain, path


def test_folders_are_made_at_any_depth_and_a_file_in_the_way_is_an_error(tmp_path: Path) -> None:
    writer = Writer(tmp_path, atomic=False)
    writer.write([OutputFile("a/b/c/d.json", b"1"), OutputFile("a/b/e.json", b"2"), OutputFile("f", b"3")])
    assert (tmp_path / "a/b/c/d.json").read_bytes() == b"1" and (tmp_path / "a/b/e.json").read_bytes() == b"2"
    with pytest.raises(FileExistsError):
        Writer(tmp_path, atomic=False).write([OutputFile("f/g.json", b"4")])
    assert (tmp_path / "f").read_bytes() == b"3"


def test_the_folders_a_writer_remembers_stay_bounded(tmp_path: Path) -> None:
    """A worker writes into tens of thousands of folders over a build: what it
    remembers of them must not grow with the corpus, and forgetting is harmless."""
    from generator.build import write

    writer = Writer(tmp_path, atomic=False)
    count = write._MADE_LIMIT + 50
    for i in range(count):
        writer.write([OutputFile(f"pith/{i:06d}/state.json", b"{}")])
    assert len(writer._made) <= write._MADE_LIMIT
    writer.write([OutputFile("pith/000000/index.html", b"again")])  # a folder it has forgotten
    assert (tmp_path / "pith/000000/index.html").read_bytes() == b"again"
    assert len(list((tmp_path / "pith").iterdir())) == count


def test_losing_a_race_for_a_shared_path_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers of a full build may create one shared path at once: the one
    that finds it created again after its unlink tries again, not fail the build."""
    target = tmp_path / "api" / "shared.json"
    target.parent.mkdir()
    target.write_bytes(b"an earlier worker's")
    real_open = os.open
    opens = []

    def racing_open(path: str, flags: int, mode: int = 0o777) -> int:
        if path == str(target):
            opens.append(path)
            if len(opens) == 2:  # between our unlink and our open, another worker created it
                os.close(real_open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666))
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", racing_open)
    Writer(tmp_path, atomic=False).write([OutputFile("api/shared.json", b"mine")])
    monkeypatch.undo()
    assert target.read_bytes() == b"mine"
    assert len(opens) == 3


def _tree(root: Path) -> None:
    Writer(root, atomic=False).write(
        [OutputFile(p, b"x") for p in ("a.html", "a/index.html", "b/c/d/e.json", "b/c/f.json", ".hidden/g")]
    )
    (root / "empty" / "deeper").mkdir(parents=True)


@pytest.mark.parametrize("by_fd", [True, False])
def test_remove_tree_removes_everything_and_follows_no_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_fd: bool
) -> None:
    monkeypatch.setattr(write, "_BY_FD", by_fd and write._BY_FD)
    site, outside = tmp_path / "site", tmp_path / "outside"
    _tree(site)
    _tree(outside)
    (site / "b" / "to-folder").symlink_to(outside, target_is_directory=True)
    (site / "to-file").symlink_to(outside / "a.html")
    remove_tree(site)
    assert not site.exists() and not site.is_symlink()
    # what the links pointed at is untouched
    assert sorted(str(p.relative_to(outside)) for p in outside.rglob("*")) == [
        ".hidden", ".hidden/g", "a", "a.html", "a/index.html", "b", "b/c", "b/c/d", "b/c/d/e.json",
        "b/c/f.json", "empty", "empty/deeper",
    ]  # fmt: skip


def test_remove_tree_refuses_a_link_in_the_trees_place(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _tree(outside)
    (tmp_path / "site").symlink_to(outside, target_is_directory=True)
    with pytest.raises(OSError):
        remove_tree(tmp_path / "site")
    assert (outside / "b" / "c" / "f.json").read_bytes() == b"x"


@pytest.mark.skipif(not write._BY_FD, reason="removal relative to open folders")
def test_remove_tree_removes_a_tree_deeper_than_the_recursion_limit(tmp_path: Path) -> None:
    """A tree planted in a site may nest past Python's recursion limit: a full build
    removing the old site ended in a RecursionError, and left it beside SITE. (The
    limit is lowered for the test, so the tree, one open folder a level, stays far
    below any limit on open files.)"""
    site = tmp_path / "site"
    deep = str(site)
    os.mkdir(deep)
    for _ in range(500):
        deep += "/a"
        os.mkdir(deep)
    Path(deep, "f.txt").write_text("f")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)
    try:
        remove_tree(site)
    finally:
        sys.setrecursionlimit(limit)
    assert not site.exists()


@pytest.mark.skipif(not write._BY_FD, reason="removal relative to open folders")
def test_a_failure_to_remove_part_of_a_tree_names_its_whole_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step names only an entry of its folder: the error said "d: Directory
    not empty", not which d of the tree."""
    _tree(tmp_path / "site")
    real = os.rmdir

    def busy(path: str, *, dir_fd: int | None = None) -> None:
        if path == "d" and dir_fd is not None:  # (as if a file appeared in it meanwhile)
            raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY), path)
        real(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "rmdir", busy)
    with pytest.raises(OSError) as info:
        remove_tree(tmp_path / "site")
    assert info.value.filename == f"{tmp_path}/site/b/c/d"
    assert info.value.errno == errno.ENOTEMPTY


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="one-step exchange is Linux's renameat2")
def test_swapping_a_site_in_never_leaves_its_name_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A web server reading SITE while a full build swaps it in must find a site, the
    old or the new, at every moment: never a missing folder."""
    site, staging = tmp_path / "site", tmp_path / ".site.staging"
    for folder, text in ((site, "old"), (staging, "new")):
        folder.mkdir()
        (folder / "index.html").write_text(text)
    renames = []
    real_rename = os.rename

    def watched(source: object, target: object) -> None:
        renames.append(site.is_dir())
        real_rename(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(write.os, "rename", watched)
    write.swap_in(staging, site)
    assert all(renames) and (site / "index.html").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]
