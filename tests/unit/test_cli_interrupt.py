"""A build stopped by SIGTERM or Ctrl-C says in one line what SITE holds, wherever
the signal lands: before the command began, before the build changed SITE, and
after it ended, while its report was being printed."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from generator.commands import cli, site_commands
from generator.trust.errors import Interrupted

REPO = Path(__file__).resolve().parents[2]


def _content(tmp_path: Path) -> Path:
    content = tmp_path / "content"
    shutil.copytree(REPO / "content", content)
    return content


def _stop(*_args: Any, **_kwargs: Any) -> Any:
    raise Interrupted(signal.SIGTERM)


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    site = tmp_path / "site"
    code = cli.main(["build", str(_content(tmp_path)), str(site), "--quiet"])
    return code, capsys.readouterr().err


def test_stopped_before_the_command_began(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "build_parser", _stop)
    code, err = _run(tmp_path, capsys)
    assert (code, err) == (143, "pith-mirror: stopped; nothing was changed\n")
    assert not (tmp_path / "site").exists()


def test_stopped_before_the_build_changed_site(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from generator.build import change_check

    monkeypatch.setattr(change_check, "look", _stop)
    code, err = _run(tmp_path, capsys)
    site = tmp_path / "site"
    assert (code, err) == (143, f"pith-mirror: stopped; {site} is as the last completed build left it\n")
    assert not site.exists()


def test_stopped_while_the_finished_build_was_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(site_commands, "print_rejections", _stop)
    code, err = _run(tmp_path, capsys)
    site = tmp_path / "site"
    assert (code, err) == (143, f"pith-mirror: stopped; {site} holds this build's publication, whole\n")
    assert (site / "index.html").is_file()
