"""What one build did, as one value: the CLI and the watcher print it, the tests read it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..site.page_model import Summary
from ..trust.errors import Rejection


@dataclass(frozen=True, slots=True)
class BuildReport:
    """What one build did: the CLI and the watcher print it, the tests read it."""

    published: int
    rejections: tuple[Rejection, ...]
    notes: tuple[str, ...]
    files_written: int
    seconds: float
    mode: str = "full"
    changed: tuple[str, ...] = ()
    """Content files added, changed or removed since the last build (incremental)."""
    rendered: int = 0
    """Pith numbers whose pages were rendered by this build."""
    summaries: Sequence[Summary] = field(default=(), repr=False)
    permitted: Mapping[str, int] = field(default_factory=dict, repr=False)
    """Records (by body) taken down (0) or rolled back to this many events because
    `allow_removals` let them: SITE's change log keeps them for the upload."""

    @property
    def refused_files(self) -> int:
        return len({r.file for r in self.rejections})
