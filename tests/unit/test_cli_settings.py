"""Settings and options the real CLI refuses: exit 2 and one sentence naming the
setting, never a traceback, and nothing started or written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from generator.cli import main

REPO = Path(__file__).resolve().parents[2]
CONTENT = REPO / "content"


def project(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the real content folder, and a site folder that does not exist yet."""
    content = tmp_path / "content"
    shutil.copytree(CONTENT, content)
    return content, tmp_path / "site"


@pytest.mark.parametrize("port", ["70000", "65536", "-1"])
def test_serve_refuses_a_port_outside_0_to_65535_as_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], port: str
) -> None:
    content, site = project(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["serve", "--no-watch", "--jobs", "1", "--port", port, str(content), str(site)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --port: {port} is not a port: a port is from 0 to 65535" in err
    assert "Traceback" not in err
    assert not site.exists()
