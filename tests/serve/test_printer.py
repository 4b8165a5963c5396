"""What `build --watch` and `serve` print for each report of the rebuild loop.

The loop reports values; these lines are the ones it printed itself before,
kept word for word: scripts and users read them."""

from __future__ import annotations

import io
from pathlib import Path

from generator.build.report import BuildReport
from generator.commands.watch_commands import Printer
from generator.commands.watch_events import (
    CacheNotSaved,
    Crashed,
    Failed,
    FolderMissing,
    Rebuilt,
    Report,
    Stopped,
    WaitingForLock,
    WatchTrouble,
)
from generator.site.config import SiteConfig
from generator.trust.errors import BuildError, Code, ConfigError, Rejection
from generator.trust.keys import Keyring


def printed(*reports: Report, show_notes: bool = True) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    printer = Printer(out, err, show_notes=show_notes)
    for report in reports:
        printer(report)
    return out.getvalue(), err.getvalue()


def test_failures_waits_and_warnings_are_one_line_each_on_stderr() -> None:
    out, err = printed(
        Failed("12:00:01", "first build", ConfigError("keys", "not JSON")),
        Failed("12:00:02", "content/a.json modified", BuildError("site", "disk full")),
        Stopped("12:00:03", "templates/base.html modified"),
        WaitingForLock(Path("site")),
        CacheNotSaved("No space left on device"),
        WatchTrouble(OSError(28, "inotify watch limit reached")),
        FolderMissing("/m/content", "content"),
    )
    assert out == ""
    assert err.splitlines() == [
        "[12:00:01] first build -> configuration: keys: not JSON; the previous site stays",
        "[12:00:02] content/a.json modified -> build failed: site: disk full; the previous site stays",
        "[12:00:03] templates/base.html modified -> build interrupted",
        "  waiting: another pith-mirror command is using site; this rebuild starts once it has finished",
        "warning: the build cache could not be saved (No space left on device); "
        "the next build in another process is a full one",
        "warning: cannot watch every input ([Errno 28] inotify watch limit reached); "
        "some changes may go unnoticed",
        "note: the content folder /m/content does not exist; waiting for it to appear",
    ]


def test_a_crash_prints_its_traceback_as_it_came() -> None:
    trace = "Traceback (most recent call last):\n  ...\nRuntimeError: boom\n"
    _out, err = printed(Crashed("12:00:04", "rebuild", trace))
    assert err == f"[12:00:04] rebuild -> unexpected error (a bug); the previous site stays:\n{trace}"


def test_a_rebuild_is_one_line_on_stdout_and_notes_are_said_once(
    tmp_path: Path, real_keyring: Keyring
) -> None:
    report = BuildReport(published=2, rejections=(), notes=("a note",), files_written=7, seconds=0.25)
    config = SiteConfig(content=tmp_path / "content", site=tmp_path / "site")
    rebuilt = Rebuilt("12:00:05", "content/a.json created", report, config, real_keyring)
    out, err = printed(rebuilt, rebuilt)
    line = (
        "[12:00:05] content/a.json created -> published 2, refused 0 file(s), 7 files written in 0.25s"
        " (full: 0 record(s) rendered, 0 input(s) changed)\n"
    )
    assert out == line * 2
    assert err == "  note: a note\n"
    assert printed(rebuilt, show_notes=False)[1] == ""


def test_a_refusal_is_printed_once_while_it_lasts(tmp_path: Path, real_keyring: Keyring) -> None:
    """A rebuild prints the refusals and notes that are new since the last one: the
    same refusal after every change would drown the line that says what changed."""
    refused = Rejection("content/bad.json", "", Code.FILE_UNREADABLE, "cannot read: broken")
    report = BuildReport(published=1, rejections=(refused,), notes=(), files_written=3, seconds=0.1)
    config = SiteConfig(content=tmp_path / "content", site=tmp_path / "site")
    rebuilt = Rebuilt("12:00:06", "content/bad.json changed", report, config, real_keyring)
    _out, err = printed(rebuilt, rebuilt)
    assert err.count("content/bad.json") == 1 and "cannot read: broken" in err
