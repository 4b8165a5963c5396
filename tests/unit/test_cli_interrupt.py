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


SIGNALS_ITSELF = """
import os, signal
os.kill(os.getpid(), signal.SIGTERM)  # (delivered at once, unless held back)
total = sum(range(10_000))  # (Python code, where a handler that raises would run)
DONE = True
"""

IMPORTS = """
import sys
from generator.commands.cli import import_held, stop_on_signals
from generator.trust.errors import Interrupted
stop_on_signals()
try:
    {importer}
except Interrupted as exc:
    print(exc.signum, getattr(sys.modules.get("signals_itself"), "DONE", False))
"""


@pytest.mark.parametrize(
    ("importer", "whole"),
    [("import_held(['signals_itself'])", True), ("import signals_itself", False)],
    ids=["held", "not-held"],
)
def test_a_signal_during_a_held_import_is_handled_once_the_module_is_in(
    tmp_path: Path, importer: str, whole: bool
) -> None:
    """A SIGTERM that comes while a held module starts (one that signals itself
    here) is held back until the module is whole, then stops the command as usual.
    Not held, the exception is raised inside the module's start: what crashed
    orjson's native module with SIGSEGV."""
    import subprocess
    import sys

    (tmp_path / "signals_itself.py").write_text(SIGNALS_ITSELF)
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS.format(importer=importer)],
        env={"PYTHONPATH": f"{tmp_path}:{REPO}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stdout.split() == [str(int(signal.SIGTERM)), str(whole)], done.stderr


def test_the_command_imports_orjson_held_before_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """orjson, the one native module seen to crash on a signal while it starts, is
    imported held once the handlers are in, before the commands' modules are."""
    calls: list[object] = []
    real_parser = cli.build_parser
    monkeypatch.setattr(cli, "stop_on_signals", lambda: calls.append("handlers") or {})
    monkeypatch.setattr(cli, "import_held", lambda modules: calls.append(tuple(modules)))
    monkeypatch.setattr(cli, "build_parser", lambda: calls.append("parser") or real_parser())
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert calls == ["handlers", ("orjson",), "parser"]
