"""Stage 6: put files on disk without ever leaving a broken site.

Rules:
- A full build writes into a fresh staging folder beside SITE and swaps it in
  with renames at the very end; a build that fails or is killed leaves the
  previous SITE whole. A swap interrupted between its two renames is undone
  by the next build (`recover`).
- Incremental builds write into SITE itself, each file through a temporary
  name and a rename, so a reader never sees half a file.
- Every path is relative and made of safe segments; nothing is written outside
  the target folder, and a path is never written twice in one build.
- A file the resolver signed is never rewritten with different bytes.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from .errors import BuildError
from .render import OutputFile

_STAGING = ".{name}.staging"
_OLD = ".{name}.previous"


def staging_path(site: Path) -> Path:
    return site.parent / _STAGING.format(name=site.name)


def previous_path(site: Path) -> Path:
    return site.parent / _OLD.format(name=site.name)


def recover(site: Path) -> None:
    """Undo an interrupted swap and clear a dead build's staging folder."""
    previous, staging = previous_path(site), staging_path(site)
    if not site.exists() and previous.exists():
        os.rename(previous, site)
    if previous.exists():
        shutil.rmtree(previous)
    if staging.exists():
        shutil.rmtree(staging)


def prepare_staging(site: Path) -> Path:
    recover(site)
    staging = staging_path(site)
    staging.mkdir(parents=True)
    return staging


def swap_in(staging: Path, site: Path) -> None:
    """Replace SITE by the staging folder: two renames, then clean up."""
    previous = previous_path(site)
    if site.exists():
        if not site.is_dir():
            raise BuildError(str(site), "the site path exists and is not a folder")
        os.rename(site, previous)
    os.rename(staging, site)
    if previous.exists():
        shutil.rmtree(previous)


def is_plain_relative(path: str) -> bool:
    """No leading "/", no "", "." or ".." segment, no backslash or NUL."""
    if path.startswith("/") or "\\" in path or "\0" in path:
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


def check_path(path: str) -> None:
    if not is_plain_relative(path):
        raise BuildError(path, "refusing to write a path that is not a plain relative path")


class Writer:
    """Writes files under one root, refusing collisions; remembers made folders."""

    def __init__(self, root: Path, atomic: bool) -> None:
        self.root = root
        self.atomic = atomic
        self.written: set[str] = set()
        self._made: set[Path] = set()

    def write(self, files: Iterable[OutputFile], overwrite: bool = False) -> int:
        count = 0
        for file in files:
            check_path(file.path)
            if file.path in self.written and not overwrite:
                raise BuildError(file.path, "two outputs of this build claim the same path")
            self.written.add(file.path)
            target = self.root / file.path
            if target.parent not in self._made:
                target.parent.mkdir(parents=True, exist_ok=True)
                self._made.add(target.parent)
            if self.atomic:
                write_atomic(target, file.data)
            else:
                with open(target, "wb") as handle:
                    handle.write(file.data)
            count += 1
        return count


def write_atomic(target: Path, data: bytes) -> None:
    """Write through a temporary name in the same folder, then rename."""
    temporary = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, target)
