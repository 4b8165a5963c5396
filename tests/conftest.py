"""Shared fixtures for the verifier's tests.

`tests/factories.py` is the one factory of signed documents; this file makes
it importable as `factories` from every test folder (whatever pytest's import
mode) and offers its keys and documents as fixtures.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# A verdict never depends on how busy the machine is: Hypothesis' per-example
# deadline (200 ms) and its too-slow health check fail a correct test on a loaded
# machine, so neither is used; the example count still bounds each test.
settings.register_profile("pith-mirror", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("pith-mirror")

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import factories  # noqa: E402

from generator.trust.keys import Keyring, default_keyring  # noqa: E402

REPO = TESTS.parent
CONTENT = REPO / "content"
SEED_RECORD = CONTENT / "GO43K6A5MHLNBUADUVZ3AKFBNI.record.json"
SEED_BUNDLE = CONTENT / "Z5NAPRQPUU4SIDOBV5N2FREXWZ.bundle.json"


@pytest.fixture(scope="session")
def signer() -> factories.Signer:
    """The tests' resolver key (fixed seed)."""
    return factories.TEST_SIGNER


@pytest.fixture(scope="session")
def attacker() -> factories.Signer:
    """A key nobody pinned, claiming the test key's id."""
    return factories.ATTACKER


@pytest.fixture(scope="session")
def keyring() -> Keyring:
    """The pinned key set of the tests: the test key only."""
    return factories.TEST_SIGNER.keyring()


@pytest.fixture(scope="session")
def real_keyring() -> Keyring:
    """The built-in pinned key set: the real resolver key."""
    return default_keyring()


@pytest.fixture
def record_doc() -> dict[str, Any]:
    """A fresh, valid record document signed by the test key."""
    return factories.record_document()


@pytest.fixture
def bundle_doc() -> dict[str, Any]:
    """A fresh, valid bundle signed by the test key (record_created + graph_snapshot)."""
    return factories.bundle()


@pytest.fixture(scope="session")
def seed_record_path() -> Path:
    return SEED_RECORD


@pytest.fixture(scope="session")
def seed_bundle_path() -> Path:
    return SEED_BUNDLE


@pytest.fixture
def memory_tmp(tmp_path: Path) -> Iterator[Path]:
    """A folder in memory (/dev/shm) where there is one, else `tmp_path`: for the few
    tests whose trees are thousands of files, which a disk makes slow and uneven."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="pith-test-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
