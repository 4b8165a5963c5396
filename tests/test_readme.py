"""The README's generated parts (rejection codes, CLI reference) match the code, and
its quick start leaves a clean checkout."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from generator.config import SiteConfig
from generator.journal import undo_path
from generator.write import lock_path, previous_path, staging_path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_generated_parts_are_current() -> None:
    spec = importlib.util.spec_from_file_location("update_readme", ROOT / "docs" / "update_readme.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    readme = (ROOT / "README.md").read_text("utf-8")
    assert module.render(readme) == readme, "run: python3 docs/update_readme.py"


def test_every_rejection_code_is_documented() -> None:
    from generator.errors import CODE_HELP, Code

    readme = (ROOT / "README.md").read_text("utf-8")
    for code in Code:
        assert code in CODE_HELP
        assert f"`{code.value}`" in readme


def test_what_a_build_leaves_beside_the_site_is_ignored_by_git() -> None:
    """A new user's `git status` after the quick start showed `.site.lock`: every
    name a build makes beside the default site folder is in .gitignore."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    site = ROOT / "site"
    folders = [
        site,
        staging_path(site),
        previous_path(site),
        undo_path(site),
        SiteConfig(site=site).cache_dir,
    ]
    names = [f"{path.relative_to(ROOT)}/" for path in folders] + [str(lock_path(site).relative_to(ROOT))]
    for relative in names:
        result = subprocess.run(["git", "check-ignore", "-q", "--no-index", relative], cwd=ROOT, check=False)
        assert result.returncode == 0, f"{relative} is not ignored by git"
