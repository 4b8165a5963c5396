"""Builds on a Dask cluster (`--scheduler`, build/cluster.py) give the bytes of a
local build: on two workers and in many tasks, incrementally, and with a worker
killed part-way; a scheduler nothing answers at, or Dask missing, is a clear
error that leaves SITE as it was. (What needs no cluster, the setting itself and
a build without Dask, is in test_scheduler_setting.py.)

The cluster is a `LocalCluster` of two worker processes that this module starts
(and closes); builds reach it by its address, as they would a remote one."""

# ruff: noqa: E402  (the extra is looked for before anything imports it)
from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import factories as f
import manifestkit
import pytest
from extraskit import need
from netkit import raw_server

need("distributed", "cluster", module_level=True)

import dask.config
import distributed
from clusterkit import cli_build, clustered_bundle, clustered_record, few, inputs, make
from sitekit import BOTH_KEYS, Project, all_paths, fresh_tree, record_doc, tree

from generator.build import cluster as cluster_module
from generator.build.pipeline import build
from generator.commands.cli import main
from generator.site import search_index
from generator.trust.errors import BuildError

PER_PAGE = 4  # (many listing pages, which the workers make in a full build)


@pytest.fixture(scope="module")
def files() -> list[tuple[str, bytes]]:
    return inputs()


@pytest.fixture(scope="module")
def dask_cluster() -> Iterator[distributed.LocalCluster]:
    """Two worker processes of one thread each, started here and closed after."""
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        memory_limit="1GiB",
        dashboard_address=None,
        silence_logs=logging.ERROR,
    ) as started:
        yield started


@pytest.fixture
def client(dask_cluster: distributed.LocalCluster) -> Iterator[distributed.Client]:
    """The test's own connection to the cluster, to look at its workers."""
    with distributed.Client(dask_cluster.scheduler_address, set_as_default=False) as connected:
        connected.wait_for_workers(2, timeout=30)
        yield connected


@pytest.fixture(scope="module")
def local_site(tmp_path_factory: pytest.TempPathFactory, files: list[tuple[str, bytes]]) -> dict[str, bytes]:
    """The inputs built by the local pool, two workers: what every cluster build must equal."""
    p = make(tmp_path_factory.mktemp("local"), files)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search_index, "SEARCH_CHUNK", 8)
        report = p.build(jobs=2, per_page=PER_PAGE)
    assert report.published == 61 and report.refused_files == 1 and report.mode == "full"
    return tree(p.site)


@pytest.fixture
def small_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small batches, so that a map of 60 documents is many tasks (in production a task
    holds hundreds), and a search index of several chunks."""
    monkeypatch.setattr(cluster_module, "MIN_BATCH", 2)
    monkeypatch.setattr(search_index, "SEARCH_CHUNK", 8)


def same_site(site: Path, expected: dict[str, bytes]) -> None:
    built = tree(site)
    assert sorted(built) == sorted(expected)
    assert [path for path in built if built[path] != expected[path]] == []


def build_on(p: Project, where: str, **settings: Any) -> Any:
    return p.build(scheduler=where, jobs=2, per_page=PER_PAGE, **settings)


@pytest.mark.usefixtures("small_tasks")
def test_a_build_on_a_cluster_is_byte_identical_to_a_local_one(
    tmp_path: Path,
    files: list[tuple[str, bytes]],
    local_site: dict[str, bytes],
    dask_cluster: distributed.LocalCluster,
    client: distributed.Client,
) -> None:
    p = make(tmp_path, files)
    with distributed.get_task_stream(client) as stream:
        report = build_on(p, dask_cluster.scheduler_address)
    assert report.published == 61 and report.mode == "full"
    same_site(p.site, local_site)
    assert not p.staging.exists()
    # (every kind of task ran on the cluster, the map in many batches, on both workers)
    ran = [task["key"] for task in stream.data]
    kinds = {key.split("-")[1] for key in ran}
    assert {"document_task", "render_pages_task", "search_chunk_task", "search_shards_task"} <= kinds
    assert sum(key.startswith("pith-document_task-") for key in ran) >= 8
    assert len({task["worker"] for task in stream.data}) == 2


@pytest.mark.usefixtures("small_tasks")
def test_each_build_sets_the_workers_up_for_itself(
    tmp_path: Path,
    files: list[tuple[str, bytes]],
    local_site: dict[str, bytes],
    dask_cluster: distributed.LocalCluster,
) -> None:
    """Workers that served another site's build (other settings, another staging
    folder) serve the next one as if they were new."""
    other = make(tmp_path / "other", files)
    build_on(other, dask_cluster.scheduler_address, site_title="Another Mirror", base_url="/other/")
    assert "Another Mirror" in other.text("index.html")
    p = make(tmp_path / "this", files)
    build_on(p, dask_cluster.scheduler_address)
    same_site(p.site, local_site)


@pytest.mark.usefixtures("small_tasks")
def test_an_incremental_build_on_a_cluster_equals_a_clean_build(
    tmp_path: Path, files: list[tuple[str, bytes]], dask_cluster: distributed.LocalCluster
) -> None:
    where = dask_cluster.scheduler_address
    changing = make(tmp_path / "changing", files)
    build_on(changing, where)
    grown = clustered_bundle(3, snapshots=3)
    changing.add("b/03.json", grown)  # (a bundle one snapshot longer)
    changing.add("r/new.json", record_doc(source_id="2303.00001", title="Added Later"))
    changing.add("refused.json", record_doc(source_id="2303.00002", title="Fixed Later"))
    report = build_on(changing, where)
    assert report.mode == "incremental" and len(report.changed) == 3 and report.refused_files == 0
    same_site(changing.site, fresh_tree(changing, tmp_path / "fresh", jobs=2, per_page=PER_PAGE))


@pytest.mark.usefixtures("small_tasks")
def test_a_deletion_and_a_rollback_on_a_cluster(
    tmp_path: Path, files: list[tuple[str, bytes]], dask_cluster: distributed.LocalCluster
) -> None:
    """A deleted document unpublishes its number, as a local build does; an older
    bundle put back in place of the published one is refused, and the published
    bundle stays, byte for byte."""
    where = dask_cluster.scheduler_address
    p = make(tmp_path / "p", files)
    build_on(p, where)
    body = f.pith_body(clustered_record(3))
    older = p.read("pith/" + body + "/bundle.json")
    p.add("b/03.json", clustered_bundle(3, snapshots=3))
    assert build_on(p, where).mode == "incremental"
    grown = p.read(f"pith/{body}/bundle.json")
    assert grown != older

    gone = f.pith_body(clustered_record(5))
    assert (p.site / f"pith/{gone}.html").is_file()
    p.remove("b/05.json")
    p.remove("refused.json")  # (an unreadable file would keep every number whose documents are gone)
    p.add("b/03.json", older)  # (the bundle with fewer events: a rollback)
    report = build_on(p, where)
    assert report.mode == "incremental" and report.published == 60
    assert [r.code.value for r in report.rejections if r.file.endswith("b/03.json")] == ["bundle.rollback"]
    assert p.read(f"pith/{body}/bundle.json") == grown
    assert p.read(f".well-known/pith/{body}/bundle.json") == grown
    assert not (p.site / f"pith/{gone}.html").exists() and not (p.site / f"pith/{gone}").exists()
    bodies = [n.rsplit(":", 1)[1] for n in manifestkit.numbers(p.site)]
    assert gone not in bodies and body in bodies


@pytest.mark.usefixtures("small_tasks")
def test_a_worker_killed_during_a_build_changes_no_byte(
    tmp_path: Path,
    files: list[tuple[str, bytes]],
    local_site: dict[str, bytes],
    dask_cluster: distributed.LocalCluster,
    client: distributed.Client,
) -> None:
    """Killed once the first task's results are in: the tasks it ran or held
    (results the build had not yet taken) run again, on it once its nanny has
    started it anew or on the other, and write the same bytes again."""
    before = client.run(os.getpid)
    victim = before[sorted(before)[0]]
    killed: list[tuple[int, int]] = []

    def progress(label: str, done: int, total: int) -> None:
        if label == "verified" and not killed:
            os.kill(victim, signal.SIGKILL)
            killed.append((done, total))

    p = make(tmp_path, files)
    config = p.config(scheduler=dask_cluster.scheduler_address, jobs=2, per_page=PER_PAGE)
    report = build(config, BOTH_KEYS, progress)
    assert killed and killed[0][0] < killed[0][1]  # (killed with results still to come)
    assert report.published == 61
    same_site(p.site, local_site)
    client.wait_for_workers(2, timeout=30)  # (its nanny started it again)
    deadline = time.monotonic() + 30
    while victim in client.run(os.getpid).values() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert victim not in client.run(os.getpid).values()


@pytest.mark.usefixtures("small_tasks")
def test_a_task_whose_workers_keep_dying_stops_the_build_and_site_stays(
    tmp_path: Path,
    files: list[tuple[str, bytes]],
    dask_cluster: distributed.LocalCluster,
    client: distributed.Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no second try allowed (Dask's `allowed-failures`, 3 by default), the task
    the killed worker ran fails: a `BuildError`, and SITE as it was."""
    p = make(tmp_path, files)
    p.build(jobs=1, per_page=PER_PAGE)
    before, paths = tree(p.site), all_paths(tmp_path)
    monkeypatch.setattr(dask_cluster.scheduler, "allowed_failures", 0)
    pids = client.run(os.getpid)
    killed: list[str] = []

    def progress(label: str, done: int, total: int) -> None:
        # (a worker that is running a task at the time: one that had finished its
        # tasks would take nothing down with it, and the build would end well)
        if label != "verified" or killed:
            return
        busy = [address for address, state in dask_cluster.scheduler.workers.items() if state.processing]
        if busy:
            killed.append(busy[0])
            with contextlib.suppress(ProcessLookupError):
                os.kill(pids[busy[0]], signal.SIGKILL)

    config = p.config(scheduler=dask_cluster.scheduler_address, jobs=2, per_page=PER_PAGE)
    with pytest.raises(BuildError, match="a cluster worker stopped unexpectedly") as raised:
        build(config, BOTH_KEYS, progress, incremental=False)
    assert killed, "no worker was running a task when a record was verified"
    assert raised.value.path == dask_cluster.scheduler_address
    assert tree(p.site) == before and all_paths(tmp_path) == paths
    client.wait_for_workers(2, timeout=30)


@pytest.mark.usefixtures("small_tasks")
def test_a_cluster_build_uploaded_to_an_s3_stand_in_holds_a_local_builds_bytes(
    tmp_path: Path, files: list[tuple[str, bytes]], dask_cluster: distributed.LocalCluster
) -> None:
    """The cluster's site, published by `upload` to moto's S3 on loopback (a few
    documents: the stand-in takes about 150 writes a second), object for object
    the files of a local build of the same content; a throttled write is retried."""
    need("moto.server", "ci")
    need("obstore", "storage")
    import storagekit

    from generator.publish.storage import RESERVED, RetryPolicy, open_storage
    from generator.publish.upload import upload_site

    local = make(tmp_path / "local", few(files))
    local.build(jobs=2, per_page=PER_PAGE)
    expected = {path: data for path, data in tree(local.site).items() if path != "_headers"}
    clustered = make(tmp_path / "cluster", few(files))
    build_on(clustered, dask_cluster.scheduler_address)
    retry = RetryPolicy(retries=3, first_wait=0.01, longest_wait=0.05, give_up_after=10)
    with storagekit.s3_stand_in() as s3:
        bucket = s3.new_bucket()
        storage = open_storage(f"s3://{bucket}/mirror/", options=s3.options(), retry=retry)
        s3.proxy.reset(fail_next=2)  # (two 503 SlowDown answers first)
        upload_site(clustered.site, storage, workers=4)
        assert s3.proxy.failed == 2
        listed = {o.key: o for o in storage.list() if not o.key.startswith(RESERVED)}
        assert sorted(listed) == sorted(expected)
        assert [key for key in listed if storage.read(key) != expected[key]] == []


def test_a_task_whose_items_cannot_be_pickled_fails_alone(
    tmp_path: Path, files: list[tuple[str, bytes]], dask_cluster: distributed.LocalCluster
) -> None:
    """A task is pickled by the build as it is sent: an item that cannot be is that
    task's exception, as a pool gives it, and the tasks after it still run."""
    p = make(tmp_path, few(files))
    staging = tmp_path / "staging"
    staging.mkdir()
    config = p.config(scheduler=dask_cluster.scheduler_address, jobs=2)
    executor = cluster_module.cluster_executor(config, BOTH_KEYS, staging, False)
    try:
        failed = executor.submit(len, threading.Lock())
        assert isinstance(failed.exception(timeout=30), TypeError)
        assert executor.submit(len, "four").result(timeout=30) == 4
        assert list(executor.map(len, ["a", "bb", "ccc"])) == [1, 2, 3]
    finally:
        executor.shutdown()


def free_port() -> int:
    """A loopback port nothing listens on (bound, then closed at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_a_scheduler_nothing_answers_at_is_a_clear_error_and_site_stays(
    tmp_path: Path, files: list[tuple[str, bytes]], capsys: pytest.CaptureFixture[str]
) -> None:
    p = make(tmp_path, few(files))
    assert main(cli_build(p, "--jobs", "1")) == 0
    before, paths = tree(p.site), all_paths(tmp_path)
    address = f"tcp://127.0.0.1:{free_port()}"
    capsys.readouterr()
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        started = time.monotonic()
        code = main(cli_build(p, "--clean", "--scheduler", address))
    assert time.monotonic() - started < 20
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"pith-mirror: {address}: no Dask scheduler answers at this address")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert tree(p.site) == before and all_paths(tmp_path) == paths  # (no staging folder left either)


def test_a_build_without_a_scheduler_never_imports_dask(tmp_path: Path) -> None:
    """The local pool stays the default, and Dask an extra nothing else needs."""
    p = make(tmp_path, few(inputs()))
    p.write_keys()
    code = (
        "import sys; from generator.commands.cli import main; "
        f"code = main({cli_build(p, '--jobs', '2')!r}); "
        "assert 'distributed' not in sys.modules and 'dask' not in sys.modules, 'dask imported'; "
        "sys.exit(code)"
    )

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def garbage(conn: socket.socket) -> None:
    """An answer no Dask scheduler sends, given at once."""
    conn.sendall(b"\xff" * 64 + b"HTTP/1.1 200 OK\r\n\r\nnot a scheduler")
    time.sleep(0.2)


@pytest.mark.parametrize("case", ["garbage answer", "bad timeout setting"])
def test_what_dask_raises_on_connecting_is_one_line_and_exit_2(
    tmp_path: Path, files: list[tuple[str, bytes]], capsys: pytest.CaptureFixture[str], case: str
) -> None:
    p = make(tmp_path, few(files))
    assert main(cli_build(p, "--jobs", "1")) == 0
    before = tree(p.site)
    capsys.readouterr()
    with contextlib.ExitStack() as stack:
        if case == "garbage answer":
            url = stack.enter_context(raw_server(garbage, read_head=False))
            stack.enter_context(dask.config.set({"distributed.comm.timeouts.connect": "3s"}))
            address = "tcp://" + url.removeprefix("http://").rstrip("/")
        else:
            stack.enter_context(dask.config.set({"distributed.comm.timeouts.connect": "abc"}))
            address = "local"
        code = main(cli_build(p, "--clean", "--scheduler", address))
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"pith-mirror: {address}: "), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert tree(p.site) == before
