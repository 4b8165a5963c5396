"""Fixtures for the publishing tests: real builds of content/, and the publishing commands.

Builds run the real CLI (`python -m generator build CONTENT SITE --jobs 1`) in
a subprocess, once per session for the plain build; a test that changes a
site works on its own copy (`site_copy`).

`s3` is an S3 stand-in on loopback for the storage tests (tests/storagekit.py),
started once per session; `s3_storage` opens a fresh bucket of it.

`publish_cli` runs a subcommand of `generator.commands.publish_commands` through a
small parser of its own, the way `cli.main` dispatches (handler, then
ConfigError/BuildError -> exit 2), so these tests do not depend on the wiring
in cli.py. `test_cli_wired.py` runs the same commands as `python -m generator`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import storagekit
from extraskit import need

from generator.commands.publish_commands import add_publish_commands
from generator.publish.storage import RetryPolicy, Storage, open_storage
from generator.trust.errors import BuildError, ConfigError

REPO = Path(__file__).resolve().parents[2]
CONTENT = REPO / "content"
RECORD_BODY = "GO43K6A5MHLNBUADUVZ3AKFBNI"
BUNDLE_BODY = "Z5NAPRQPUU4SIDOBV5N2FREXWZ"
RECORD_NUMBER = f"pith:2021:{RECORD_BODY}"
BUNDLE_NUMBER = f"pith:2020:{BUNDLE_BODY}"
RECORD_FILE = f"{RECORD_BODY}.record.json"
BUNDLE_FILE = f"{BUNDLE_BODY}.bundle.json"


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def run_module(*argv: str | Path, cwd: Path) -> Result:
    """`python -m generator ARGV...` in a subprocess (cwd without settings files)."""
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    done = subprocess.run(
        [sys.executable, "-m", "generator", *map(str, argv)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return Result(done.returncode, done.stdout, done.stderr)


def build_site(content: Path, site: Path, *extra: str) -> Path:
    """Build content into site with the real CLI; the build must publish (exit 0)."""
    result = run_module("build", content, site, "--jobs", "1", "--quiet", *extra, cwd=site.parent)
    assert result.code == 0, result.err
    return site


def publish_cli(*argv: str | Path) -> Result:
    """Run one publishing subcommand in-process, as cli.main would."""
    parser = argparse.ArgumentParser(prog="pith-mirror")
    commands = parser.add_subparsers(dest="command", required=True)
    add_publish_commands(commands)
    args = parser.parse_args([str(a) for a in argv])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = args.handler(args)
        except (ConfigError, BuildError) as exc:
            print(f"pith-mirror: {exc}", file=sys.stderr)
            code = 2
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """content/ built once for the session; never modify it (use site_copy)."""
    root = tmp_path_factory.mktemp("built")
    return build_site(CONTENT, root / "site")


@pytest.fixture
def site_copy(built_site: Path, tmp_path: Path) -> Callable[[str], Path]:
    """A fresh copy of the session's site, to change."""

    def copy(name: str = "site") -> Path:
        return Path(shutil.copytree(built_site, tmp_path / name, symlinks=True))

    return copy


@pytest.fixture
def content_copy(tmp_path: Path) -> Path:
    target = tmp_path / "content"
    shutil.copytree(CONTENT, target)
    return target


@pytest.fixture(scope="session")
def s3() -> Iterator[storagekit.S3StandIn]:
    """An S3 stand-in (moto's server behind a proxy that counts and fails requests) on
    loopback, once per session: never a real cloud."""
    need("moto.server", "ci")
    need("obstore", "storage")
    with storagekit.s3_stand_in() as stand_in:
        yield stand_in


FAST_RETRY = RetryPolicy(retries=3, first_wait=0.01, longest_wait=0.05, give_up_after=10)
"""Retries as in production, but waits of milliseconds: a test of failures stays fast."""


@pytest.fixture
def s3_storage(s3: storagekit.S3StandIn) -> Storage:
    """A fresh bucket on the stand-in, opened with the site under the prefix `site/`."""
    bucket = s3.new_bucket()
    return open_storage(f"s3://{bucket}/site/", options=s3.options(), retry=FAST_RETRY)
