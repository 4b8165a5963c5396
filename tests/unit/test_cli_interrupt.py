"""A build stopped by SIGTERM or Ctrl-C says in one line what SITE holds, wherever
the signal lands: before the command began, before the build changed SITE, and
after it ended, while its report was being printed."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from generator.build import change_check
from generator.commands import cli, site_commands
from generator.trust.errors import Interrupted

REPO = Path(__file__).resolve().parents[2]


def _content(tmp_path: Path) -> Path:
    content = tmp_path / "content"
    shutil.copytree(REPO / "content", content)
    return content


def _stop(*_args: Any, **_kwargs: Any) -> Any:
    raise Interrupted(signal.SIGTERM)


@pytest.mark.parametrize(
    ("where", "name", "said", "built"),
    [
        (cli, "build_parser", "nothing was changed", False),  # (before the command began)
        (change_check, "look", "{site} is as the last completed build left it", False),
        (site_commands, "print_rejections", "{site} holds this build's publication, whole", True),
    ],
    ids=["before-the-command", "before-the-build", "while-reporting"],
)
def test_a_stopped_build_says_what_site_holds(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    where: Any,
    name: str,
    said: str,
    built: bool,
) -> None:
    monkeypatch.setattr(where, name, _stop)
    site = tmp_path / "site"
    code = cli.main(["build", str(_content(tmp_path)), str(site), "--quiet"])
    assert (code, capsys.readouterr().err) == (143, f"pith-mirror: stopped; {said.format(site=site)}\n")
    assert site.exists() == built and (site / "index.html").is_file() == built
