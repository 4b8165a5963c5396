"""Every script in bench/ answers --help, and bench/corpus.py alone writes a corpus
that the real CLI verifies with the key it writes beside it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    p.name for p in (ROOT / "bench").glob("*.py") if 'if __name__ == "__main__":' in p.read_text("utf-8")
)
"""The scripts (bench/processes.py is what two of them share, not one of them)."""


def run(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_bench_script_answers_help(script: str) -> None:
    done = run(ROOT / "bench" / script, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:") and "--records N" in done.stdout, done.stdout


def test_the_corpus_script_writes_bundles_the_mirror_verifies_with_its_key(tmp_path: Path) -> None:
    done = run(ROOT / "bench" / "corpus.py", "--records", "3", tmp_path / "corpus")
    assert done.returncode == 0, done.stderr
    bundles = sorted((tmp_path / "corpus" / "content").glob("*.bundle.json"))
    assert len(bundles) == 3
    keys = tmp_path / "corpus" / "bench-keys.json"
    checked = run("-m", "generator", "verify", "--keys", keys, tmp_path / "corpus" / "content")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1] == "3 checked, 3 verified, 0 rejected"
    again = run(ROOT / "bench" / "corpus.py", "--records", "3", tmp_path / "corpus")
    assert again.returncode == 2 and "is not empty" in again.stderr
