"""Fixtures for the build's tests: a fresh project per test, and the real
documents built once at the domain root and once under a sub-path.

Helpers (`Project`, the link checker, tree comparisons) are in `sitekit.py`;
test modules import them from there.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from sitekit import ABOUT_MD, SUB_BASE_URL, Project  # noqa: E402


@pytest.fixture
def project(tmp_path: Path) -> Project:
    p = Project(tmp_path)
    p.content.mkdir()
    return p


@pytest.fixture(scope="session")
def real_site(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The two real documents built once at the domain root (read-only for tests)."""
    p = Project(tmp_path_factory.mktemp("real"))
    p.add_real()
    (p.content / "pages").mkdir()
    (p.content / "pages" / "about.md").write_text(ABOUT_MD, "utf-8")
    report = p.build()
    assert report.published == 2 and not report.rejections, report.rejections
    return p


@pytest.fixture(scope="session")
def sub_site(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The same, built for https://example.github.io/mirror/."""
    p = Project(tmp_path_factory.mktemp("sub"))
    p.add_real()
    (p.content / "pages").mkdir()
    (p.content / "pages" / "about.md").write_text(ABOUT_MD, "utf-8")
    report = p.build(base_url=SUB_BASE_URL)
    assert report.published == 2 and not report.rejections, report.rejections
    return p
