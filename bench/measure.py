"""How the benchmarks measure a build: its wall time, its CPU and the peak memory of
its process tree (Linux /proc), and which machine and code they measured.

Shared by bench/run.py and bench/cluster.py, so that both measure alike."""

from __future__ import annotations

import compileall
import contextlib
import filecmp
import os
import platform
import resource
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator import __version__

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_SECONDS = 0.02
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
# The builds import `generator` from this script's own tree (not whatever an
# editable install points at), so a copy of the repository benchmarks itself.
# They run as an installed package runs: from byte code (see `compile_package`), and
# free to cache it, whatever the environment the benchmark was started from says.
CHILD_ENV = {
    **{name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"},
    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
}


def compile_package() -> None:
    """Byte-compile `generator/`, as pip does when it installs a package. A build in a
    new process otherwise compiles every module it imports whenever byte code is not
    written (PYTHONDONTWRITEBYTECODE): 0.13 s more for one change at 20,000 records,
    a cost no installed copy pays."""
    compileall.compile_dir(ROOT / "generator", quiet=1)


def _children(pid: int) -> list[int]:
    """Direct children of pid, from /proc/<pid>/task/*/children (Linux)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                found += [int(p) for p in handle.read().split()]
        except OSError:
            continue
    return found


def _children_by_scan(pid: int) -> list[int]:
    """Fallback when the kernel has no /proc/.../children: scan every process's parent."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(name))
    return found


CHILDREN = (
    _children if os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children") else _children_by_scan
)


def tree(root: int) -> list[int]:
    """`root` and every process under it (a build's workers, a LocalCluster's nannies and workers)."""
    pids, queue = [], [root]
    while queue:
        pid = queue.pop()
        pids.append(pid)
        queue += CHILDREN(pid)
    return pids


def rss(pid: int) -> int:
    """Resident set size in bytes (0 for a process that has ended)."""
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * PAGE_SIZE
    except (OSError, IndexError, ValueError):
        return 0


def pss_of(pid: int) -> int:
    """Proportional set size in bytes (shared pages divided among their sharers); 0 where
    /proc has no smaps_rollup."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


@dataclass
class Measured:
    seconds: float
    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float = 0.0
    """User + system CPU of the process and every descendant it waited for (its workers)."""
    peak_rss_bytes: int = 0
    peak_pss_bytes: int | None = None
    """None when PSS was not read (see `measure`); 0 where /proc has no smaps_rollup."""
    peak_processes: int = 0
    samples: int = 0


RUNNING: list[subprocess.Popen[str]] = []
"""Builds started and not yet waited for: stopped if the benchmark is (bench/run.py)."""


def start(cmd: list[str], cwd: Path) -> subprocess.Popen[str]:
    """Start a build in a session of its own (its workers with it), output captured."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=CHILD_ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    RUNNING.append(proc)
    return proc


def measure(
    cmd: list[str],
    cwd: Path,
    sample: bool,
    before: Callable[[], None] | None = None,
    pss: bool = False,
) -> Measured:
    """Run cmd; wall time from just before `before()` (or the start) to its exit.

    With sample=True a thread sums RSS over the process and all its descendants
    every ~20 ms and keeps the maximum. RSS counts pages shared by forked
    workers once per process, so the RSS sum over-states real use; PSS splits
    shared pages and is the fairer number, summed too with pss=True. Reading
    PSS walks each process's whole memory map under the lock the process needs
    to grow (about 3 ms for 150 MB, 50 ms for Hugo's 2.7 GB), so it is read
    only where the time is not what is measured (`--memory-only`); reading RSS
    costs 40 us a process.
    """
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_before = usage.ru_utime + usage.ru_stime
    started = time.perf_counter()
    if before is not None:
        before()
    proc = start(cmd, cwd)
    peaks = {"rss": 0, "pss": 0, "procs": 0, "samples": 0}
    done = threading.Event()

    def sampler() -> None:
        while not done.is_set():
            pids = tree(proc.pid)
            peaks["rss"] = max(peaks["rss"], sum(rss(p) for p in pids))
            if pss:
                peaks["pss"] = max(peaks["pss"], sum(pss_of(p) for p in pids))
            peaks["procs"] = max(peaks["procs"], len(pids))
            peaks["samples"] += 1
            done.wait(SAMPLE_SECONDS)

    thread = threading.Thread(target=sampler, daemon=True) if sample else None
    if thread is not None:
        thread.start()
    stdout, stderr = proc.communicate()
    seconds = time.perf_counter() - started
    done.set()
    if thread is not None:
        thread.join()
    RUNNING.remove(proc)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - cpu_before
    return Measured(
        seconds,
        proc.returncode,
        stdout,
        stderr,
        cpu,
        peaks["rss"],
        peaks["pss"] if pss else None,
        peaks["procs"],
        peaks["samples"],
    )


def same_tree(a: Path, b: Path) -> bool:
    """Whether two folders hold the same files with the same bytes, all the way down."""
    match = filecmp.dircmp(a, b)
    if match.left_only or match.right_only or match.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, match.common_files, shallow=False)
    return not mismatch and not errors and all(same_tree(a / d, b / d) for d in match.common_dirs)


def loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    with contextlib.suppress(OSError):
        mem = subprocess.run(["free", "-h"], capture_output=True, text=True, check=False).stdout.strip()
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "free_h": mem,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "pith_mirror": __version__,
        "code": code_version(),
    }


def code_version() -> dict[str, Any]:
    """Which code was measured: the checkout's commit and any uncommitted change to it."""

    def git(*args: str) -> str:
        try:
            result = subprocess.run(
                ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
            )
        except OSError:
            return ""
        return result.stdout.rstrip("\n") if result.returncode == 0 else ""

    status = git("status", "--porcelain", "--", "generator", "templates", "pyproject.toml")
    return {
        "commit": git("rev-parse", "--short", "HEAD").strip() or "unknown (not a git checkout)",
        "uncommitted": [line[3:] for line in status.splitlines()],
    }
