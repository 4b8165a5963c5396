"""Shared helpers for the in-browser JavaScript tests (templates/static/*.js).

The JavaScript runs under Node (`/usr/bin/node`) through small runner scripts
in this folder: each reads one JSON request on stdin and writes one JSON answer
on stdout, so a whole batch of cases costs one subprocess.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STATIC = ROOT / "templates" / "static"
CONTENT = ROOT / "content"
RECORD_FILE = CONTENT / "GO43K6A5MHLNBUADUVZ3AKFBNI.record.json"
BUNDLE_FILE = CONTENT / "Z5NAPRQPUU4SIDOBV5N2FREXWZ.bundle.json"
PINNED_KEYS_FILE = ROOT / "generator" / "data" / "pinned-keys.json"


def node_path() -> str | None:
    return shutil.which("node") or ("/usr/bin/node" if Path("/usr/bin/node").exists() else None)


@pytest.fixture(scope="session")
def run_node():
    """run_node("runner.js", payload) -> the runner's JSON answer."""
    node = node_path()
    if node is None:
        pytest.skip("node is not installed")

    def run(script: str, payload: Any, timeout: float = 120) -> Any:
        proc = subprocess.run(
            [node, str(HERE / script)],
            input=json.dumps(payload).encode("utf-8"),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0:
            raise AssertionError(
                f"{script} exited {proc.returncode}:\n{proc.stderr.decode('utf-8', 'replace')}"
            )
        return json.loads(proc.stdout)

    return run


def hypothesis_batch(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """`count` examples of `strategy`, to send to Node in one subprocess call.

    Hypothesis only generates here, one small example at a time (a list of
    hundreds in one example exceeds its data budget); the caller compares the
    whole batch at once and names any example the two sides disagree on.
    """
    batch: list[Any] = []

    @settings(max_examples=count, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(example: Any) -> None:
        batch.append(example)

    collect()
    return batch
