"""The code stays as the README promises: ruff-clean, formatted, and strictly typed.

ruff and mypy are test dependencies, so these never skip."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


@pytest.mark.skipif(
    shutil.which("ruff") is None and run("ruff", "--version").returncode != 0, reason="no ruff"
)
def test_ruff_check_and_format() -> None:
    check = run("ruff", "check", "generator", "tests", "bench", "docs")
    assert check.returncode == 0, check.stdout + check.stderr
    fmt = run("ruff", "format", "--check", "generator", "tests", "bench", "docs")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_mypy_strict_on_the_package_and_the_benchmark() -> None:
    # (bench/run.py imports bench/corpus.py, which mypy follows and checks too)
    result = run(
        "mypy",
        "generator",
        "bench/run.py",
        "bench/pull.py",
        "bench/stages.py",
        "bench/cluster.py",
        "bench/upload.py",
        "bench/content_store.py",
        "bench/partitions.py",
        "bench/listing.py",
    )
    assert result.returncode == 0, result.stdout + result.stderr
