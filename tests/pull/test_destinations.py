"""The pull's check-and-write of one document, into a folder and into a store
(publish/pull_destination.py), run in process against a real source on loopback and,
for a store, moto's S3 server (tests/storagekit.py), with writes slowed or raced where
a test needs a writer in between.

Two targets naming one number check and write one after the other; a document another
writer stores between the pull's read and its write is never overwritten; the store's
lease is renewed while a slow target runs; a stored copy over the size limit stays."""

# ruff: noqa: E402  (the extras are looked for before anything imports them)
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import factories as f
import pytest
from extraskit import need

need("moto.server", "ci", module_level=True)
need("obstore", "storage", module_level=True)

import storagekit

from generator.publish import pull as pull_module
from generator.publish import pull_destination
from generator.publish.client import Client, run_sync
from generator.publish.client import Limits as NetLimits
from generator.publish.pull import Outcome, Plan, Puller
from generator.publish.pull_destination import ContentFolder, ContentStore, Destination
from generator.publish.pull_selection import Target, parse_alias
from generator.publish.storage import LeaseLost, RetryPolicy, StorageError, open_storage
from generator.publish.storage_object import ObjectStorage
from generator.trust.load import Limits

from .pullkit import GROWN, GROWN_BODY, KEYRING, Server, answer, newer_bundle, older_bundle, run

BUNDLE_PATH = f"/pith/{GROWN_BODY}/bundle.json"
NAME = f"{GROWN_BODY}.bundle.json"
FAST = RetryPolicy(retries=2, first_wait=0.01, longest_wait=0.05, give_up_after=10)
OLDER, NEWER = f.to_bytes(older_bundle()), f.to_bytes(newer_bundle())
RIVAL = json.dumps(newer_bundle(), indent=3).encode()
"""The newer bundle as another writer stores it: other bytes than the pull would write."""


@pytest.fixture(scope="module")
def s3() -> Iterator[storagekit.S3StandIn]:
    with storagekit.s3_stand_in() as stand_in:
        yield stand_in


def store(s3: storagekit.S3StandIn) -> ObjectStorage:
    storage = open_storage(f"s3://{s3.new_bucket()}/lab/content/", options=s3.options(), retry=FAST)
    assert isinstance(storage, ObjectStorage)
    return storage


def pull(server: Server, destination: Destination, targets: list[Target]) -> list[Outcome]:
    async def go() -> list[Outcome]:
        async with Client(NetLimits(rate=0)) as client:
            plan = Plan((server.url,), destination, KEYRING, Limits())
            return await Puller(plan, client).run(targets)

    return run_sync(go())  # (also where a test before left an event loop running)


def older_then_newer(server: Server) -> None:
    """The source answers the first request for the bundle with the older one, every
    later one with the newer (a mirror that caught up between two requests)."""
    answered = []
    older, newer = answer(200, OLDER), answer(200, NEWER)

    def route(handler: object) -> None:
        answered.append(1)
        (older if len(answered) == 1 else newer)(handler)  # type: ignore[arg-type]

    server.routes[BUNDLE_PATH] = route


class SlowOlderFolder(ContentFolder):
    """A folder whose write of the older bundle takes half a second: without one check
    and write at a time, a pull that read "nothing here" twice wrote it last."""

    def write(self, name: str, data: bytes) -> None:
        if data == OLDER:
            time.sleep(0.5)
        super().write(name, data)


def test_two_targets_naming_one_number_never_roll_it_back(server: Server, tmp_path: Path) -> None:
    older_then_newer(server)
    content = SlowOlderFolder(tmp_path / "content", Limits().max_bytes)
    by_number = Target("number", GROWN_BODY)
    by_arxiv = parse_alias(GROWN["source"]["id"])
    outcomes = pull(server, content, [by_number, by_arxiv])
    assert {o.pith_number for o in outcomes} == {f.pith_number(GROWN)}, outcomes
    assert (tmp_path / "content" / NAME).read_bytes() == NEWER
    statuses = sorted(o.status for o in outcomes)
    assert statuses in (["fetched", "fetched"], ["fetched", "refused"]), outcomes


class RacedStore(ContentStore):
    """A store in which another writer puts the newer bundle just before the pull writes."""

    def write(self, name: str, data: bytes) -> None:
        self.storage.write(name, RIVAL, "application/json", "no-cache")
        super().write(name, data)


class RacedAndPeekedStore(ContentStore):
    """The same, and another target of the pull reads the document meanwhile (for its
    number, say): what the write may replace is still only the copy that was checked."""

    def write(self, name: str, data: bytes) -> None:
        self.storage.write(name, RIVAL, "application/json", "no-cache")
        assert self.peek(name) in (None, RIVAL)  # (None: not listed at the start, not asked)
        super().write(name, data)


@pytest.mark.parametrize("raced", [RacedStore, RacedAndPeekedStore])
def test_a_document_another_writer_stored_meanwhile_is_never_overwritten(
    server: Server, s3: storagekit.S3StandIn, raced: type[ContentStore]
) -> None:
    server.routes[BUNDLE_PATH] = answer(200, OLDER)
    storage = store(s3)
    with pytest.raises(StorageError, match="another writer changed this document"):
        pull(server, raced(storage, Limits().max_bytes), [Target("number", GROWN_BODY)])
    assert storage.read(NAME) == RIVAL
    # an object there already, changed between the pull's read and its write
    storage.write(NAME, OLDER, "application/json", "no-cache")
    del server.routes[BUNDLE_PATH]
    with pytest.raises(StorageError, match="another writer changed this document"):
        pull(server, raced(storage, Limits().max_bytes), [Target("number", GROWN_BODY)])
    assert storage.read(NAME) == RIVAL
    # and the lease was given up both times: the next pull runs (and finds the other
    # writer's bundle, the same events in other bytes, which stays)
    outcome = pull(server, ContentStore(storage, Limits().max_bytes), [Target("number", GROWN_BODY)])
    assert outcome[0].pith_number == f.pith_number(GROWN), outcome
    assert storage.read(NAME) == RIVAL


def test_the_lease_is_kept_while_a_slow_target_runs(
    server: Server, s3: storagekit.S3StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pull_destination, "LEASE_TTL", 1.0)
    monkeypatch.setattr(pull_module, "KEEP_SECONDS", 0.1)
    server.delay = 1.2  # (each answer: the one target outlasts the lease's time)
    storage = store(s3)
    s3.proxy.reset()
    outcome = pull(server, ContentStore(storage, Limits().max_bytes), [Target("number", GROWN_BODY)])
    assert outcome[0].status == "fetched", outcome
    lease_writes = [p for m, p in s3.proxy.seen if m == "PUT" and p.endswith("lease-pull.json")]
    assert len(lease_writes) >= 3, lease_writes  # (taken, renewed at least once, given up)


def test_a_stored_copy_over_the_size_limit_is_refused_and_stays(
    server: Server, keys: Path, s3: storagekit.S3StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in s3.environment().items():
        monkeypatch.setenv(name, value)
    storage = store(s3)
    storage.write(NAME, NEWER, "application/json", "no-cache")
    server.routes[BUNDLE_PATH] = answer(200, OLDER)
    assert len(OLDER) < len(NEWER)
    argv = ["pull", "--from", server.url, "--content", storage.url(), "--keys", keys, "--rate", "0"]
    done = run(*argv, "--max-bytes", str(len(NEWER) - 1), GROWN_BODY)
    assert done.code == 1 and "larger than the size limit" in done.err, done.err
    assert storage.read(NAME) == NEWER


def test_when_the_store_goes_down_the_error_names_the_document_not_the_lease(
    server: Server, keys: Path, s3: storagekit.S3StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every write fails once the lease is taken: the state's and the lease's too. The
    pull stops with the first failure, a document's, and says so."""
    for name, value in s3.environment().items():
        monkeypatch.setenv(name, value)
    storage = store(s3)
    taken: list[str] = []

    def fails(method: str, path: str) -> bool:
        if method == "PUT" and path.endswith("lease-pull.json") and not taken:
            taken.append(path)
            return False
        return method == "PUT"

    s3.proxy.reset(fail_next=100_000)
    s3.proxy.fail_when = fails
    argv = ["pull", "--from", server.url, "--content", storage.url(), "--keys", keys, "--rate", "0"]
    done = run(*argv, GROWN_BODY)
    s3.proxy.reset()
    assert done.code == 2 and "Traceback" not in done.err, done.err
    assert NAME in done.err and "lease" not in done.err, done.err


@pytest.mark.parametrize("there", [False, True])
def test_a_write_whose_answer_was_lost_is_not_taken_for_another_writer(
    server: Server, s3: storagekit.S3StandIn, there: bool
) -> None:
    """The store made the write, its answer was lost and the write sent again: refused
    as if another writer had come first, it is found done (a new object, and one replaced)."""
    storage = store(s3)
    if there:
        storage.write(NAME, OLDER, "application/json", "no-cache")
    s3.proxy.reset(fail_next=1, after_forwarding=True)
    s3.proxy.fail_when = lambda method, path: method == "PUT" and path.endswith(NAME)
    outcome = pull(server, ContentStore(storage, Limits().max_bytes), [Target("number", GROWN_BODY)])
    assert s3.proxy.failed == 1
    s3.proxy.reset()
    assert outcome[0].status == "fetched", outcome
    assert storage.read(NAME) == (server.root / BUNDLE_PATH[1:]).read_bytes()


def test_a_missing_bucket_is_named_not_taken_for_a_held_lease(
    server: Server, keys: Path, s3: storagekit.S3StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in s3.environment().items():
        monkeypatch.setenv(name, value)
    argv = ["pull", "--from", server.url, "--content", "s3://no-such-bucket-here/content/", "--keys", keys]
    done = run(*argv, GROWN_BODY)
    assert done.code == 2 and "Traceback" not in done.err, done.err
    assert "another writer" not in done.err and "could not create the lease" in done.err, done.err


def test_a_pull_stopped_past_its_lease_does_not_write_its_state(s3: storagekit.S3StandIn) -> None:
    """The state is written unconditionally: a pull whose lease ran out while it was
    stopped (a laptop asleep) must not overwrite the state of the pull that took over."""
    storage = store(s3)
    content = ContentStore(storage, Limits().max_bytes)
    content.open()
    assert content.keeper is not None
    content.keeper.lease = replace(content.keeper.lease, expires_at=time.time() - 1)
    with pytest.raises(LeaseLost):
        content.write_state(b"{}")
    assert pull_destination.STATE_FILE not in {o.key for o in storage.list()}
