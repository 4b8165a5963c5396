"""The documentation's generated parts (rejection codes, CLI reference) match the code,
every page the README and docs/ link to exists, and the README's quick start works and
leaves a clean checkout."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from generator.build.journal import undo_path
from generator.build.write import lock_path, previous_path, staging_path
from generator.publish.change_log import log_path
from generator.site.config import SiteConfig

ROOT = Path(__file__).resolve().parent.parent


def test_generated_parts_are_current() -> None:
    spec = importlib.util.spec_from_file_location("update_docs", ROOT / "docs" / "update_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, marker in module.GENERATED.items():
        text = (ROOT / "docs" / name).read_text("utf-8")
        assert f"<!-- {marker}:begin -->" in text, f"docs/{name} lost its generated part"
        assert module.render(text) == text, "run: python3 docs/update_docs.py"


def test_every_rejection_code_is_documented() -> None:
    from generator.trust.errors import CODE_HELP, Code

    page = (ROOT / "docs" / "trust-model.md").read_text("utf-8")
    for code in Code:
        assert code in CODE_HELP
        assert f"`{code.value}`" in page


def test_every_page_the_docs_link_to_exists() -> None:
    """A link from the README or a page of docs/ to a file of the repository leads somewhere."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
    missing = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text("utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                missing.append(f"{page.relative_to(ROOT)} -> {target}")
    assert missing == []


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
    files = [lock_path(site), log_path(site)]
    names = [f"{path.relative_to(ROOT)}/" for path in folders] + [str(p.relative_to(ROOT)) for p in files]
    for relative in names:
        result = subprocess.run(["git", "check-ignore", "-q", "--no-index", relative], cwd=ROOT, check=False)
        assert result.returncode == 0, f"{relative} is not ignored by git"


def quick_start() -> list[str]:
    readme = (ROOT / "README.md").read_text("utf-8")
    section = readme.split("## Quick start", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return block.splitlines()


def test_the_quick_start_works_where_pip_is_refused_outside_a_virtual_environment() -> None:
    """Debian 12 and Ubuntu refuse `python3 -m pip install` (externally-managed-environment):
    the quick start makes a virtual environment in its own commands, still two lines,
    and nothing in the README installs with the system's pip."""
    install, test = quick_start()
    assert install.startswith("python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && ")
    assert install.endswith(" && .venv/bin/pith-mirror build")
    assert test == ".venv/bin/python -m pytest"
    readme = (ROOT / "README.md").read_text("utf-8")
    assert "python3 -m pip install" not in readme and "\npip install" not in readme


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    """.ci/run installs as the quick start does and runs its test line, word for word."""
    test = quick_start()[1]
    ci = (ROOT / ".ci" / "run").read_text("utf-8").splitlines()
    assert test in ci
    assert "python3 -m venv .venv" in ci and ".venv/bin/pip install -q -e '.[test]'" in ci
    commands = [line for line in ci if line.strip() and not line.lstrip().startswith("#")]
    assert not [line for line in commands if "-m pytest" in line and line != test]
    assert '"$status" -eq 5' in "\n".join(ci)  # (no tests collected is a failure)
