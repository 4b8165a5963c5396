"""Builds on a Dask cluster: connecting to one (or starting one on this machine),
and an executor that runs the build's worker tasks there.

`pith-mirror build --scheduler ADDRESS` (or `scheduler = "..."` in the settings)
hands the per-record work (verify, render) and a full build's listing pages
and search index to a Dask cluster instead of the local process pool;
`--scheduler local` starts a `LocalCluster` of `jobs` worker processes here.
Everything else (the stage order, the selection, the site-wide stage, the
publication) stays in the build's own process, as with the pool.

Rules:
- Dask is an optional extra (`pip install 'pith-mirror[cluster]'`), imported
  only when a build asks for a cluster; without it that build is a
  `ConfigError` naming the extra, and nothing is written.
- The executor is a `concurrent.futures.Executor`, as the pool is: `map` gives
  results in the order of its items, so the output is the same bytes whatever
  the number of workers and tasks. It sends items in batches (`batch_size`):
  one Dask task a record would cost more to schedule than to run.
- Workers are set up as the pool's are (`workers.init_worker`), lazily: every
  task carries its build's `Setup`, and a worker process initialises itself on
  the first task of a build it has not seen. A worker restarted after a crash,
  or one that joined late, is set up by the first task it is given.
- Workers write into the build's staging folder themselves, as pool workers
  do: they must see the build's folders at the same paths (the same machine,
  or a shared file system). A worker that cannot is refused (`BuildError`)
  before it writes anything.
- A task that runs again (its worker died and the scheduler gave it to
  another) writes the same bytes again: the files of a record depend only on
  its documents, and `Writer` replaces a file rather than writing through it.
- A failure of the cluster (a task whose workers died too often, a lost
  scheduler) is a `BuildError`; so is a scheduler nothing answers at. Stopping
  the executor (`shutdown`) stops the build's tasks still running on the
  workers and waits for them, so none writes into the staging folder after
  the build has removed it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError, Executor, Future
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from .. import __version__
from ..site.config import SiteConfig
from ..trust.errors import BuildError, ConfigError
from ..trust.keys import Keyring
from .workers import init_worker

T = TypeVar("T")

Dask = Any
"""A `distributed` object (client, cluster, future): its calls are not typed."""

INSTALL = "pip install 'pith-mirror[cluster]'"

TASKS_PER_WORKER = 4
"""A large map is cut into up to this many tasks for each worker process, so that
no worker is left long with the last one."""

MIN_BATCH = 250
"""Items (records) a map's task holds at least, where the map is large enough for
each worker to have one: a Dask task costs about 3 ms of the scheduler's, the
client's and the worker's time, about what one record costs (see bench/README.md),
so a task of 250 records spends under 1 % of its time being one."""

MAX_BATCH = 1000
"""At most: a task and its results travel as one message each (a record's result is
about 1.4 kB pickled), and a worker that dies loses the work of its task so far."""

IN_FLIGHT = 2
"""Tasks on the cluster at once for each worker: the one it runs, and the next."""

STOP_WAIT = 60.0
"""Seconds `shutdown` waits for stopped tasks to end before it gives up on them."""


def batch_size(items: int, workers: int) -> int:
    """Items a task of a map of `items` holds, on `workers` worker processes: as many
    tasks as workers, or twice, three or four times as many where each still holds
    MIN_BATCH items (a number of tasks that is not a multiple of the workers leaves
    some idle through the last round); never more than MAX_BATCH a task, and then
    as many tasks as that takes (each worker is sent the next as it ends one: see
    IN_FLIGHT)."""
    workers = max(1, workers)
    rounds = max(1, min(TASKS_PER_WORKER, items // (workers * MIN_BATCH)))
    return min(max(1, -(-items // (workers * rounds))), MAX_BATCH)


def batch_bounds(items: int, workers: int, least: int = 1) -> list[tuple[int, int]]:
    """The (start, end) of each task of a map of `items`: `batch_size` items a task
    (or `least`, if larger), then, once what is left is the last round of such
    tasks, smaller ones (half of each worker's share of what is left, never under
    MIN_BATCH nor `least`), so that no worker waits long through another's last
    task. Tasks already near that floor stay as they are."""
    size = max(least, batch_size(items, workers))
    floor = max(MIN_BATCH, least)
    workers = max(1, workers)
    bounds, start = [], 0
    while start < items:
        left = items - start
        step = size
        if size >= 2 * floor and left <= workers * size:
            step = max(floor, -(-left // (2 * workers)))
        if left - step < floor and left <= size:  # (no small task left over at the end)
            step = left
        bounds.append((start, start + step))
        start += step
    return bounds


def weighted_bounds(calls: int, weight: int, workers: int, least: int = 1) -> list[tuple[int, int]]:
    """`batch_bounds` for calls that each stand for `weight` records (a batch of
    documents read together): cut by records, so a task holds as many records as an
    unbatched map's, then rounded to whole calls, none empty."""
    records = batch_bounds(calls * weight, workers, least * weight)
    cut = ((-(-a // weight), -(-b // weight)) for a, b in records)
    return [(start, end) for start, end in cut if end > start]


# ---------------------------------------------------------------- the build's side


def cluster_executor(
    config: SiteConfig, keyring: Keyring, staging: Path, shared_files: bool
) -> ClusterExecutor:
    """Connect to `config.scheduler` (or start a LocalCluster of `config.jobs` workers
    for "local") and return an executor whose tasks set their worker up as
    `init_worker(config, keyring, staging, shared_files)` does a pool's."""
    assert config.scheduler is not None
    distributed = _distributed()
    cluster: Dask = None
    client: Dask = None
    where = config.scheduler
    settings = dask_config().set(BUILD_SETTINGS)  # (until the executor is shut down)
    try:
        if config.scheduler == "local":
            # (each nanny hands the settings it was made under to the worker it starts)
            try:
                with dask_config().set(LOCAL_CLUSTER_SETTINGS):
                    cluster = distributed.LocalCluster(
                        n_workers=config.jobs,
                        threads_per_worker=1,  # (a worker runs one task at a time: see `_RUN`)
                        processes=True,
                        dashboard_address=None,
                        silence_logs=logging.CRITICAL,  # (a failed task is the build's to report)
                        preload=[__name__],  # (`dask_setup`, in each worker process)
                    )
            except Exception as exc:  # (Dask's own: a temporary folder, open files, a setting)
                raise BuildError("local", f"cannot start a Dask cluster here ({_reason(exc)})") from None
            where = str(cluster.scheduler_address)
            # (results straight from the workers, not relayed by the scheduler, which
            # here shares this process and its cores with the build)
            client = _connected(distributed, where, cluster, direct_to_workers=True)
        else:
            client = _connected(distributed, config.scheduler, config.scheduler)
        try:
            workers = len(client.scheduler_info()["workers"])
            if workers == 0:
                try:
                    client.wait_for_workers(1, timeout=_connect_timeout())
                except (OSError, TimeoutError):
                    raise BuildError(where, "the Dask scheduler has no workers") from None
                workers = len(client.scheduler_info()["workers"])
        except BuildError:
            raise
        except Exception as exc:
            raise BuildError(where, f"the Dask scheduler did not answer as one ({_reason(exc)})") from None
        setup = _setup(config, keyring, staging, shared_files)
        return ClusterExecutor(client, cluster, setup, where, workers, settings)
    except BaseException:
        _close(client, cluster)
        settings.__exit__(None, None, None)
        raise


BUILD_SETTINGS = {"distributed.admin.low-level-log-length": 0}
"""Dask settings in the build's process while it has a cluster: no log of recent
messages in its client (nor in a LocalCluster's scheduler, which runs in this
process too). Each such log keeps the last thousand messages sent for debugging,
and with them every task's arguments: at 5,000 bench records, the build's
process held four copies of every record's task (and of the summaries its
listing pages carry) when its stages were done, and 152 MB instead of 54."""

LOCAL_CLUSTER_SETTINGS = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.tick.interval": "1s",
}
"""Dask settings of a LocalCluster the build starts (its scheduler and nannies, in
the build's process, and its workers): no statistical profiler, which samples every
thread's stack every 10 ms for the dashboard (which such a cluster does not have) and
cost its workers about 6 % of their time; and its other timers less often. Every
process of such a cluster wakes to sample its CPU, memory and network use every
0.5 s, to check its workers' memory every 0.1 s and to time its event loop every
20 ms, for a dashboard, for memory limits that nothing here comes near in a tenth of
a second, and for warnings of a blocked loop: 2.5 % of a busy worker's CPU time and
3 % of a core in the build's process, against under 0.5 % and 1 % less often."""


def dask_config() -> Dask:
    """`dask.config`."""
    _distributed()
    import dask.config

    return dask.config


def _distributed() -> Dask:
    """Dask's `distributed` module; a `ConfigError` naming the extra when it is not installed."""
    try:
        import distributed
    except ImportError:
        raise ConfigError(
            "scheduler",
            "building on a Dask cluster needs Dask's distributed scheduler, which is not"
            f" installed: {INSTALL}",
        ) from None
    return distributed


def _setup(config: SiteConfig, keyring: Keyring, staging: Path, shared_files: bool) -> Setup:
    cwd = os.getcwd()
    folder = staging.absolute()
    return Setup(
        build=uuid.uuid4().hex,
        version=__version__,
        cwd=cwd,
        folder=str(folder),
        inode=folder.stat().st_ino,
        args=(config, keyring, folder, shared_files),
    )


def _connect_timeout() -> float:
    from dask.utils import parse_timedelta

    seconds = parse_timedelta(dask_config().get("distributed.comm.timeouts.connect"), "s")
    return float(seconds) if seconds is not None else 30.0


def _connected(distributed: Dask, where: str, to: Any, **options: Any) -> Dask:
    """A client of the scheduler at `to` (an address, or a LocalCluster at `where`);
    BuildError for whatever Dask raises: nothing answering, an answer that is not a
    scheduler's (its own decoding errors), TLS with no settings, a bad timeout setting."""
    try:
        return distributed.Client(to, set_as_default=False, **options)
    except (OSError, TimeoutError) as exc:
        raise BuildError(where, f"no Dask scheduler answers at this address ({_reason(exc)})") from None
    except Exception as exc:
        raise BuildError(where, f"cannot use the Dask scheduler at this address ({_reason(exc)})") from None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _close(client: Dask, cluster: Dask) -> None:
    """Close what `cluster_executor` opened; a cluster that will not close is left
    to Dask's own handler at exit."""
    for closing in (client, cluster):
        if closing is not None:
            with contextlib.suppress(Exception):
                closing.close()


class ClusterExecutor(Executor):
    """The build's tasks on a Dask cluster, in the pool's terms: `submit` and `map`.

    Results and exceptions come back as the worker function gave them; a failure
    of the cluster itself is a `BuildError` (see `_failure`). Tasks go to the
    cluster a few at a time (IN_FLIGHT for each worker, in the order they were
    given), the rest wait here as the objects they are: sent at once, every
    task's arguments would be held pickled by the scheduler until it ran (a full
    build's listing pages and search rows: every record's summary again, in a
    LocalCluster's scheduler in this very process)."""

    def __init__(
        self, client: Dask, cluster: Dask, setup: Setup, where: str, workers: int, settings: Dask
    ) -> None:
        self.client, self.cluster, self.setup, self.where = client, cluster, setup, where
        self.settings = settings
        """`BUILD_SETTINGS` in force, until `shutdown` puts Dask's back."""
        self.workers = workers
        """Worker processes when the build began: how many tasks a map is cut into."""
        self._lock = threading.Lock()
        self._waiting: deque[_Task] = deque()
        self._running: dict[str, Dask] = {}
        """Dask's future of each task sent and not yet taken back, by key."""
        self._count = 0
        self._shut = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        if kwargs:
            raise TypeError("keyword arguments are not sent to cluster tasks")
        return self._queue(_run_one, fn, args)

    def map(
        self,
        fn: Callable[..., T],
        *iterables: Iterable[Any],
        timeout: float | None = None,
        chunksize: int = 1,
        **kwargs: Any,
    ) -> Iterator[T]:
        """`fn` over the items, in batches (`batch_bounds`; `chunksize`, meant for a
        local pool, only ever makes them larger); results in the items' order."""
        calls = list(zip(*iterables, strict=True))
        # (an item may stand for several records: `items_per_call`, see workers.document_batch_task)
        weight = max(1, getattr(fn, "items_per_call", 1))
        bounds = weighted_bounds(len(calls), weight, self.workers, chunksize)
        batches: list[Future[list[T]] | None] = [
            self._queue(_run_batch, fn, calls[start:end]) for start, end in bounds
        ]

        def results() -> Iterator[T]:
            try:
                for index, batch in enumerate(batches):
                    assert batch is not None
                    done = batch.result(timeout)
                    batches[index] = None  # (the build holds what it needs of them)
                    yield from done
            finally:
                for left in batches:
                    if left is not None:
                        left.cancel()

        return results()

    def _queue(self, runner: Callable[..., Any], fn: Callable[..., Any], payload: Any) -> Future[Any]:
        """A task, sent now if few are on the cluster, else once one comes back."""
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._count += 1
            name = getattr(fn, "__name__", "task")
            # (the key as the dashboard shows it: the worker function, the build, a count;
            # unique, so no task is ever taken for another's result)
            key = f"pith-{name}-{self.setup.build[:12]}-{self._count}"
            task = _Task(key, runner, fn, payload, Future())
            self._waiting.append(task)
        self._send_waiting()
        return task.done

    def _send_waiting(self) -> None:
        while True:
            with self._lock:
                if self._shut or not self._waiting or len(self._running) >= IN_FLIGHT * self.workers:
                    return
                task = self._waiting.popleft()
                if not task.done.set_running_or_notify_cancel():  # (cancelled while it waited)
                    continue
                # (pickled here, once: the scheduler holds and forwards bytes, where it would
                # unpickle the task's arguments and pickle them again for the worker; and
                # only as it is sent, so the tasks that wait hold no copy of their items;
                # plain pickle, as a process pool's tasks are)
                try:
                    parts = (task.runner, self.setup, task.fn, task.payload)
                    packed = pickle.dumps(parts, pickle.HIGHEST_PROTOCOL)
                except Exception as exc:  # (an item that cannot travel: the caller's to see)
                    task.done.set_exception(exc)
                    continue
                sent = self.client.submit(_run_packed, packed, key=task.key, pure=False)
                self._running[task.key] = sent
            sent.add_done_callback(partial(self._take_back, task))

    def _take_back(self, task: _Task, sent: Dask) -> None:
        """(On Dask's callback thread.) The task's result or exception into its future,
        then the next task in its place."""
        try:
            task.done.set_result(self._result(sent))
        except BaseException as exc:
            task.done.set_exception(exc)
        finally:
            with self._lock:
                self._running.pop(task.key, None)
            self._send_waiting()

    def _result(self, task: Dask) -> Any:
        distributed = _distributed()
        try:
            return task.result()
        except (
            distributed.scheduler.KilledWorker,
            CancelledError,
            distributed.comm.core.CommClosedError,
            TimeoutError,
        ) as exc:
            raise _failure(self.where, exc) from None

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking tasks, and close the connection (and a LocalCluster this build
        started). With `cancel_futures` (a build that failed or was stopped), tasks
        not finished are cancelled, and with `wait` every task of the build still
        running on a worker, cancelled already or not, is stopped and waited for
        (`_stop_running`); without, `wait` waits for every task to finish."""
        with self._lock:
            if self._shut:
                return
            waiting = list(self._waiting) if cancel_futures else []
            if cancel_futures:
                self._waiting.clear()
                self._shut = True
        for task in waiting:
            task.done.cancel()
        try:
            if cancel_futures:
                with self._lock:
                    running = list(self._running.values())
                if running:
                    self.client.cancel(running)
                if wait and self._count:
                    self._stop_running()
            elif wait:
                while True:  # (every task, those still waiting here included)
                    with self._lock:
                        left = [task.done for task in self._waiting]
                        left += [sent for sent in self._running.values() if not sent.done()]
                    if not left:
                        break
                    with contextlib.suppress(Exception):
                        left[0].result()
        except Exception:  # (a cluster gone: nothing of it is left to wait for)
            pass
        finally:
            with self._lock:
                self._shut = True
            _close(self.client, self.cluster)
            self.settings.__exit__(None, None, None)

    def _stop_running(self) -> None:
        """Have every worker stop this build's tasks (each stops before its next item),
        and wait until none runs: a cancelled Dask task that has begun runs on,
        and would write into a staging folder the build is about to remove."""
        deadline = time.monotonic() + STOP_WAIT
        while time.monotonic() < deadline:
            running = self.client.run(_stop, self.setup.build, on_error="ignore")
            if not any(running.values()):
                return
            time.sleep(0.05)


@dataclass(frozen=True, slots=True)
class _Task:
    key: str
    runner: Callable[..., Any]
    fn: Callable[..., Any]
    payload: Any
    done: Future[Any]
    """What the build holds: its result once it has come back."""


def _failure(where: str, exc: BaseException) -> BuildError:
    """A failure of the cluster (not of the build's own code) as one line."""
    distributed = _distributed()

    if isinstance(exc, distributed.scheduler.KilledWorker):
        return BuildError(
            where,
            "a cluster worker stopped unexpectedly (out of memory?) while it ran a task, and so did"
            f" every worker that ran it again: {exc.allowed_failures + 1} in all",
        )
    return BuildError(where, f"the build lost its Dask cluster ({_reason(exc)})")


# ---------------------------------------------------------------- the workers' side


@dataclass(frozen=True, slots=True)
class Setup:
    """What a worker needs to work for one build; sent with every task (a few kB)."""

    build: str
    """This build's id: a worker set up for another build sets itself up again."""
    version: str
    cwd: str
    """The build's working folder: its paths may be relative to it."""
    folder: str
    inode: int
    """The staging folder's, as the build sees it: a worker that sees another is refused."""
    args: tuple[SiteConfig, Keyring, Path, bool]
    """`init_worker`'s arguments."""


_RUN = threading.Lock()
"""Held while a task runs: a worker process's state (`workers._WORKER`) is one
build's at a time, and its writer is not shared between threads. (A worker with
several threads runs one of these tasks at a time; start workers with
`--nthreads 1` and one process a core.)"""
_COUNTS = threading.Lock()
_RUNNING: dict[str, int] = {}
"""Tasks of each build running (or waiting for `_RUN`) in this process."""
_STOPPED: set[str] = set()
_CURRENT = [""]
"""The build this process is set up for."""


def _run_packed(packed: bytes) -> Any:
    runner, setup, fn, payload = pickle.loads(packed)
    return runner(setup, fn, payload)


def _run_batch(setup: Setup, fn: Callable[..., T], calls: list[tuple[Any, ...]]) -> list[T]:
    with _running(setup):
        results = []
        for args in calls:
            _still_wanted(setup)
            results.append(fn(*args))
        return results


def _run_one(setup: Setup, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    return _run_batch(setup, fn, [args])[0]


@contextlib.contextmanager
def _running(setup: Setup) -> Iterator[None]:
    with _COUNTS:
        _RUNNING[setup.build] = _RUNNING.get(setup.build, 0) + 1
    try:
        with _RUN:
            _enter(setup)
            yield
    finally:
        with _COUNTS:
            _RUNNING[setup.build] -= 1
            if not _RUNNING[setup.build]:
                del _RUNNING[setup.build]


def _enter(setup: Setup) -> None:
    """Set this process up for the task's build, unless it is already."""
    if os.getcwd() != setup.cwd:
        try:
            os.chdir(setup.cwd)
        except OSError:
            raise BuildError(setup.cwd, _UNSEEN) from None
    if _CURRENT[0] == setup.build:
        return
    if setup.version != __version__:
        raise BuildError(
            setup.folder,
            f"a cluster worker runs pith-mirror {__version__}, the build {setup.version}:"
            " install the same version on every worker",
        )
    _still_wanted(setup, _UNSEEN)
    config, keyring, folder, shared_files = setup.args
    init_worker(config, keyring, folder, shared_files)
    _CURRENT[0] = setup.build


def dask_setup(worker: object) -> None:
    """Dask's hook in a module a worker preloads: the workers of a cluster the build
    started ignore Ctrl-C, which a terminal sends to every process of the build.
    The build stops them itself, as it stops a pool (`ClusterExecutor.shutdown`);
    each would otherwise print a KeyboardInterrupt traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


_UNSEEN = (
    "a cluster worker cannot see this folder: workers write the site themselves, so they"
    " must see the build's folders at the same paths (this machine, or a shared file system)"
)


def _still_wanted(setup: Setup, gone: str = "the build's staging folder is gone: the build stopped") -> None:
    """Raise unless the build still runs: not stopped (`_stop`), its staging folder
    still the one it made (a build that failed removes it; the next one makes another)."""
    if setup.build in _STOPPED:
        raise BuildError(setup.folder, "the build stopped")
    try:
        inode = os.stat(setup.folder).st_ino
    except OSError:
        inode = -1
    if inode != setup.inode:
        raise BuildError(setup.folder, gone)


def _stop(build: str) -> int:
    """(Run on every worker by `ClusterExecutor._stop_running`.) Stop the build's
    tasks here; how many still run."""
    with _COUNTS:
        _STOPPED.add(build)
        return _RUNNING.get(build, 0)
