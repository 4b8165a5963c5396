"""Run the timing-sensitive suites again and again on a busy machine; count failures per test.

    python tests/stability.py --runs 20             # serve, e2e and browser suites, 20 times
    python tests/stability.py --runs 3 tests/serve  # other suites

Not collected by pytest (its name does not start with `test_`). While it runs,
`--hogs` processes (default: one per core) spin at full speed, so every wait in
the suites meets a machine with no idle core: a test that passes only on an idle
machine fails here. Each run's JUnit XML is read for the tests that failed or
errored; the summary lists each with its count, and the exit status is 1 when
any failed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUITES = ["tests/browser", "tests/e2e", "tests/serve"]
"""In pytest's own order: the browser suite's Playwright session must end before
the end-to-end suite's starts (two sync sessions cannot run in one process)."""


def _spin() -> None:
    while True:
        pass


def _failures(junit: Path) -> list[str]:
    """Ids of the tests that failed or errored in one run's JUnit XML (the run's own
    failure when pytest wrote none)."""
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return ["<pytest wrote no report>"]
    failed = []
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(f"{case.get('classname')}::{case.get('name')}")
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("suites", nargs="*", default=SUITES, help="test paths (default: browser, e2e, serve)")
    parser.add_argument("--runs", type=int, default=20, help="how many times to run them (default 20)")
    cores = os.cpu_count() or 2
    parser.add_argument("--hogs", type=int, default=cores, help="busy processes (default: one per core)")
    args = parser.parse_args(argv)

    hogs = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.hogs)]
    for hog in hogs:
        hog.start()
    counts: Counter[str] = Counter()
    env = dict(os.environ, PITH_MIRROR_REQUIRE_BROWSER="1")
    try:
        with tempfile.TemporaryDirectory() as folder:
            for run in range(1, args.runs + 1):
                junit = Path(folder) / f"run-{run}.xml"
                started = time.monotonic()
                command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
                result = subprocess.run(
                    [*command, f"--junitxml={junit}", *args.suites],
                    cwd=REPO,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                failed = _failures(junit) if result.returncode != 0 else []
                if result.returncode != 0 and not failed:
                    failed = [f"<pytest exited {result.returncode}>"]
                counts.update(failed)
                took = time.monotonic() - started
                line = f"run {run}/{args.runs}: {len(failed)} failed in {took:.0f}s"
                print(line, *failed, sep="\n  ", flush=True)
    finally:
        for hog in hogs:
            hog.terminate()
            hog.join()
    print(f"\n{args.runs} runs of {' '.join(args.suites)} with {args.hogs} busy processes:")
    if not counts:
        print("no test failed")
        return 0
    for name, count in counts.most_common():
        print(f"{count:3d}  {name}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
