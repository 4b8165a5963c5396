"""A built site's mirror manifest as tests read and forge it: its entries are in
shards the index names by hash (see generator/site/manifest.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from generator.site.layout import MANIFEST_PATH


def entries(site: Path) -> list[dict[str, Any]]:
    """Every entry of the site's manifest, shard by shard (in body order)."""
    index = json.loads((site / MANIFEST_PATH).read_bytes())
    found: list[dict[str, Any]] = []
    for ref in index["shards"]:
        found += json.loads((site / ref["path"]).read_bytes())["records"]
    return found


def shard_paths(site: Path) -> list[str]:
    """The paths of the shards the site's manifest names."""
    return [ref["path"] for ref in json.loads((site / MANIFEST_PATH).read_bytes())["shards"]]


def numbers(site: Path) -> list[str]:
    return [entry["pith_number"] for entry in entries(site)]


def forge(site: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Apply `change` to every entry and write the shards back, with the index naming
    their new hashes: a manifest that lies consistently, as a forger would write it."""
    path = site / MANIFEST_PATH
    index = json.loads(path.read_bytes())
    for ref in index["shards"]:
        shard_path = site / ref["path"]
        shard = json.loads(shard_path.read_bytes())
        for entry in shard["records"]:
            change(entry)
        data = json.dumps(shard, indent=2).encode()
        ref["sha256"] = hashlib.sha256(data).hexdigest()
        ref["path"] = f"{ref['path'].rsplit('/', 1)[0]}/{ref['prefix']}.{ref['sha256'][:16]}.json"
        shard_path.unlink()
        (site / ref["path"]).write_bytes(data)  # (named by its new bytes, as the build names it)
    path.write_text(json.dumps(index, indent=2))


def tamper(path: Path, old: bytes, new: bytes) -> None:
    """Replace `old` by `new` in the file at `path`, which must hold `old`: a test of a
    damaged file must not pass on an undamaged one."""
    data = path.read_bytes()
    assert old in data, f"{path} holds no {old!r} to change"
    path.write_bytes(data.replace(old, new))
