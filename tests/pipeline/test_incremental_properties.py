"""Incremental builds make the site a full build makes, whatever happens to content/.

A Hypothesis state machine changes a small content/ folder step by step: it
adds, replaces, removes, renames and corrupts documents (records, bundles that
grow, a bundle rebuilt later, a bundle that disagrees) and Markdown pages. The
papers include two numbers that share their 8-character prefix and their arXiv
id, two versions of one paper (in two partitions of the build state), and a paper
of another source whose signed aliases name one of those arXiv ids; the arXiv
papers' bundles name their integrity reports, which versions and numbers that
share an arXiv id share. After every step three sites are built from
the same content:

- `cold`: an incremental build with the cache on disk (a new `pith-mirror build`);
- `warm`: an incremental build with the cache in memory and the changed names as
  hints (what `serve` and `build --watch` run on a file event);
- `full`: a build without any cache, with two workers, over a copy of what
  `cold` published before the step (a full build reads the published site for
  its rollback checks).

All three must hold the same bytes, but for the full build's report (a build
in which no document changed keeps the last report's notes). And, whatever
the builds agree on, the promise holds: a published number stays published
while content/ names it (or a file names no number), and its published bundle
never loses an event.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import factories as f
import manifestkit
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule
from sitekit import BOTH_KEYS, Project, bundle_events, tree

from generator.build import pipeline
from generator.build.state import WarmCache

# (source id, version, title): the first two share "2310.01010v1" and the prefix
# TSVXCBQ2 (see test_shared_prefix.py); the next two are versions of one paper;
# the last is not an arXiv paper, but its bundles sign the second paper's arXiv
# aliases (its record documents, unsigned, cannot list them).
PAPERS = (
    ("2310.01010", 1, "Prefix 734080"),
    ("2310.01010", 1, "Prefix 1125271"),
    ("2311.02020", 1, "Two Versions"),
    ("2311.02020", 2, "Two Versions"),
    ("hdl:1234/5678", 9, "Listed Elsewhere"),
)
CLAIMER = 4
SLOTS = ("a.json", "b.json", "c.json", "d.json", "sub/e.json")
IGNORED = (".hidden.json", "notes.txt")
PAGE = "pages/about.md"


def _record(paper: int) -> dict[str, Any]:
    source_id, version, title = PAPERS[paper]
    kind = "handle" if paper == CLAIMER else "arxiv"
    return f.canonical_record(source_id=source_id, version=version, title=title, kind=kind)


def _bundle(paper: int, snapshots: int, start_day: int = 10, built_at: str | None = None) -> bytes:
    record, title = _record(paper), PAPERS[paper][2]
    aliases = f.aliases(record)
    if paper == CLAIMER:
        aliases += [a for a in f.aliases(_record(2)) if not a["alias_kind"].startswith("pith")]
    events = bundle_events(record, title, snapshots, start_day, integrity=paper != CLAIMER)
    doc = f.bundle(record=record, title=title, alias_list=aliases, events=events)
    if built_at is not None:  # the same events, signed again later
        doc = copy.deepcopy(doc)
        doc["built_at"] = built_at
        doc = f.sign_bundle(f.TEST_SIGNER, doc)
    return f.to_bytes(doc)


def _documents() -> dict[tuple[int, str], bytes]:
    """Every document a step may write, by (paper, variant)."""
    docs: dict[tuple[int, str], bytes] = {}
    for paper in range(len(PAPERS)):
        record = _record(paper)
        docs[paper, "record"] = f.to_bytes(f.record_document(record=record, title=PAPERS[paper][2]))
        for snapshots in range(3):
            docs[paper, f"bundle{snapshots}"] = _bundle(paper, snapshots)
        docs[paper, "later"] = _bundle(paper, 1, built_at="2026-07-09T00:00:00Z")
        docs[paper, "other"] = _bundle(paper, 1, start_day=20)  # disagrees with the others
    return docs


DOCUMENTS = _documents()
NUMBERS = {paper: f.pith_number(_record(paper)) for paper in range(len(PAPERS))}


def _corrupted(data: bytes, how: str) -> bytes:
    if how == "not json":
        return b"{not json"
    if how == "truncated":
        return data[: len(data) // 2]
    # a signature no longer matching: the number is known, the document refused
    for spelling in (b'"signature": "', b'"signature":"'):
        data = data.replace(spelling, spelling + b"A", 1)
    return data


def _published(project: Project) -> dict[str, dict[str, Any]]:
    return {e["pith_number"]: e for e in manifestkit.entries(project.site)}


def _event_ids(project: Project, number: str) -> set[str]:
    body = number.rsplit(":", 1)[1]
    bundle = project.site / "pith" / body / "bundle.json"
    if not bundle.exists():
        return set()
    return {e["event_id"] for e in project.json(f"pith/{body}/bundle.json")["events"]}


class IncrementalMatchesFull(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        # (a folder per example: pytest's tmp_path is one per test)
        self.root = Path(tempfile.mkdtemp(prefix="pith-steps-"))
        self.cold = Project(self.root / "cold")  # its content/ is the one all three read
        self.cold.content.mkdir(parents=True)
        self.warm_config = self.cold.config(site=self.root / "warm" / "site")
        self.warm_cache = WarmCache()
        self.changed: set[str] = set()
        """Names changed since the last build: the warm build's hints."""

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # ---------------------------------------------------------------- builds

    def _build_all(self) -> None:
        twin = self.root / "full" / "site"
        shutil.rmtree(twin.parent, ignore_errors=True)
        published_before: dict[str, dict[str, Any]] = {}
        if self.cold.site.exists():
            # (hard links: a build never writes through a file, it replaces it)
            shutil.copytree(self.cold.site, twin, symlinks=True, copy_function=os.link)
            published_before = _published(self.cold)
        events_before = {n: _event_ids(self.cold, n) for n in published_before}

        self.cold.build()
        hints = sorted(f"content/{name}" for name in self.changed)
        pipeline.build(self.warm_config, BOTH_KEYS, warm=self.warm_cache, hints=hints)
        assert pipeline.unnoticed_changes(self.warm_config, self.warm_cache) == []
        pipeline.build(self.cold.config(site=twin, jobs=2), BOTH_KEYS, incremental=False)
        self.changed.clear()

        cold, warm, full = tree(self.cold.site), tree(self.warm_config.site), tree(twin)
        assert sorted(cold) == sorted(full), "the incremental build's files differ from a full build's"
        # (a build in which no document changed keeps the last report's notes;
        # a full build decides every number again and writes its own)
        assert [p for p in cold if cold[p] != full[p] and not p.startswith("report")] == []
        assert sorted(warm) == sorted(cold), "the warm build's files differ from the cold one's"
        assert [p for p in warm if warm[p] != cold[p]] == [], "warm and cold incremental builds differ"

        published, named = _published(self.cold), self._named_numbers()
        for number in published_before:
            if number in named or self._unidentified():
                assert number in published, f"{number} was unpublished while content/ names it"
            if number in published:
                assert events_before[number] <= _event_ids(self.cold, number), f"{number} lost events"
        if {NUMBERS[2], NUMBERS[3]} & published.keys():  # (the arXiv paper's own, not a claim)
            assert self.cold.looked_up("arxiv", "2311.02020") in (NUMBERS[2], NUMBERS[3])

    def _documents_in_content(self) -> list[bytes]:
        """The bytes of every file the build reads as a document (not the ignored names)."""
        paths = (self.cold.content / name for name in SLOTS)
        return [path.read_bytes() for path in paths if path.exists()]

    def _named_numbers(self) -> set[str]:
        """Numbers that a document in content/ declares (valid or not)."""
        return {n for data in self._documents_in_content() for n in NUMBERS.values() if n.encode() in data}

    def _unidentified(self) -> bool:
        """Whether a document names no number (then no number is unpublished)."""
        documents = self._documents_in_content()
        return any(not any(n.encode() in data for n in NUMBERS.values()) for data in documents)

    def _write(self, name: str, data: bytes) -> None:
        path = self.cold.content / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.changed.add(name)

    def _pick(self, data: st.DataObject, documents_only: bool = False) -> str | None:
        """A file now in content/ (with `documents_only`, in a document's slot), or None."""
        files = (p for p in self.cold.content.rglob("*") if p.is_file())
        present = sorted(p.relative_to(self.cold.content).as_posix() for p in files)
        present = [name for name in present if name in SLOTS or not documents_only]
        return data.draw(st.sampled_from(present)) if present else None

    # ---------------------------------------------------------------- steps

    @initialize(paper=st.integers(0, len(PAPERS) - 1))
    def start(self, paper: int) -> None:
        self._write("a.json", DOCUMENTS[paper, "bundle1"])
        self._build_all()

    @rule(
        slot=st.sampled_from(SLOTS),
        paper=st.integers(0, len(PAPERS) - 1),
        variant=st.sampled_from(["record", "bundle0", "bundle1", "bundle2", "later", "other"]),
    )
    def put(self, slot: str, paper: int, variant: str) -> None:
        self._write(slot, DOCUMENTS[paper, variant])
        self._build_all()

    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        if name := self._pick(data):
            (self.cold.content / name).unlink()
            self.changed.add(name)
        self._build_all()

    @rule(data=st.data(), how=st.sampled_from(["not json", "truncated", "signature"]))
    def corrupt(self, data: st.DataObject, how: str) -> None:
        if name := self._pick(data, documents_only=True):
            self._write(name, _corrupted((self.cold.content / name).read_bytes(), how))
        self._build_all()

    @rule(data=st.data(), new_name=st.sampled_from(SLOTS + IGNORED))
    def rename(self, data: st.DataObject, new_name: str) -> None:
        if (name := self._pick(data)) and name != new_name:
            source = self.cold.content / name
            self._write(new_name, source.read_bytes())
            source.unlink()
            self.changed.add(name)
        self._build_all()

    @rule(data=st.data())
    def touch(self, data: st.DataObject) -> None:
        """A new modification time, the same bytes (an editor's save, `touch`)."""
        if name := self._pick(data):
            stat = (self.cold.content / name).stat()
            os.utime(self.cold.content / name, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
            self.changed.add(name)
        self._build_all()

    @rule(text=st.sampled_from(["", "# About\n\nA mirror.\n", "# About us\n\nChanged.\n"]))
    def page(self, text: str) -> None:
        if text:
            self._write(PAGE, text.encode())
        elif (self.cold.content / PAGE).exists():
            (self.cold.content / PAGE).unlink()
            self.changed.add(PAGE)
        self._build_all()


IncrementalMatchesFull.TestCase.settings = settings(
    # (about a second an example; PITH_MIRROR_STEP_EXAMPLES=300 for a long search)
    max_examples=int(os.environ.get("PITH_MIRROR_STEP_EXAMPLES", "8")),
    stateful_step_count=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestIncrementalMatchesFull = IncrementalMatchesFull.TestCase
