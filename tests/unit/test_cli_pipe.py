"""Output piped into a reader that closes early (`pith-mirror verify content | head -1`):
the command stops quietly with exit 1, never a BrokenPipeError traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RECORD = REPO / "content" / "GO43K6A5MHLNBUADUVZ3AKFBNI.record.json"
TIMEOUT = 120
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def command(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "generator", *map(str, args)]


def closed_early(*args: str | Path) -> tuple[int, str]:
    """Run the command with stdout a pipe whose only reader closes it before reading
    anything; its exit status and stderr."""
    process = subprocess.Popen(
        command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, text=True
    )
    assert process.stdout is not None
    process.stdout.close()
    _, err = process.communicate(timeout=TIMEOUT)
    return process.returncode, err


def test_verify_piped_into_head_stops_quietly(tmp_path: Path) -> None:
    """More lines than a pipe holds: `head -n 1` has exited long before the last one."""
    for index in range(2000):
        shutil.copyfile(RECORD, tmp_path / f"{index:04d}.json")
    writer = subprocess.Popen(
        command("verify", tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, text=True
    )
    assert writer.stdout is not None
    head = subprocess.run(
        ["head", "-n", "1"], stdin=writer.stdout, capture_output=True, text=True, timeout=TIMEOUT, check=True
    )
    writer.stdout.close()
    _, err = writer.communicate(timeout=TIMEOUT)
    assert head.stdout.startswith("verified  record  pith:2021:GO43K6A5MHLNBUADUVZ3AKFBNI")
    assert "Traceback" not in err and "BrokenPipeError" not in err
    assert err == ""
    assert writer.returncode == 1


@pytest.mark.parametrize("name", ["verify", "build", "compare"])
def test_a_reader_that_closes_before_the_output_stops_the_command_quietly(tmp_path: Path, name: str) -> None:
    content, site = tmp_path / "content", tmp_path / "site"
    content.mkdir()
    shutil.copy(RECORD, content)
    if name == "compare":
        built = subprocess.run(command("build", "--jobs", "1", content, site), env=ENV, timeout=TIMEOUT)
        assert built.returncode == 0
    args = {
        "verify": ("verify", content),
        "build": ("build", "--jobs", "1", content, site),
        "compare": ("compare", site, site),
    }[name]
    code, err = closed_early(*args)
    assert "Traceback" not in err and "BrokenPipeError" not in err
    assert code == 1
