"""The numbers SITE took down while they had a bundle, and the bundle each had.

Taking a number down (its documents deleted from CONTENT, within the removal
guard) and later putting back an older bundle of it would roll it back in two
builds, each of them allowed. So every number unpublished with a bundle is
listed in `.well-known/pith/withdrawn.json`, with that bundle's hash, build time
and event ids; a bundle that puts it back must hold all of those events (see
`choose.select`), and the listing goes once one does.

Rules:
- The file is SITE's, not the build cache's: a full build, a build without its
  cache and a build into a copy of SITE read it as an incremental one does, so a
  build's output stays a function of CONTENT and SITE. It is published, so a reader
  (or another mirror) can see what was taken down and with how many events.
- It exists only while it lists a number (a site that never withdrew one has none).
- One that cannot be read as this module writes it stops the build (BuildError)
  before SITE changes: forgetting it would let the rollback through. Deleting it
  on purpose forgets what it held.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ..trust.canonical import pretty_json
from ..trust.choose import Candidate, pack_event_ids
from ..trust.errors import BuildError
from ..trust.files import read_regular
from ..trust.model import PITH_RE

WITHDRAWN_PATH = ".well-known/pith/withdrawn.json"
WITHDRAWN_TYPE = "pith_mirror_withdrawn_records"
_LIMIT = 256 * 1024 * 1024
"""Bytes: some 70 bytes an event, far more numbers than a mirror takes down."""


def withdrawn_json(withdrawn: Mapping[str, Candidate]) -> bytes | None:
    """The file's bytes, or None when no number is withdrawn (then there is no file)."""
    if not withdrawn:
        return None
    records = [
        {
            "pith_number": number,
            "bundle_sha256": bundle.raw_sha256,
            "built_at": bundle.built_at,
            "event_count": len(bundle.events) // 32,
            "event_ids": sorted(bundle.event_ids),
        }
        for number, bundle in sorted(withdrawn.items())
    ]
    return pretty_json({"withdrawn_type": WITHDRAWN_TYPE, "records": records})


def read_withdrawn(site: Path) -> dict[str, Candidate]:
    """What SITE's file lists, by number, each as the candidate its bundle was; {} when
    SITE has no such file. BuildError when it cannot be read or has another shape."""
    path = site / WITHDRAWN_PATH
    try:
        data = read_regular(path, _LIMIT)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise _damaged(path, str(exc)) from None
    try:
        return _parsed(orjson.loads(data))
    except (ValueError, KeyError, TypeError) as exc:
        raise _damaged(path, str(exc)) from None


def _parsed(value: Any) -> dict[str, Candidate]:
    if type(value) is not dict or value.get("withdrawn_type") != WITHDRAWN_TYPE:
        raise ValueError("not a list of withdrawn records pith-mirror wrote")
    withdrawn: dict[str, Candidate] = {}
    for entry in value["records"]:
        number, sha256, built_at, ids = (
            entry["pith_number"],
            entry["bundle_sha256"],
            entry["built_at"],
            entry["event_ids"],
        )
        if not all(type(v) is str for v in (number, sha256, built_at)) or type(ids) is not list:
            raise ValueError("a record's fields are not as written")
        if not PITH_RE.fullmatch(number):
            raise ValueError(f"{number!r} is not a Pith number")
        withdrawn[number] = Candidate("", "bundle", number, sha256, pack_event_ids(ids), False, built_at)
    return withdrawn


def _damaged(path: Path, why: str) -> BuildError:
    return BuildError(
        str(path),
        f"cannot be read ({why}): it lists the records this site took down, whose older bundles"
        " must not come back; nothing was changed. Restore it from a copy of the site, or delete"
        " it to forget them",
    )
