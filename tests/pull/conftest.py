"""Fixtures for the tests of `pull`: the corpus built once into a site, and a server for a copy of it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from .pullkit import Server, build, make_content, serve, write_keys


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_keys(tmp_path_factory.mktemp("keys"))


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory, keys: Path) -> tuple[Path, Path]:
    """(content, site): the corpus and the site built from it, once; never change them."""
    root = tmp_path_factory.mktemp("origin")
    content = make_content(root / "content")
    return content, build(content, root / "site", keys)


@pytest.fixture
def server(built: tuple[Path, Path], tmp_path: Path) -> Iterator[Server]:
    """A copy of the built site, served on a loopback port (a test may change the copy)."""
    site = Path(shutil.copytree(built[1], tmp_path / "served"))
    with serve(site) as running:
        yield running


@pytest.fixture
def content(tmp_path: Path) -> Path:
    """An empty content folder to pull into."""
    return tmp_path / "pulled"
