"""generator/workers.py: a killed build leaves no worker behind."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from generator.build.workers import _end_with_parent

REPO = Path(__file__).resolve().parents[2]

POOL = """
import concurrent.futures, multiprocessing, os, sys, time
from generator.build.workers import _end_with_parent
pool = concurrent.futures.ProcessPoolExecutor(
    2, mp_context=multiprocessing.get_context(sys.argv[1]), initializer=_end_with_parent
)
busy = [pool.submit(time.sleep, 0.5) for _ in range(2)]  # (two at once: both workers start)
print(*sorted(pool.submit(os.getpid).result() for _ in range(20)), flush=True)
print(*{p.pid for p in pool._processes.values()}, flush=True)
time.sleep(60)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # (ESRCH: reaped between open and read)
        return False


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the kernel's parent-death signal is Linux's"
)
@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_idle_workers_end_when_their_build_is_killed(method: str) -> None:
    """Idle workers wait on a task pipe their siblings also hold open, so a SIGKILL
    of the parent, which cannot stop its pool, would leave them waiting forever. A
    forkserver's workers (`serve` builds with one) hold the pipe the forkserver
    waits on to end, so neither would end by itself."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    parent = subprocess.Popen(
        [sys.executable, "-c", POOL, method], stdout=subprocess.PIPE, text=True, env=env
    )
    workers: list[int] = []
    try:
        assert parent.stdout is not None
        parent.stdout.readline()
        workers = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(workers) == 2 and all(alive(pid) for pid in workers)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(pid) for pid in workers)
    finally:
        parent.kill()
        for pid in workers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_worker_whose_parent_is_process_1_works() -> None:
    """In a container the build itself may be process 1: a worker must not take its
    parent for gone because the parent's id is 1 (each build here then failed)."""
    build = [sys.executable, "-m", "generator", "build", "--jobs", "2", "--quiet"]
    command = ["unshare", "--pid", "--fork", "--mount-proc", *build, str(REPO / "content")]
    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot start a process as process 1 here: {probe.stderr.decode().strip()}")
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run([*command, f"{scratch}/site"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert os.path.isfile(f"{scratch}/site/index.html")


LATE_WORKER = """
import concurrent.futures, multiprocessing, os, time
from generator.build.workers import _end_with_parent

def late_start():
    time.sleep(1.5)  # (the build that asked for this worker is gone by now, its forkserver too)
    _end_with_parent(None)

if __name__ == "__main__":
    pool = concurrent.futures.ProcessPoolExecutor(
        1, mp_context=multiprocessing.get_context("forkserver"), initializer=late_start
    )
    pool.submit(int)
    print(*pool._processes, flush=True)
    os._exit(0)
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the kernel's parent-death signal is Linux's"
)
def test_a_forkserver_worker_whose_build_ended_before_it_started_ends(tmp_path: Path) -> None:
    """A build killed while its forkserver starts a worker: the forkserver ends with
    the build, before the worker asks the kernel to be told, so the worker must see
    for itself that the build is gone (else it waits for work forever)."""
    script = tmp_path / "late_worker.py"
    script.write_text(LATE_WORKER)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    build = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    workers: list[int] = []
    try:
        assert build.stdout is not None
        workers = [int(pid) for pid in build.stdout.readline().split()]
        assert len(workers) == 1
        build.wait(timeout=30)
        deadline = time.monotonic() + 30
        while alive(workers[0]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(workers[0])
    finally:
        build.kill()
        for pid in workers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_worker_whose_parent_is_not_the_one_named_ends_at_once() -> None:
    """The kernel signals only a parent's end after the request, so a worker whose
    parent already ended (it then has another) must end by itself: here the parent
    named is one it cannot have."""
    pool = ProcessPoolExecutor(
        1, mp_context=multiprocessing.get_context("fork"), initializer=_end_with_parent, initargs=(-1,)
    )
    with pool, pytest.raises(BrokenProcessPool):
        pool.submit(os.getpid).result(timeout=30)
