"""A first build that runs out of space leaves nothing of its own behind: no site,
no staging folder and no `.pith-cache/` (it left an empty, or nearly empty, one).

On a real full disk where the machine allows it: a small tmpfs mounted in a mount
namespace of its own (`unshare -m`, as root), so nothing outlives the test. Else,
and in any case, the disk is made full at the write layer.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sitekit import REAL_BUNDLE, REAL_RECORD, REPO, Project

from generator.build import write
from generator.trust.errors import BuildError

SCRIPT = """
set -e
mount -t tmpfs -o size=128k tmpfs "$DISK"
mkdir "$DISK/content"
cp "$RECORD" "$BUNDLE" "$DISK/content/"
cd "$DISK"
status=0
"$PYTHON" -m generator build content site --jobs 1 --quiet 2>err.txt || status=$?
echo "status=$status"
echo "err=$(cat err.txt)"
rm err.txt
echo "left=$(ls -A | tr '\\n' ' ')"
"""


def _can_mount() -> str | None:
    """None when a tmpfs can be mounted in a namespace of its own here, else why not."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if shutil.which("unshare") is None:
        return "no unshare command"
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"],
        capture_output=True,
        timeout=30,
    )
    return None if probe.returncode == 0 else "this machine does not allow mounting a tmpfs"


def test_a_first_build_on_a_full_tmpfs_leaves_no_cache_folder(tmp_path: Path) -> None:
    why = _can_mount()
    if why is not None:
        pytest.skip(why)
    disk = tmp_path / "disk"
    disk.mkdir()
    env = {
        **os.environ,
        "DISK": str(disk),
        "RECORD": str(REAL_RECORD),
        "BUNDLE": str(REAL_BUNDLE),
        "PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),
    }
    env.pop("SOURCE_DATE_EPOCH", None)
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done
    lines = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert lines["status"] == "2", done.stdout
    assert "No space left on device" in lines["err"] and "Traceback" not in lines["err"]
    # (the lock file stays, as after every build: it is how builds take turns)
    assert lines["left"].split() == [".site.lock", "content"]


def test_a_first_build_that_finds_the_disk_full_at_the_write_layer_leaves_no_cache_folder(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.add_real()
    written = [0]
    real = write._write_new

    def fills_up(target: str, data: bytes) -> None:
        written[0] += 1
        if written[0] > 20:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), target)
        real(target, data)

    monkeypatch.setattr(write, "_write_new", fills_up)
    with pytest.raises(BuildError, match="No space left on device"):
        project.build()
    assert sorted(p.name for p in project.root.iterdir()) == [".site.lock", "content"]


def test_a_failed_build_keeps_a_cache_folder_that_was_there(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only what the failed build made goes: an earlier build's cache stays."""
    project.add_real()
    project.build()
    cache = project.root / ".pith-cache" / "site"
    before = sorted(p.name for p in cache.iterdir())
    shutil.rmtree(project.site)

    def full(target: str, data: bytes) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), target)

    monkeypatch.setattr(write, "_write_new", full)
    with pytest.raises(BuildError, match="No space left on device"):
        project.build()
    assert sorted(p.name for p in cache.iterdir()) == before
