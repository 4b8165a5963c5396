"""An incremental build stopped at any moment: SIGKILL and SIGTERM, as a user sends them.

Two versions of 900 signed bundles (in the second, 210 of them have one event
more: under the share of changes past which a build is full, see
`full_or_incremental`), each built in full once for reference. Then, again and again, a real
`pith-mirror build` over a site of one version, with the content of the other,
is stopped: at random moments, and at the moment SITE starts to change. After
each stop, once no process of the build is left, SITE as it is must hold, for
every record, the whole old publication or the whole new one (a record page
never beside JSON of another version, the manifest never naming files that are
not there), with nothing else in it; then the next build must end byte-identical
to a clean full build.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import factories as f
from runkit import wait_for_no_process
from sitekit import REPO, Project, tree

from generator.build.write import lock_path
from generator.site import layout
from generator.site.layout import MANIFEST_PATH
from generator.site.manifest import manifest_entries

COUNT = 900
CHANGED = 210
ROUNDS = 12
DEADLINE = 60.0
ARGS = ["build", "content", "site", "--keys", "keys.json", "--jobs", "2", "--quiet"]


def versions(count: int, changed: int) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(name -> bytes) of `count` bundles, and of the same with the first `changed`
    of them one event later."""
    old, new = {}, {}
    for i in range(count):
        title = f"Paper number {i}"
        record = f.canonical_record(source_id=f"2112.{i:05d}", title=title)
        created = f.record_created_event(f.TEST_SIGNER, record)
        snapshot = f.graph_snapshot_event(f.TEST_SIGNER, record, title, prev_event=created["event_id"])
        later = f.graph_snapshot_event(
            f.TEST_SIGNER,
            record,
            title,
            created_at="2026-07-09T00:00:00Z",
            prev_event=snapshot["event_id"],
        )
        name = f"b{i:03d}.json"
        old[name] = f.to_bytes(f.bundle(record=record, title=title, events=[created, snapshot]))
        events = [created, snapshot, later] if i < changed else [created, snapshot]
        new[name] = f.to_bytes(f.bundle(record=record, title=title, events=events))
    return old, new


def put_content(project: Project, documents: dict[str, bytes]) -> None:
    for name, data in documents.items():
        (project.content / name).write_bytes(data)


def run_build(project: Project) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "generator", *ARGS],
        cwd=project.root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def reference(root: Path, documents: dict[str, bytes]) -> dict[str, bytes]:
    """The site a clean full build of `documents` makes."""
    project = Project(root)
    project.content.mkdir(parents=True)
    project.write_keys()
    put_content(project, documents)
    result = run_build(project)
    assert result.returncode == 0, result.stderr
    return tree(project.site)


def wait_until_stopped(project: Project, group: int) -> None:
    """Until no process of the build is left and SITE's lock is free (bounded)."""
    wait_for_no_process(group, DEADLINE)
    fd = os.open(lock_path(project.site), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # (raises if anything still holds it)
    finally:
        os.close(fd)


def mixed_records(
    now: dict[str, bytes], old: dict[str, bytes], new: dict[str, bytes], bodies: list[str]
) -> list[str]:
    """What a reader would find wrong: a record whose files are neither all the old
    publication's nor all the new one's, and a manifest entry whose files disagree."""
    problems = []
    for body in bodies:
        paths = layout.number_paths(body, True)
        mine = [now.get(p) for p in paths]
        if mine != [old.get(p) for p in paths] and mine != [new.get(p) for p in paths]:
            problems.append(f"{body}: files of both versions")
    for entry in manifest_entries(json.loads(now[MANIFEST_PATH]), now.get).values():
        body = entry["pith_number"].split(":")[2]
        bundle = now.get(layout.bundle_json(body))
        if bundle is None or hashlib.sha256(bundle).hexdigest() != entry["bundle_sha256"]:
            problems.append(f"{body}: the manifest names a bundle that is not there")
    return problems


def differences(now: dict[str, bytes], trees: list[dict[str, bytes]]) -> list[list[str]]:
    """The paths where SITE differs from each version (to say what a failure saw)."""
    return [
        sorted(p for p in now.keys() | other.keys() if now.get(p) != other.get(p))[:20] for other in trees
    ]


def moments(duration: float, rounds: int, seed: int) -> list[tuple[int, float | None]]:
    """(signal, seconds after the start, or None for "as soon as SITE changes")."""
    chance = random.Random(seed)
    plan: list[tuple[int, float | None]] = []
    for i in range(rounds):
        signum = signal.SIGKILL if i % 2 == 0 else signal.SIGTERM
        plan.append((signum, None if i % 4 in (0, 1) else chance.uniform(0.0, duration * 1.1)))
    return plan


def site_changing(project: Project) -> bool:
    """Whether the build has begun to change SITE: its journal holds a first file."""
    undo = project.root / ".site.undo"
    try:
        return (undo / "files").exists() or (undo / "created").stat().st_size > 0
    except FileNotFoundError:
        return False


def test_an_incremental_build_stopped_at_any_moment_leaves_each_record_whole(memory_tmp: Path) -> None:
    tmp_path = memory_tmp
    old, new = versions(COUNT, CHANGED)
    trees = [reference(tmp_path / "old", old), reference(tmp_path / "new", new)]
    project = Project(tmp_path / "mirror")
    project.content.mkdir(parents=True)
    project.write_keys()
    put_content(project, old)
    assert run_build(project).returncode == 0
    assert tree(project.site) == trees[0]
    kept = tmp_path / "kept"  # (the old site and its cache, put back before each round)
    for name in ("site", ".pith-cache"):
        shutil.copytree(project.root / name, kept / name)
    put_content(project, {name: data for name, data in new.items() if data != old[name]})

    started = time.monotonic()  # (one uninterrupted incremental build, to time the others)
    result = run_build(project)
    duration = time.monotonic() - started
    assert result.returncode == 0 and f"(incremental: {CHANGED} record(s) rendered" in result.stdout, result
    assert tree(project.site) == trees[1]

    seed = random.randrange(1 << 30)
    bodies = [json.loads(data)["pith_number"].split(":")[2] for data in old.values()]
    stopped = 0
    for round_, (signum, after) in enumerate(moments(duration, ROUNDS, seed)):
        for name in ("site", ".pith-cache"):
            shutil.rmtree(project.root / name)
            # (hard links: a build replaces files, never writes through one; if it
            # did, the next round would start from a damaged copy and fail)
            shutil.copytree(kept / name, project.root / name, copy_function=os.link)
        process = subprocess.Popen(
            [sys.executable, "-m", "generator", *ARGS],
            cwd=project.root,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # (its own process group: every process it starts is counted)
        )
        deadline = time.monotonic() + DEADLINE
        if after is None:
            while not site_changing(project) and process.poll() is None:
                assert time.monotonic() < deadline
                time.sleep(0.0005)
        else:
            time.sleep(after)
        if process.poll() is None:
            os.kill(process.pid, signum)
            stopped += 1
        # (else it ended first: a moment after the end, which the checks below cover too)
        _, err = process.communicate(timeout=DEADLINE)
        wait_until_stopped(project, process.pid)
        said = f"round {round_} (seed {seed}, {signal.Signals(signum).name} at {after}): {err}"
        if signum == signal.SIGTERM and process.returncode == -signal.SIGTERM:
            # (it landed while Python was starting or ending, outside the command's own
            # handling: the build had not begun or had finished, so SITE is one whole tree)
            assert tree(project.site) in trees and not project.staging.exists(), said
        elif signum == signal.SIGTERM:
            assert process.returncode in (0, 143), said
            if process.returncode == 143 and err == "pith-mirror: stopped; nothing was changed\n":
                assert tree(project.site) == trees[0], said  # (before the command began)
            elif process.returncode == 143:
                assert err.count("\n") == 1 and err.startswith("pith-mirror: stopped; site "), said
            assert not project.staging.exists(), said
        else:
            assert process.returncode in (0, -signal.SIGKILL), said

        now = tree(project.site)
        assert mixed_records(now, *trees, bodies) == [], said
        # nothing else either: every site-wide file of one version
        assert now in trees, (said, differences(now, trees))
        result = run_build(project)
        assert result.returncode == 0, result.stderr
        assert tree(project.site) == trees[1], said
        assert not (project.root / ".site.undo").exists() and not project.staging.exists()
    assert stopped >= ROUNDS // 2, f"only {stopped} of {ROUNDS} builds were still running when signalled"
