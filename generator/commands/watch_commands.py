"""`build --watch` and `serve`: what they print and the exit codes they end with.

The rebuild loop and the preview server below this never print; the loop hands
its reports to `Printer`, which says them as they have always been said:

- Each rebuild prints one line on stdout (what changed, what was published),
  then on stderr only the refusals and notes that are new since the previous
  build; every failure, wait and warning is one line on stderr.
- A print that fails (a terminal that cannot show a character) is printed
  again with the character escaped: it must not end the rebuild loop.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import TextIO

from ..build.change_check import check_site
from ..trust.errors import ConfigError, Interrupted, Rejection
from .common import settings_from, summary_line, what_was_kept
from .serve import open_server
from .watch import Rebuilder
from .watch_events import (
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
from .watching import load_setup


class Printer:
    """The `on_report` callback of the commands: each report as the lines a user reads.

    It remembers which refusals and notes it has printed, so a rebuild prints only
    the new ones (the report line said how many there are)."""

    def __init__(
        self, out: TextIO | None = None, err: TextIO | None = None, *, show_notes: bool = True
    ) -> None:
        self._out, self._err = out, err
        self.show_notes = show_notes
        self._seen: set[Rejection | str] = set()

    def __call__(self, report: Report) -> None:
        if isinstance(report, Rebuilt):
            self._say(f"[{report.at}] {report.reason} -> {summary_line(report.report)}")
            self._say_new(report)
        elif isinstance(report, Failed):
            error = report.error
            if isinstance(error, ConfigError):
                said = f"configuration: {error.key}: {error.reason}"
            else:
                said = f"build failed: {error.path}: {error.reason}"
            self._say(f"[{report.at}] {report.reason} -> {said}; the previous site stays", error=True)
        elif isinstance(report, Stopped):
            self._say(f"[{report.at}] {report.reason} -> build interrupted", error=True)
        elif isinstance(report, Crashed):
            prefix = f"[{report.at}] {report.reason}"
            self._say(f"{prefix} -> unexpected error (a bug); the previous site stays:", error=True)
            self._say(report.traceback, error=True, end="")
        elif isinstance(report, WaitingForLock):
            self._say(
                f"  waiting: another pith-mirror command is using {report.site};"
                " this rebuild starts once it has finished",
                error=True,
            )
        elif isinstance(report, CacheNotSaved):
            self._say(
                f"warning: the build cache could not be saved ({report.reason}); "
                "the next build in another process is a full one",
                error=True,
            )
        elif isinstance(report, WatchTrouble):
            self._say(
                f"warning: cannot watch every input ({report.error}); some changes may go unnoticed",
                error=True,
            )
        elif isinstance(report, FolderMissing):
            self._say(
                f"note: the {report.kind} folder {report.root} does not exist; waiting for it to appear",
                error=True,
            )

    def _say_new(self, rebuilt: Rebuilt) -> None:
        """Refusals and notes not printed after the previous build."""
        from ..trust.causes import by_cause, pinned_names, terminal_lines

        report = rebuilt.report
        current: set[Rejection | str] = set(report.rejections) | set(report.notes)
        new = set(report.rejections) - self._seen
        report_path = (rebuilt.config.site / "report.json").as_posix()
        for line in terminal_lines(by_cause(new, pinned_names(rebuilt.keyring)), report_path):
            self._say("  " + line, error=True)
        if self.show_notes:
            for note in report.notes:
                if note not in self._seen:
                    self._say(f"  note: {note}", error=True)
        self._seen = current

    def _say(self, line: str, *, error: bool = False, end: str = "\n") -> None:
        # sys.stdout/sys.stderr are looked up now, not at construction, so redirection still works.
        stream = (self._err or sys.stderr) if error else (self._out or sys.stdout)
        try:
            print(line, file=stream, flush=True, end=end)
        except UnicodeEncodeError:  # a terminal that cannot show a character must not end the loop
            encoding = getattr(stream, "encoding", None) or "ascii"
            print(
                line.encode(encoding, "backslashreplace").decode(encoding), file=stream, flush=True, end=end
            )


def interrupted_cleanly(
    rebuilder: Rebuilder, stream: TextIO | None = None, interrupt: KeyboardInterrupt | None = None
) -> int:
    """Stop after Ctrl-C or SIGTERM and say so. Stopping is how a watch ends: exit 0
    after Ctrl-C; 143 after SIGTERM, as a service manager expects of a process it stops.

    A build in progress is let finish, so the site stays whole; that can take a
    while, and a silent wait looks like a hang, so it is said."""
    out = stream or sys.stderr
    if rebuilder.building:
        print(
            "pith-mirror: stopping once the build in progress is done (Ctrl-C again to stop at once;"
            " the next build clears what it leaves)",
            file=out,
            flush=True,
        )
    rebuilder.stop()
    kept = what_was_kept(interrupt) if interrupt is not None else ""
    kept = kept or f"; {rebuilder.setup.config.site} is as the last completed build left it"
    print(f"pith-mirror: stopped{kept}", file=out, flush=True)
    signum = interrupt.signum if isinstance(interrupt, Interrupted) else signal.SIGINT
    return 0 if signum == signal.SIGINT else 128 + signum


def _rebuilder(args: argparse.Namespace) -> Rebuilder:
    return Rebuilder(
        lambda: load_setup(args.config, settings_from(args)),
        on_report=Printer(show_notes=not args.quiet),
        clean=args.clean,
    )


def run_build_watch(args: argparse.Namespace) -> int:
    """`build --watch`: build, then rebuild whenever an input changes, until Ctrl-C or SIGTERM."""
    rebuilder = _rebuilder(args)
    try:
        rebuilder.start()  # before the first build, so a change made during it is not missed
        rebuilder.rebuild("first build")
        config = rebuilder.setup.config
        print(f"Watching {config.content} and {config.templates} — Ctrl-C to stop", flush=True)
        rebuilder.wait()
    except KeyboardInterrupt as exc:
        return interrupted_cleanly(rebuilder, interrupt=exc)
    return 0


def run_serve(args: argparse.Namespace) -> int:
    """`serve`: build once, serve SITE, rebuild on changes (unless --no-watch), until Ctrl-C.

    The port is taken first, so a port in use is reported before any build;
    the watcher starts before the first build, so no change made during it is
    missed. A first build that fails is reported and whatever SITE holds is
    served, but only a SITE the build could use: never a folder it refuses."""
    rebuilder = _rebuilder(args)
    check_site(rebuilder.setup.config)  # (a SITE the build refuses is never served: BuildError, exit 2)
    server = open_server(
        args.host,
        args.port,
        rebuilder.setup.config.site,
        generation=rebuilder.generation_counter,
        live_reload=args.watch,
    )
    rebuilder.on_setup(server.follow)
    try:
        if args.watch:
            rebuilder.start()
        rebuilder.rebuild("first build")
        print(f"Serving {_shown(server.site)} at {server.url} — Ctrl-C to stop", flush=True)
        server.serve_forever()
    except KeyboardInterrupt as exc:
        return interrupted_cleanly(rebuilder, interrupt=exc)
    finally:
        server.server_close()
    return 0


def _shown(site: Path) -> str:
    return site.as_posix().rstrip("/") + "/"
