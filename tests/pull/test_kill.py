"""A pull killed with SIGKILL at several points leaves only whole, verified documents,
and the next pull finishes the job without fetching again what it already has."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import factories as f
import pytest

from .pullkit import all_whole_and_verified, build, documents, pull, pull_process, serve

COUNT = 40
DEADLINE = 60.0


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory, keys: Path) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("many")
    content = root / "content"
    content.mkdir()
    for index in range(COUNT):
        record = f.canonical_record(source_id=f"2103.{index:05d}", title=f"Paper number {index}")
        f.write(
            content / f"{f.pith_body(record)}.bundle.json",
            f.bundle(record=record, title=f"Paper number {index}"),
        )
    return content, build(content, root / "site", keys)


def wait_for_more_documents(folder: Path, than: int) -> int:
    """Poll (bounded) until `folder` holds more documents than `than`; their count."""
    ends = time.monotonic() + DEADLINE
    while time.monotonic() < ends:
        found = len(documents(folder)) if folder.is_dir() else 0
        if found > than:
            return found
        time.sleep(0.01)
    raise AssertionError(f"no more than {than} documents after {DEADLINE} s")


def test_a_pull_killed_anywhere_leaves_whole_documents_and_the_next_one_finishes(
    many: tuple[Path, Path], keys: Path, tmp_path: Path
) -> None:
    origin, site = many
    content = tmp_path / "pulled"
    with serve(site) as server:
        server.delay = 0.02
        had = 0
        for step in (1, 3, 7, 11):  # (kill after the first document, then at later points)
            process = pull_process(server.url, content, keys, "--all", "--jobs", "4")
            try:
                had = wait_for_more_documents(content, had + step - 1)
            finally:
                process.send_signal(signal.SIGKILL)
                process.wait(DEADLINE)
            all_whole_and_verified(content)
            had = len(documents(content))
        assert 0 < had < COUNT, "the pull finished before it was killed: slow the server down"
        server.delay = 0.0
        server.log.clear()
        result = pull(server.url, content, keys, "--all")
        assert result.code == 0, result.err
        fetched = server.requests_for("/bundle.json")
        assert fetched == COUNT - had, "documents it already had were fetched again"
    assert documents(content) == documents(origin)
    assert not [p.name for p in content.iterdir() if ".tmp-" in p.name]


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_pull_stopped_by_a_signal_says_so_without_a_traceback(
    many: tuple[Path, Path], keys: Path, tmp_path: Path, sent: signal.Signals, code: int
) -> None:
    content = tmp_path / "pulled"
    with serve(many[1]) as server:
        server.delay = 0.05
        process = pull_process(server.url, content, keys, "--all", "--jobs", "4", stderr=subprocess.PIPE)
        try:
            wait_for_more_documents(content, 1)
        finally:
            process.send_signal(sent)
            _, err = process.communicate(timeout=DEADLINE)
    assert process.returncode == code, err
    assert "stopped" in err and "Traceback" not in err and "never retrieved" not in err, err
    all_whole_and_verified(content)
