"""The README's generated parts (rejection codes, CLI reference) match the code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
