"""What the rebuild loop has to say, as values: the loop reports, the command prints.

The loop runs on its own thread and must never end because a terminal cannot
show a name, so it does not print at all; it hands each of these to the
callback it was given (`Rebuilder(on_report=...)`). The command's callback
turns them into the lines a user sees; a test can keep them as they are.
`at` is the wall-clock time ("12:03:04") the build began, `reason` what woke it
("first build", "content/x.json modified, 1 more").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..build.report import BuildReport
from ..site.config import SiteConfig
from ..trust.errors import BuildError, ConfigError
from ..trust.keys import Keyring


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """A build completed; `config` and `keyring` are the settings it used."""

    at: str
    reason: str
    report: BuildReport
    config: SiteConfig
    keyring: Keyring


@dataclass(frozen=True, slots=True)
class Failed:
    """Bad input (settings, keys, SITE): the previous site stays."""

    at: str
    reason: str
    error: ConfigError | BuildError


@dataclass(frozen=True, slots=True)
class Stopped:
    """The build was interrupted by stopping (Ctrl-C also reaches its workers)."""

    at: str
    reason: str


@dataclass(frozen=True, slots=True)
class Crashed:
    """An unexpected exception, a bug: its traceback, as `traceback.format_exc` gives it."""

    at: str
    reason: str
    traceback: str


@dataclass(frozen=True, slots=True)
class WaitingForLock:
    """Another build holds SITE's lock; this rebuild tries again until it is free."""

    site: Path


@dataclass(frozen=True, slots=True)
class CacheNotSaved:
    """The site is whole but the build cache file could not be written."""

    reason: str


@dataclass(frozen=True, slots=True)
class WatchTrouble:
    """Some folder could not be watched (e.g. the system's inotify limit)."""

    error: OSError


@dataclass(frozen=True, slots=True)
class FolderMissing:
    """An input folder does not exist (yet): its parent is watched for it. Said once."""

    root: str
    kind: str


Report = Rebuilt | Failed | Stopped | Crashed | WaitingForLock | CacheNotSaved | WatchTrouble | FolderMissing
OnReport = Callable[[Report], None]
