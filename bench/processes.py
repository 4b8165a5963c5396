"""What the benchmarks read of the builds they run: the process tree under a build,
and its memory (Linux /proc), and the environment a build runs in.

Shared by bench/run.py and bench/cluster.py, so that both sample memory alike."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
# The builds import `generator` from this script's own tree (not whatever an
# editable install points at), so a copy of the repository benchmarks itself.
CHILD_ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
}


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


def pss(pid: int) -> int:
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
