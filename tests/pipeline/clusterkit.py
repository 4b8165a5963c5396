"""Documents and commands the cluster tests share: test_cluster.py (which needs
Dask) and test_scheduler_setting.py (which must run without it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import factories as f
from sitekit import REAL_BUNDLE, REAL_RECORD, Project, bundle_events, record_doc


def inputs() -> list[tuple[str, bytes]]:
    """62 documents: bundles with one to three snapshots, records in pairs of versions
    of one paper (which share its integrity report), the two real documents, one
    refused file, and a page."""
    docs: list[tuple[str, Any]] = [
        (REAL_RECORD.name, REAL_RECORD.read_bytes()),
        (REAL_BUNDLE.name, REAL_BUNDLE.read_bytes()),
        ("refused.json", b"{broken"),
        ("pages/about.md", b"# About\n\nA mirror built on a cluster.\n"),
    ]
    for i in range(44):
        docs.append((f"b/{i:02d}.json", clustered_bundle(i)))
    for i in range(15):
        paper, version = f"2302.{i // 2:05d}", 1 + i % 2
        docs.append((f"r/{i:02d}.json", record_doc(source_id=paper, version=version, title=f"Record {i}")))
    return [(name, data if isinstance(data, bytes) else f.to_bytes(data)) for name, data in docs]


def clustered_record(i: int) -> dict[str, Any]:
    """The canonical record of "Clustered paper i", bundled as b/<i>.json by `inputs`."""
    return f.canonical_record(
        source_id=f"2301.{i:05d}",
        title=f"Clustered paper {i}",
        submitted_at=f"2023-01-{1 + i % 28:02d}T00:00:00Z",
    )


def clustered_bundle(i: int, snapshots: int | None = None) -> dict[str, Any]:
    """Its bundle, with `snapshots` graph snapshots (1 + i % 3, as `inputs` has it, by default)."""
    record, title = clustered_record(i), f"Clustered paper {i}"
    events = bundle_events(record, title, 1 + i % 3 if snapshots is None else snapshots)
    return f.bundle(record=record, title=title, events=events)


def few(files: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """Ten documents that all verify (a build of them exits 0)."""
    return [(name, data) for name, data in files if name != "refused.json"][:10]


def make(root: Path, files: list[tuple[str, bytes]]) -> Project:
    p = Project(root)
    for name, data in files:
        p.add(name, data)
    return p


def cli_build(p: Project, *more: str) -> list[str]:
    p.write_keys()
    return ["build", str(p.content), str(p.site), "--keys", str(p.keys_file), "--quiet", *more]
