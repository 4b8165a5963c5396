"""When an incremental build would be slower than a full one, build fully.

An incremental build verifies and renders only the documents that changed, but
does the rest alone in the main process: every changed record's files are moved
into SITE one by one through the undo journal, and the site-wide pages are
written without the worker pool. A full build does everything in the workers
and swaps the site in at once. Past a share of changed documents the full build
wins: 340 of 600 changed records took 7.0 s incrementally and 3.4 s in full.

Rules:
- The share is counted in documents, against those the cache knows: a document
  added, removed, or whose stat changed and whose bytes did too (a mass `touch`
  or a fresh checkout changes every stat and no byte, and stays incremental).
- Bytes are read only when the stats alone could pass the share, and only
  until it is passed.
- Small sites always build incrementally: both builds take well under a second,
  and only the incremental one leaves SITE in place.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from ..site.config import SiteConfig
from ..trust.files import file_sha256
from ..trust.load import is_utf8
from .change_check import Changed, Listed, listed_content
from .state import BuildState

FULL_SHARE = 0.25
"""Past this share of changed documents a full build is faster. Measured with the bench
corpus (600 bundles, 2 workers, a 2-core machine under other load, best of 3): 10 %
changed took 10.1 s incrementally and 11.9 s in full, 20 % 9.2 s and 8.7 s, and 57 %
7.0 s and 3.4 s. So the two meet near 20 %; a quarter leaves room for the noise, and an
incremental build, which changes SITE in place, is kept wherever it is not slower.
(The incremental build used less processor time throughout: its cost is that what it
does alone, one core does; with more cores a full build wins earlier.)"""
MIN_DOCUMENTS = 200
"""Below this many documents a build is quick either way: always incremental."""


def full_is_faster(
    cache: BuildState,
    config: SiteConfig,
    listed: Listed | None,
    hints: Collection[str] | None,
    told: Changed | None = None,
) -> tuple[bool, Listed | None, Changed | None]:
    """Whether to drop the cache and build in full; the listing of every document
    made to tell; and, when told from that listing, the names that may have changed
    since the cache (added, removed, or of another stat), in order: an incremental
    build looks at those alone, as at a watcher's names, instead of at every document
    again. (None when the listing has a name that is not UTF-8: reports show it under
    another spelling, which the build's own listing makes.) `told`: those names, when
    the caller already compared `listed` with this very cache (change_check.look)."""
    known = cache.files
    if len(known) < MIN_DOCUMENTS and listed is None:
        return False, listed, None
    allowed = FULL_SHARE * len(known)
    if hints is not None:  # (a watcher's names: exactly what may have changed)
        return len(known) >= MIN_DOCUMENTS and len(set(hints)) > allowed, listed, None
    if told is not None:
        present = {name for _path, name, _stat in told.listed}
        added, gone = {n for n in present if n not in known}, set(told.names) - present
        maybe = [(path, name) for path, name, _stat in told.listed if name in known]
    else:
        if listed is None:
            try:
                listed = listed_content(config)
            except OSError:  # (a file gone meanwhile: the build itself says what it finds)
                return False, None, None
        names = {name for _path, name, _stat in listed}
        added, gone = names - known.names(), known.names() - names
        maybe = [(path, name) for path, name, stat in listed if name in known and known.stat(name) != stat]
        if all(map(is_utf8, added)):  # (else reported under another spelling: the build lists every name)
            present = added | {name for _path, name in maybe}
            told = Changed(sorted(present | gone), [entry for entry in listed if entry[1] in present])
    changed = len(added) + len(gone)
    if len(known) < MIN_DOCUMENTS or changed + len(maybe) <= allowed:
        return False, listed, told
    for path, name in maybe:
        try:
            # (an object store's document is compared by its tag alone: reading it is the build's)
            same = config.content_store is None and file_sha256(Path(path)) == known.raw_sha256(name)
        except OSError:
            same = False
        changed += not same
        if changed > allowed:
            break
    return changed > allowed, listed, told
