"""Fill content/ from the resolver or any mirror: fetch, verify, never roll back, write whole.

Rules:
- Sources have the resolver's URL layout: a number's bundle at
  `pith/<P>/bundle.json` (else `.well-known/pith/<P>/bundle.json`), its
  record at `pith/<P>.json`. A mirror's record document for a bundle-only
  number is its own derivation (`derived_by`), not the resolver's: it is
  never stored (the bundle is), only remembered, so it is not fetched again.
- Every answer goes through the build's own decoder and verifier
  (`load.decode`, `verify.verify_document`) against the pinned keys; it must
  then be the document asked for (that number, that kind, and for a look-up
  that paper: the signed record must determine the alias looked up).
- Only a document that verifies is written, as `<P>.record.json` or
  `<P>.bundle.json`, whole: into a content folder through a temporary file
  renamed into place (a killed pull's stale temporaries are removed by the
  next), into a content store by one PUT while the pull holds the store's
  lease (`pull_destination`). A pull killed at any moment leaves whole,
  verified documents only.
- Never roll back: a fetched document replaces the local one only as the build
  would let it replace a published one (`choose.select`: a bundle must hold
  every local event, and with the same events be built later), and only with
  the same canonical record and the same signed receipt.
- Skip what has not changed: with `--all` the source manifest's hashes are
  compared with the local files before anything is fetched; otherwise each
  request is conditional, with the validators kept in `.pith-pull.json`
  beside the documents (hidden, so the build never reads it as a document).
  Reads and writes of the destination run on threads: a store's requests do
  not hold up the fetches.
- Library only: returns an `Outcome` per target; the command prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
import urllib.parse
import zlib
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, TypeVar

from ..site import layout
from ..site.manifest import ManifestError, ShardRef, manifest_entries, shard_entries, shard_refs
from ..trust.choose import Candidate, pack_event_ids, select
from ..trust.errors import BuildError, Code, ConfigError, Problem, RejectionError, pointer
from ..trust.keys import Keyring
from ..trust.load import Limits, SourceDocument, decode, parse_json
from ..trust.model import BODY_RE, PITH_RE, Kind, Verified, derivable_aliases
from ..trust.verify import verify_document
from .client import Answer, Client, FetchError, HttpStatus, RedirectRefused, TooLarge, TooSlow
from .pull_destination import Destination
from .pull_selection import Target
from .storage import StorageError

STATE_SAVE_SECONDS = 1.0
KEEP_SECONDS = 5.0
"""How often a running pull makes sure of its store's lease (renewed at half its time)."""
MANIFEST_LIMIT = 256 * 1024 * 1024
"""The largest mirror manifest or mirror list read (20,000 numbers take about 10 MB)."""
LOOKUP_LIMIT = 1024 * 1024
MIRRORS_PATH = "pith-mirrors.json"

Status = Literal["fetched", "unchanged", "refused", "failed"]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why one answer was not taken: where it came from, and every problem found in it."""

    where: str
    problems: tuple[Problem, ...]

    @property
    def code(self) -> Code:
        return self.problems[0].code

    @classmethod
    def one(cls, where: str, problem: Problem) -> Refusal:
        return cls(where, (problem,))


_WORST: dict[Status, int] = {"unchanged": 0, "fetched": 1, "failed": 2, "refused": 3}


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one target: its number, its files, and every problem on the way."""

    target: str
    pith_number: str | None
    status: Status
    files: tuple[str, ...] = ()
    """The content files this number has now, relative to the content folder."""
    problems: tuple[tuple[str, Problem], ...] = ()
    """(where: a URL or a content file, problem)."""
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status in ("fetched", "unchanged")


@dataclass(frozen=True, slots=True)
class Plan:
    """A pull: where from, into where, against which keys, how much at once."""

    sources: tuple[str, ...]
    """Base URLs, each ending in "/": the source first, then its mirrors (`--mirrors`)."""
    content: Destination
    keyring: Keyring
    limits: Limits = field(default_factory=Limits)


# ---------------------------------------------------------------- sources


def base_url(text: str) -> str:
    """A source's base URL, ending in "/"; ConfigError for anything but an http(s) URL with a host."""
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 (checked only when read: a bad port is a bad URL)
    except ValueError as exc:
        raise ConfigError("from", f"{text} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError("from", f"{text!r} is not an http(s) URL of a resolver or a mirror")
    if any(c.isspace() or not c.isprintable() for c in text) or parts.query or parts.fragment:
        raise ConfigError("from", f"{text!r}: a source URL has no spaces, query or fragment")
    return text if text.endswith("/") else text + "/"


class SourceUnusable(BuildError):
    """The source's manifest, a shard of it, or its mirror list cannot be had or is not
    one: the pull cannot go on (exit 2). Named by its URL: the source's fault, not a
    setting's."""


async def read_json(client: Client, url: str, what: str) -> Any:
    """A JSON file every pull needs (a manifest, a mirror list); `SourceUnusable` when it
    cannot be had."""
    try:
        answer = await client.get(url, limit=MANIFEST_LIMIT)
    except FetchError as exc:
        raise SourceUnusable(exc.url, f"cannot read the {what}: {exc.reason}") from None
    try:
        return parse_json(answer.body)
    except ValueError as exc:
        raise SourceUnusable(url, f"the {what} is {exc}") from None


SHARD_ENTRY_LIMIT = 64 * 1024
"""The most bytes a manifest shard may hold for each number the index says it lists
(the build writes about 500), beside `SHARD_SLACK`: a source cannot make a pull hold
gigabytes for a shard of a few entries."""
SHARD_SLACK = 1024 * 1024


async def read_bytes(
    client: Client, url: str, turns: asyncio.Semaphore, limit: int = MANIFEST_LIMIT
) -> bytes:
    """A manifest shard (checked by the caller against the index's hash); `SourceUnusable`
    when it cannot be had: a pull of every number cannot go on without it."""
    async with turns:
        try:
            return (await client.get(url, limit=limit)).body
        except FetchError as exc:
            raise SourceUnusable(url, f"cannot read this manifest shard: {exc.reason}") from None


async def mirror_sources(client: Client, source: str) -> tuple[str, ...]:
    """The source and every http(s) mirror its `pith-mirrors.json` lists (the source first);
    from an https source, only https mirrors, as its redirects are followed only to https
    (over plain http, anyone between could answer for a mirror)."""
    data = await read_json(client, source + MIRRORS_PATH, "mirror list")
    found = [source]
    secure = source.lower().startswith("https:")
    mirrors = data.get("mirrors") if isinstance(data, dict) else None
    for entry in mirrors if isinstance(mirrors, list) else []:
        url = entry.get("base_url") if isinstance(entry, dict) else None
        if not isinstance(url, str) or not url:
            continue
        try:
            base = base_url(urllib.parse.urljoin(source, url))
        except ConfigError:
            continue
        if secure and not base.lower().startswith("https:"):
            continue
        if base not in found:
            found.append(base)
    return tuple(found)


async def manifest_targets(client: Client, source: str) -> dict[str, dict[str, Any]]:
    """Every number the source's `.well-known/pith/mirror.json` lists, with its entry."""
    data = await read_json(client, source + layout.MANIFEST_PATH, "mirror manifest")
    if not isinstance(data, dict) or data.get("manifest_type") != layout.MANIFEST_TYPE:
        raise SourceUnusable(source + layout.MANIFEST_PATH, f"is not a {layout.MANIFEST_TYPE}")
    if not isinstance(data.get("records", []), list):
        raise SourceUnusable(source + layout.MANIFEST_PATH, f"{pointer('records')}: not a list")
    try:
        refs = shard_refs(data)
        if not refs:  # (a version 1.0 manifest lists its numbers itself)
            return manifest_entries(data, lambda _: None)
        turns = asyncio.Semaphore(max(1, client.limits.jobs))  # (each waits for a connection in turn)

        async def entries(ref: ShardRef) -> dict[str, dict[str, Any]]:
            # (each shard checked and decoded as it arrives: its bytes are not kept)
            limit = min(MANIFEST_LIMIT, SHARD_SLACK + ref.count * SHARD_ENTRY_LIMIT)
            body = await read_bytes(client, source + ref.path, turns, limit)
            return shard_entries(ref, lambda _: body)

        found: dict[str, dict[str, Any]] = {}
        for part in await asyncio.gather(*(entries(ref) for ref in refs)):
            found.update(part)
        return found
    except ManifestError as exc:
        where = f"{exc.where}: " if exc.where else ""
        raise SourceUnusable(source + exc.path, where + exc.message) from None


# ---------------------------------------------------------------- the state file


class State:
    """Validators of what was fetched (ETag, Last-Modified, the bytes' sha256), by URL,
    and the hashes of derived record documents not stored. Only a hint: a validator is
    used only while the local copy still has the bytes it was given for."""

    def __init__(self, content: Destination) -> None:
        self.content = content
        self.entries: dict[str, dict[str, Any]] = {}
        self.saved = time.monotonic()
        self.pause = STATE_SAVE_SECONDS
        self.dirty = self.saving = False
        self.started = 0.0
        try:
            data = json.loads(content.read_state() or b"null")
        except (ValueError, RecursionError):
            return
        if not isinstance(data, dict):
            return
        entries = data.get("entries")
        if isinstance(entries, dict):
            self.entries = {k: _validators(v) for k, v in entries.items() if isinstance(v, dict)}
        content.remember(data.get("stored"))

    def get(self, url: str) -> dict[str, Any]:
        return self.entries.get(url, {})

    def put(self, url: str, answer: Answer, number: str, derived: bool = False) -> None:
        """`answer`'s validators, and the number its verified document is of (which a
        later "not modified" names in the report without reading the document back)."""
        entry: dict[str, Any] = {"sha256": hashlib.sha256(answer.body).hexdigest(), "pith_number": number}
        if answer.etag:
            entry["etag"] = answer.etag
        if answer.last_modified:
            entry["last_modified"] = answer.last_modified
        if derived:
            entry["derived"] = True
        self.entries[url] = entry
        self.dirty = True

    def due(self, force: bool = False) -> bytes | None:
        """The state to write now, if it is time (at most a twentieth of the time goes to
        it: a pull killed loses only the validators of its last moments), and no write
        of it is under way; then `written` or `not_written` once it is done."""
        if self.saving or not self.dirty or (not force and time.monotonic() - self.saved < self.pause):
            return None
        state: dict[str, Any] = {"pith_pull_state": 1, "entries": self.entries}
        stored = self.content.remembered()
        if stored:
            state["stored"] = stored
        self.saving, self.dirty, self.started = True, False, time.monotonic()
        return json.dumps(state, sort_keys=True).encode()

    def written(self) -> None:
        self.saving, self.saved = False, time.monotonic()
        self.pause = max(STATE_SAVE_SECONDS, 20 * (self.saved - self.started))

    def not_written(self) -> None:
        self.saving, self.dirty = False, True


_STATE_FIELDS: dict[str, type] = {
    "sha256": str,
    "etag": str,
    "last_modified": str,
    "pith_number": str,
    "derived": bool,
}


def _validators(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry of a state file (edited by hand, say) with only the fields of the types
    the pull writes, and no text a request header cannot carry."""
    return {
        name: value
        for name, value in entry.items()
        if type(value) is _STATE_FIELDS.get(name) and (type(value) is not str or value.isprintable())
    }


# ---------------------------------------------------------------- local documents


def content_name(body: str, kind: Kind) -> str:
    """The stable name of a number's document in the content folder or store."""
    return f"{layout.check_body(body)}.{kind}.json"


# ---------------------------------------------------------------- one number


class Puller:
    """Runs one pull; `run` returns an Outcome per target, in the targets' order."""

    def __init__(
        self, plan: Plan, client: Client, progress: Callable[[Outcome], None] = lambda _: None
    ) -> None:
        self.plan = plan
        self.client = client
        self.progress = progress
        self.state: State
        self.io: ThreadPoolExecutor
        self.busy: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        """The documents being checked and written, each with how many wait (`_alone`)."""
        self.shard_widths: dict[str, asyncio.Task[tuple[int | None, tuple[str, Problem] | None]]] = {}
        """Each source's look-up shard width, read once a pull (see `shard_width`)."""

    async def run(
        self, targets: Sequence[Target], listed: dict[str, dict[str, Any]] | None = None, jobs: int = 8
    ) -> list[Outcome]:
        """Pull every target, `jobs` at once. `listed` holds the manifest entries of
        `--all` (by body), whose hashes decide what needs fetching at all."""
        content = self.plan.content
        self.io = ThreadPoolExecutor(max(1, jobs) + 1, thread_name_prefix="pull-io")
        tasks: list[asyncio.Task[Outcome]] = []
        failing = True
        try:
            await self._io(content.open)
            self.state = await self._io(State, content)
            gate = asyncio.Semaphore(max(1, jobs))

            async def one(target: Target) -> Outcome:
                async with gate:
                    outcome = await self.pull(target, (listed or {}).get(target.value))
                self.progress(outcome)
                await self._save()
                return outcome

            tasks = [asyncio.ensure_future(one(t)) for t in targets]
            everything = asyncio.gather(*tasks)
            # (its failure is raised from its first task's; stopped early, no one reads it)
            everything.add_done_callback(lambda done: done.cancelled() or done.exception())
            keeper = asyncio.ensure_future(self._keep(content))
            try:
                either: set[asyncio.Future[Any]] = {everything, keeper}
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                if keeper.done():
                    keeper.result()  # (it ends only by failing: the lease could not be kept)
                outcomes = everything.result()
            finally:
                keeper.cancel()
            failing = False
            return list(outcomes)
        finally:
            await self._stop(tasks, failing)

    async def _stop(self, tasks: list[asyncio.Task[Outcome]], failing: bool) -> None:
        """The pull's end: the targets stopped (one failed, say the store is down), every
        read and write already started ended, the state saved and the store's lease
        given up, in that order, so nothing is written without it. When the pull is
        failing, a failure here (the store is down) does not hide the first one."""
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.io.shutdown(wait=True)
        problems: list[Exception] = []
        try:
            data = self.state.due(force=True) if hasattr(self, "state") else None
            if data is not None:
                self.plan.content.write_state(data)
        except (StorageError, OSError) as exc:
            problems.append(exc)
        try:
            self.plan.content.close()
        except (StorageError, OSError) as exc:
            problems.append(exc)
        if problems and not failing:
            raise problems[0]

    async def _keep(self, content: Destination) -> None:
        """Keep the store's lease while the pull runs, however long one target takes."""
        while True:
            await asyncio.sleep(KEEP_SECONDS)
            await self._io(content.keep)

    async def _save(self) -> None:
        data = self.state.due()
        if data is None:
            return
        try:
            await self._io(self.plan.content.write_state, data)
        except BaseException:
            self.state.not_written()
            raise
        self.state.written()

    async def _io(self, call: Callable[..., T], *args: Any) -> T:
        """`call(*args)` on the pull's own threads: a store's requests do not hold up the fetches."""
        return await asyncio.get_running_loop().run_in_executor(self.io, partial(call, *args))

    @contextlib.asynccontextmanager
    async def _alone(self, name: str) -> AsyncIterator[None]:
        """One check-and-write of the document `name` at a time: two targets naming
        one number (a number and its arXiv id) must not both check a new document
        against the same old copy, and the older write land last."""
        entry = self.busy.setdefault(name, (asyncio.Lock(), [0]))
        entry[1][0] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1][0] -= 1
            if not entry[1][0]:
                del self.busy[name]

    async def pull(self, target: Target, entry: dict[str, Any] | None) -> Outcome:
        if target.kind == "number":
            body: str | None = target.value
            problems: list[tuple[str, Problem]] = []
        else:
            body, problems = await self.look_up(target)
        if body is None:
            status: Status = "failed" if problems[0][1].code.value.startswith("fetch.") else "refused"
            return Outcome(str(target), None, status, problems=tuple(problems))
        return await self.pull_number(target, body, entry)

    async def look_up(self, target: Target) -> tuple[str | None, list[tuple[str, Problem]]]:
        """The number a short form, arXiv id or DOI names at the source: its entry in
        the source's look-up shard (a pith-mirror site), else the resolver's query
        (JSON with `pith_number`, or a redirect to the record page). A hint only: see
        `pull_number`."""
        source = self.plan.sources[0]
        key = layout.lookup_key(target.kind, target.value)
        width, failed = await self.shard_width(source)
        if failed is not None:
            return None, [failed]
        read: Callable[[Answer], str | None]
        if width is not None and key is not None:
            url = source + layout.shard_file(target.kind, layout.shard_hex(key)[:width])
            read, empty = partial(_number_in_shard, key=key), f"the source knows no {target}"
        else:
            name = "arxiv" if target.kind == "arxiv_version" else target.kind  # (the resolver's parameter)
            url = f"{source}{layout.RESOLVE}?{urllib.parse.urlencode({name: target.value, 'json': 'true'})}"
            read, empty = _number_in, f"the look-up of {target} names no Pith number"
        try:
            answer = await self._look_up_json(url)
        except FetchError as exc:
            return None, [(url, fetch_problem(exc))]
        if answer is None:  # (for a shard: no record of the site has an alias in it)
            return None, [(url, Problem(Code.FETCH_NOT_FOUND, "", f"the source knows no {target}"))]
        body = read(answer)
        if body is None:
            return None, [(url, Problem(Code.FETCH_NOT_FOUND, "", empty))]
        return body, []

    async def _look_up_json(self, url: str) -> Answer | None:
        """The source's answer at a look-up address; None when it says it has none
        (404, 410). Any other failure raises its FetchError."""
        try:
            return await self.client.get(url, {"Accept": "application/json"}, LOOKUP_LIMIT)
        except HttpStatus as exc:
            if exc.status in (404, 410):
                return None
            raise

    async def shard_width(self, source: str) -> tuple[int | None, tuple[str, Problem] | None]:
        """(The width of the source's look-up shards, or None when it publishes none: the
        resolver; a failure to fetch, or None). Read once a pull, however many look-ups."""
        task = self.shard_widths.get(source)
        if task is None:
            task = self.shard_widths[source] = asyncio.ensure_future(self._read_shard_width(source))
        return await task

    async def _read_shard_width(self, source: str) -> tuple[int | None, tuple[str, Problem] | None]:
        url = source + layout.RESOLVE_INDEX
        try:
            answer = await self._look_up_json(url)
        except FetchError as exc:
            return None, (url, fetch_problem(exc))
        if answer is None:
            return None, None
        try:
            data = parse_json(answer.body)
        except ValueError:
            return None, None  # (a host that answers every path with a page: no look-up files)
        width = data.get("shard_hex_digits") if isinstance(data, dict) else None
        return (width if type(width) is int and 1 <= width <= 64 else None), None

    async def pull_number(self, target: Target, body: str, entry: dict[str, Any] | None) -> Outcome:
        content = self.plan.content
        results: list[tuple[Status, Refusal | None, str | None]] = []
        notes: list[str] = []
        number: str | None = None
        wanted: list[Kind] = ["bundle", "record"]
        if entry is not None:  # (--all: fetch only what differs from the manifest's hashes)
            number = entry.get("pith_number")
            wanted = []
            for kind in ("bundle", "record"):
                if entry.get(f"{kind}_sha256") is not None and not await self._have(body, kind, entry):
                    wanted.append(kind)
        for kind in wanted:
            status, problem, got, note = await self.pull_document(target, body, kind)
            results.append((status, problem, got))
            notes.extend(note)
            number = number or got
        names = (content_name(body, "record"), content_name(body, "bundle"))
        files = tuple([name for name in names if await self._io(content.has, name)])
        everything = _flat(r for _, r, _ in results)
        if results and all(r is not None and r.code == Code.FETCH_NOT_FOUND for _, r, _ in results):
            return Outcome(str(target), number, "failed", files, everything, tuple(notes))
        # (a number has a record, a bundle or both: one the source does not have is no problem)
        kept = [(s, r) for s, r, _ in results if r is None or r.code != Code.FETCH_NOT_FOUND]
        status = max((s for s, _ in kept), key=_WORST.__getitem__, default="unchanged")
        problems = _flat(r for _, r in kept)
        if not files and status in ("fetched", "unchanged"):
            # (nothing of the number is stored, yet nothing failed: a manifest entry that
            # names no document's hash; never reported as present)
            where = content.where(content_name(body, "bundle"))
            missing = Problem(Code.FETCH_NOT_FOUND, "", f"no document of {body} was fetched or is stored")
            problems = (*everything, (where, missing))
            return Outcome(str(target), number, "failed", files, problems, tuple(notes))
        full = number or await self._io(_number_of, content, body)
        return Outcome(str(target), full, status, files, problems, tuple(notes))

    async def _have(self, body: str, kind: Kind, entry: dict[str, Any]) -> bool:
        """Whether the local copy already has the bytes the manifest lists."""
        listed = entry.get(f"{kind}_sha256")
        if await self._io(self.plan.content.sha256, content_name(body, kind)) == listed:
            return True
        if kind != "record":
            return False
        for source in self.plan.sources:  # (a derived record is not stored: remembered by its hash)
            remembered = self.state.get(source + layout.record_json(body))
            if remembered.get("derived") and remembered.get("sha256") == listed:
                return True
        return False

    async def pull_document(
        self, target: Target, body: str, kind: Kind
    ) -> tuple[Status, Refusal | None, str | None, list[str]]:
        """One document from the first source (by the number's turn among them) that gives
        a good one; a source that gives a bad or older one is named in a note and skipped."""
        sources = self.plan.sources
        start = zlib.crc32(body.encode()) % len(sources)
        order = sources[start:] + sources[:start]
        notes: list[str] = []
        result: tuple[Status, Refusal | None, str | None] = ("failed", None, None)
        for source in order:
            result = await self.from_source(source, target, body, kind)
            if result[0] in ("fetched", "unchanged") or len(order) == 1:
                break
            refusal = result[1]
            if refusal is not None and refusal.code != Code.FETCH_NOT_FOUND:
                first = refusal.problems[0]
                notes.append(f"{refusal.where}: skipped ({first.code.value}: {first.message})")
        return (*result, notes)

    async def from_source(
        self, source: str, target: Target, body: str, kind: Kind
    ) -> tuple[Status, Refusal | None, str | None]:
        paths = (
            [layout.bundle_json(body), layout.well_known_bundle(body)]
            if kind == "bundle"
            else [layout.record_json(body)]
        )
        local = content_name(body, kind)
        for index, path in enumerate(paths):
            url = source + path
            headers: dict[str, str] = {}
            remembered = self.state.get(url)
            local_sha = await self._io(self.plan.content.sha256, local)
            # (a derived record stands for its bundle: "not modified" means nothing without it)
            derived = remembered.get("derived") and await self._has_bundle(body)
            if remembered.get("sha256") and (derived or remembered["sha256"] == local_sha):
                if remembered.get("etag"):
                    headers["If-None-Match"] = remembered["etag"]
                if remembered.get("last_modified"):
                    headers["If-Modified-Since"] = remembered["last_modified"]
            try:
                answer = await self.client.get(url, headers)
            except FetchError as exc:
                missing = isinstance(exc, HttpStatus) and exc.status in (404, 410)
                if missing and index + 1 < len(paths):
                    continue
                problem = fetch_problem(exc)
                if missing:
                    problem = Problem(Code.FETCH_NOT_FOUND, "", f"the source has no {kind} for {body}")
                return "failed", Refusal.one(url, problem), None
            if answer.not_modified:
                return "unchanged", None, _remembered_number(remembered, body)
            return await self.accept(url, answer, target, body, kind, local)
        raise AssertionError("unreachable")  # (the loop returns on its last path)

    async def _has_bundle(self, body: str) -> bool:
        """Whether the content holds a bundle of `body`: what a derived record stands for."""
        return await self._io(self.plan.content.has, content_name(body, "bundle"))

    async def accept(
        self, url: str, answer: Answer, target: Target, body: str, kind: Kind, local: str
    ) -> tuple[Status, Refusal | None, str | None]:
        """Verify an answer; write it when it is the document asked for and no rollback."""
        try:
            source = SourceDocument(url, answer.body, decode(answer.body, self.plan.limits))
        except RejectionError as exc:
            return "refused", Refusal.one(url, exc.problem), None
        verdict, verified = verify_document(source, self.plan.keyring)
        if verified is None:
            return "refused", Refusal(url, verdict.problems), verdict.pith_number
        wrong = _not_asked_for(verified, target, body, kind)
        if wrong is not None:
            return "refused", Refusal.one(url, Problem(Code.PULL_WRONG_DOCUMENT, "", wrong)), None
        if kind == "record" and "derived_by" in source.data:
            # (a mirror's derivation, not stored: the bundle is the source. It stands for
            # the number only beside that bundle: a mirror that lost the bundle, or a
            # source that marked the resolver's record so, would leave nothing stored)
            if not await self._has_bundle(body):
                why = f"a record a mirror derived from its bundle, and this pull has no bundle of {body}"
                return "refused", Refusal.one(url, Problem(Code.PULL_WRONG_DOCUMENT, "", why)), None
            self.state.put(url, answer, verified.pith_number, derived=True)
            return "unchanged", None, verified.pith_number
        async with self._alone(local):
            return await self.replace(url, answer, verified, local)

    async def replace(
        self, url: str, answer: Answer, verified: Verified, local: str
    ) -> tuple[Status, Refusal | None, str | None]:
        """Write a verified answer over the local copy, unless that would roll it back."""
        data = answer.body
        content = self.plan.content
        try:
            old = await self._io(content.read, local)
        except OSError as exc:
            why = Problem(Code.FILE_UNREADABLE, "", f"the local copy cannot be read ({exc.strerror})")
            return "refused", Refusal.one(content.where(local), why), verified.pith_number
        if old == data:
            self.state.put(url, answer, verified.pith_number)
            return "unchanged", None, verified.pith_number
        if old is not None:
            refusal = self.refuse_replacement(url, old, verified, content.where(local))
            if refusal is not None:
                return "refused", Refusal.one(url, refusal), verified.pith_number
        await self._io(content.write, local, data)
        self.state.put(url, answer, verified.pith_number)
        return "fetched", None, verified.pith_number

    def refuse_replacement(self, url: str, old: bytes, new: Verified, local: str) -> Problem | None:
        """Why `new` may not replace the local copy (never roll back), or None.
        A local copy that no longer verifies protects nothing and is replaced."""
        try:
            mine = verify_document(
                SourceDocument(local, old, decode(old, self.plan.limits)), self.plan.keyring
            )
        except RejectionError:
            return None
        held = mine[1]
        if held is None:
            return None
        if held.canonical_sha256 != new.canonical_sha256:
            return Problem(
                Code.RECORD_CONFLICT,
                "/canonical_record",
                f"the local copy has another canonical record for {new.pith_number}; the local copy stays",
            )
        if held.doc.receipt != new.doc.receipt:
            return Problem(
                Code.RECORD_SIGNATURE_CHANGED,
                "/receipt",
                f"the local copy of {new.pith_number} carries another signed receipt; the local copy stays",
            )
        if new.kind != "bundle":
            return None
        candidate = _candidate(url, new, old=False)
        selection = select(
            [candidate], {new.pith_number: (None, _candidate(local, held, old=True))}, set(), False
        )
        if selection.rejections:
            rejection = selection.rejections[0]
            message = rejection.message.replace("published bundle", "local bundle")
            return Problem(rejection.code, rejection.pointer, message)
        return None


def _candidate(file: str, verified: Verified, old: bool) -> Candidate:
    return Candidate(
        file=file,
        kind=verified.kind,
        pith_number=verified.pith_number,
        raw_sha256=verified.doc.source.raw_sha256,
        events=pack_event_ids(verified.event_ids),
        from_site=old,
        built_at=verified.doc.built_at,
    )


def _not_asked_for(verified: Verified, target: Target, body: str, kind: Kind) -> str | None:
    """Why a verified document is not the one asked for, or None when it is."""
    if verified.doc.body != body:
        asked = f"not of the number asked for ({body})"
        return f"the answer is the {verified.kind} of {verified.pith_number}, {asked}"
    if verified.kind != kind:
        return f"the answer is a {verified.kind}, where a {kind} was asked for"
    if target.kind != "number":
        aliases = derivable_aliases(verified.doc.canonical_record, body)
        value = aliases.get(target.kind)
        if value is None or value.lower() != target.value.lower():
            return f"the look-up of {target} named {verified.pith_number}, whose signed record is not that"
    return None


def _number_in_shard(answer: Answer, key: str) -> str | None:
    """The body of the Pith number a look-up shard's entry for `key` names, if it has one."""
    try:
        data = parse_json(answer.body)
    except ValueError:
        return None
    entries = data.get("entries") if isinstance(data, dict) else None
    entry = entries.get(key) if isinstance(entries, dict) else None
    number = entry.get("pith_number") if isinstance(entry, dict) else None
    if isinstance(number, str) and (found := PITH_RE.fullmatch(number)):
        return found["body"]
    return None


def _number_in(answer: Answer) -> str | None:
    """The body of the Pith number a look-up answer names: a JSON `pith_number`, or a
    redirect to the number's record page or record JSON."""
    path = urllib.parse.urlsplit(answer.url).path
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[-2] == "pith":
        body = parts[-1].removesuffix(".json").removesuffix(".html")
        if BODY_RE.fullmatch(body):
            return body
    if len(parts) >= 3 and parts[-3] == "pith" and parts[-1] == "index.html" and BODY_RE.fullmatch(parts[-2]):
        return parts[-2]
    try:
        data = parse_json(answer.body)
    except ValueError:
        return None
    number = data.get("pith_number") if isinstance(data, dict) else None
    if isinstance(number, str) and (found := PITH_RE.fullmatch(number)):
        return found["body"]
    return None


def _remembered_number(remembered: dict[str, Any], body: str) -> str | None:
    """The number the state names for a document of `body`, if it is one (a hint for
    the report only: the state is not trusted for anything else)."""
    number = remembered.get("pith_number")
    if isinstance(number, str) and (found := PITH_RE.fullmatch(number)) and found["body"] == body:
        return number
    return None


def _number_of(content: Destination, body: str) -> str | None:
    """The whole number of a body, from a local document (for the report)."""
    for kind in ("bundle", "record"):
        try:
            data = json.loads(content.peek(content_name(body, kind)) or b"null")
        except (OSError, ValueError, RecursionError):
            continue
        number = data.get("pith_number") if isinstance(data, dict) else None
        if isinstance(number, str):
            return number
    return None


def _flat(refusals: Iterable[Refusal | None]) -> tuple[tuple[str, Problem], ...]:
    return tuple((r.where, p) for r in refusals if r is not None for p in r.problems)


def fetch_problem(exc: FetchError) -> Problem:
    """A failed fetch as a problem with its stable code."""
    if isinstance(exc, TooLarge):
        return Problem(Code.FILE_TOO_LARGE, "", exc.reason)
    if isinstance(exc, TooSlow):
        return Problem(Code.FETCH_TOO_SLOW, "", exc.reason)
    if isinstance(exc, RedirectRefused):
        return Problem(Code.FETCH_REDIRECT_REFUSED, "", exc.reason)
    return Problem(Code.FETCH_FAILED, "", exc.reason)
