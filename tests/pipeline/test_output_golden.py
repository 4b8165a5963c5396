"""The built site's bytes, pinned: any change to any output file fails here.

A refactoring that promises "the output stays byte-identical" (the build cache,
the incremental build, the writers) is held to it by this test. It builds, with
the real CLI and a fixed clock (SOURCE_DATE_EPOCH), a corpus of 120 bench
bundles (bench/corpus.py, signed by its fixed bench key) plus the two real seed
documents of content/ (signed by the resolver's key), with a keys file pinning
both keys, and compares a digest of every file of the site ("sha256  path", one
line a file, sorted by path; hard-linked and symlinked files count as files)
with a committed golden listing in tests/pipeline/golden/:

- site-sha256.txt: a full build, made once with one worker and once with
  three, which must agree with each other before either is compared;
- site-changed-sha256.txt: the same corpus after one bundle gained a signed
  event (bench/corpus.py's `changed_bundle`), built incrementally over the first
  build and also built in full from scratch: the incremental site, the full
  site and the golden listing must agree byte for byte.

No file is left out: with SOURCE_DATE_EPOCH set, nothing in the site depends on
the clock, the machine, the folder or the number of workers. The listings also
change, legitimately, when a template, the seed documents, bench/corpus.py's
generator, `changed_bundle` or the version number (written into report.json and
the mirror manifest) changes.

When the output is meant to change, regenerate the listings deliberately:

    PITH_MIRROR_UPDATE_GOLDEN=1 python -m pytest tests/pipeline/test_output_golden.py

With the variable set, each test writes its listing instead of comparing, then
fails to say so (a run with it never passes); review `git diff` of the listings
and commit them with the change that explains them.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sitekit import REAL_BUNDLE, REAL_RECORD, REPO

from generator.trust.keys import default_keyring

if str(REPO) not in sys.path:  # for `bench`, which is no installed package
    sys.path.insert(0, str(REPO))

from bench import corpus
from bench.corpus import changed_bundle

GOLDEN = Path(__file__).resolve().parent / "golden"
FULL = GOLDEN / "site-sha256.txt"
CHANGED = GOLDEN / "site-changed-sha256.txt"
UPDATE = os.environ.get("PITH_MIRROR_UPDATE_GOLDEN") == "1"
REGENERATE = "PITH_MIRROR_UPDATE_GOLDEN=1 python -m pytest tests/pipeline/test_output_golden.py"

RECORDS = 120
CHANGED_INDEX = 60  # the bench bundle that gains an event
EPOCH = "1700000000"  # 2023-11-14T22:13:20Z: the build's only clock
SHOWN = 20  # paths listed per kind of difference


def make_project(root: Path, changed: bool = False) -> Path:
    """ROOT/content with the bench bundles and the two seeds, and ROOT/keys.json
    pinning the resolver's key and the bench key. `changed`: bundle CHANGED_INDEX
    as `changed_bundle` leaves it."""
    content = root / "content"
    content.mkdir(parents=True)
    for index in range(RECORDS):
        body, data = corpus.make_bundle(index)
        (content / f"{body}.bundle.json").write_bytes(
            changed_bundle(data, 1) if changed and index == CHANGED_INDEX else data
        )
    for seed in (REAL_RECORD, REAL_BUNDLE):
        (content / seed.name).write_bytes(seed.read_bytes())
    keys = [dict(key.entry) for key in default_keyring().keys] + [corpus.key_entry()]
    (root / "keys.json").write_text(json.dumps(keys, indent=2) + "\n", "utf-8")
    return root


def change_one_bundle(root: Path) -> None:
    body, data = corpus.make_bundle(CHANGED_INDEX)
    path = root / "content" / f"{body}.bundle.json"
    assert path.read_bytes() == data
    path.write_bytes(changed_bundle(data, 1))


def build(root: Path, jobs: int) -> str:
    """`pith-mirror build` of ROOT/content into ROOT/site (cache beside it, in
    ROOT/.pith-cache), run from ROOT so no settings file is read; its stdout."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": EPOCH, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "generator", "build", "--keys", "keys.json", "--jobs", str(jobs)]
    done = subprocess.run(
        [*command, "content", "site"], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"published {RECORDS + 2}, refused 0 file(s)" in done.stdout, done.stdout
    return done.stdout


def digests(site: Path) -> dict[str, str]:
    """Every file under `site`, hidden ones included, by relative path -> its sha256
    (a link is read as the file it leads to)."""
    found = {}
    for folder, _, names in os.walk(site, followlinks=True):
        for name in names:
            path = Path(folder, name)
            found[path.relative_to(site).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return dict(sorted(found.items()))


def listing(files: dict[str, str]) -> str:
    return "".join(f"{digest}  {path}\n" for path, digest in files.items())


def parse(text: str) -> dict[str, str]:
    pairs = (line.split("  ", 1) for line in text.splitlines() if line)
    return {path: digest for digest, path in pairs}


def differences(expected: dict[str, str], actual: dict[str, str]) -> str:
    """What changed from `expected` to `actual`: paths added, removed and changed
    (the first SHOWN of each); "" when nothing did."""
    kinds = {
        "added": sorted(actual.keys() - expected.keys()),
        "removed": sorted(expected.keys() - actual.keys()),
        "changed": sorted(p for p in expected.keys() & actual.keys() if expected[p] != actual[p]),
    }
    lines = []
    for kind, paths in kinds.items():
        if paths:
            lines.append(f"{kind} ({len(paths)}):")
            lines += [f"  {path}" for path in paths[:SHOWN]]
            if len(paths) > SHOWN:
                lines.append(f"  ... and {len(paths) - SHOWN} more")
    return "\n".join(lines)


def expect_same(expected: dict[str, str], actual: dict[str, str], what: str) -> None:
    """Fail, listing the differences, unless the two sites' digests are the same."""
    if changed := differences(expected, actual):
        pytest.fail(f"{what}:\n{changed}", pytrace=False)


def check_golden(golden: Path, files: dict[str, str]) -> None:
    """Compare `files` with the listing in `golden`, or write it there when updating."""
    name = golden.relative_to(REPO)
    if UPDATE:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(listing(files), "utf-8")
        pytest.fail(
            f"PITH_MIRROR_UPDATE_GOLDEN=1: wrote {name} ({len(files)} files) instead of comparing;"
            " review its diff, then run the test without the variable",
            pytrace=False,
        )
    if not golden.is_file():
        pytest.fail(f"no {name}: make it with {REGENERATE}", pytrace=False)
    expect_same(
        parse(golden.read_text("utf-8")),
        files,
        f"the site's bytes differ from {name} (if that is intended, regenerate the listings with"
        f" {REGENERATE}, and commit them with the change)",
    )


def test_a_full_build_matches_the_golden_listing_with_one_worker_or_three(tmp_path: Path) -> None:
    one = make_project(tmp_path / "one")
    three = make_project(tmp_path / "three")
    build(one, jobs=1)
    build(three, jobs=3)
    alone, shared = digests(one / "site"), digests(three / "site")
    expect_same(alone, shared, "the number of workers changed the output (jobs 1 -> 3)")
    check_golden(FULL, shared)


def test_an_incremental_build_matches_the_golden_listing_and_a_full_build(tmp_path: Path) -> None:
    changing = make_project(tmp_path / "changing")
    build(changing, jobs=2)
    before = digests(changing / "site")
    if not UPDATE:  # (an update writes this listing in the test above)
        check_golden(FULL, before)
    change_one_bundle(changing)
    summary = build(changing, jobs=2)
    assert "(incremental:" in summary, (
        f"the second build was not incremental, so this test missed the incremental path: {summary}"
    )
    incremental = digests(changing / "site")
    assert differences(before, incremental), "the changed bundle changed no file of the site"
    fresh = make_project(tmp_path / "fresh", changed=True)
    build(fresh, jobs=2)
    full = digests(fresh / "site")
    expect_same(full, incremental, "the incremental build differs from a full build of the same content")
    check_golden(CHANGED, incremental)
